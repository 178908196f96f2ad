#include "comm/handlers/async_aggregator.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "comm/codec.h"
#include "comm/handlers/request_checks.h"
#include "comm/kv_worker.h"
#include "comm/postoffice.h"
#include "engine/base/logging.h"

namespace geomx::comm {

// One sender's decoded push of one key.
struct AsyncAggregator::Update {
  int sender = 0;
  int64_t round = 0;
  int num_merged = 1;
  std::vector<float> sum;
  Waiter waiter;
};

struct AsyncAggregator::KeyState {
  int64_t version = 0;
  std::vector<int64_t> read;          // per sender: the version it last received
  std::vector<int64_t> last_round;    // per sender: its latest pushed round (applied or waiting); -1 none
  std::vector<int64_t> last_ts;       // per sender: timestamp of that push (duplicate deliveries)
  std::vector<bool> done;             // per sender: its update of last_round was applied
  std::vector<std::optional<Update>> waiting;  // per sender: an update held back by the bound
  std::vector<Waiter> init_waiters;   // round kInitRound pulls before the initial weights
};

Result<std::unique_ptr<AsyncAggregator>> AsyncAggregator::Create(KeyLayout layout, AsyncAggregatorOptions options,
                                                                  AsyncSink* sink) {
  if (options.senders.empty()) return Status::InvalidArgument("async aggregator: no senders");
  if (sink == nullptr) return Status::InvalidArgument("async aggregator: no sink");
  const int n = static_cast<int>(options.senders.size());
  if (options.max_staleness < 0) {
    return Status::InvalidArgument("async aggregator: max_staleness must be >= 0, got " +
                                   std::to_string(options.max_staleness));
  }
  if (options.max_staleness > 0 && options.max_staleness < n - 1) {
    return Status::InvalidArgument(
        "async aggregator: max_staleness " + std::to_string(options.max_staleness) + " cannot be kept with " +
        std::to_string(n) + " senders: updates that all start from the same weights are applied one after the "
        "other, so the last is " + std::to_string(n - 1) + " stale; use at least " + std::to_string(n - 1) +
        " (or 0: no bound)");
  }
  std::unique_ptr<LinkEncoder> answers;
  if (options.tier.compressed) {
    if (options.reducer == "sum") options.reducer = "gx_sum";
    GEOMX_ASSIGN_OR_RETURN(answers, LinkEncoder::Create(options.tier.answer));
  }
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<Reducer> probe, MakeReducer(options.reducer, ReducerConfig{}));
  std::string codec(probe->codec());
  return std::unique_ptr<AsyncAggregator>(
      new AsyncAggregator(std::move(layout), std::move(options), sink, std::move(codec), std::move(answers)));
}

AsyncAggregator::AsyncAggregator(KeyLayout layout, AsyncAggregatorOptions options, AsyncSink* sink,
                                 std::string codec, std::unique_ptr<LinkEncoder> answers)
    : layout_(std::move(layout)),
      options_(std::move(options)),
      sink_(sink),
      codec_(std::move(codec)),
      answers_(std::move(answers)) {
  stats_.applied_by_sender.assign(options_.senders.size(), 0);
}

Result<Bytes> AsyncAggregator::Outgoing(uint64_t wire_key, Result<Bytes> dense) {
  if (!dense.ok() || !answers_) return dense;
  const KeySlice* s = layout_.FindWireKey(wire_key);
  if (dense->size() != s->length * sizeof(float)) {
    return Status::Internal("the sink returned " + std::to_string(dense->size()) + " bytes, expected " +
                            std::to_string(s->length) + " dense floats");
  }
  return answers_->Encode(wire_key, std::span<const float>(dense->as<float>(), s->length));
}

AsyncAggregator::~AsyncAggregator() = default;

