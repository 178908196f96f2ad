#include "comm/handlers/sync_aggregator.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstring>
#include <utility>

#include "comm/codec.h"
#include "comm/compression/compressor.h"
#include "comm/handlers/request_checks.h"
#include "comm/kv_worker.h"
#include "comm/postoffice.h"
#include "engine/base/logging.h"

namespace geomx::comm {

struct SyncAggregator::RoundState {
  std::unique_ptr<Reducer> reducer;  // null until the first push (a pull may open the round first)
  std::map<int, int64_t> pushers;    // sender id -> ts of its push
  int contributors = 0;              // sum of num_merged
  std::vector<Waiter> waiters;       // pushes, pushpulls and pulls answered at completion
  bool completing = false;           // handed to CompleteRound (exactly once)
};

struct SyncAggregator::KeyState {
  int64_t completed = kInitRound;    // latest completed round; kInitRound: none yet
  int64_t stored_round = kInitRound - 1;
  std::optional<Bytes> stored;
  std::map<int64_t, RoundState> rounds;
  std::vector<Waiter> init_waiters;  // round kInitRound pulls waiting for a value
  bool fetching = false;
  std::map<int, int64_t> last_push_ts;  // sender id -> ts of its latest push (recognises late duplicates)
};

Result<std::unique_ptr<SyncAggregator>> SyncAggregator::Create(KeyLayout layout, SyncAggregatorOptions options,
                                                                AggregateSink* sink) {
  if (options.expected_senders < 1) return Status::InvalidArgument("sync aggregator: expected_senders must be >= 1");
  if (options.max_open_rounds < 1) return Status::InvalidArgument("sync aggregator: max_open_rounds must be >= 1");
  if (sink == nullptr) return Status::InvalidArgument("sync aggregator: no sink");
  std::unique_ptr<LinkEncoder> answers;
  if (options.tier.compressed) {
    if (options.reducer == "sum") options.reducer = "gx_sum";
    if (options.reducer != "gx_sum") {
      return Status::InvalidArgument("sync aggregator: a compressed tier aggregates dense values (reducer sum), "
                                     "not '" + options.reducer + "'");
    }
    GEOMX_ASSIGN_OR_RETURN(answers, LinkEncoder::Create(options.tier.answer));
  }
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<Reducer> probe, MakeReducer(options.reducer, ReducerConfig{}));
  std::string codec(probe->codec());
  return std::unique_ptr<SyncAggregator>(
      new SyncAggregator(std::move(layout), std::move(options), sink, std::move(codec), std::move(answers)));
}

SyncAggregator::SyncAggregator(KeyLayout layout, SyncAggregatorOptions options, AggregateSink* sink,
                               std::string codec, std::unique_ptr<LinkEncoder> answers)
    : layout_(std::move(layout)),
      options_(std::move(options)),
      sink_(sink),
      codec_(std::move(codec)),
      answers_(std::move(answers)) {}

Result<Bytes> SyncAggregator::Outgoing(uint64_t wire_key, Bytes dense, bool initial) {
  if (!answers_) return dense;
  const KeySlice* s = layout_.FindWireKey(wire_key);
  if (dense.size() != s->length * sizeof(float)) {
    return Status::Internal("the sink returned " + std::to_string(dense.size()) + " bytes, expected " +
                            std::to_string(s->length) + " dense floats");
  }
  const std::span<const float> values(dense.as<float>(), s->length);
  if (initial) return RawFrame(values);
  return answers_->Encode(wire_key, values);
}

SyncAggregator::~SyncAggregator() = default;

void SyncAggregator::Handle(const KvRequest& req, KvServer& server) {
  const Meta& meta = req.meta;
  if (HandleJoin(req, server)) return;
  if (AnswerUndispatchable(req, server, options_.on_control, codec_, options_.reducer)) return;
  if (meta.command == Command::kPull) return HandlePull(req, server);
  if (meta.round == kInitRound) return HandleInitPush(req, server);
  HandlePush(req, server);
}

Status SyncAggregator::CheckKey(const KvRequest& req, size_t i, int my_rank) const {
  return CheckRequestKey(layout_, req, i, my_rank, codec_);
}

