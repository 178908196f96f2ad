#include "comm/kv_link.h"

#include <cstring>
#include <utility>

#include "comm/compression/compressor.h"
#include "comm/p3/priority_sender.h"
#include "comm/postoffice.h"
#include "engine/base/logging.h"

namespace geomx::comm {

// The bookkeeping of one whole-key call: slices still owed per key, and each key's first error.
struct KvLink::Call {
  std::mutex mu;
  std::vector<size_t> remaining;  // GUARDED_BY(mu)
  std::vector<Status> errors;     // GUARDED_BY(mu)
  KeyDone on_key;

  // One slice of key `i` is done; calls on_key when it was the key's last.
  void SliceDone(size_t i, const Status& s) {
    Status done;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!s.ok() && errors[i].ok()) errors[i] = s;
      if (--remaining[i] > 0) return;
      done = errors[i];
    }
    on_key(i, done);
  }
};

Result<std::unique_ptr<KvLink>> KvLink::Create(KvWorker* kv, TierCodec codec, SendPathOptions send) {
  if (kv == nullptr) return Status::InvalidArgument("kv link: no KvWorker");
  auto link = std::unique_ptr<KvLink>(new KvLink(kv, std::move(codec), send));
  if (link->codec_.compressed) {
    GEOMX_ASSIGN_OR_RETURN(link->encoder_, LinkEncoder::Create(link->codec_.push));
  }
  if (send.dgt) {
    if (link->codec_.compressed) {
      return Status::InvalidArgument("kv link: dgt sends dense blocks; this tier is compressed");
    }
    GEOMX_RETURN_IF_ERROR(ValidateDgtLinkOptions(*send.dgt));
    link->dgt_ = std::make_unique<DgtSender>(kv, *send.dgt, send.counters);
  }
  if (send.p3) {
    link->sender_ = std::make_unique<PrioritySender>(PrioritySenderOptions{send.max_in_flight_bytes});
  }
  return link;
}

KvLink::KvLink(KvWorker* kv, TierCodec codec, SendPathOptions send)
    : kv_(kv), codec_(std::move(codec)), send_(send) {}

KvLink::~KvLink() {
  sender_.reset();  // drops queued slices, waits for the ones handed out to be released
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return in_flight_ == 0; });
}

Status KvLink::SetRelay(AggregateSink* relay) {
  if (codec_.compressed || sender_ || dgt_) {
    return Status::FailedPrecondition("kv link: a relay (TSEngine) takes dense slices one by one; this link "
                                      "compresses, or has P3 or DGT");
  }
  relay_ = relay;
  return Status::Ok();
}

void KvLink::Stop() {
  if (sender_) sender_->Stop();
}

void KvLink::Send(RawRequest request, RawDone done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++in_flight_;
  }
  kv_->SendRaw(std::move(request), [this, done = std::move(done)](Status s, std::vector<Bytes> values) {
    done(std::move(s), std::move(values));
    Finished();
  });
}

void KvLink::Finished() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--in_flight_ == 0) idle_.notify_all();
}

Result<Bytes> KvLink::EncodeSlice(uint64_t wire_key, std::span<const float> values) {
  if (encoder_) return encoder_->Encode(wire_key, values);
  return Bytes::Copy(values.data(), values.size_bytes());
}

Status KvLink::DecodeInto(const Bytes& value, std::span<float> out) const {
  if (codec_.compressed) return DecodeFrame(value, out);
  if (value.size() != out.size_bytes()) {
    return Status::DataLoss("dense answer of " + std::to_string(value.size()) + " bytes, expected " +
                            std::to_string(out.size()) + " floats");
  }
  if (!out.empty()) std::memcpy(out.data(), value.data(), value.size());
  return Status::Ok();
}

