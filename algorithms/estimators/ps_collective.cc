#include "algorithms/estimators/ps_collective.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "comm/handlers/payloads.h"

namespace geomx::algorithms {
namespace {

constexpr uint64_t kFirstSumKey = 1;
constexpr uint64_t kGatherKey = kFirstSumKey + PsCollective::kSumClasses;
constexpr uint64_t kHalfSumKey = kGatherKey + 1;
constexpr uint64_t kTopKSumKey = kHalfSumKey + 1;
constexpr uint64_t kNeighborsKey = kTopKSumKey + 1;
constexpr uint64_t kFirstLocalSumKey = kNeighborsKey + 1;
constexpr uint64_t kCascadeKey = kFirstLocalSumKey + PsCollective::kSumClasses;

constexpr uint64_t ClassElems(int c) { return uint64_t{256} << (2 * c); }

}  // namespace

ps::KeySchema EstimatorJobSchema(const std::vector<RowTableSpec>& tables) {
  std::vector<ps::KeyDef> keys;
  for (int c = 0; c < PsCollective::kSumClasses; ++c) {
    keys.push_back({.key = kFirstSumKey + static_cast<uint64_t>(c),
                    .name = "sum" + std::to_string(ClassElems(c)),
                    .elems = ClassElems(c),
                    .role = ps::KeyRole::kAggregate,
                    .init = ps::KeyInit::kNone});
  }
  keys.push_back({.key = kGatherKey, .name = "gather", .elems = 1, .reducer = "concat",
                  .role = ps::KeyRole::kAggregate, .init = ps::KeyInit::kNone});
  keys.push_back({.key = kHalfSumKey, .name = "sum_fp16", .elems = 1, .reducer = "half_sum",
                  .role = ps::KeyRole::kAggregate, .init = ps::KeyInit::kNone});
  keys.push_back({.key = kTopKSumKey, .name = "sum_topk", .elems = 1, .reducer = "sparse_sum",
                  .role = ps::KeyRole::kAggregate, .init = ps::KeyInit::kNone});
  keys.push_back({.key = kNeighborsKey, .name = "neighbors", .elems = 1, .reducer = "topk_rows",
                  .role = ps::KeyRole::kAggregate, .init = ps::KeyInit::kNone});
  for (int c = 0; c < PsCollective::kSumClasses; ++c) {
    keys.push_back({.key = kFirstLocalSumKey + static_cast<uint64_t>(c),
                    .name = "local_sum" + std::to_string(ClassElems(c)),
                    .elems = ClassElems(c),
                    .role = ps::KeyRole::kLocal,
                    .init = ps::KeyInit::kNone});
  }
  // The kernel SVM cascade's levels (algorithms/estimators/svm_cascade.cc registers the reducer).
  keys.push_back({.key = kCascadeKey, .name = "svm_cascade", .elems = 1, .reducer = "svm_cascade",
                  .role = ps::KeyRole::kAggregate, .init = ps::KeyInit::kNone});
  uint64_t next = kCascadeKey + 1;
  for (const RowTableSpec& t : tables) {
    keys.push_back({.key = next++,
                    .name = t.name,
                    .elems = t.rows * t.width,
                    .reducer = "row_sparse",
                    .layout = ps::KeyLayoutKind::kRowSparse,
                    .row_width = t.width,
                    .role = ps::KeyRole::kAggregate,
                    .init = ps::KeyInit::kZeros});
  }
  return ps::KeySchema(std::move(keys)).WithBarrier();
}

Result<ps::JobDescription> EstimatorJobDescription(const std::vector<RowTableSpec>& tables) {
  ps::JobDescription job;
  for (const RowTableSpec& t : tables) {
    if (t.rows == 0 || t.width == 0) return Status::InvalidArgument("row table '" + t.name + "' is empty");
    if (!job.rule.empty() && t.rule != job.rule) {
      return Status::InvalidArgument("row tables '" + tables[0].name + "' and '" + t.name +
                                     "' name different rules (a job has one)");
    }
    job.rule = t.rule;
    job.optimizer = t.hyper;
  }
  job.schema = EstimatorJobSchema(tables);
  GEOMX_RETURN_IF_ERROR(job.schema.Validate());
  return job;
}

PsCollective::PsCollective(ps::PsContext* ps, SumCompression compression, float ratio, Placement placement)
    : ps_(ps), compression_(compression), ratio_(ratio), placement_(placement) {
  if (placement_.centres == 1) placement_ = Collective::placement();
}

Status PsCollective::TopKSum(const std::string& key, std::span<float> data, size_t exact_tail) {
  const size_t lossy = data.size() - exact_tail;
  // Error feedback (DGC / GeoMX's bsc): what was not sent is added to the next sum of the same name.
  std::vector<float>& residual = residuals_[key];
  if (residual.size() != lossy) residual.assign(lossy, 0.0f);
  for (size_t i = 0; i < lossy; ++i) residual[i] += data[i];
  const size_t keep = std::min(lossy, std::max<size_t>(1, static_cast<size_t>(std::ceil(ratio_ * lossy))));
  std::vector<uint64_t> rows(lossy);
  for (size_t i = 0; i < lossy; ++i) rows[i] = i;
  if (keep < lossy) {
    std::nth_element(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(keep), rows.end(),
                     [&](uint64_t a, uint64_t b) { return std::fabs(residual[a]) > std::fabs(residual[b]); });
  }
  rows.resize(keep);
  std::vector<float> values;
  values.reserve(keep + exact_tail);
  for (uint64_t r : rows) {
    values.push_back(residual[r]);
    residual[r] = 0.0f;
  }
  for (size_t j = 0; j < exact_tail; ++j) {
    rows.push_back(lossy + j);
    values.push_back(data[lossy + j]);
  }
  auto answer = ps_->PushPullPayload(kTopKSumKey, comm::EncodeRowSparse(1, rows, values), topk_round_++);
  if (!answer.ok()) return answer.status().WithContext("sum '" + key + "'");
  GEOMX_ASSIGN_OR_RETURN(comm::RowSparse sum, comm::DecodeRowSparse(*answer));
  if (sum.width != 1) return Status::DataLoss("sum '" + key + "': the server answered rows of width " +
                                              std::to_string(sum.width));
  std::fill(data.begin(), data.end(), 0.0f);
  for (size_t i = 0; i < sum.rows.size(); ++i) {
    if (sum.rows[i] >= data.size()) {
      return Status::DataLoss("sum '" + key + "': the server answered index " + std::to_string(sum.rows[i]) +
                              " of " + std::to_string(data.size()));
    }
    data[sum.rows[i]] = sum.values[i];
  }
  return Status::Ok();
}

Status PsCollective::AllReduceSumCompressible(const std::string& key, std::span<float> data, size_t exact_tail) {
  if (compression_ == SumCompression::kNone) return AllReduceSum(key, data);
  if (exact_tail > data.size()) return Status::InvalidArgument("sum '" + key + "': exact tail longer than the sum");
  if (compression_ == SumCompression::kTopK) return TopKSum(key, data, exact_tail);
  const size_t lossy = data.size() - exact_tail;
  GEOMX_ASSIGN_OR_RETURN(Bytes payload, comm::EncodeHalfSum(data.first(lossy), data.last(exact_tail)));
  auto answer = ps_->PushPullPayload(kHalfSumKey, std::move(payload), half_round_++);
  if (!answer.ok()) return answer.status().WithContext("sum '" + key + "'");
  GEOMX_ASSIGN_OR_RETURN(comm::HalfSum sum, comm::DecodeHalfSum(*answer));
  if (sum.lossy.size() != lossy || sum.exact.size() != exact_tail) {
    return Status::DataLoss("sum '" + key + "': the server answered " + std::to_string(sum.lossy.size()) + " + " +
                            std::to_string(sum.exact.size()) + " values for " + std::to_string(lossy) + " + " +
                            std::to_string(exact_tail));
  }
  std::copy(sum.lossy.begin(), sum.lossy.end(), data.begin());
  std::copy(sum.exact.begin(), sum.exact.end(), data.begin() + static_cast<std::ptrdiff_t>(lossy));
  return Status::Ok();
}

Status PsCollective::AllReduceSum(const std::string& key, std::span<float> data) {
  return ClassSum(kFirstSumKey, &sum_rounds_, key, data);
}

Status PsCollective::DataCentreSum(const std::string& key, std::span<float> data) {
  return ClassSum(kFirstLocalSumKey, &local_sum_rounds_, key, data);
}

Status PsCollective::ClassSum(uint64_t first_key, std::array<int64_t, kSumClasses>* rounds, const std::string& key,
                              std::span<float> data) {
  constexpr uint64_t kLargest = ClassElems(kSumClasses - 1);
  std::vector<float> buffer, sum;
  for (size_t begin = 0; begin < data.size(); begin += kLargest) {
    const size_t n = std::min<size_t>(kLargest, data.size() - begin);
    int c = 0;
    while (ClassElems(c) < n) ++c;
    buffer.assign(ClassElems(c), 0.0f);
    std::copy(data.begin() + static_cast<std::ptrdiff_t>(begin),
              data.begin() + static_cast<std::ptrdiff_t>(begin + n), buffer.begin());
    sum.resize(buffer.size());
    Status s = ps_->PushPull(first_key + static_cast<uint64_t>(c), buffer, sum, (*rounds)[static_cast<size_t>(c)]++);
    if (!s.ok()) return s.WithContext("sum '" + key + "'");
    std::copy(sum.begin(), sum.begin() + static_cast<std::ptrdiff_t>(n),
              data.begin() + static_cast<std::ptrdiff_t>(begin));
  }
  return Status::Ok();
}


Result<Bytes> PsCollective::ReduceThroughTiers(const std::string& reducer, const Bytes& payload) {
  for (const ps::KeyDef& k : ps_->schema().keys()) {
    if (k.reducer != reducer || k.role != ps::KeyRole::kAggregate) continue;
    auto answer = ps_->PushPullPayload(k.key, payload, reduce_rounds_[k.key]++);
    if (!answer.ok()) return answer.status().WithContext("reduce '" + reducer + "'");
    return answer;
  }
  return Status::InvalidArgument("no key of this job has the reducer '" + reducer + "'");
}

Result<std::vector<float>> PsCollective::AllGather(const std::string& key, std::span<const float> mine) {
  // One record per worker: [u32 rank][floats]; the reducers concatenate records, so order them by rank here.
  Bytes record(sizeof(uint32_t) + mine.size_bytes());
  const uint32_t r = static_cast<uint32_t>(rank());
  std::memcpy(record.mutable_data(), &r, sizeof(r));
  if (!mine.empty()) std::memcpy(record.mutable_data() + sizeof(r), mine.data(), mine.size_bytes());
  const Bytes payload = comm::EncodeRecords(std::span<const Bytes>(&record, 1));
  auto answer = ps_->PushPullPayload(kGatherKey, payload, gather_round_++);
  if (!answer.ok()) return answer.status().WithContext("gather '" + key + "'");
  GEOMX_ASSIGN_OR_RETURN(std::vector<Bytes> records, comm::DecodeRecords(*answer));
  std::vector<std::pair<uint32_t, const Bytes*>> by_rank;
  for (const Bytes& rec : records) {
    if (rec.size() < sizeof(uint32_t) || (rec.size() - sizeof(uint32_t)) % sizeof(float) != 0) {
      return Status::DataLoss("gather '" + key + "': malformed record of " + std::to_string(rec.size()) + " bytes");
    }
    uint32_t from = 0;
    std::memcpy(&from, rec.data(), sizeof(from));
    by_rank.emplace_back(from, &rec);
  }
  std::sort(by_rank.begin(), by_rank.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (by_rank.size() != static_cast<size_t>(world())) {
    return Status::DataLoss("gather '" + key + "': " + std::to_string(by_rank.size()) + " records for " +
                            std::to_string(world()) + " workers");
  }
  std::vector<float> all;
  for (const auto& [from, rec] : by_rank) {
    const size_t n = (rec->size() - sizeof(uint32_t)) / sizeof(float);
    const size_t at = all.size();
    all.resize(at + n);
    if (n > 0) std::memcpy(all.data() + at, rec->data() + sizeof(uint32_t), n * sizeof(float));
  }
  return all;
}

Result<std::vector<comm::Neighbor>> PsCollective::AllMergeTopK(const std::string& key, uint64_t k, uint64_t queries,
                                                               std::span<const comm::Neighbor> mine) {
  GEOMX_ASSIGN_OR_RETURN(Bytes payload, comm::EncodeTopKRows(k, queries, mine));
  auto answer = ps_->PushPullPayload(kNeighborsKey, std::move(payload), neighbor_round_++);
  if (!answer.ok()) return answer.status().WithContext("top-k '" + key + "'");
  GEOMX_ASSIGN_OR_RETURN(comm::TopKRows merged, comm::DecodeTopKRows(*answer));
  if (merged.k != k || merged.queries != queries) {
    return Status::DataLoss("top-k '" + key + "': the server answered " + std::to_string(merged.queries) +
                            " queries of k=" + std::to_string(merged.k));
  }
  return std::move(merged.entries);
}

Result<RowUpdate> PsCollective::PushRowGradients(const RowTableSpec& table, std::span<const uint64_t> rows,
                                                 std::span<const float> grads) {
  const ps::KeyDef* def = nullptr;
  for (const ps::KeyDef& k : ps_->schema().keys()) {
    if (k.name == table.name && k.layout == ps::KeyLayoutKind::kRowSparse) def = &k;
  }
  if (def == nullptr || def->rows() != table.rows || def->row_width != table.width) {
    return Status::InvalidArgument("row table '" + table.name + "' (" + std::to_string(table.rows) + " x " +
                                   std::to_string(table.width) +
                                   ") is not a key of this job: the estimator must declare it (Estimator::RowTables)");
  }
  if (grads.size() != rows.size() * table.width) {
    return Status::InvalidArgument("row table '" + table.name + "': " + std::to_string(grads.size()) +
                                   " gradients for " + std::to_string(rows.size()) + " rows");
  }
  auto answer = ps_->PushRows(def->key, rows, grads, row_rounds_[def->key]++);
  if (!answer.ok()) return answer.status().WithContext("row table '" + table.name + "'");
  if (answer->width != table.width || answer->values.size() != answer->rows.size() * table.width) {
    return Status::DataLoss("row table '" + table.name + "': the server answered rows of width " +
                            std::to_string(answer->width));
  }
  // Sorted by row, as the contract says (the reducers leave them in arrival order).
  std::vector<size_t> order(answer->rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return answer->rows[a] < answer->rows[b]; });
  RowUpdate out;
  out.rows.reserve(order.size());
  out.values.reserve(answer->values.size());
  for (size_t i : order) {
    if (answer->rows[i] >= table.rows) {
      return Status::DataLoss("row table '" + table.name + "': the server answered row " +
                              std::to_string(answer->rows[i]));
    }
    if (!out.rows.empty() && out.rows.back() == answer->rows[i]) continue;
    out.rows.push_back(answer->rows[i]);
    const float* v = answer->values.data() + i * table.width;
    out.values.insert(out.values.end(), v, v + table.width);
  }
  return out;
}

}  // namespace geomx::algorithms