void SyncAggregator::HandlePush(const KvRequest& req, KvServer& server) {
  const Meta& meta = req.meta;
  Postoffice* po = server.postoffice();
  const int my_rank = po->my_rank();
  const NodeInfo* sender = po->FindNode(meta.sender);
  const int contributor = sender ? sender->rank : meta.sender;
  const std::string who = po->Describe(meta.sender);
  const std::string at = ", round " + std::to_string(meta.round);
  Result<int> merged = ParseNumMerged(meta.body);
  if (!merged.ok()) return server.Respond(req, {}, merged.status());
  Result<std::optional<double>> loss = ParseLoss(meta.body);
  if (!loss.ok()) return server.Respond(req, {}, loss.status());
  Result<std::vector<int>> covers = ParseCovers(meta.body);
  if (!covers.ok()) return server.Respond(req, {}, covers.status());
  if (!covers->empty()) {
    Status bad = CheckCovers(*covers, meta.sender, po);
    if (!bad.ok()) return server.Respond(req, {}, bad.WithContext("relayed push from " + who + at));
  }

  std::vector<uint64_t> complete;
  std::shared_ptr<Pending> pending;
  Status error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::unique_ptr<Reducer>> fresh(meta.keys.size());
    for (size_t i = 0; i < meta.keys.size() && error.ok(); ++i) {
      const uint64_t wk = meta.keys[i];
      error = CheckKey(req, i, my_rank);
      if (!error.ok()) break;
      KeyState& ks = keys_[wk];
      for (int c : *covers) {
        if (Absent(c, meta.round)) {
          error = Status::FailedPrecondition(KeyText(wk) + at + ": " + who + " relays a contribution of " +
                                             po->Describe(c) + ", which is not expected in this round");
        }
      }
      if (!error.ok()) break;
      if (Absent(meta.sender, meta.round)) {
        error = Status::FailedPrecondition(KeyText(wk) + at + ": " + who + " is not expected in this round (it " +
                                           "was dropped from the tier, or rejoined for a later round)");
        break;
      }
      if (meta.round <= ks.completed) {
        auto last = ks.last_push_ts.find(meta.sender);
        if (last != ks.last_push_ts.end() && last->second == meta.timestamp) {  // delivered twice, answered once
          GEOMX_LOG(kDebug) << "sync aggregator: ignored a late duplicate of ts=" << meta.timestamp << " from " << who;
          return;
        }
        error = Status::InvalidArgument(KeyText(wk) + at + ": already completed (latest completed round " +
                                        std::to_string(ks.completed) + "): late or repeated push from " + who);
        break;
      }
      auto rit = ks.rounds.find(meta.round);
      RoundState* rs = rit == ks.rounds.end() ? nullptr : &rit->second;
      if (rs != nullptr) {
        auto pit = rs->pushers.find(meta.sender);
        if (pit != rs->pushers.end()) {
          if (pit->second == meta.timestamp) {  // the same request delivered twice: the first is answered
            GEOMX_LOG(kDebug) << "sync aggregator: ignored a duplicate delivery of ts=" << meta.timestamp
                              << " from " << who;
            return;
          }
          error = Status::InvalidArgument(KeyText(wk) + at + ": second push from " + who + " (ts " +
                                          std::to_string(pit->second) + " and " + std::to_string(meta.timestamp) +
                                          ")");
          break;
        }
        for (int c : *covers) {
          if (rs->pushers.count(c) != 0) {
            error = Status::InvalidArgument(KeyText(wk) + at + ": " + who + " relays a contribution of " +
                                            po->Describe(c) + ", which already pushed in this round");
          }
        }
        if (!error.ok()) break;
        if (rs->completing || Ready(*rs, meta.round)) {
          error = Status::InvalidArgument(KeyText(wk) + at + ": push from " + who + " beyond the " +
                                          std::to_string(ExpectedIn(meta.round)) + " expected senders");
          break;
        }
      } else if (static_cast<int>(ks.rounds.size()) >= options_.max_open_rounds) {
        error = Status::ResourceExhausted(KeyText(wk) + at + ": " + std::to_string(ks.rounds.size()) +
                                          " rounds already open (max_open_rounds)");
        break;
      }
      Reducer* reducer = rs != nullptr && rs->reducer ? rs->reducer.get() : nullptr;
      if (reducer == nullptr) {
        const KeySlice* s = layout_.FindWireKey(wk);
        Result<std::unique_ptr<Reducer>> made = MakeReducer(options_.reducer, ReducerConfig{s->length});
        GEOMX_CHECK(made.ok()) << made.status().ToString();
        fresh[i] = std::move(*made);
        reducer = fresh[i].get();
      }
      error = reducer->Validate(req.data[i]).WithContext(KeyText(wk) + at + " from " + who);
    }
    if (error.ok()) {
      if (loss->has_value() && meta.round > losses_reported_through_) losses_[meta.round][meta.sender] = **loss;
      pending = NewPending(req, server);
      for (size_t i = 0; i < meta.keys.size(); ++i) {
        const uint64_t wk = meta.keys[i];
        RoundState& rs = keys_[wk].rounds[meta.round];
        if (!rs.reducer) rs.reducer = std::move(fresh[i]);
        rs.pushers[meta.sender] = meta.timestamp;
        for (int c : *covers) rs.pushers[c] = kRelayedTs;
        keys_[wk].last_push_ts[meta.sender] = meta.timestamp;
        rs.reducer->Combine(contributor, req.data[i]);
        rs.contributors += *merged;
        rs.waiters.push_back({pending, i});
        if (!rs.completing && Ready(rs, meta.round)) {
          rs.completing = true;
          complete.push_back(wk);
        }
      }
    }
  }
  if (!error.ok()) return server.Respond(req, {}, error);
  if (meta.keys.empty()) return server.Respond(req, {});
  for (uint64_t wk : complete) CompleteRound(wk, meta.round);
}

