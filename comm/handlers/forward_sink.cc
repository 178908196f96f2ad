#include "comm/handlers/forward_sink.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "comm/compression/compressor.h"
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

ForwardSink::ForwardSink(KvWorker* upper, std::unique_ptr<LinkEncoder> up, std::unique_ptr<LinkEncoder> down)
    : upper_(upper), up_(std::move(up)), down_(std::move(down)) {}

AggregateDone ForwardSink::Convert(uint64_t wire_key, uint64_t length, bool initial, AggregateDone done) const {
  if (!up_ && !down_) return done;
  // Captures the encoders (shared), not the sink: a late answer may outlive it.
  return [up = up_, down = down_, wire_key, length, initial, done = std::move(done)](Status s, Bytes value) {
    if (!s.ok()) return done(s, Bytes());
    std::vector<float> dense(length);
    if (up) {
      s = DecodeFrame(value, dense);
    } else if (value.size() != length * sizeof(float)) {
      s = Status::DataLoss("answer of " + std::to_string(value.size()) + " bytes, expected " +
                           std::to_string(length) + " floats");
    } else if (length > 0) {
      std::memcpy(dense.data(), value.data(), value.size());
    }
    if (!s.ok()) return done(s.WithContext("forward: the global tier's answer for wire key " +
                                           std::to_string(wire_key)), Bytes());
    if (!down) return done(Status::Ok(), Bytes::CopyVector(dense));
    if (initial) return done(Status::Ok(), RawFrame(dense));
    Result<Bytes> frame = down->Encode(wire_key, dense);
    if (!frame.ok()) return done(frame.status(), Bytes());
    done(Status::Ok(), std::move(frame).value());
  };
}

void ForwardSink::OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                             AggregateDone done) {
  const KeySlice* s = upper_->layout().FindWireKey(wire_key);
  const bool dense = codec_.empty() || up_ || down_;
  if (s == nullptr || (dense && s->length * sizeof(float) != aggregate.size())) {
    done(Status::FailedPrecondition(
             "forward: key " + std::to_string(KeyOfWireKey(wire_key)) + " slice " +
             std::to_string(SliceOfWireKey(wire_key)) + " does not match the global tier's layout (" +
             upper_->postoffice()->spec().name + "): build both layouts from the same keys and split_bytes"),
         Bytes());
    return;
  }
  RawRequest req;
  req.command = Command::kPushPull;
  req.codec = up_ ? kCompressedCodec : (down_ ? "" : codec_);
  req.round = round;
  req.num_merged = contributors;
  req.wire_keys = {wire_key};
  if (up_) {
    std::vector<float> sum(s->length);
    if (s->length > 0) std::memcpy(sum.data(), aggregate.data(), aggregate.size());
    Result<Bytes> frame = up_->Encode(wire_key, sum);
    if (!frame.ok()) {
      done(frame.status().WithContext("forward"), Bytes());
      return;
    }
    req.payloads = {std::move(frame).value()};
  } else {
    req.payloads = {std::move(aggregate)};
  }
  upper_->SendRaw(std::move(req), OneValue(wire_key, Convert(wire_key, s->length, false, std::move(done))));
}

bool ForwardSink::FetchInitial(uint64_t wire_key, AggregateDone done) {
  const KeySlice* s = upper_->layout().FindWireKey(wire_key);
  if (s == nullptr && (up_ || down_)) {
    done(Status::FailedPrecondition("forward: wire key " + std::to_string(wire_key) +
                                    " is not in the global tier's layout"),
         Bytes());
    return true;
  }
  RawRequest req;
  req.command = Command::kPull;
  req.codec = up_ ? kCompressedCodec : (down_ ? "" : codec_);
  req.round = kInitRound;
  req.wire_keys = {wire_key};
  const uint64_t length = s ? s->length : 0;
  upper_->SendRaw(std::move(req), OneValue(wire_key, Convert(wire_key, length, true, std::move(done))));
  return true;
}

}  // namespace geomx::comm
