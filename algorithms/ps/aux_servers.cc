#include "algorithms/ps/aux_servers.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "comm/handlers/payloads.h"
#include "comm/handlers/reducer.h"
#include "comm/postoffice.h"

namespace geomx::ps {
namespace {

constexpr size_t kMaxWaitingPulls = 4096;  // per key: bounded memory against a flood of early pulls
constexpr size_t kDecisionRoundsKept = 64;

const KeyDef* DefOf(const KeySchema& schema, uint64_t wire_key) {
  return schema.Find(comm::KeyOfWireKey(wire_key));
}

std::string CodecOf(const std::string& reducer) {
  Result<std::unique_ptr<comm::Reducer>> r = comm::MakeReducer(reducer, comm::ReducerConfig{});
  return r.ok() ? std::string((*r)->codec()) : std::string();
}

// The reducers of the keys an aux server aggregates (aggregate keys and row-sparse pushes; with `local`, the keys
// a local server answers itself).
std::set<std::string> AggregatedReducers(const KeySchema& schema, bool local = false) {
  std::set<std::string> out;
  for (const KeyDef& k : schema.keys()) {
    if (local ? k.role == KeyRole::kLocal : k.role == KeyRole::kAggregate || k.layout == KeyLayoutKind::kRowSparse) {
      out.insert(k.reducer);
    }
  }
  return out;
}

// How an aux request is served. kLocal: by the local server's own aggregators (refused at the global tier).
enum class Route { kAggregator, kBoard, kLocal, kRefuse };

Route RouteOf(const KeyDef& k, comm::Command command, int64_t round) {
  const bool pull = command == comm::Command::kPull;
  if (k.role == KeyRole::kLocal) return pull || round == comm::kInitRound ? Route::kRefuse : Route::kLocal;
  if (k.role == KeyRole::kDecision) return pull || round == comm::kInitRound ? Route::kBoard : Route::kRefuse;
  if (k.layout == KeyLayoutKind::kRowSparse) {
    return pull || round == comm::kInitRound ? Route::kBoard : Route::kAggregator;
  }
  return Route::kAggregator;
}

}  // namespace

Result<Bytes> GlobalRule::OnAggregate(const KeyDef&, int64_t, Bytes aggregate, int, DecisionBoard&) {
  return aggregate;
}

Status GlobalRule::OnRows(const KeyDef&, int64_t, const std::vector<uint64_t>&, std::vector<float>*, int,
                          DecisionBoard&) {
  return Status::Ok();
}

bool GlobalRule::RowsAreValues(const KeyDef&) const { return false; }

namespace {

Status CheckRows(const KeyDef& key, const std::vector<uint64_t>& rows, size_t values) {
  if (values != rows.size() * key.row_width) {
    return Status::InvalidArgument("rows of " + key.name + ": " + std::to_string(values) + " values for " +
                                   std::to_string(rows.size()) + " rows of width " + std::to_string(key.row_width));
  }
  for (uint64_t row : rows) {
    if (row >= key.rows()) {
      return Status::InvalidArgument("row " + std::to_string(row) + " of " + key.name + " (" +
                                     std::to_string(key.rows()) + " rows)");
    }
  }
  return Status::Ok();
}

// Adds (or writes) `values` into `table` and returns the updated rows.
std::vector<float> MergeRows(const KeyDef& key, const std::vector<uint64_t>& rows, const std::vector<float>& values,
                             bool replace, std::vector<float>* table) {
  if (table->empty()) table->assign(key.elems, 0.0f);
  const uint64_t w = key.row_width;
  std::vector<float> updated(values.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    float* t = table->data() + rows[r] * w;
    const float* v = values.data() + r * w;
    for (uint64_t j = 0; j < w; ++j) t[j] = replace ? v[j] : t[j] + v[j];
  }
  for (size_t r = 0; r < rows.size(); ++r) std::copy_n(table->begin() + rows[r] * w, w, updated.begin() + r * w);
  return updated;
}

}  // namespace

Result<std::vector<float>> ApplyRowRound(GlobalRule& rule, DecisionBoard& board, const KeyDef& key, int64_t round,
                                         const std::vector<uint64_t>& rows, std::vector<float> values,
                                         int contributors, std::vector<float>* table) {
  GEOMX_RETURN_IF_ERROR(CheckRows(key, rows, values.size()));
  GEOMX_RETURN_IF_ERROR(rule.OnRows(key, round, rows, &values, contributors, board));
  if (values.size() != rows.size() * key.row_width) {
    return Status::Internal("the job rule changed the number of row values of " + key.name);
  }
  return MergeRows(key, rows, values, rule.RowsAreValues(key), table);
}

Result<std::unique_ptr<GlobalRule>> CreateGlobalRule(const JobDescription& job) {
  if (job.rule.empty()) return std::make_unique<GlobalRule>();
  Result<std::unique_ptr<GlobalRule>> rule = GlobalRuleRegistry::Global().Create(job.rule, job);
  if (!rule.ok()) return rule.status().WithContext("job rule");
  return rule;
}

// ---- KeyRouter ----

void KeyRouter::Handle(const comm::KvRequest& req, comm::KvServer& server) {
  comm::ServerHandler* target = parameters_ != nullptr ? parameters_ : aux_;
  if (req.meta.command != comm::Command::kControl && !req.meta.keys.empty()) {
    bool parameters = false, others = false;
    for (uint64_t wk : req.meta.keys) {
      const KeyDef* d = DefOf(*schema_, wk);
      if (d == nullptr) {
        return server.Respond(req, {}, Status::InvalidArgument("key " + std::to_string(comm::KeyOfWireKey(wk)) +
                                                               " is not a key of this job"));
      }
      (d->role == KeyRole::kParameter ? parameters : others) = true;
    }
    if (parameters && others) {
      return server.Respond(req, {}, Status::InvalidArgument("a request mixes parameter keys and other keys"));
    }
    target = parameters ? parameters_ : aux_;
  }
  if (target == nullptr) return server.Respond(req, {}, Status::InvalidArgument("no such keys in this job"));
  target->Handle(req, server);
}

// ---- AuxGlobalServer ----

struct AuxGlobalServer::Decision {
  int64_t latest = comm::kInitRound - 1;  // none yet
  std::map<int64_t, std::vector<float>> values;  // the last kDecisionRoundsKept rounds (and kInitRound)
};

struct AuxGlobalServer::Table {
  int64_t round = comm::kInitRound;  // the last round applied
  std::vector<float> values;        // rows x row_width
};

class AuxGlobalServer::RuleSink final : public comm::AggregateSink {
 public:
  explicit RuleSink(AuxGlobalServer* server) : server_(server) {}
  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  comm::AggregateDone done) override {
    const KeyDef* k = DefOf(server_->job_.schema, wire_key);
    if (k == nullptr) return done(Status::Internal("no key definition for wire key " + std::to_string(wire_key)), {});
    if (k->layout == KeyLayoutKind::kRowSparse) {
      Result<Bytes> rows = server_->ApplyRows(*k, round, aggregate, contributors);
      return done(rows.status(), rows.ok() ? std::move(rows).value() : Bytes());
    }
    Result<Bytes> answer = server_->rule_->OnAggregate(*k, round, std::move(aggregate), contributors, *server_);
    done(answer.status(), answer.ok() ? std::move(answer).value() : Bytes());
  }

