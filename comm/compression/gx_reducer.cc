#include "comm/compression/gx_reducer.h"

#include <map>
#include <utility>
#include <vector>

#include "comm/compression/compressor.h"
#include "comm/handlers/reducer.h"

namespace geomx::comm {
namespace {

class GxSumReducer final : public Reducer {
 public:
  explicit GxSumReducer(const ReducerConfig& c) : length_(c.length) {}
  std::string_view name() const override { return "gx_sum"; }
  std::string_view codec() const override { return kCompressedCodec; }
  Status Validate(const Bytes& payload) const override {
    if (length_ > 0) return ValidateFrame(payload, length_).WithContext("gx_sum");
    Result<uint64_t> n = FrameLength(payload);
    if (!n.ok()) return n.status().WithContext("gx_sum");
    if (!parts_.empty() && *n != seen_) {
      return Status::InvalidArgument("gx_sum: frame of " + std::to_string(*n) + " elements, earlier ones had " +
                                     std::to_string(seen_));
    }
    return Status::Ok();
  }
  void Combine(int contributor, Bytes payload) override {
    Result<uint64_t> n = FrameLength(payload);
    GEOMX_CHECK(n.ok()) << "gx_sum: Combine without Validate";
    seen_ = *n;
    parts_.emplace(contributor, std::move(payload));
  }
  Result<Bytes> Finish() override {
    if (parts_.empty()) return Status::Internal("gx_sum: nothing to reduce");
    const uint64_t n = length_ > 0 ? length_ : seen_;
    std::vector<float> acc(n, 0.0f);
    for (const auto& [contributor, frame] : parts_) GEOMX_RETURN_IF_ERROR(AddFrame(frame, acc));
    return Bytes::CopyVector(acc);
  }

 private:
  uint64_t length_;
  uint64_t seen_ = 0;
  std::multimap<int, Bytes> parts_;
};

}  // namespace

GEOMX_REGISTER(ReducerRegistry, "gx_sum",
               [](const ReducerConfig& c) -> Result<std::unique_ptr<Reducer>> {
                 return std::unique_ptr<Reducer>(std::make_unique<GxSumReducer>(c));
               },
               "compressed frames (codec gx), summed into dense f32");

bool GxReducerLinked() { return true; }

}  // namespace geomx::comm
