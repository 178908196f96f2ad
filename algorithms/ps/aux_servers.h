// The servers of a job's non-parameter keys (key_schema.h: aggregate, row-sparse and decision keys), which sit
// next to the sync mode's policy (which serves the parameters), and the router between the two. Built by the
// server roles (algorithms/cluster/roles.cc) from the job description.
//
//   global tier  AuxGlobalServer: one SyncAggregator per reducer (one push per data centre and round) whose sink
//                runs the job's GlobalRule; it is the DecisionBoard rules publish on, and holds the row-sparse
//                tables. Pulls of decisions and rows wait for their round.
//   local tier   AuxLocalServer: one SyncAggregator per reducer (one push per worker) forwarding the aggregate up
//                through a dense KvLink (ForwardSink); pulls of decisions and rows pass through to the global tier.
//                Local keys (KeyRole::kLocal) have aggregators of their own whose aggregate is the answer: they
//                stay in the data centre (the global tier refuses them).
//
// Payloads of these keys are never compressed: they travel in their reducer's codec (sum keys as dense f32).
// A request addresses keys of one class (PsContext sends one key per request); KeyRouter refuses a mix.
// Ownership: everything is borrowed from the role that builds it, which outlives the handlers. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "algorithms/ps/global_rule.h"
#include "algorithms/ps/job.h"
#include "algorithms/ps/server_state.h"
#include "comm/handlers/forward_sink.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/key_layout.h"
#include "comm/kv_link.h"
#include "comm/kv_server.h"

namespace geomx::ps {

// Sends requests for parameter keys to `parameters` and the others to `aux` (either may be null when the job has
// no such keys: such requests are refused). kControl requests go to `parameters` (else `aux`).
class KeyRouter final : public comm::ServerHandler {
 public:
  KeyRouter(const KeySchema* schema, comm::ServerHandler* parameters, comm::ServerHandler* aux)
      : schema_(schema), parameters_(parameters), aux_(aux) {}
  void Handle(const comm::KvRequest& req, comm::KvServer& server) override;

 private:
  const KeySchema* const schema_;
  comm::ServerHandler* const parameters_;
  comm::ServerHandler* const aux_;
};

class AuxGlobalServer final : public comm::ServerHandler, public DecisionBoard, public ServerState {
 public:
  // `layout`: the global tier's layout of the whole schema; `senders`: pushes per round (the data centres).
  static Result<std::unique_ptr<AuxGlobalServer>> Create(const JobDescription& job, const comm::KeyLayout& layout,
                                                         int senders);
  ~AuxGlobalServer() override;

  void Handle(const comm::KvRequest& req, comm::KvServer& server) override;
  Status Publish(uint64_t key, int64_t round, std::vector<float> value) override;

  // ServerState: the latest decision of every decision key and every row table ("decision/<key>",
  // "decision_round/<key>", "rows/<key>", "rows_round/<key>").
  Status SaveState(const std::string& prefix, StateTensors* out) const override;
  Status RestoreState(const std::string& prefix, const StateTensors& in) override;

 private:
  class RuleSink;
  struct Decision;
  struct Table;
  struct Waiter {
    comm::KvRequest req;
    comm::KvServer* server = nullptr;
    int64_t round = 0;
  };

  AuxGlobalServer(JobDescription job, comm::KeyLayout layout);
  void HandlePull(const comm::KvRequest& req, comm::KvServer& server);
  void HandleInit(const comm::KvRequest& req, comm::KvServer& server);
  // Completed row-sparse round: applies the rows and answers the pushers with the updated rows.
  Result<Bytes> ApplyRows(const KeyDef& key, int64_t round, const Bytes& aggregate, int contributors);
  // The answer to a pull of `key` at `round` if it can be given now (mu_ held).
  std::optional<Result<Bytes>> TryAnswer(const KeyDef& key, const comm::KvRequest& req, int64_t round);
  void WakeWaiters(uint64_t key);  // answers the pulls of `key` that became answerable

  const JobDescription job_;
  const comm::KeyLayout layout_;
  std::unique_ptr<GlobalRule> rule_;
  std::unique_ptr<RuleSink> sink_;
  std::map<std::string, std::unique_ptr<comm::SyncAggregator>> aggregators_;  // by reducer
  std::atomic<int> my_rank_{-1};

  mutable std::mutex mu_;
  std::map<uint64_t, Decision> decisions_;        // GUARDED_BY(mu_)
  std::map<uint64_t, Table> tables_;              // GUARDED_BY(mu_)
  std::map<uint64_t, std::vector<Waiter>> waiting_;  // GUARDED_BY(mu_): pulls per key
};

class AuxLocalServer final : public comm::ServerHandler {
 public:
  // `upper`: a DENSE KvLink into the global tier (aux payloads are never compressed); `senders`: the data
  // centre's workers.
  static Result<std::unique_ptr<AuxLocalServer>> Create(const KeySchema& schema, const comm::KeyLayout& layout,
                                                        int senders, comm::KvLink* upper);
  void Handle(const comm::KvRequest& req, comm::KvServer& server) override;

 private:
  AuxLocalServer(const KeySchema& schema, comm::KvLink* upper) : schema_(schema), upper_(upper) {}
  const KeySchema schema_;
  comm::KvLink* const upper_;
  std::map<std::string, std::unique_ptr<comm::ForwardSink>> sinks_;            // by reducer
  std::map<std::string, std::unique_ptr<comm::SyncAggregator>> aggregators_;  // by reducer
  comm::IdentitySink identity_;
  std::map<std::string, std::unique_ptr<comm::SyncAggregator>> local_aggregators_;  // local keys, by reducer
};

}  // namespace geomx::ps