 private:
  AuxGlobalServer* const server_;
};

AuxGlobalServer::AuxGlobalServer(JobDescription job, comm::KeyLayout layout)
    : job_(std::move(job)), layout_(std::move(layout)) {}

AuxGlobalServer::~AuxGlobalServer() = default;

Result<std::unique_ptr<AuxGlobalServer>> AuxGlobalServer::Create(const JobDescription& job,
                                                                  const comm::KeyLayout& layout, int senders) {
  auto s = std::unique_ptr<AuxGlobalServer>(new AuxGlobalServer(job, layout));
  GEOMX_ASSIGN_OR_RETURN(s->rule_, CreateGlobalRule(job));
  s->sink_ = std::make_unique<RuleSink>(s.get());
  for (const std::string& reducer : AggregatedReducers(job.schema)) {
    comm::SyncAggregatorOptions opts;
    opts.expected_senders = senders;
    opts.reducer = reducer;
    GEOMX_ASSIGN_OR_RETURN(s->aggregators_[reducer], comm::SyncAggregator::Create(layout, opts, s->sink_.get()));
  }
  return s;
}

void AuxGlobalServer::Handle(const comm::KvRequest& req, comm::KvServer& server) {
  my_rank_ = server.postoffice()->my_rank();
  if (req.meta.command == comm::Command::kControl) {
    return server.Respond(req, {}, Status::Unimplemented("no control commands for these keys"));
  }
  if (req.meta.keys.empty()) return server.Respond(req, {});
  const KeyDef* first = DefOf(job_.schema, req.meta.keys[0]);
  const Route route = first ? RouteOf(*first, req.meta.command, req.meta.round) : Route::kRefuse;
  for (uint64_t wk : req.meta.keys) {
    const KeyDef* d = DefOf(job_.schema, wk);
    if (d == nullptr || RouteOf(*d, req.meta.command, req.meta.round) != route ||
        (route == Route::kAggregator && d->reducer != first->reducer)) {
      return server.Respond(req, {}, Status::InvalidArgument("a request mixes keys served in different ways"));
    }
  }
  switch (route) {
    case Route::kAggregator: return aggregators_.at(first->reducer)->Handle(req, server);
    case Route::kBoard:
      return req.meta.command == comm::Command::kPull ? HandlePull(req, server) : HandleInit(req, server);
    case Route::kLocal:
      return server.Respond(req, {}, Status::InvalidArgument("key " + first->name +
                                                             " is answered by the local servers, not sent upward"));
    case Route::kRefuse: break;
  }
  server.Respond(req, {}, Status::InvalidArgument("decision keys are written by the global server's rule only"));
}

