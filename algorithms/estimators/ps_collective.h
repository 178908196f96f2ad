// The Collective of an estimator fitting across data centres over the hierarchical parameter server
// (docs/algorithms.md, "Across data centres"). A sum goes worker -> local server (LAN, summed over the data
// centre) -> global server (WAN, summed over the data centres) and the total comes back the same way; a gather is
// the concat reducer at both tiers. Only aggregates cross the network: the data never moves.
//
// Estimators ask for sums of any length while a job's keys are fixed when it starts, so the job has one sum key per
// size class (256 .. 2^20 floats, by factors of 4): a sum travels in the smallest class that holds it (padded with
// zeros, so at most 4x its size on the wire and never less than 1 KiB), longer sums in chunks of the largest.
// Compressible sums (AllReduceSumCompressible) with SumCompression::kFp16 travel on one more key, reducer half_sum
// (comm/handlers/payloads.h): any length, no padding, 2 bytes per lossy value, summed and re-encoded at each tier.
// DataCentreSum has the same size classes on keys of role local: the local server answers them (LAN only).
// Every worker makes the same calls in the same order (collective.h), so the rounds of each key agree.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "algorithms/ps/job.h"
#include "algorithms/ps/key_schema.h"
#include "algorithms/ps/ps_context.h"

namespace geomx::algorithms {

// The keys of an estimator job: the sum classes, the gather, fp16, top-k and neighbour keys, the local sum classes,
// the svm_cascade key, one row-sparse key per row table (in the order given) and the barrier.
ps::KeySchema EstimatorJobSchema(const std::vector<RowTableSpec>& tables = {});
// The job description of an estimator job: that schema, and the tables' rule and hyper-parameters.
// kInvalidArgument for tables that name different rules (a job has one rule) or an empty table.
Result<ps::JobDescription> EstimatorJobDescription(const std::vector<RowTableSpec>& tables);

// How PsCollective carries AllReduceSumCompressible: exactly (f32 sum keys), as FP16 (the half_sum key), or as
// the largest `ratio` of its values with error feedback (the sparse_sum key; the recipe's bsc preset).
enum class SumCompression : uint8_t { kNone, kFp16, kTopK };

class PsCollective final : public Collective {
 public:
  // Borrows `ps` (a context over EstimatorJobSchema()); it must outlive this.
  // `ratio`: kTopK's kept fraction of each compressible sum's lossy part, (0, 1].
  // `placement`: this worker's data centre (the default, one data centre, makes DataCentreSum a job-wide sum).
  explicit PsCollective(ps::PsContext* ps, SumCompression compression = SumCompression::kNone, float ratio = 0.01f,
                        Placement placement = {});
  int rank() const override { return ps_->worker_index(); }
  int world() const override { return ps_->num_workers(); }
  Placement placement() const override { return placement_; }
  Status AllReduceSum(const std::string& key, std::span<float> data) override;
  // On the local sum keys (role local): the local server answers, nothing goes up.
  Status DataCentreSum(const std::string& key, std::span<float> data) override;
  // On the job's key with that reducer (EstimatorJobSchema: svm_cascade).
  Result<Bytes> ReduceThroughTiers(const std::string& reducer, const Bytes& payload) override;
  Status AllReduceSumCompressible(const std::string& key, std::span<float> data, size_t exact_tail) override;
  Result<std::vector<float>> AllGather(const std::string& key, std::span<const float> mine) override;
  Result<RowUpdate> PushRowGradients(const RowTableSpec& table, std::span<const uint64_t> rows,
                                     std::span<const float> grads) override;
  Result<std::vector<comm::Neighbor>> AllMergeTopK(const std::string& key, uint64_t k, uint64_t queries,
                                                   std::span<const comm::Neighbor> mine) override;

  static constexpr int kSumClasses = 7;  // 256 << 2*i floats, i < kSumClasses

 private:
  ps::PsContext* ps_;
  Status TopKSum(const std::string& key, std::span<float> data, size_t exact_tail);
  // A sum on the size-class keys first_key .. first_key + kSumClasses - 1.
  Status ClassSum(uint64_t first_key, std::array<int64_t, kSumClasses>* rounds, const std::string& key,
                  std::span<float> data);

  const SumCompression compression_;
  const float ratio_;
  std::map<std::string, std::vector<float>> residuals_;  // kTopK error feedback, by the sum's name
  int64_t topk_round_ = 0;
  int64_t neighbor_round_ = 0;
  Placement placement_;
  std::array<int64_t, kSumClasses> sum_rounds_{};
  std::array<int64_t, kSumClasses> local_sum_rounds_{};
  int64_t gather_round_ = 0;
  std::map<uint64_t, int64_t> reduce_rounds_;  // by key
  int64_t half_round_ = 0;
  std::map<uint64_t, int64_t> row_rounds_;  // by row-table key
};

}  // namespace geomx::algorithms
