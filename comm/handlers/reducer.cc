#include "comm/handlers/reducer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "comm/compression/gx_reducer.h"
#include "comm/handlers/payloads.h"

namespace geomx::comm {
namespace {

// Contributions kept until Finish, ordered by contributor (then arrival), so results do not depend on timing.
using Contributions = std::multimap<int, Bytes>;

// Loads floats from a frame that may not be 4-byte aligned (frames received from a Van).
void LoadFloats(const Bytes& b, std::vector<float>* out) {
  out->resize(b.size() / sizeof(float));
  if (!out->empty()) std::memcpy(out->data(), b.data(), out->size() * sizeof(float));
}

class SumReducer : public Reducer {
 public:
  explicit SumReducer(const ReducerConfig& c) : length_(c.length) {}
  std::string_view name() const override { return "sum"; }
  std::string_view codec() const override { return ""; }
  Status Validate(const Bytes& payload) const override {
    const uint64_t expected = length_ > 0 ? length_ * 4 : (parts_.empty() ? payload.size() : parts_.begin()->second.size());
    if (payload.size() % 4 != 0 || payload.size() != expected) {
      return Status::InvalidArgument("sum: payload of " + std::to_string(payload.size()) + " bytes, expected " +
                                     std::to_string(expected) + " (" + std::to_string(expected / 4) + " floats)");
    }
    return Status::Ok();
  }
  void Combine(int contributor, Bytes payload) override { parts_.emplace(contributor, std::move(payload)); }
  Result<Bytes> Finish() override {
    if (parts_.empty()) return Status::Internal("sum: nothing to reduce");
    if (parts_.size() == 1) return parts_.begin()->second;
    const size_t n = parts_.begin()->second.size() / 4;
    Bytes out(n * 4);
    float* acc = reinterpret_cast<float*>(out.mutable_data());
    std::memcpy(acc, parts_.begin()->second.data(), n * 4);
    std::vector<float> tmp;
    for (auto it = std::next(parts_.begin()); it != parts_.end(); ++it) {
      LoadFloats(it->second, &tmp);
      for (size_t i = 0; i < n; ++i) acc[i] += tmp[i];
    }
    return out;
  }

 private:
  uint64_t length_;
  Contributions parts_;
};

class RowSparseReducer : public Reducer {
 public:
  explicit RowSparseReducer(const ReducerConfig&) {}
  std::string_view name() const override { return "row_sparse"; }
  std::string_view codec() const override { return "row_sparse"; }
  Status Validate(const Bytes& payload) const override {
    Result<RowSparse> rs = DecodeRowSparse(payload);
    if (!rs.ok()) return rs.status();
    if (width_ >= 0 && rs->width != static_cast<uint64_t>(width_)) {
      return Status::InvalidArgument("row_sparse: row width " + std::to_string(rs->width) +
                                     " differs from earlier contributions (" + std::to_string(width_) + ")");
    }
    return Status::Ok();
  }
  void Combine(int contributor, Bytes payload) override {
    Result<RowSparse> rs = DecodeRowSparse(payload);
    GEOMX_CHECK(rs.ok()) << "row_sparse: Combine without Validate";
    width_ = static_cast<int64_t>(rs->width);
    parts_.emplace(contributor, std::move(payload));
  }
  Result<Bytes> Finish() override {
    if (parts_.empty()) return Status::Internal("row_sparse: nothing to reduce");
    const uint64_t width = static_cast<uint64_t>(width_);
    std::map<uint64_t, std::vector<float>> rows;
    for (const auto& [contributor, payload] : parts_) {
      Result<RowSparse> rs = DecodeRowSparse(payload);
      if (!rs.ok()) return rs.status();
      for (size_t r = 0; r < rs->rows.size(); ++r) {
        auto& acc = rows[rs->rows[r]];
        const float* src = rs->values.data() + r * width;
        if (acc.empty()) {
          acc.assign(src, src + width);
        } else {
          for (uint64_t j = 0; j < width; ++j) acc[j] += src[j];
        }
      }
    }
    std::vector<uint64_t> idx;
    std::vector<float> vals;
    idx.reserve(rows.size());
    vals.reserve(rows.size() * width);
    for (const auto& [row, v] : rows) {
      idx.push_back(row);
      vals.insert(vals.end(), v.begin(), v.end());
    }
    return EncodeRowSparse(width, idx, vals);
  }