std::optional<Result<Bytes>> AuxGlobalServer::TryAnswer(const KeyDef& key, const comm::KvRequest& req, int64_t round) {
  if (key.role == KeyRole::kDecision) {
    const Decision& d = decisions_[key.key];
    if (round == comm::kInitRound) {
      if (d.values.empty()) return std::nullopt;
      return Result<Bytes>(Bytes::CopyVector(d.values.rbegin()->second));
    }
    auto it = d.values.find(round);
    if (it != d.values.end()) return Result<Bytes>(Bytes::CopyVector(it->second));
    if (d.latest >= round) {
      return Result<Bytes>(Status::InvalidArgument("decision " + key.name + " of round " + std::to_string(round) +
                                                    " is no longer kept (latest " + std::to_string(d.latest) + ")"));
    }
    return std::nullopt;
  }
  Table& t = tables_[key.key];
  if (t.values.empty()) t.values.assign(key.elems, 0.0f);
  if (round != comm::kInitRound && t.round < round) return std::nullopt;
  Result<comm::RowSparse> wanted = comm::DecodeRowSparse(req.data[0]);
  if (!wanted.ok()) return Result<Bytes>(wanted.status().WithContext("row selection of " + key.name));
  std::vector<float> values;
  values.reserve(wanted->rows.size() * key.row_width);
  for (uint64_t row : wanted->rows) {
    if (row >= key.rows()) {
      return Result<Bytes>(Status::InvalidArgument("row " + std::to_string(row) + " of " + key.name + " (" +
                                                   std::to_string(key.rows()) + " rows)"));
    }
    values.insert(values.end(), t.values.begin() + row * key.row_width, t.values.begin() + (row + 1) * key.row_width);
  }
  return Result<Bytes>(comm::EncodeRowSparse(key.row_width, wanted->rows, values));
}