void KvLink::Start(Command command, std::span<const uint64_t> keys, std::span<const float* const> values,
                   std::span<float* const> outs, int64_t round, int num_merged, KeyDone on_key) {
  const bool pushes = command != Command::kPull;
  const bool pulls = command != Command::kPush;
  const KeyLayout& layout = kv_->layout();
  Status error;
  if (pushes && values.size() != keys.size()) error = Status::InvalidArgument("kv link: keys and values differ");
  if (pulls && outs.size() != keys.size()) error = Status::InvalidArgument("kv link: keys and outputs differ");
  for (size_t i = 0; i < keys.size() && error.ok(); ++i) {
    if (!layout.contains(keys[i])) {
      error = Status::InvalidArgument("key " + std::to_string(keys[i]) + " is not in the tier's layout");
    }
  }
  if (!error.ok()) {
    for (size_t i = 0; i < keys.size(); ++i) on_key(i, error);
    return;
  }
  auto call = std::make_shared<Call>();
  call->on_key = std::move(on_key);
  call->remaining.resize(keys.size());
  call->errors.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) call->remaining[i] = layout.slices(keys[i]).size();

  struct Target {
    size_t key_index;
    float* out;  // null for a push
    uint64_t length;
  };
  RawRequest grouped;  // without P3: every slice in one request
  std::vector<Target> grouped_targets;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (call->remaining[i] == 0) {  // a key of no elements: nothing to send
      call->on_key(i, Status::Ok());
      continue;
    }
    for (const KeySlice& s : layout.slices(keys[i])) {
      RawRequest req;
      req.command = command;
      req.codec = codec_.compressed ? kCompressedCodec : "";
      req.round = round;
      req.num_merged = num_merged;
      req.wire_keys = {s.wire_key};
      if (pushes) {
        Result<Bytes> payload = EncodeSlice(s.wire_key, std::span<const float>(values[i] + s.offset, s.length));
        if (!payload.ok()) {
          call->SliceDone(i, payload.status());
          continue;
        }
        req.payloads = {std::move(payload).value()};
      }
      const Target target{i, pulls ? outs[i] + s.offset : nullptr, s.length};
      if (relay_ != nullptr && command == Command::kPushPull && round >= 0) {
        relay_->OnComplete(s.wire_key, round, std::move(req.payloads[0]), num_merged,
                           [this, call, target](Status st, Bytes value) {
                             if (st.ok()) st = DecodeInto(value, std::span<float>(target.out, target.length));
                             call->SliceDone(target.key_index, st);
                           });
        continue;
      }
      if (!sender_) {
        grouped.command = req.command;
        grouped.codec = req.codec;
        grouped.round = round;
        grouped.num_merged = num_merged;
        grouped.wire_keys.push_back(s.wire_key);
        if (pushes) grouped.payloads.push_back(std::move(req.payloads[0]));
        grouped_targets.push_back(target);
        continue;
      }
      auto send = [this, call, target, req = std::move(req)](PrioritySender::Release release) mutable {
        Send(std::move(req), [this, call, target, release = std::move(release)](Status st, std::vector<Bytes> v) {
          if (st.ok() && target.out != nullptr) {
            st = v.size() == 1 ? DecodeInto(v[0], std::span<float>(target.out, target.length))
                               : Status::DataLoss("not one value for one slice");
          }
          call->SliceDone(target.key_index, st);
          release();
        });
      };
      const int64_t priority = -static_cast<int64_t>(keys[i]);
      if (!sender_->Enqueue(priority, s.length * sizeof(float), std::move(send))) {
        call->SliceDone(i, Status::Cancelled("kv link: the P3 send queue is stopped"));
      }
    }
  }
  if (sender_ || grouped.wire_keys.empty()) return;
  Send(std::move(grouped), [this, call, targets = std::move(grouped_targets)](Status st, std::vector<Bytes> v) {
    if (st.ok() && v.size() != targets.size() && !targets.empty() && targets[0].out != nullptr) {
      st = Status::DataLoss("the tier answered " + std::to_string(v.size()) + " values for " +
                            std::to_string(targets.size()) + " slices");
    }
    for (size_t j = 0; j < targets.size(); ++j) {
      Status slice = st;
      if (slice.ok() && targets[j].out != nullptr) {
        slice = DecodeInto(v[j], std::span<float>(targets[j].out, targets[j].length))
                    .WithContext("answer for slice " + std::to_string(j));
      }
      call->SliceDone(targets[j].key_index, slice);
    }
  });
}