 private:
  int64_t width_ = -1;
  Contributions parts_;
};

// A sparse vector sum: the row_sparse payload with width 1 (row = element index), any indices. An estimator's
// top-k-compressed sums (algorithms/estimators/ps_collective.h).
class SparseSumReducer : public RowSparseReducer {
 public:
  explicit SparseSumReducer(const ReducerConfig& c) : RowSparseReducer(c) {}
  std::string_view name() const override { return "sparse_sum"; }
  std::string_view codec() const override { return "sparse_sum"; }
  Status Validate(const Bytes& payload) const override {
    Result<RowSparse> rs = DecodeRowSparse(payload);
    if (!rs.ok()) return rs.status();
    if (rs->width != 1) return Status::InvalidArgument("sparse_sum: width " + std::to_string(rs->width) + ", expected 1");
    return Status::Ok();
  }
};

class ConcatReducer : public Reducer {
 public:
  explicit ConcatReducer(const ReducerConfig&) {}
  std::string_view name() const override { return "concat"; }
  std::string_view codec() const override { return "concat"; }
  Status Validate(const Bytes& payload) const override { return DecodeRecords(payload).status(); }
  void Combine(int contributor, Bytes payload) override { parts_.emplace(contributor, std::move(payload)); }
  Result<Bytes> Finish() override {
    if (parts_.empty()) return Status::Internal("concat: nothing to reduce");
    std::vector<Bytes> all;
    for (const auto& [contributor, payload] : parts_) {
      Result<std::vector<Bytes>> records = DecodeRecords(payload);
      if (!records.ok()) return records.status();
      all.insert(all.end(), records->begin(), records->end());
    }
    return EncodeRecords(all);
  }

 private:
  Contributions parts_;
};

class TopKMergeReducer : public Reducer {
 public:
  explicit TopKMergeReducer(const ReducerConfig&) {}
  std::string_view name() const override { return "topk_merge"; }
  std::string_view codec() const override { return "topk_merge"; }
  Status Validate(const Bytes& payload) const override {
    Result<TopK> t = DecodeTopK(payload);
    if (!t.ok()) return t.status();
    if (k_ > 0 && t->k != k_) {
      return Status::InvalidArgument("topk_merge: k=" + std::to_string(t->k) + " differs from earlier k=" +
                                     std::to_string(k_));
    }
    return Status::Ok();
  }
  void Combine(int, Bytes payload) override {
    Result<TopK> t = DecodeTopK(payload);
    GEOMX_CHECK(t.ok()) << "topk_merge: Combine without Validate";
    k_ = t->k;
    all_.insert(all_.end(), t->neighbors.begin(), t->neighbors.end());
  }
  Result<Bytes> Finish() override { return EncodeTopK(k_, all_); }  // sorts by (distance, id): order-free

 private:
  uint64_t k_ = 0;
  std::vector<Neighbor> all_;
};

class TopKRowsReducer : public Reducer {
 public:
  explicit TopKRowsReducer(const ReducerConfig&) {}
  std::string_view name() const override { return "topk_rows"; }
  std::string_view codec() const override { return "topk_rows"; }
  Status Validate(const Bytes& payload) const override {
    Result<TopKRows> t = DecodeTopKRows(payload);
    if (!t.ok()) return t.status();
    if (!parts_.empty() && (t->k != k_ || t->queries != queries_)) {
      return Status::InvalidArgument("topk_rows: " + std::to_string(t->queries) + " queries of k=" +
                                     std::to_string(t->k) + ", earlier contributions had " + std::to_string(queries_) +
                                     " of k=" + std::to_string(k_));
    }
    return Status::Ok();
  }
  void Combine(int contributor, Bytes payload) override {
    Result<TopKRows> t = DecodeTopKRows(payload);
    GEOMX_CHECK(t.ok()) << "topk_rows: Combine without Validate";
    k_ = t->k;
    queries_ = t->queries;
    parts_.emplace(contributor, std::move(t->entries));
  }
  Result<Bytes> Finish() override {
    if (parts_.empty()) return Status::Internal("topk_rows: nothing to reduce");
    std::vector<std::span<const Neighbor>> spans;
    for (const auto& [contributor, entries] : parts_) spans.emplace_back(entries);
    return EncodeTopKRows(k_, queries_, MergeTopKRows(k_, queries_, spans));
  }

 private:
  uint64_t k_ = 0, queries_ = 0;
  std::multimap<int, std::vector<Neighbor>> parts_;
};

class WeightedAverageReducer : public Reducer {
 public:
  explicit WeightedAverageReducer(const ReducerConfig& c) : length_(c.length) {}
  std::string_view name() const override { return "weighted_average"; }
  std::string_view codec() const override { return "weighted_average"; }
  Status Validate(const Bytes& payload) const override {
    Result<WeightedValues> w = DecodeWeighted(payload);
    if (!w.ok()) return w.status();
    const uint64_t expected = length_ > 0 ? length_ : (parts_.empty() ? w->values.size() : size_);
    if (w->values.size() != expected) {
      return Status::InvalidArgument("weighted_average: " + std::to_string(w->values.size()) + " values, expected " +
                                     std::to_string(expected));
    }
    return Status::Ok();
  }
  void Combine(int contributor, Bytes payload) override {
    size_ = (payload.size() - 8) / 4;
    parts_.emplace(contributor, std::move(payload));
  }
  Result<Bytes> Finish() override {
    if (parts_.empty()) return Status::Internal("weighted_average: nothing to reduce");
    double total = 0;
    std::vector<double> acc(size_, 0.0);
    for (const auto& [contributor, payload] : parts_) {
      Result<WeightedValues> w = DecodeWeighted(payload);
      if (!w.ok()) return w.status();
      total += w->weight;
      for (size_t i = 0; i < size_; ++i) acc[i] += w->weight * w->values[i];
    }
    std::vector<float> mean(size_);
    for (size_t i = 0; i < size_; ++i) mean[i] = static_cast<float>(acc[i] / total);
    return EncodeWeighted(total, mean);
  }