void AsyncAggregator::Handle(const KvRequest& req, KvServer& server) {
  const Meta& meta = req.meta;
  if (AnswerUndispatchable(req, server, options_.on_control, codec_, options_.reducer)) return;
  if (meta.command == Command::kPull) return HandlePull(req, server);
  if (meta.round == kInitRound) return HandleInitPush(req, server);
  HandlePush(req, server);
}

Status AsyncAggregator::CheckKey(const KvRequest& req, size_t i, int my_rank) const {
  return CheckRequestKey(layout_, req, i, my_rank, codec_);
}

// One contribution through the reducer: validates the payload and yields it as dense f32 of the slice's length.
Result<std::vector<float>> AsyncAggregator::Decode(uint64_t wire_key, const Bytes& payload) const {
  const KeySlice* s = layout_.FindWireKey(wire_key);
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<Reducer> r, MakeReducer(options_.reducer, ReducerConfig{s->length}));
  GEOMX_RETURN_IF_ERROR(r->Validate(payload));
  r->Combine(0, payload);
  GEOMX_ASSIGN_OR_RETURN(Bytes dense, r->Finish());
  if (dense.size() != s->length * sizeof(float)) {
    return Status::DataLoss("decoded " + std::to_string(dense.size()) + " bytes, expected " +
                            std::to_string(s->length) + " floats");
  }
  std::vector<float> out(s->length);
  if (!out.empty()) std::memcpy(out.data(), dense.data(), dense.size());
  return out;
}

int AsyncAggregator::SenderIndex(const KvRequest& req, KvServer& server) const {
  const NodeInfo* node = server.postoffice()->FindNode(req.meta.sender);
  if (node == nullptr) return -1;
  for (size_t i = 0; i < options_.senders.size(); ++i) {
    if (options_.senders[i] == node->party) return static_cast<int>(i);
  }
  return -1;
}

AsyncAggregator::KeyState& AsyncAggregator::State(uint64_t wire_key) {
  KeyState& ks = keys_[wire_key];
  if (ks.read.empty()) {
    const size_t n = options_.senders.size();
    ks.read.assign(n, 0);
    ks.last_round.assign(n, -1);
    ks.last_ts.assign(n, -1);
    ks.done.assign(n, false);
    ks.waiting.resize(n);
  }
  return ks;
}

bool AsyncAggregator::Admissible(const KeyState& ks, int sender) const {
  if (options_.max_staleness <= 0) return true;
  // After the update: version v + 1, and the other active senders must still fit, most stale first.
  std::vector<int64_t> reads;
  for (size_t e = 0; e < ks.read.size(); ++e) {
    if (static_cast<int>(e) != sender && !ks.done[e]) reads.push_back(ks.read[e]);
  }
  std::sort(reads.begin(), reads.end());
  for (size_t i = 0; i < reads.size(); ++i) {
    if (ks.version + 1 + static_cast<int64_t>(i) - reads[i] > options_.max_staleness) return false;
  }
  return true;
}

void AsyncAggregator::ApplyOne(uint64_t wire_key, KeyState& ks, Update& u, ReadyList* ready) {
  const int d = u.sender;
  const int64_t staleness = ks.version - ks.read[d];
  bool ahead = false;
  for (size_t e = 0; e < ks.last_round.size(); ++e) {
    if (static_cast<int>(e) != d && !ks.done[e] && ks.last_round[e] < u.round) ahead = true;
  }
  Result<Bytes> value = Outgoing(wire_key, sink_->Apply(wire_key, d, u.round, u.sum, u.num_merged));
  if (!value.ok()) {
    // Not applied: the sender gets the error (its training fails); the version and its read stay.
    Resolve(u.waiter, value.status().WithContext(KeyText(wire_key) + ", round " + std::to_string(u.round) + " from " +
                                                 options_.senders[d]),
            Bytes(), ready);
    return;
  }
  ++ks.version;
  ks.read[d] = ks.version;
  if (options_.last_round >= 0 && u.round >= options_.last_round) ks.done[d] = true;
  ++stats_.applied;
  ++stats_.applied_by_sender[d];
  ++stats_.staleness_histogram[staleness];
  stats_.max_staleness = std::max(stats_.max_staleness, staleness);
  if (ahead) ++stats_.ahead_of_others;
  Resolve(u.waiter, Status::Ok(), *value, ready);
}

