#include "comm/handlers/forward_sink.h"

#include <string>
#include <utility>
#include <vector>

#include "comm/kv_link.h"

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

// Adapts a dense slice answer to the sink's callback.
KvLink::SliceDone Dense(uint64_t wire_key, AggregateDone done) {
  return [wire_key, done = std::move(done)](Status s, std::vector<float> values) {
    if (!s.ok()) return done(s.WithContext("forward: the global tier's answer for wire key " +
                                           std::to_string(wire_key)),
                             Bytes());
    done(Status::Ok(), Bytes::CopyVector(values));
  };
}

}  // namespace

void ForwardSink::OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                             AggregateDone done) {
  if (codec_.empty()) {
    upper_->PushPullSlice(wire_key, std::span<const float>(aggregate.as<float>(), aggregate.count<float>()), round,
                          contributors, Dense(wire_key, std::move(done)));
    return;
  }
  if (upper_->layout().FindWireKey(wire_key) == nullptr) {
    return done(Status::FailedPrecondition("forward: wire key " + std::to_string(wire_key) +
                                           " is not in the global tier's layout"),
                Bytes());
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

void ForwardSink::OnLoss(int64_t /*round*/, double mean_loss) {
  if (upper_->dgt() != nullptr) upper_->dgt()->SetLoss(mean_loss);
}

bool ForwardSink::FetchInitial(uint64_t wire_key, AggregateDone done) {
  if (codec_.empty()) {
    upper_->PullSlice(wire_key, kInitRound, Dense(wire_key, std::move(done)));
    return true;
  }
  if (upper_->layout().FindWireKey(wire_key) == nullptr) {
    done(Status::FailedPrecondition("forward: wire key " + std::to_string(wire_key) +
                                    " is not in the global tier's layout"),
         Bytes());
    return true;
  }
  RawRequest req;
  req.command = Command::kPull;
  req.codec = codec_;
  req.round = kInitRound;
  req.wire_keys = {wire_key};
  upper_->SendRaw(std::move(req), OneValue(wire_key, std::move(done)));
  return true;
}

}  // namespace geomx::comm