 private:
  uint64_t length_;
  size_t size_ = 0;
  Contributions parts_;
};

class HalfSumReducer : public Reducer {
 public:
  explicit HalfSumReducer(const ReducerConfig&) {}
  std::string_view name() const override { return "half_sum"; }
  std::string_view codec() const override { return "half_sum"; }
  Status Validate(const Bytes& payload) const override {
    Result<HalfSum> h = DecodeHalfSum(payload);
    if (!h.ok()) return h.status();
    if (started_ && (h->lossy.size() != lossy_.size() || h->exact.size() != exact_.size())) {
      return Status::InvalidArgument("half_sum: " + std::to_string(h->lossy.size()) + " + " +
                                     std::to_string(h->exact.size()) + " values, earlier contributions had " +
                                     std::to_string(lossy_.size()) + " + " + std::to_string(exact_.size()));
    }
    return Status::Ok();
  }
  void Combine(int contributor, Bytes payload) override {
    Result<HalfSum> h = DecodeHalfSum(payload);
    GEOMX_CHECK(h.ok()) << "half_sum: Combine without Validate";
    if (!started_) {
      lossy_.assign(h->lossy.size(), 0.0f);
      exact_.assign(h->exact.size(), 0.0f);
      started_ = true;
    }
    parts_.emplace(contributor, std::move(payload));
  }
  Result<Bytes> Finish() override {
    if (parts_.empty()) return Status::Internal("half_sum: nothing to reduce");
    for (const auto& [contributor, payload] : parts_) {
      GEOMX_ASSIGN_OR_RETURN(HalfSum h, DecodeHalfSum(payload));
      for (size_t i = 0; i < lossy_.size(); ++i) lossy_[i] += h.lossy[i];
      for (size_t i = 0; i < exact_.size(); ++i) exact_[i] += h.exact[i];
    }
    return EncodeHalfSum(lossy_, exact_);
  }

 private:
  bool started_ = false;
  std::vector<float> lossy_, exact_;
  Contributions parts_;
};

template <typename T>
ReducerRegistry::Factory Factory() {
  return [](const ReducerConfig& c) -> Result<std::unique_ptr<Reducer>> {
    return std::unique_ptr<Reducer>(std::make_unique<T>(c));
  };
}

}  // namespace

// Registered here, next to MakeReducer, so that linking MakeReducer keeps every built-in reducer.
GEOMX_REGISTER(ReducerRegistry, "sum", Factory<SumReducer>(), "dense f32 element-wise sum");
GEOMX_REGISTER(ReducerRegistry, "row_sparse", Factory<RowSparseReducer>(), "union of rows, same rows summed");
GEOMX_REGISTER(ReducerRegistry, "concat", Factory<ConcatReducer>(), "record lists, concatenated by contributor");
GEOMX_REGISTER(ReducerRegistry, "topk_merge", Factory<TopKMergeReducer>(), "k smallest (distance, id, label)");
GEOMX_REGISTER(ReducerRegistry, "weighted_average", Factory<WeightedAverageReducer>(), "weight-summed average");
GEOMX_REGISTER(ReducerRegistry, "half_sum", Factory<HalfSumReducer>(), "FP16 sum with an exact f32 part");
GEOMX_REGISTER(ReducerRegistry, "topk_rows", Factory<TopKRowsReducer>(), "per-query k smallest (distance, id)");
GEOMX_REGISTER(ReducerRegistry, "sparse_sum", Factory<SparseSumReducer>(), "sparse vector sum (index, value)");

Result<std::unique_ptr<Reducer>> MakeReducer(const std::string& name, const ReducerConfig& config) {
  [[maybe_unused]] static const bool gx_linked = GxReducerLinked();  // keeps "gx_sum" (comm/compression/)
  Result<std::unique_ptr<Reducer>> r = ReducerRegistry::Global().Create(name, config);
  if (!r.ok()) return r.status().WithContext("reducer");
  return r;
}

}  // namespace geomx::comm