void AsyncAggregator::ApplyAndRelease(uint64_t wire_key, KeyState& ks, Update u, ReadyList* ready) {
  ApplyOne(wire_key, ks, u, ready);
  Release(wire_key, ks, ready);
}

void AsyncAggregator::Release(uint64_t wire_key, KeyState& ks, ReadyList* ready) {
  for (;;) {
    int best = -1;
    for (size_t e = 0; e < ks.waiting.size(); ++e) {
      if (!ks.waiting[e] || !Admissible(ks, static_cast<int>(e))) continue;
      if (best < 0 || ks.read[e] < ks.read[best]) best = static_cast<int>(e);
    }
    if (best < 0) return;
    Update next = std::move(*ks.waiting[best]);
    ks.waiting[best].reset();
    ApplyOne(wire_key, ks, next, ready);
  }
}

void AsyncAggregator::HandlePush(const KvRequest& req, KvServer& server) {
  const Meta& meta = req.meta;
  Postoffice* po = server.postoffice();
  const int my_rank = po->my_rank();
  const std::string who = po->Describe(meta.sender);
  const std::string at = ", round " + std::to_string(meta.round);
  Result<int> merged = ParseNumMerged(meta.body);
  if (!merged.ok()) return server.Respond(req, {}, merged.status());
  const int d = SenderIndex(req, server);
  if (d < 0) {
    return server.Respond(req, {}, Status::InvalidArgument("push" + at + " from " + who +
                                                           ": not one of the data centres whose updates this "
                                                           "server applies"));
  }
  if (options_.last_round >= 0 && meta.round > options_.last_round) {
    return server.Respond(req, {}, Status::InvalidArgument("push" + at + " from " + who + ": the job has rounds 0.." +
                                                           std::to_string(options_.last_round)));
  }
  if (meta.keys.empty()) return server.Respond(req, {});

  // Validate and decode every key before anything changes (a refused request changes nothing).
  std::vector<std::vector<float>> sums(meta.keys.size());
  for (size_t i = 0; i < meta.keys.size(); ++i) {
    Status s = CheckKey(req, i, my_rank);
    if (!s.ok()) return server.Respond(req, {}, s);
    Result<std::vector<float>> sum = Decode(meta.keys[i], req.data[i]);
    if (!sum.ok()) return server.Respond(req, {}, sum.status().WithContext(KeyText(meta.keys[i]) + at + " from " + who));
    sums[i] = std::move(*sum);
  }
  ReadyList ready;
  Status error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < meta.keys.size() && error.ok(); ++i) {
      KeyState& ks = State(meta.keys[i]);
      if (ks.last_ts[d] == meta.timestamp && ks.last_round[d] == meta.round) {
        GEOMX_LOG(kDebug) << "async aggregator: ignored a duplicate delivery of ts=" << meta.timestamp << " from "
                          << who;
        return;
      }
      if (!sink_->HasWeights(meta.keys[i])) {
        error = Status::FailedPrecondition(KeyText(meta.keys[i]) + at + ": no initial weights yet");
      } else if (meta.round <= ks.last_round[d]) {
        error = Status::InvalidArgument(KeyText(meta.keys[i]) + at + ": late or repeated push from " + who +
                                        " (its latest round is " + std::to_string(ks.last_round[d]) + ")");
      } else if (ks.waiting[d]) {
        error = Status::InvalidArgument(KeyText(meta.keys[i]) + at + ": push from " + who + " while its round " +
                                        std::to_string(ks.waiting[d]->round) + " still waits");
      }
    }
    if (error.ok()) {
      auto pending = NewPending(req, server);
      for (size_t i = 0; i < meta.keys.size(); ++i) {
        const uint64_t wk = meta.keys[i];
        KeyState& ks = State(wk);
        ks.last_round[d] = meta.round;
        ks.last_ts[d] = meta.timestamp;
        Update u{d, meta.round, *merged, std::move(sums[i]), Waiter{pending, i}};
        if (Admissible(ks, d)) {
          ApplyAndRelease(wk, ks, std::move(u), &ready);
        } else {
          ++stats_.waited;
          ks.waiting[d] = std::move(u);
        }
      }
    }
  }
  if (!error.ok()) return server.Respond(req, {}, error);
  RespondAll(ready);
}

