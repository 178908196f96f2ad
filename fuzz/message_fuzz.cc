// libFuzzer entry of the "message" target (fuzz/targets.h, docs/fuzzing.md).
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)geomx::fuzz::FuzzMessage(data, size);
  return 0;
}