Status SyncAggregator::CheckCovers(const std::vector<int>& covers, int sender, Postoffice* po) const {
  if (!options_.relayed_pushes) {
    return Status::InvalidArgument("this server takes no relayed pushes (field covers; TSEngine is off)");
  }
  for (int c : covers) {
    const NodeInfo* node = po->FindNode(c);
    if (c == sender || node == nullptr || node->role != NodeRole::kWorker) {
      return Status::InvalidArgument("covers node " + std::to_string(c) + ", which is not another worker of the "
                                     "tier");
    }
  }
  return Status::Ok();
}

bool SyncAggregator::Absent(int sender, int64_t round) const {
  auto it = absent_.find(sender);
  if (it == absent_.end()) return false;
  for (const auto& [from, to] : it->second) {
    if (round >= from && round < to) return true;
  }
  return false;
}

int SyncAggregator::ExpectedIn(int64_t round) const {
  int absent = 0;
  for (const auto& [sender, spans] : absent_) absent += Absent(sender, round) ? 1 : 0;
  return options_.expected_senders - absent;
}

bool SyncAggregator::Ready(const RoundState& rs, int64_t round) const {
  const int expected = ExpectedIn(round);
  if (!rs.reducer || expected < 1) return false;
  int alive = 0;
  for (const auto& [sender, ts] : rs.pushers) alive += Absent(sender, round) ? 0 : 1;
  return alive >= expected;
}

std::vector<std::pair<uint64_t, int64_t>> SyncAggregator::TakeReadyRounds() {
  std::vector<std::pair<uint64_t, int64_t>> complete;
  for (auto& [wk, ks] : keys_) {
    for (auto& [round, rs] : ks.rounds) {
      if (rs.completing || !Ready(rs, round)) continue;
      rs.completing = true;
      complete.emplace_back(wk, round);
    }
  }
  return complete;
}

void SyncAggregator::RemoveSender(int node_id) {
  std::vector<std::pair<uint64_t, int64_t>> complete;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<int64_t, int64_t>>& spans = absent_[node_id];
    for (const auto& span : spans) {
      if (span == std::make_pair(INT64_MIN, INT64_MAX)) return;  // removed already
    }
    spans.assign(1, {INT64_MIN, INT64_MAX});
    proposed_.erase(node_id);
    complete = TakeReadyRounds();
  }
  GEOMX_LOG(kInfo) << "sync aggregator: goes on without node " << node_id << "; " << complete.size()
                   << " open rounds complete now";
  for (const auto& [wk, round] : complete) CompleteRound(wk, round);
}

