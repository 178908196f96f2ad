// Collective: what an estimator sees of the other workers while it fits across data centres.
//
// Every worker of a job runs the same Fit() on its own shard and calls the same sequence of collective operations
// with the same keys and sizes (the estimators are written that way: a loop of map steps and reductions). Two
// implementations: ThreadCollective (N fits as threads of one process, sharing memory: the tests' and the "local
// equals distributed" reference) and the parameter-server one (algorithms/estimators/ps_collective.h), where a sum
// goes worker -> local server (LAN) -> global server (WAN) and back, through the sync mode and the accelerators of
// the recipe. A failed peer or link surfaces as a non-OK Status from the call, never as a hang.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/handlers/payloads.h"
#include "engine/base/status.h"
#include "nn/optim/optimizer_config.h"

namespace geomx::algorithms {

// A table of rows x width weights that lives with the job, not with the workers (across data centres: on the global
// server), and that a per-coordinate rule updates from the gradients the workers push (FTRL, FTML: the online
// learners' server-side rules). An estimator that uses one declares it before the job starts
// (Estimator::RowTables), because a parameter-server job's keys are fixed when it starts.
struct RowTableSpec {
  std::string name;             // "ftrl.weights": the key's name
  uint64_t rows = 0, width = 0;  // >= 1 each
  std::string rule;             // ps::GlobalRuleRegistry name of the rule that turns summed gradients into weights
  nn::OptimizerConfig hyper;    // the rule's hyper-parameters (they travel in the job description)
};

// What a round of a row table gives back: the new weights of every row any worker pushed that round (sorted by
// row, each once). Rows nobody pushed did not change, so a worker that starts from zeros and applies every round's
// answer holds the whole table.
struct RowUpdate {
  std::vector<uint64_t> rows;
  std::vector<float> values;  // rows.size() x width
};

// Where a worker sits in the hierarchy: its data centre and its place among that centre's workers. Ranks are
// numbered data centre by data centre.
struct Placement {
  int centre = 0;       // 0 .. centres-1
  int centres = 1;      // data centres in the job
  int centre_rank = 0;  // 0 .. centre_size-1 within its data centre
  int centre_size = 1;  // workers in its data centre
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;   // 0 .. world()-1; rank 0 is the worker that evaluates and writes the model
  virtual int world() const = 0;  // workers in the job
  // Default: one data centre holding every worker.
  virtual Placement placement() const;
  // In place: data <- the element-wise sum over the workers of this worker's data centre only (its local server,
  // over the LAN; nothing crosses the WAN). Every worker of the job makes the call (same key and size within a
  // data centre). Default (one data centre): AllReduceSum.
  virtual Status DataCentreSum(const std::string& key, std::span<float> data);
  // One round of the job's key whose reducer is `reducer` (comm/handlers/reducer.h; a reducer an estimator
  // registers, such as svm_cascade): each local server combines its data centre's workers' payloads with the
  // reducer, the global server the data centres' results, and every worker gets the global result. Every worker of
  // the job makes the call. kInvalidArgument when the job has no key with that reducer.
  virtual Result<Bytes> ReduceThroughTiers(const std::string& reducer, const Bytes& payload) = 0;
  // In place: data <- the element-wise sum of every worker's `data` (all give the same size for the same key).
  virtual Status AllReduceSum(const std::string& key, std::span<float> data) = 0;
  // AllReduceSum of a vector whose first data.size() - exact_tail values tolerate the job's lossy compression
  // (gradients, model deltas; never counts or statistics that must add up exactly) and whose last exact_tail values
  // (losses, weights, flags) must be exact. With `accelerators.compression: fp16` in the recipe the lossy part
  // travels as FP16 relative to its largest value (each value within max |value| * 2^-12 per tier); otherwise, and
  // by default, this is AllReduceSum.
  virtual Status AllReduceSumCompressible(const std::string& key, std::span<float> data, size_t exact_tail);
  // Every worker's `mine`, concatenated in rank order (sizes may differ): the concat reducer (support vectors,
  // k-means|| candidates, local top-k lists).
  virtual Result<std::vector<float>> AllGather(const std::string& key, std::span<const float> mine) = 0;
  // One round of the row table `table` (declared before the job; its weights start at zero): every worker pushes
  // the gradients of the rows it touched (`rows` distinct, any order, possibly none; grads: rows.size() x width);
  // the rule sees each row's sum over the workers and updates the row's weights. kInvalidArgument for a table the
  // job does not hold or a row outside it.
  virtual Result<RowUpdate> PushRowGradients(const RowTableSpec& table, std::span<const uint64_t> rows,
                                             std::span<const float> grads) = 0;
  // Per-query nearest-neighbour merge: `mine` holds queries x k candidates (query-major; pad with distance +inf,
  // id comm::kNoNeighbor, label -1); every worker gets, per query, the k smallest by (distance, id) over all the
  // workers' candidates (comm::MergeTopKRows). Across data centres the local and then the global server merge
  // (reducer topk_rows), so each link carries k entries per query. kInvalidArgument for a size that is not
  // queries x k; workers must agree on k and queries.
  virtual Result<std::vector<comm::Neighbor>> AllMergeTopK(const std::string& key, uint64_t k, uint64_t queries,
                                                           std::span<const comm::Neighbor> mine) = 0;
};

// N workers as threads of this process. Create one, then give Worker(r) to the fit running on thread r. Row tables
// are emulated with the parameter server's own step (ps::ApplyRowRound and the table's rule), so a fit over these
// threads computes what the same fit computes over the parameter server.
class ThreadCollectiveGroup {
 public:
  explicit ThreadCollectiveGroup(int world);
  // Workers in data centres of the given sizes (ranks numbered centre by centre), for DataCentreSum.
  explicit ThreadCollectiveGroup(std::vector<int> centre_sizes);
  ~ThreadCollectiveGroup();
  Collective* Worker(int rank);

 private:
  struct Shared;
  class Member;
  std::shared_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Collective>> members_;
};

}  // namespace geomx::algorithms