void AuxGlobalServer::HandlePull(const comm::KvRequest& req, comm::KvServer& server) {
  const uint64_t wk = req.meta.keys[0];
  const KeyDef* key = DefOf(job_.schema, wk);
  const comm::KeySlice* slice = layout_.FindWireKey(wk);
  const bool rows = key->layout == KeyLayoutKind::kRowSparse;
  if (req.meta.keys.size() != 1 || slice == nullptr || slice->server_rank != my_rank_ ||
      req.meta.codec != (rows ? "row_sparse" : "") || (rows && req.data.size() != 1)) {
    return server.Respond(req, {}, Status::InvalidArgument(
                                       "pull of " + key->name + ": one key of this server per request, codec " +
                                       (rows ? "row_sparse with a row selection" : "dense")));
  }
  std::optional<Result<Bytes>> answer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    answer = TryAnswer(*key, req, req.meta.round);
    if (!answer) {
      std::vector<Waiter>& w = waiting_[key->key];
      if (w.size() >= kMaxWaitingPulls) {
        answer = Result<Bytes>(Status::ResourceExhausted(std::to_string(w.size()) + " pulls of " + key->name +
                                                         " already waiting"));
      } else {
        w.push_back(Waiter{req, &server, req.meta.round});
        return;
      }
    }
  }
  if (!answer->ok()) return server.Respond(req, {}, answer->status());
  server.Respond(req, {std::move(*answer).value()});
}

void AuxGlobalServer::HandleInit(const comm::KvRequest& req, comm::KvServer& server) {
  Status error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < req.meta.keys.size() && error.ok(); ++i) {
      const KeyDef* key = DefOf(job_.schema, req.meta.keys[i]);
      if (key->role == KeyRole::kDecision) {
        if (req.meta.codec != "" || req.data[i].size() != key->elems * sizeof(float)) {
          error = Status::InvalidArgument("initial value of " + key->name + ": expected " +
                                          std::to_string(key->elems) + " dense floats");
          break;
        }
        Decision& d = decisions_[key->key];
        if (d.values.empty()) {
          d.values[comm::kInitRound].assign(req.data[i].as<float>(), req.data[i].as<float>() + key->elems);
          d.latest = comm::kInitRound;
        }
        continue;
      }
      Result<comm::RowSparse> rs = comm::DecodeRowSparse(req.data[i]);
      if (!rs.ok() || rs->width != key->row_width) {
        error = Status::InvalidArgument("initial rows of " + key->name + ": not rows of width " +
                                        std::to_string(key->row_width));
        break;
      }
      Table& t = tables_[key->key];
      if (t.values.empty()) t.values.assign(key->elems, 0.0f);
      for (size_t r = 0; r < rs->rows.size() && error.ok(); ++r) {
        if (rs->rows[r] >= key->rows()) {
          error = Status::InvalidArgument("initial rows of " + key->name + ": row " + std::to_string(rs->rows[r]));
          break;
        }
        std::copy_n(rs->values.begin() + r * key->row_width, key->row_width,
                    t.values.begin() + rs->rows[r] * key->row_width);
      }
    }
  }
  if (!error.ok()) return server.Respond(req, {}, error);
  for (uint64_t wk : req.meta.keys) WakeWaiters(comm::KeyOfWireKey(wk));
  server.Respond(req, req.meta.command == comm::Command::kPushPull ? req.data : std::vector<Bytes>());
}

Result<Bytes> AuxGlobalServer::ApplyRows(const KeyDef& key, int64_t round, const Bytes& aggregate, int contributors) {
  GEOMX_ASSIGN_OR_RETURN(comm::RowSparse rs, comm::DecodeRowSparse(aggregate));
  if (rs.width != key.row_width) {
    return Status::InvalidArgument("rows of " + key.name + " have width " + std::to_string(rs.width) + ", expected " +
                                   std::to_string(key.row_width));
  }
  GEOMX_RETURN_IF_ERROR(CheckRows(key, rs.rows, rs.values.size()));
  GEOMX_RETURN_IF_ERROR(rule_->OnRows(key, round, rs.rows, &rs.values, contributors, *this));
  if (rs.values.size() != rs.rows.size() * key.row_width) {
    return Status::Internal("the job rule changed the number of row values of " + key.name);
  }
  std::vector<float> updated;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Table& t = tables_[key.key];
    updated = MergeRows(key, rs.rows, rs.values, rule_->RowsAreValues(key), &t.values);
    t.round = std::max(t.round, round);
  }
  WakeWaiters(key.key);
  return comm::EncodeRowSparse(key.row_width, rs.rows, updated);
}