Result<int64_t> SyncAggregator::ProposeJoin(int node_id) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t last = kInitRound;  // the latest round that is completed, completing, or has a push of the node
  for (const auto& [wk, ks] : keys_) {
    last = std::max(last, ks.completed);
    for (const auto& [round, rs] : ks.rounds) {
      if (rs.completing || rs.pushers.count(node_id)) last = std::max(last, round);
    }
  }
  const int64_t from = last + 1;
  // Expected from `from` on: no round at or after it can complete without the node's push (or its commit).
  auto it = absent_.find(node_id);
  if (it != absent_.end()) {
    std::vector<std::pair<int64_t, int64_t>> kept;
    for (const auto& [a, b] : it->second) {
      if (a < from) kept.emplace_back(a, std::min(b, from));
    }
    it->second = std::move(kept);
  }
  proposed_[node_id] = from;
  return from;
}

Status SyncAggregator::CommitJoin(int node_id, int64_t round) {
  std::vector<std::pair<uint64_t, int64_t>> complete;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto p = proposed_.find(node_id);
    if (p == proposed_.end()) {
      return Status::FailedPrecondition("node " + std::to_string(node_id) + " commits a join it did not propose "
                                        "(or was lost since)");
    }
    if (round < p->second) {
      return Status::InvalidArgument("node " + std::to_string(node_id) + " joins at round " + std::to_string(round) +
                                     ", before round " + std::to_string(p->second) + " this server offered");
    }
    if (round > p->second) absent_[node_id].emplace_back(p->second, round);
    proposed_.erase(p);
    complete = TakeReadyRounds();
  }
  GEOMX_LOG(kInfo) << "sync aggregator: node " << node_id << " rejoins at round " << round << "; "
                   << complete.size() << " open rounds complete now";
  for (const auto& [wk, r] : complete) CompleteRound(wk, r);
  return Status::Ok();
}

bool SyncAggregator::HandleJoin(const KvRequest& req, KvServer& server) {
  if (req.meta.command != Command::kControl) return false;
  std::map<std::string, std::string> f;
  if (!DecodeFields(req.meta.body, &f).ok()) return false;
  const std::string& command = f["command"];
  if (command == kJoinCommand) {
    Result<int64_t> from = ProposeJoin(req.meta.sender);
    if (!from.ok()) server.RespondControl(req, from.status());
    else server.RespondControl(req, Status::Ok(), EncodeFields({{"round", std::to_string(*from)}}));
    return true;
  }
  if (command != kJoinAtCommand) return false;
  Result<int64_t> round = DecodeJoinRound(req.meta.body);
  server.RespondControl(req, round.ok() ? CommitJoin(req.meta.sender, *round) : round.status());
  return true;
}

Result<int64_t> SyncAggregator::DecodeJoinRound(const std::string& body) {
  std::map<std::string, std::string> f;
  GEOMX_RETURN_IF_ERROR(DecodeFields(body, &f));
  const std::string& text = f["round"];
  int64_t round = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), round);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || round < 0) {
    return Status::InvalidArgument("join: round '" + text + "' is not a round number");
  }
  return round;
}

void SyncAggregator::CompleteRound(uint64_t wire_key, int64_t round) {
  Result<Bytes> aggregate = Status::Internal("unset");
  int contributors = 0;
  std::optional<double> mean_loss;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RoundState& rs = keys_[wire_key].rounds[round];
    aggregate = rs.reducer->Finish();
    contributors = rs.contributors;
    auto losses = losses_.find(round);
    if (round > losses_reported_through_ && losses != losses_.end()) {
      double sum = 0;
      for (const auto& [sender, l] : losses->second) sum += l;
      mean_loss = sum / static_cast<double>(losses->second.size());
      losses_reported_through_ = round;
      losses_.erase(losses_.begin(), losses_.upper_bound(round));
    }
  }
  if (mean_loss) sink_->OnLoss(round, *mean_loss);
  if (!aggregate.ok()) return OnRoundDone(wire_key, round, aggregate.status(), Bytes());
  sink_->OnComplete(wire_key, round, std::move(*aggregate), contributors, [this, wire_key, round](Status s, Bytes v) {
    if (s.ok()) {
      Result<Bytes> out = Outgoing(wire_key, std::move(v), /*initial=*/false);
      if (!out.ok()) return OnRoundDone(wire_key, round, out.status(), Bytes());
      v = std::move(out).value();
    }
    OnRoundDone(wire_key, round, s, std::move(v));
  });
}

