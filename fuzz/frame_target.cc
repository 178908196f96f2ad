// frame: one compressed frame (comm/compression/compressor.h) of any kind: raw, fp16, sparse, sign, int8, powersgd.
// A receiver validates a frame before it touches it, against the length its request announced.
#include <cmath>
#include <vector>

#include "comm/compression/codecs.h"
#include "comm/compression/compressor.h"
#include "fuzz/targets.h"

namespace geomx::fuzz {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) internal::Broken("frame", what);
}

// Slices decoded here: an allocation the receiver makes from its own request's lens, not from the frame.
constexpr uint64_t kMaxDecodedElements = uint64_t{1} << 20;

}  // namespace

Status FuzzFrame(const uint8_t* data, size_t size) {
  if (size > kMaxInputBytes) return Status::OutOfRange("input too large");
  static const bool linked = (comm::LinkCompressionCodecs(), true);
  (void)linked;
  const Bytes frame = Bytes::Copy(data, size);
  const Result<uint64_t> length = comm::FrameLength(frame);
  if (!length.ok()) {
    Check(!length.status().message().empty(), "an error without a message");
    Check(!comm::ValidateFrame(frame, 0).ok() && !comm::ValidateFrame(frame, 1).ok(),
          "ValidateFrame accepts what FrameLength refuses");
    float one = 0.0f;
    Check(!comm::DecodeFrame(frame, std::span<float>(&one, 1)).ok(), "DecodeFrame accepts what FrameLength refuses");
    return length.status();
  }
  const uint64_t n = *length;
  Check(comm::ValidateFrame(frame, n).ok(), "ValidateFrame refuses the length FrameLength gave");
  if (n + 1 != 0) Check(!comm::ValidateFrame(frame, n + 1).ok(), "ValidateFrame accepts another length");
  if (n > kMaxDecodedElements) return Status::Ok();

  std::vector<float> out(n + 1, -7.0f);
  Check(!comm::DecodeFrame(frame, std::span<float>(out.data(), n + 1)).ok(), "DecodeFrame into a longer slice");
  Check(out[0] == -7.0f && out[n] == -7.0f, "DecodeFrame touched the output on error");
  out.resize(n);
  Check(comm::DecodeFrame(frame, out).ok(), "DecodeFrame refuses a valid frame");
  std::vector<float> acc(n, 1.0f);
  Check(comm::AddFrame(frame, acc).ok(), "AddFrame refuses a valid frame");
  for (uint64_t i = 0; i < n; ++i) {
    const float want = 1.0f + out[i];
    Check(acc[i] == want || (std::isnan(acc[i]) && std::isnan(want)), "AddFrame != 1 + DecodeFrame");
  }
  return Status::Ok();
}

}  // namespace geomx::fuzz