Status KvLink::Blocking(Command command, std::span<const uint64_t> keys, std::span<const float* const> values,
                        std::span<float* const> outs, int64_t round, int num_merged) {
  // The plain dense case is KvWorker's own call (one copy, answers written in place).
  if (!codec_.compressed && !sender_ && !relay_ && num_merged == 1) {
    switch (command) {
      case Command::kPush: return kv_->Wait(kv_->Push(keys, values, round));
      case Command::kPull: return kv_->Wait(kv_->Pull(keys, outs, round));
      default: return kv_->Wait(kv_->PushPull(keys, values, outs, round));
    }
  }
  struct Latch {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
    Status first;
  };
  auto latch = std::make_shared<Latch>();
  latch->left = keys.size();
  Start(command, keys, values, outs, round, num_merged, [latch](size_t, Status s) {
    std::lock_guard<std::mutex> lock(latch->mu);
    if (!s.ok() && latch->first.ok()) latch->first = s;
    if (--latch->left == 0) latch->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(latch->mu);
  latch->cv.wait(lock, [&] { return latch->left == 0; });
  return latch->first;
}

Status KvLink::Push(std::span<const uint64_t> keys, std::span<const float* const> values, int64_t round,
                    int num_merged) {
  return Blocking(Command::kPush, keys, values, {}, round, num_merged);
}

Status KvLink::Pull(std::span<const uint64_t> keys, std::span<float* const> outs, int64_t round) {
  return Blocking(Command::kPull, keys, {}, outs, round, 1);
}

Status KvLink::PushPull(std::span<const uint64_t> keys, std::span<const float* const> values,
                        std::span<float* const> outs, int64_t round, int num_merged) {
  return Blocking(Command::kPushPull, keys, values, outs, round, num_merged);
}

Status KvLink::PushPull(std::span<const uint64_t> keys, std::span<const Bytes> values, std::span<float* const> outs,
                        int64_t round, int num_merged) {
  if (!codec_.compressed && !sender_ && !relay_ && num_merged == 1) {
    return kv_->Wait(kv_->PushPull(keys, values, outs, round));  // checks the sizes itself
  }
  if (values.size() != keys.size()) return Status::InvalidArgument("kv link: keys and values differ");
  std::vector<const float*> in(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (layout().contains(keys[i]) && values[i].size() != layout().length(keys[i]) * sizeof(float)) {
      return Status::InvalidArgument("kv link: key " + std::to_string(keys[i]) + " has " +
                                     std::to_string(layout().length(keys[i])) + " floats, got " +
                                     std::to_string(values[i].size()) + " bytes");
    }
    in[i] = reinterpret_cast<const float*>(values[i].data());
  }
  return Blocking(Command::kPushPull, keys, in, outs, round, num_merged);
}

void KvLink::PushPullAsync(std::span<const uint64_t> keys, std::span<const float* const> values,
                           std::span<float* const> outs, int64_t round, KeyDone on_key) {
  Start(Command::kPushPull, keys, values, outs, round, 1, std::move(on_key));
}

void KvLink::PushPullSlice(uint64_t wire_key, std::span<const float> values, int64_t round, int num_merged,
                           SliceDone done) {
  const KeySlice* s = kv_->layout().FindWireKey(wire_key);
  if (s == nullptr || s->length != values.size()) {
    return done(Status::FailedPrecondition("wire key " + std::to_string(wire_key) + " (" +
                                           std::to_string(values.size()) + " values) does not match tier " +
                                           kv_->postoffice()->spec().name +
                                           "'s layout: build both layouts from the same keys and split_bytes"),
                {});
  }
  if (dgt_ != nullptr) {
    Result<DgtSender::Push> begun = dgt_->Begin(wire_key, values, round, num_merged);
    if (!begun.ok()) return done(begun.status(), {});
    auto push = std::make_shared<DgtSender::Push>(std::move(begun).value());
    RawRequest req = push->request;
    Send(std::move(req), [this, push, done = std::move(done)](Status st, std::vector<Bytes> v) {
      if (!st.ok()) return done(st, {});
      Result<std::vector<float>> out = dgt_->Finish(*push, v);
      if (!out.ok()) return done(out.status(), {});
      done(Status::Ok(), std::move(out).value());
    });
    // TCP-priority: the channel messages after the reliable request (Finish does not read push->low). A van that
    // cannot send them is stopping; the deadline closes the round without them.
    if (Status s = dgt_->SendLow(push.get()); !s.ok()) GEOMX_LOG(kWarning) << s.ToString();
    return;
  }
  Result<Bytes> payload = EncodeSlice(wire_key, values);
  if (!payload.ok()) return done(payload.status(), {});
  RawRequest req;
  req.command = Command::kPushPull;
  req.codec = codec_.compressed ? kCompressedCodec : "";
  req.round = round;
  req.num_merged = num_merged;
  req.wire_keys = {wire_key};
  req.payloads = {std::move(payload).value()};
  const uint64_t length = s->length;
  Send(std::move(req), [this, length, done = std::move(done)](Status st, std::vector<Bytes> v) {
    std::vector<float> out(length);
    if (st.ok()) st = v.size() == 1 ? DecodeInto(v[0], out) : Status::DataLoss("not one value for one slice");
    done(st, st.ok() ? std::move(out) : std::vector<float>());
  });
}

void KvLink::PullSlice(uint64_t wire_key, int64_t round, SliceDone done) {
  const KeySlice* s = kv_->layout().FindWireKey(wire_key);
  if (s == nullptr) {
    return done(Status::FailedPrecondition("wire key " + std::to_string(wire_key) + " is not in tier " +
                                           kv_->postoffice()->spec().name + "'s layout"),
                {});
  }
  RawRequest req;
  req.command = Command::kPull;
  req.codec = codec_.compressed ? kCompressedCodec : "";
  req.round = round;
  req.wire_keys = {wire_key};
  const uint64_t length = s->length;
  Send(std::move(req), [this, length, done = std::move(done)](Status st, std::vector<Bytes> v) {
    std::vector<float> out(length);
    if (st.ok()) st = v.size() == 1 ? DecodeInto(v[0], out) : Status::DataLoss("not one value for one slice");
    done(st, st.ok() ? std::move(out) : std::vector<float>());
  });
}

void KvLink::SendRaw(RawRequest request, RawDone done) { Send(std::move(request), std::move(done)); }

// Blocking: the caller waits, so the link cannot go away under the request; KvWorker's own call does the rest.
Result<std::vector<Bytes>> KvLink::RequestRaw(RawRequest request) { return kv_->RequestRaw(std::move(request)); }

}  // namespace geomx::comm