void SyncAggregator::OnRoundDone(uint64_t wire_key, int64_t round, const Status& status, Bytes value) {
  ReadyList ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    KeyState& ks = keys_[wire_key];
    auto rit = ks.rounds.find(round);
    if (rit == ks.rounds.end()) {
      GEOMX_LOG(kWarning) << "sync aggregator: " << KeyText(wire_key) << " round " << round
                          << " completed twice (the sink called done more than once)";
      return;
    }
    std::vector<Waiter> waiters = std::move(rit->second.waiters);
    ks.rounds.erase(rit);
    Status st = status;
    const KeySlice* s = layout_.FindWireKey(wire_key);
    if (st.ok() && codec_.empty() && value.size() != s->length * sizeof(float)) {
      st = Status::Internal("the sink returned " + std::to_string(value.size()) + " bytes, expected " +
                            std::to_string(s->length) + " floats");
    }
    if (st.ok()) {
      if (round > ks.stored_round) {
        ks.stored = value;
        ks.stored_round = round;
      }
      ks.completed = std::max(ks.completed, round);
      for (const Waiter& w : ks.init_waiters) Resolve(w, st, *ks.stored, &ready);
      ks.init_waiters.clear();
    } else {
      st = st.WithContext(KeyText(wire_key) + ", round " + std::to_string(round));
    }
    for (const Waiter& w : waiters) Resolve(w, st, value, &ready);
  }
  RespondAll(ready);
}

void SyncAggregator::HandlePull(const KvRequest& req, KvServer& server) {
  const Meta& meta = req.meta;
  const int my_rank = server.postoffice()->my_rank();
  ReadyList ready;
  std::vector<uint64_t> to_fetch;
  Status error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < meta.keys.size() && error.ok(); ++i) {
      error = CheckKey(req, i, my_rank);
      if (!error.ok() || meta.round == kInitRound) continue;
      auto kit = keys_.find(meta.keys[i]);
      if (kit == keys_.end()) continue;
      const KeyState& ks = kit->second;
      const bool answerable = meta.round <= ks.completed && ks.stored.has_value();
      if (!answerable && !ks.rounds.count(meta.round) &&
          static_cast<int>(ks.rounds.size()) >= options_.max_open_rounds) {
        error = Status::ResourceExhausted(KeyText(meta.keys[i]) + ", round " + std::to_string(meta.round) + ": " +
                                          std::to_string(ks.rounds.size()) + " rounds already open");
      }
    }
    if (error.ok()) {
      auto pending = NewPending(req, server);
      if (meta.keys.empty()) ready.push_back(pending);
      for (size_t i = 0; i < meta.keys.size(); ++i) {
        const uint64_t wk = meta.keys[i];
        KeyState& ks = keys_[wk];
        const Waiter w{pending, i};
        if (meta.round == kInitRound) {
          if (ks.stored.has_value()) {
            Resolve(w, Status::Ok(), *ks.stored, &ready);
          } else {
            ks.init_waiters.push_back(w);
            if (!ks.fetching) {
              ks.fetching = true;
              to_fetch.push_back(wk);
            }
          }
        } else if (meta.round <= ks.completed && ks.stored.has_value()) {
          Resolve(w, Status::Ok(), *ks.stored, &ready);
        } else {
          ks.rounds[meta.round].waiters.push_back(w);
        }
      }
    }
  }
  if (!error.ok()) return server.Respond(req, {}, error);
  RespondAll(ready);
  for (uint64_t wk : to_fetch) {
    const bool fetching = sink_->FetchInitial(wk, [this, wk](Status s, Bytes v) {
      if (s.ok()) {
        Result<Bytes> out = Outgoing(wk, std::move(v), /*initial=*/true);
        if (!out.ok()) return OnFetchDone(wk, out.status(), Bytes());
        v = std::move(out).value();
      }
      OnFetchDone(wk, s, std::move(v));
    });
    if (!fetching) {
      std::lock_guard<std::mutex> lock(mu_);
      keys_[wk].fetching = false;  // wait for an init push instead
    }
  }
}

