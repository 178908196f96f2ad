// GlobalRule: the code a global server runs for the non-parameter keys of one job (a classical estimator's
// decisions: the best split from summed histograms, new centroids from summed statistics, a weak ranker's
// alpha). The job description names it (JobDescription::rule); the global servers create it by name, so the same
// rule runs in `geomx serve --role global-server` processes and in tests.
//
//   aggregate key   every round's pushes of all workers are reduced (its reducer, over both tiers) and handed to
//                   OnAggregate; what it returns is the value every pusher receives (default: the aggregate)
//   row-sparse key  the summed row deltas are added to the server's table (OnRows may change them first; a rule
//                   whose RowsAreValues() is true turns them into the rows' new values, which replace the
//                   table's: a server-side optimizer); the pushers receive the updated rows; pulls select rows
//   decision key    written by a rule through DecisionBoard::Publish (from any OnAggregate), pulled by every
//                   worker with PsContext::PullDecision (a pull of round r waits until r is published)
//
// Adding a rule: one file with the class and GEOMX_REGISTER(GlobalRuleRegistry, "name", factory) (algorithms/ is
// linked whole-archive). Thread-safety: the server calls a rule from its receive threads, one key at a time per
// key but different keys concurrently; a rule with state across keys guards it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/ps/job.h"
#include "algorithms/ps/key_schema.h"
#include "engine/base/bytes.h"
#include "engine/base/registry.h"
#include "engine/base/status.h"

namespace geomx::ps {

// Where rules publish decisions. Implemented by the global server (aux_servers.h).
class DecisionBoard {
 public:
  virtual ~DecisionBoard() = default;
  // The value of decision key `key` for `round` (>= 0; rounds of a key are published in increasing order).
  // kInvalidArgument for a key that is not a decision key of the job, a value of the wrong size, or a round not
  // above the last published one; kFailedPrecondition when another global server holds the key (a rule can only
  // publish the decisions its own server holds: with several global servers, keep topology.global_servers: 1
  // for jobs with decisions, or derive each decision on the server that holds it).
  virtual Status Publish(uint64_t key, int64_t round, std::vector<float> value) = 0;
};

class GlobalRule {
 public:
  virtual ~GlobalRule() = default;
  // An aggregate key completed `round` with `contributors` workers' pushes reduced into `aggregate` (sum: dense
  // f32; concat/topk_merge/weighted_average: that codec's payload, comm/handlers/payloads.h). Returns the value
  // every pusher receives. Default: `aggregate`.
  virtual Result<Bytes> OnAggregate(const KeyDef& key, int64_t round, Bytes aggregate, int contributors,
                                    DecisionBoard& board);
  // A row-sparse key's summed row deltas of `round` (rows.size() x key.row_width values), before they are added
  // to the table; may change `values` in place (e.g. scale by 1 / contributors). Default: nothing.
  virtual Status OnRows(const KeyDef& key, int64_t round, const std::vector<uint64_t>& rows,
                        std::vector<float>* values, int contributors, DecisionBoard& board);
  // True when OnRows of `key` leaves the rows' new values in `values` (they replace the table's rows) rather than
  // deltas to add. Default: false.
  virtual bool RowsAreValues(const KeyDef& key) const;
};

// A completed round of a row-sparse key on its table (the global server's step; in-process emulations share it):
// kInvalidArgument for a width other than key.row_width or a row outside the key; then rule.OnRows, then the values
// added to (or, RowsAreValues, written over) `table` (key.elems floats, allocated here when empty). Returns the
// updated rows, in the order of `rows`. Not thread-safe: the caller serialises calls on the same table.
Result<std::vector<float>> ApplyRowRound(GlobalRule& rule, DecisionBoard& board, const KeyDef& key, int64_t round,
                                         const std::vector<uint64_t>& rows, std::vector<float> values,
                                         int contributors, std::vector<float>* table);

// Rules by name (JobDescription::rule); "" is the default GlobalRule above.
using GlobalRuleRegistry = Registry<GlobalRule, const JobDescription&>;
// kNotFound listing the known names for an unknown one.
Result<std::unique_ptr<GlobalRule>> CreateGlobalRule(const JobDescription& job);

}  // namespace geomx::ps
