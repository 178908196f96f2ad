#include "comm/handlers/forward_sink.h"

#include <string>
#include <utility>
#include <vector>

#include "comm/key_layout.h"
#include "comm/kv_worker.h"
#include "comm/postoffice.h"

namespace geomx::comm {
namespace {

// Adapts a one-key raw answer to the sink's callback.
RawDone OneValue(uint64_t wire_key, AggregateDone done) {
  return [wire_key, done = std::move(done)](Status s, std::vector<Bytes> values) {
    if (s.ok() && values.size() != 1) {
      s = Status::DataLoss("forward: the global tier answered " + std::to_string(values.size()) +
                           " values for wire key " + std::to_string(wire_key));
    }
    done(s, s.ok() ? std::move(values[0]) : Bytes());
  };
}

}  // namespace

void ForwardSink::OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                             AggregateDone done) {
  const KeySlice* s = upper_->layout().FindWireKey(wire_key);
  if (s == nullptr || (codec_.empty() && s->length * sizeof(float) != aggregate.size())) {
    done(Status::FailedPrecondition(
             "forward: key " + std::to_string(KeyOfWireKey(wire_key)) + " slice " +
             std::to_string(SliceOfWireKey(wire_key)) + " does not match the global tier's layout (" +
             upper_->postoffice()->spec().name + "): build both layouts from the same keys and split_bytes"),
         Bytes());
    return;
  }
  RawRequest req;
  req.command = Command::kPushPull;
  req.codec = codec_;
  req.round = round;
  req.num_merged = contributors;
  req.wire_keys = {wire_key};
  req.payloads = {std::move(aggregate)};
  upper_->SendRaw(std::move(req), OneValue(wire_key, std::move(done)));
}

bool ForwardSink::FetchInitial(uint64_t wire_key, AggregateDone done) {
  RawRequest req;
  req.command = Command::kPull;
  req.codec = codec_;
  req.round = kInitRound;
  req.wire_keys = {wire_key};
  upper_->SendRaw(std::move(req), OneValue(wire_key, std::move(done)));
  return true;
}

}  // namespace geomx::comm
