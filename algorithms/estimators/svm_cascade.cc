#include "algorithms/estimators/svm_cascade.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "comm/handlers/payloads.h"
#include "comm/handlers/reducer.h"

namespace geomx::algorithms::svm {
namespace {

// A cascade record (one per worker, or one per tier's result): a header of fixed-width little-endian fields
//   u32 version (1), u32 regression, u32 kernel type, i32 degree, f64 C, gamma, coef0, epsilon, tol, cache_mb,
//   i64 max_iter, u32 shrinking, i32 failure (a StatusCode), u32 failed_rank, i64 cols, i64 rows, i32 classes
// then per row: u32 origin rank, u32 origin row (the worker and its shard's row), f32 label or target, f32 weight,
// f32 x_1 .. x_cols. The reducer's payload is a concat record list (comm/handlers/payloads.h) of such records; its
// result is one record: the support vectors of an SMO fit on the union of the records' rows with the records' own
// settings (or every row, when they hold fewer than two classes; or a failure, when any record carries one).
constexpr uint32_t kCascadeVersion = 1;

class ByteWriter {
 public:
  template <typename T>
  void Put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  Bytes Take() const { return Bytes::Copy(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(const Bytes& b) : p_(b.data()), left_(b.size()) {}
  template <typename T>
  bool Get(T* v) {
    if (left_ < sizeof(T)) return false;
    std::memcpy(v, p_, sizeof(T));
    p_ += sizeof(T);
    left_ -= sizeof(T);
    return true;
  }
  size_t left() const { return left_; }

 private:
  const uint8_t* p_;
  size_t left_;
};

Bytes EncodeCascadeRecord(const CascadeRows& c) {
  ByteWriter w;
  const SvmConfig& k = c.config;
  w.Put(kCascadeVersion);
  w.Put(static_cast<uint32_t>(c.regression));
  w.Put(static_cast<uint32_t>(k.kernel.type));
  w.Put(static_cast<int32_t>(k.kernel.degree));
  for (double d : {k.C, k.kernel.gamma, k.kernel.coef0, k.epsilon, k.solver.tol, k.solver.cache_mb}) w.Put(d);
  w.Put(static_cast<int64_t>(k.solver.max_iter));
  w.Put(static_cast<uint32_t>(k.solver.shrinking));
  w.Put(static_cast<int32_t>(c.failure));
  w.Put(c.failed_rank);
  w.Put(c.table.cols);
  w.Put(c.table.rows);
  w.Put(static_cast<int32_t>(c.classes));
  std::vector<float> x(static_cast<size_t>(c.table.cols));
  for (int64_t r = 0; r < c.table.rows; ++r) {
    w.Put(c.origin_rank[static_cast<size_t>(r)]);
    w.Put(static_cast<uint32_t>(c.origin_row[static_cast<size_t>(r)]));
    w.Put(c.regression ? c.table.targets[static_cast<size_t>(r)] : static_cast<float>(c.table.labels[r]));
    w.Put(c.table.weight(r));
    c.table.CopyRow(r, x.data());
    for (float v : x) w.Put(v);
  }
  return w.Take();
}

// Everything a peer can get wrong is kDataLoss naming the field.
Result<CascadeRows> DecodeCascadeRecord(const Bytes& b) {
  ByteReader in(b);
  CascadeRows c;
  uint32_t version = 0, regression = 0, kernel = 0, shrinking = 0;
  int32_t degree = 0, failure = 0, classes = 0;
  double d[6];
  int64_t max_iter = 0, cols = 0, rows = 0;
  bool ok = in.Get(&version) && in.Get(&regression) && in.Get(&kernel) && in.Get(&degree);
  for (double& v : d) ok = ok && in.Get(&v);
  ok = ok && in.Get(&max_iter) && in.Get(&shrinking) && in.Get(&failure) && in.Get(&c.failed_rank) &&
       in.Get(&cols) && in.Get(&rows) && in.Get(&classes);
  if (!ok) return Status::DataLoss("svm cascade record: truncated header (" + std::to_string(b.size()) + " bytes)");
  if (version != kCascadeVersion) {
    return Status::DataLoss("svm cascade record: version " + std::to_string(version) + ", expected 1");
  }
  if (kernel > static_cast<uint32_t>(smo::KernelType::kSigmoid) || regression > 1 || cols < 0 || rows < 0 ||
      cols > (int64_t{1} << 30) || classes < 0) {
    return Status::DataLoss("svm cascade record: bad header field (kernel, task, columns or classes)");
  }
  const uint64_t row_bytes = 16 + 4 * static_cast<uint64_t>(cols);
  if (static_cast<uint64_t>(rows) > in.left() / row_bytes || in.left() != static_cast<uint64_t>(rows) * row_bytes) {
    return Status::DataLoss("svm cascade record: " + std::to_string(in.left()) + " bytes for " +
                            std::to_string(rows) + " rows of " + std::to_string(cols) + " columns");
  }
  c.regression = regression == 1;
  c.config.kernel.type = static_cast<smo::KernelType>(kernel);
  c.config.kernel.degree = degree;
  c.config.C = d[0];
  c.config.kernel.gamma = d[1];
  c.config.kernel.coef0 = d[2];
  c.config.epsilon = d[3];
  c.config.solver.tol = d[4];
  c.config.solver.cache_mb = d[5];
  c.config.solver.max_iter = max_iter;
  c.config.solver.shrinking = shrinking != 0;
  c.failure = failure;
  c.classes = classes;
  c.table.cols = cols;
  bool weighted = false;
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t rank = 0, row = 0;
    float y = 0, weight = 0;
    in.Get(&rank);
    in.Get(&row);
    in.Get(&y);
    in.Get(&weight);
    if (!c.regression && (!(y >= 0) || y >= static_cast<float>(std::max(classes, 1)) || y != std::floor(y))) {
      return Status::DataLoss("svm cascade record: row " + std::to_string(r) + " has label " + std::to_string(y));
    }
    if (!std::isfinite(y) || !std::isfinite(weight) || weight < 0) {
      return Status::DataLoss("svm cascade record: row " + std::to_string(r) + " has a non-finite value or weight");
    }
    c.origin_rank.push_back(rank);
    c.origin_row.push_back(row);
    if (c.regression) {
      c.table.targets.push_back(y);
    } else {
      c.table.labels.push_back(static_cast<int32_t>(y));
    }
    c.table.weights.push_back(weight);
    weighted = weighted || weight != 1.0f;
    for (int64_t j = 0; j < cols; ++j) {
      float v = 0;
      in.Get(&v);
      c.table.dense.push_back(v);
    }
    ++c.table.rows;
  }
  if (!weighted) c.table.weights.clear();
  c.table.num_classes = classes;
  return c;
}

}  // namespace

// This worker's record: the rows `rows` of its shard (its local support vectors), or its failure.
Bytes EncodeCascade(const SvmConfig& config, bool regression, const data::Table& train,
                    const std::vector<int64_t>& rows, const Status& failure, int rank) {
  CascadeRows c;
  c.config = config;
  c.regression = regression;
  c.failure = failure.ok() ? 0 : static_cast<int>(failure.code());
  c.failed_rank = static_cast<uint32_t>(rank);
  c.classes = train.num_classes;
  c.table = train.Select(rows);
  c.origin_rank.assign(rows.size(), static_cast<uint32_t>(rank));
  c.origin_row = rows;
  const Bytes record = EncodeCascadeRecord(c);
  return comm::EncodeRecords(std::span<const Bytes>(&record, 1));
}

// The reducer's result as every worker receives it: exactly one record.
Result<CascadeRows> DecodeCascadeAnswer(const Bytes& payload) {
  GEOMX_ASSIGN_OR_RETURN(std::vector<Bytes> records, comm::DecodeRecords(payload));
  if (records.size() != 1) {
    return Status::DataLoss("svm cascade: the servers answered " + std::to_string(records.size()) + " records");
  }
  return DecodeCascadeRecord(records[0]);
}

namespace {

// One level of the cascade at a server: the union of its contributors' rows, retrained (above).
class SvmCascadeReducer final : public comm::Reducer {
 public:
  explicit SvmCascadeReducer(const comm::ReducerConfig&) {}
  std::string_view name() const override { return kCascadeReducer; }
  std::string_view codec() const override { return kCascadeReducer; }
  Status Validate(const Bytes& payload) const override {
    GEOMX_ASSIGN_OR_RETURN(std::vector<Bytes> records, comm::DecodeRecords(payload));
    for (const Bytes& r : records) GEOMX_RETURN_IF_ERROR(DecodeCascadeRecord(r).status());
    return Status::Ok();
  }
  void Combine(int contributor, Bytes payload) override { parts_.emplace(contributor, std::move(payload)); }
  Result<Bytes> Finish() override {
    std::vector<CascadeRows> all;
    for (const auto& [contributor, payload] : parts_) {
      GEOMX_ASSIGN_OR_RETURN(std::vector<Bytes> records, comm::DecodeRecords(payload));
      for (const Bytes& r : records) {
        GEOMX_ASSIGN_OR_RETURN(CascadeRows c, DecodeCascadeRecord(r));
        all.push_back(std::move(c));
      }
    }
    if (all.empty()) return Status::Internal("svm cascade: nothing to reduce");
    CascadeRows out;
    out.config = all[0].config;
    out.regression = all[0].regression;
    out.table.cols = all[0].table.cols;
    for (const CascadeRows& c : all) {
      if (c.table.cols != out.table.cols || c.regression != out.regression) {
        return Status::InvalidArgument("svm cascade: records of " + std::to_string(c.table.cols) + " and " +
                                       std::to_string(out.table.cols) + " columns (or of two tasks) meet");
      }
      out.classes = std::max(out.classes, c.classes);
      if (c.failure != 0 && out.failure == 0) {
        out.failure = c.failure;
        out.failed_rank = c.failed_rank;
      }
    }
    if (out.failure != 0) return Reply(out);
    for (CascadeRows& c : all) {
      AppendRows(c.table, &out.table);
      out.origin_rank.insert(out.origin_rank.end(), c.origin_rank.begin(), c.origin_rank.end());
      out.origin_row.insert(out.origin_row.end(), c.origin_row.begin(), c.origin_row.end());
    }
    out.table.num_classes = out.classes;
    // One contributor: its rows are already its support vectors. Fewer than two classes: nothing can be ruled out.
    if (all.size() == 1 || out.table.rows == 0 || (!out.regression && CountClasses(out.table) < 2)) return Reply(out);
    FitContext context;  // one thread: the server shares its machine
    out.config.solver.threads = 1;
    Result<std::vector<int64_t>> fitted = SupportVectorRows(out.table, out.config, out.regression, context);
    if (!fitted.ok()) {
      out.failure = static_cast<int>(fitted.status().code());
      out.failed_rank = out.origin_rank.empty() ? 0 : out.origin_rank[0];
      out.table = out.table.Select({});
      out.origin_rank.clear();
      out.origin_row.clear();
      return Reply(out);
    }
    const std::vector<int64_t>& sv = *fitted;
    CascadeRows kept = out;
    kept.table = out.table.Select(sv);
    kept.origin_rank.clear();
    kept.origin_row.clear();
    for (int64_t r : sv) {
      kept.origin_rank.push_back(out.origin_rank[static_cast<size_t>(r)]);
      kept.origin_row.push_back(out.origin_row[static_cast<size_t>(r)]);
    }
    return Reply(kept);
  }

 private:
  static Result<Bytes> Reply(const CascadeRows& c) {
    const Bytes record = EncodeCascadeRecord(c);
    return comm::EncodeRecords(std::span<const Bytes>(&record, 1));
  }
  std::map<int, Bytes> parts_;  // by contributor: combined in contributor order
};

}  // namespace

GEOMX_REGISTER(comm::ReducerRegistry, kCascadeReducer,
               [](const comm::ReducerConfig& c) -> Result<std::unique_ptr<comm::Reducer>> {
                 return std::unique_ptr<comm::Reducer>(std::make_unique<SvmCascadeReducer>(c));
               },
               "SVM cascade level: the union of the records' rows, retrained, its support vectors");

}  // namespace geomx::algorithms::svm
