// libFuzzer entry of the "idx" target (fuzz/targets.h, docs/fuzzing.md).
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)geomx::fuzz::FuzzIdx(data, size);
  return 0;
}