void AsyncAggregator::HandlePull(const KvRequest& req, KvServer& server) {
  const Meta& meta = req.meta;
  const int my_rank = server.postoffice()->my_rank();
  for (size_t i = 0; i < meta.keys.size(); ++i) {
    Status s = CheckKey(req, i, my_rank);
    if (!s.ok()) return server.Respond(req, {}, s);
  }
  const int d = SenderIndex(req, server);
  ReadyList ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto pending = NewPending(req, server);
    if (meta.keys.empty()) ready.push_back(pending);
    for (size_t i = 0; i < meta.keys.size(); ++i) {
      const uint64_t wk = meta.keys[i];
      KeyState& ks = State(wk);
      const Waiter w{pending, i};
      if (!sink_->HasWeights(wk)) {
        if (meta.round == kInitRound) {
          ks.init_waiters.push_back(w);
        } else {
          Resolve(w, Status::FailedPrecondition(KeyText(wk) + ": no initial weights yet"), Bytes(), &ready);
        }
        continue;
      }
      Result<Bytes> value = Outgoing(wk, sink_->Read(wk, d));
      Resolve(w, value.status(), value.ok() ? *value : Bytes(), &ready);
      if (value.ok() && d >= 0) {
        ks.read[d] = ks.version;
        Release(wk, ks, &ready);  // a fresher read may let a held-back update through
      }
    }
  }
  RespondAll(ready);
}

void AsyncAggregator::HandleInitPush(const KvRequest& req, KvServer& server) {
  const Meta& meta = req.meta;
  const int my_rank = server.postoffice()->my_rank();
  std::vector<std::vector<float>> values(meta.keys.size());
  for (size_t i = 0; i < meta.keys.size(); ++i) {
    Status s = CheckKey(req, i, my_rank);
    if (!s.ok()) return server.Respond(req, {}, s);
    Result<std::vector<float>> v = Decode(meta.keys[i], req.data[i]);
    if (!v.ok()) return server.Respond(req, {}, v.status().WithContext(KeyText(meta.keys[i]) + ", initial value"));
    values[i] = std::move(*v);
  }
  ReadyList ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < meta.keys.size(); ++i) {
      const uint64_t wk = meta.keys[i];
      if (!sink_->Init(wk, values[i])) {
        GEOMX_LOG(kDebug) << "async aggregator: " << KeyText(wk) << " already has weights; init push ignored";
      }
      auto it = keys_.find(wk);
      if (it == keys_.end()) continue;
      std::vector<Waiter> waiters = std::move(it->second.init_waiters);
      it->second.init_waiters.clear();
      for (const Waiter& w : waiters) {
        const int d = SenderIndex(w.pending->req, *w.pending->server);
        Result<Bytes> value = Outgoing(wk, sink_->Read(wk, d));
        if (value.ok() && d >= 0) it->second.read[d] = it->second.version;
        Resolve(w, value.status(), value.ok() ? *value : Bytes(), &ready);
      }
    }
  }
  RespondAll(ready);
  if (meta.command == Command::kPushPull) return server.Respond(req, req.data);
  server.Respond(req, {});
}

AsyncAggregatorStats AsyncAggregator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t AsyncAggregator::num_waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [wk, ks] : keys_) {
    for (const auto& w : ks.waiting) n += w.has_value() ? 1 : 0;
  }
  return n;
}

}  // namespace geomx::comm