void SyncAggregator::OnFetchDone(uint64_t wire_key, const Status& status, Bytes value) {
  ReadyList ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    KeyState& ks = keys_[wire_key];
    ks.fetching = false;
    Status st = status;
    const KeySlice* s = layout_.FindWireKey(wire_key);
    if (st.ok() && codec_.empty() && value.size() != s->length * sizeof(float)) {
      st = Status::DataLoss("initial value of " + KeyText(wire_key) + " has " + std::to_string(value.size()) +
                            " bytes, expected " + std::to_string(s->length) + " floats");
    }
    if (st.ok() && !ks.stored.has_value()) {
      ks.stored = std::move(value);
      ks.stored_round = kInitRound;
    }
    if (!st.ok()) st = st.WithContext("fetching the initial value of " + KeyText(wire_key));
    for (const Waiter& w : ks.init_waiters) Resolve(w, st, st.ok() ? *ks.stored : Bytes(), &ready);
    ks.init_waiters.clear();
  }
  RespondAll(ready);
}

void SyncAggregator::HandleInitPush(const KvRequest& req, KvServer& server) {
  const Meta& meta = req.meta;
  const int my_rank = server.postoffice()->my_rank();
  ReadyList ready;
  Status error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < meta.keys.size() && error.ok(); ++i) {
      error = CheckKey(req, i, my_rank);
      if (!error.ok()) break;
      const KeySlice* s = layout_.FindWireKey(meta.keys[i]);
      Result<std::unique_ptr<Reducer>> probe = MakeReducer(options_.reducer, ReducerConfig{s->length});
      GEOMX_CHECK(probe.ok()) << probe.status().ToString();
      error = (*probe)->Validate(req.data[i]).WithContext(KeyText(meta.keys[i]) + ", initial value");
    }
    if (error.ok()) {
      for (size_t i = 0; i < meta.keys.size(); ++i) {
        KeyState& ks = keys_[meta.keys[i]];
        ks.stored = req.data[i];
        ks.stored_round = std::max(ks.stored_round, kInitRound);
        for (const Waiter& w : ks.init_waiters) Resolve(w, Status::Ok(), req.data[i], &ready);
        ks.init_waiters.clear();
      }
    }
  }
  if (!error.ok()) return server.Respond(req, {}, error);
  RespondAll(ready);
  if (meta.command == Command::kPushPull) return server.Respond(req, req.data);
  server.Respond(req, {});
}

Status SyncAggregator::Restore(uint64_t wire_key, std::span<const float> values, int64_t round) {
  const KeySlice* s = layout_.FindWireKey(wire_key);
  if (s == nullptr || s->length != values.size()) {
    std::string why = "restore: ";
    why.append(KeyText(wire_key)).append(" with ").append(std::to_string(values.size())).append(" values: ");
    why.append(s == nullptr ? std::string("not a key of this layout")
                            : "the key has " + std::to_string(s->length) + " elements");
    return Status::InvalidArgument(why);
  }
  Bytes dense = Bytes::Copy(values.data(), values.size_bytes());
  GEOMX_ASSIGN_OR_RETURN(Bytes stored, Outgoing(wire_key, std::move(dense), /*initial=*/true));
  std::lock_guard<std::mutex> lock(mu_);
  KeyState& ks = keys_[wire_key];
  ks.stored = std::move(stored);
  ks.stored_round = std::max(ks.stored_round, round);
  ks.completed = std::max(ks.completed, round);
  return Status::Ok();
}

std::optional<Bytes> SyncAggregator::Stored(uint64_t wire_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(wire_key);
  if (it == keys_.end()) return std::nullopt;
  return it->second.stored;
}

std::optional<std::vector<float>> SyncAggregator::StoredValues(uint64_t wire_key) const {
  std::optional<Bytes> stored = Stored(wire_key);
  const KeySlice* s = layout_.FindWireKey(wire_key);
  if (!stored || s == nullptr) return std::nullopt;
  std::vector<float> out(s->length);
  if (codec_ == kCompressedCodec) {
    if (!DecodeFrame(*stored, out).ok()) return std::nullopt;
  } else if (codec_.empty() && stored->size() == out.size() * sizeof(float)) {
    if (!out.empty()) std::memcpy(out.data(), stored->data(), stored->size());
  } else {
    return std::nullopt;
  }
  return out;
}

size_t SyncAggregator::num_open_rounds() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [wk, ks] : keys_) n += ks.rounds.size();
  return n;
}

}  // namespace geomx::comm