void AuxGlobalServer::WakeWaiters(uint64_t key) {
  std::vector<std::pair<Waiter, Result<Bytes>>> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const KeyDef* def = job_.schema.Find(key);
    auto it = waiting_.find(key);
    if (def == nullptr || it == waiting_.end()) return;
    std::vector<Waiter> still;
    for (Waiter& w : it->second) {
      std::optional<Result<Bytes>> answer = TryAnswer(*def, w.req, w.round);
      if (answer) {
        ready.emplace_back(std::move(w), std::move(*answer));
      } else {
        still.push_back(std::move(w));
      }
    }
    it->second = std::move(still);
  }
  for (auto& [w, answer] : ready) {
    if (!answer.ok()) {
      w.server->Respond(w.req, {}, answer.status());
    } else {
      w.server->Respond(w.req, {std::move(answer).value()});
    }
  }
}

Status AuxGlobalServer::Publish(uint64_t key, int64_t round, std::vector<float> value) {
  const KeyDef* def = job_.schema.Find(key);
  if (def == nullptr || def->role != KeyRole::kDecision) {
    return Status::InvalidArgument("publish: key " + std::to_string(key) + " is not a decision key of the job");
  }
  if (value.size() != def->elems) {
    return Status::InvalidArgument("publish: decision " + def->name + " has " + std::to_string(def->elems) +
                                   " values, got " + std::to_string(value.size()));
  }
  const std::vector<comm::KeySlice>& slices = layout_.slices(key);
  if (slices.empty() || slices[0].server_rank != my_rank_) {
    return Status::FailedPrecondition("publish: decision " + def->name + " is held by global server " +
                                      std::to_string(slices.empty() ? -1 : slices[0].server_rank) +
                                      ", not by this one");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    Decision& d = decisions_[key];
    if (round < 0 || round <= d.latest) {
      return Status::InvalidArgument("publish: decision " + def->name + " round " + std::to_string(round) +
                                     " is not after the latest published round " + std::to_string(d.latest));
    }
    d.values[round] = std::move(value);
    d.latest = round;
    while (d.values.size() > kDecisionRoundsKept) d.values.erase(d.values.begin());
  }
  WakeWaiters(key);
  return Status::Ok();
}

Status AuxGlobalServer::SaveState(const std::string& prefix, StateTensors* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, d] : decisions_) {
    if (d.values.empty()) continue;
    (*out)[prefix + "decision/" + std::to_string(key)] = StateVector(d.values.rbegin()->second);
    (*out)[prefix + "decision_round/" + std::to_string(key)] = StateScalar(d.latest);
  }
  for (const auto& [key, t] : tables_) {
    (*out)[prefix + "rows/" + std::to_string(key)] = StateVector(t.values);
    (*out)[prefix + "rows_round/" + std::to_string(key)] = StateScalar(t.round);
  }
  return Status::Ok();
}

