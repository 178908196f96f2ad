// libFuzzer entry of the "libsvm" target (fuzz/targets.h, docs/fuzzing.md).
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)geomx::fuzz::FuzzLibsvm(data, size);
  return 0;
}