Status AuxGlobalServer::RestoreState(const std::string& prefix, const StateTensors& in) {
  std::map<uint64_t, Decision> decisions;
  std::map<uint64_t, Table> tables;
  for (const KeyDef& k : job_.schema.keys()) {
    const std::string id = std::to_string(k.key);
    if (k.role == KeyRole::kDecision && in.count(prefix + "decision/" + id)) {
      GEOMX_ASSIGN_OR_RETURN(std::vector<float> v, StateVectorOf(in, prefix + "decision/" + id));
      GEOMX_ASSIGN_OR_RETURN(int64_t round, StateScalarOf(in, prefix + "decision_round/" + id));
      if (v.size() != k.elems) return Status::DataLoss("server state: decision " + k.name + " has the wrong size");
      decisions[k.key].latest = round;
      decisions[k.key].values[round] = std::move(v);
    }
    if (k.layout == KeyLayoutKind::kRowSparse && in.count(prefix + "rows/" + id)) {
      GEOMX_ASSIGN_OR_RETURN(std::vector<float> v, StateVectorOf(in, prefix + "rows/" + id));
      GEOMX_ASSIGN_OR_RETURN(int64_t round, StateScalarOf(in, prefix + "rows_round/" + id));
      if (v.size() != k.elems) return Status::DataLoss("server state: table " + k.name + " has the wrong size");
      tables[k.key].values = std::move(v);
      tables[k.key].round = round;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  decisions_ = std::move(decisions);
  tables_ = std::move(tables);
  return Status::Ok();
}

// ---- AuxLocalServer ----

Result<std::unique_ptr<AuxLocalServer>> AuxLocalServer::Create(const KeySchema& schema, const comm::KeyLayout& layout,
                                                                int senders, comm::KvLink* upper) {
  if (upper == nullptr || upper->codec().compressed) {
    return Status::InvalidArgument("aux local server: needs a dense link into the global tier");
  }
  auto s = std::unique_ptr<AuxLocalServer>(new AuxLocalServer(schema, upper));
  for (const std::string& reducer : AggregatedReducers(schema)) {
    s->sinks_[reducer] = std::make_unique<comm::ForwardSink>(upper, CodecOf(reducer));
    comm::SyncAggregatorOptions opts;
    opts.expected_senders = senders;
    opts.reducer = reducer;
    GEOMX_ASSIGN_OR_RETURN(s->aggregators_[reducer],
                           comm::SyncAggregator::Create(layout, opts, s->sinks_[reducer].get()));
  }
  // Local keys: the data centre's aggregate is the answer.
  for (const std::string& reducer : AggregatedReducers(schema, /*local=*/true)) {
    comm::SyncAggregatorOptions opts;
    opts.expected_senders = senders;
    opts.reducer = reducer;
    GEOMX_ASSIGN_OR_RETURN(s->local_aggregators_[reducer],
                           comm::SyncAggregator::Create(layout, opts, &s->identity_));
  }
  return s;
}

void AuxLocalServer::Handle(const comm::KvRequest& req, comm::KvServer& server) {
  if (req.meta.command == comm::Command::kControl) {
    return server.Respond(req, {}, Status::Unimplemented("no control commands for these keys"));
  }
  if (req.meta.keys.empty()) return server.Respond(req, {});
  const KeyDef* first = DefOf(schema_, req.meta.keys[0]);
  const Route route = first ? RouteOf(*first, req.meta.command, req.meta.round) : Route::kRefuse;
  for (uint64_t wk : req.meta.keys) {
    const KeyDef* d = DefOf(schema_, wk);
    if (d == nullptr || RouteOf(*d, req.meta.command, req.meta.round) != route ||
        ((route == Route::kAggregator || route == Route::kLocal) && d->reducer != first->reducer)) {
      return server.Respond(req, {}, Status::InvalidArgument("a request mixes keys served in different ways"));
    }
  }
  if (route == Route::kAggregator) return aggregators_.at(first->reducer)->Handle(req, server);
  if (route == Route::kLocal) return local_aggregators_.at(first->reducer)->Handle(req, server);
  if (route == Route::kRefuse || req.meta.command != comm::Command::kPull) {
    return server.Respond(req, {}, Status::InvalidArgument("only the global server writes decisions and tables"));
  }
  // Decisions and rows live at the global tier: the pull passes through.
  comm::RawRequest up;
  up.command = comm::Command::kPull;
  up.codec = req.meta.codec;
  up.round = req.meta.round;
  up.wire_keys = req.meta.keys;
  up.payloads = req.data;
  comm::KvServer* srv = &server;
  upper_->SendRaw(std::move(up), [req, srv](Status s, std::vector<Bytes> values) {
    if (!s.ok()) return srv->Respond(req, {}, s.WithContext("from the global tier"));
    srv->Respond(req, std::move(values));
  });
}

}  // namespace geomx::ps
