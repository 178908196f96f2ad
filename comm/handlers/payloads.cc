#include "comm/handlers/payloads.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "comm/compression/compressor.h"

namespace geomx::comm {
namespace {

// Sequential little-endian reads with bounds checks; memcpy avoids alignment assumptions on received frames.
class Cursor {
 public:
  explicit Cursor(const Bytes& b) : b_(b) {}
  template <typename T>
  bool Get(T* v) {
    if (sizeof(T) > b_.size() - pos_) return false;
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  size_t remaining() const { return b_.size() - pos_; }
  size_t pos() const { return pos_; }
  void Skip(size_t n) { pos_ += n; }

 private:
  const Bytes& b_;
  size_t pos_ = 0;
};

class Builder {
 public:
  explicit Builder(size_t n) : out_(n) {}
  template <typename T>
  void Put(const T& v) {
    std::memcpy(out_.mutable_data() + pos_, &v, sizeof(T));
    pos_ += sizeof(T);
  }
  void PutRaw(const void* p, size_t n) {
    if (n > 0) std::memcpy(out_.mutable_data() + pos_, p, n);
    pos_ += n;
  }
  Bytes Take() { return std::move(out_); }

 private:
  Bytes out_;
  size_t pos_ = 0;
};

// One neighbour entry: [f32 distance][u32 0][u64 id][i64 label] (topk_merge, topk_rows).
void PutNeighbors(Builder* b, std::span<const Neighbor> v) {
  for (const Neighbor& nb : v) {
    b->Put<float>(nb.distance);
    b->Put<uint32_t>(0);
    b->Put<uint64_t>(nb.id);
    b->Put<int64_t>(nb.label);
  }
}

// Reads out->size() entries (their bytes were checked to be present); kDataLoss naming `codec` for a NaN distance.
Status GetNeighbors(Cursor* c, const char* codec, std::vector<Neighbor>* out) {
  for (Neighbor& nb : *out) {
    uint32_t pad = 0;
    c->Get(&nb.distance);
    c->Get(&pad);
    c->Get(&nb.id);
    c->Get(&nb.label);
    if (std::isnan(nb.distance)) return Status::DataLoss(std::string(codec) + ": NaN distance");
  }
  return Status::Ok();
}

bool NeighborLess(const Neighbor& a, const Neighbor& b) {
  return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
}

}  // namespace

Bytes EncodeRowSparse(uint64_t width, std::span<const uint64_t> rows, std::span<const float> values) {
  GEOMX_CHECK_EQ(values.size(), rows.size() * width) << "EncodeRowSparse: values must be rows x width";
  Builder b(16 + rows.size() * 8 + values.size() * 4);
  b.Put<uint64_t>(rows.size());
  b.Put<uint64_t>(width);
  b.PutRaw(rows.data(), rows.size() * 8);
  b.PutRaw(values.data(), values.size() * 4);
  return b.Take();
}

Result<RowSparse> DecodeRowSparse(const Bytes& payload) {
  Cursor c(payload);
  uint64_t n = 0, width = 0;
  if (!c.Get(&n) || !c.Get(&width)) return Status::DataLoss("row_sparse: truncated header");
  // Checked without overflow: n rows need n * (8 + 4 * width) bytes.
  if (width > (uint64_t{1} << 40) || n > c.remaining() / 8 ||
      (width > 0 && n > (c.remaining() - n * 8) / (4 * width)) ||
      c.remaining() != n * 8 + n * width * 4) {
    return Status::DataLoss("row_sparse: " + std::to_string(payload.size()) + " bytes do not hold " +
                            std::to_string(n) + " rows of width " + std::to_string(width));
  }
  RowSparse out;
  out.width = width;
  out.rows.resize(n);
  out.values.resize(n * width);
  if (n > 0) std::memcpy(out.rows.data(), payload.data() + 16, n * 8);
  if (!out.values.empty()) std::memcpy(out.values.data(), payload.data() + 16 + n * 8, n * width * 4);
  return out;
}

Bytes EncodeRecords(std::span<const Bytes> records) {
  size_t n = 8;
  for (const Bytes& r : records) n += 8 + r.size();
  Builder b(n);
  b.Put<uint64_t>(records.size());
  for (const Bytes& r : records) {
    b.Put<uint64_t>(r.size());
    b.PutRaw(r.data(), r.size());
  }
  return b.Take();
}

Result<std::vector<Bytes>> DecodeRecords(const Bytes& payload) {
  Cursor c(payload);
  uint64_t n = 0;
  if (!c.Get(&n)) return Status::DataLoss("concat: truncated header");
  if (n > c.remaining() / 8) return Status::DataLoss("concat: " + std::to_string(n) + " records cannot fit");
  std::vector<Bytes> out;
  out.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    if (!c.Get(&len) || len > c.remaining()) {
      return Status::DataLoss("concat: record " + std::to_string(i) + " is truncated");
    }
    out.push_back(payload.Slice(c.pos(), len));
    c.Skip(len);
  }
  if (c.remaining() != 0) return Status::DataLoss("concat: " + std::to_string(c.remaining()) + " trailing bytes");
  return out;
}

Bytes EncodeTopK(uint64_t k, std::span<const Neighbor> neighbors) {
  std::vector<Neighbor> v(neighbors.begin(), neighbors.end());
  std::sort(v.begin(), v.end(), NeighborLess);
  if (v.size() > k) v.resize(k);
  Builder b(16 + v.size() * 24);
  b.Put<uint64_t>(k);
  b.Put<uint64_t>(v.size());
  PutNeighbors(&b, v);
  return b.Take();
}

Result<TopK> DecodeTopK(const Bytes& payload) {
  Cursor c(payload);
  TopK out;
  uint64_t n = 0;
  if (!c.Get(&out.k) || !c.Get(&n)) return Status::DataLoss("topk_merge: truncated header");
  if (n > out.k || n > c.remaining() / 24 || c.remaining() != n * 24) {
    return Status::DataLoss("topk_merge: " + std::to_string(payload.size()) + " bytes do not hold " +
                            std::to_string(n) + " of k=" + std::to_string(out.k) + " neighbours");
  }
  out.neighbors.resize(n);
  GEOMX_RETURN_IF_ERROR(GetNeighbors(&c, "topk_merge", &out.neighbors));
  std::sort(out.neighbors.begin(), out.neighbors.end(), NeighborLess);
  return out;
}

std::vector<Neighbor> MergeTopKRows(uint64_t k, uint64_t queries, std::span<const std::span<const Neighbor>> parts) {
  auto less = [](const Neighbor& a, const Neighbor& b) {
    const float da = std::isnan(a.distance) ? INFINITY : a.distance;
    const float db = std::isnan(b.distance) ? INFINITY : b.distance;
    return da != db ? da < db : a.id < b.id;
  };
  std::vector<Neighbor> out(k * queries, Neighbor{INFINITY, kNoNeighbor, -1});
  std::vector<Neighbor> all;
  for (uint64_t q = 0; q < queries; ++q) {
    all.clear();
    for (const std::span<const Neighbor>& p : parts) all.insert(all.end(), p.begin() + q * k, p.begin() + (q + 1) * k);
    const size_t keep = std::min<size_t>(k, all.size());
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(), less);
    std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), out.begin() + q * k);
  }
  return out;
}

Result<Bytes> EncodeTopKRows(uint64_t k, uint64_t queries, std::span<const Neighbor> entries) {
  if ((k == 0 && queries > 0) || entries.size() != k * queries) {
    return Status::InvalidArgument("topk_rows: " + std::to_string(entries.size()) + " entries for " +
                                   std::to_string(queries) + " queries of k=" + std::to_string(k));
  }
  const std::span<const Neighbor> one[] = {entries};
  std::vector<Neighbor> sorted = MergeTopKRows(k, queries, one);
  for (Neighbor& nb : sorted) {
    if (std::isnan(nb.distance)) nb.distance = INFINITY;  // ordered as +inf; written as such
  }
  Builder b(16 + sorted.size() * 24);
  b.Put<uint64_t>(k);
  b.Put<uint64_t>(queries);
  PutNeighbors(&b, sorted);
  return b.Take();
}

Result<TopKRows> DecodeTopKRows(const Bytes& payload) {
  Cursor c(payload);
  TopKRows out;
  if (!c.Get(&out.k) || !c.Get(&out.queries)) return Status::DataLoss("topk_rows: truncated header");
  // Checked against the bytes present before anything is allocated.
  if ((out.k == 0 && out.queries > 0) || (out.k > 0 && out.queries > c.remaining() / 24 / out.k) ||
      c.remaining() != out.k * out.queries * 24) {
    return Status::DataLoss("topk_rows: " + std::to_string(payload.size()) + " bytes do not hold " +
                            std::to_string(out.queries) + " queries of k=" + std::to_string(out.k));
  }
  out.entries.resize(out.k * out.queries);
  GEOMX_RETURN_IF_ERROR(GetNeighbors(&c, "topk_rows", &out.entries));
  return out;
}

Bytes EncodeWeighted(double weight, std::span<const float> values) {
  Builder b(8 + values.size() * 4);
  b.Put<double>(weight);
  b.PutRaw(values.data(), values.size() * 4);
  return b.Take();
}

Result<WeightedValues> DecodeWeighted(const Bytes& payload) {
  Cursor c(payload);
  WeightedValues out;
  if (!c.Get(&out.weight) || c.remaining() % 4 != 0) {
    return Status::DataLoss("weighted_average: " + std::to_string(payload.size()) + " bytes is not a weight + floats");
  }
  if (!std::isfinite(out.weight) || out.weight <= 0) {
    return Status::DataLoss("weighted_average: weight must be finite and > 0, got " + std::to_string(out.weight));
  }
  out.values.resize(c.remaining() / 4);
  if (!out.values.empty()) std::memcpy(out.values.data(), payload.data() + 8, out.values.size() * 4);
  return out;
}

Result<Bytes> EncodeHalfSum(std::span<const float> lossy, std::span<const float> exact) {
  float largest = 0;
  for (float v : lossy) {
    if (!std::isfinite(v)) return Status::InvalidArgument("half_sum: a value to send is not finite");
    largest = std::max(largest, std::fabs(v));
  }
  const float scale = largest > 0 ? largest / 32768.0f : 1.0f;
  std::vector<float> scaled(lossy.size());
  for (size_t i = 0; i < lossy.size(); ++i) scaled[i] = lossy[i] / scale;
  std::vector<uint16_t> halves(lossy.size());
  FloatToHalf(scaled, halves);
  Builder b(20 + exact.size() * 4 + halves.size() * 2);
  b.Put<uint64_t>(lossy.size());
  b.Put<uint64_t>(exact.size());
  b.Put<float>(scale);
  b.PutRaw(exact.data(), exact.size() * 4);
  b.PutRaw(halves.data(), halves.size() * 2);
  return b.Take();
}

Result<HalfSum> DecodeHalfSum(const Bytes& payload) {
  Cursor c(payload);
  uint64_t n_lossy = 0, n_exact = 0;
  float scale = 0;
  if (!c.Get(&n_lossy) || !c.Get(&n_exact) || !c.Get(&scale)) {
    return Status::DataLoss("half_sum: payload of " + std::to_string(payload.size()) + " bytes has no header");
  }
  // Sizes are checked against the bytes present before anything is allocated.
  if (n_exact > c.remaining() / 4 || n_lossy > (c.remaining() - n_exact * 4) / 2 ||
      c.remaining() != n_exact * 4 + n_lossy * 2) {
    return Status::DataLoss("half_sum: header claims " + std::to_string(n_lossy) + " FP16 and " +
                            std::to_string(n_exact) + " f32 values, the payload holds " +
                            std::to_string(c.remaining()) + " bytes after it");
  }
  if (!std::isfinite(scale) || !(scale > 0)) return Status::DataLoss("half_sum: scale is not a positive number");
  HalfSum out;
  out.exact.resize(n_exact);
  if (n_exact > 0) std::memcpy(out.exact.data(), payload.data() + c.pos(), n_exact * 4);
  c.Skip(n_exact * 4);
  std::vector<uint16_t> halves(n_lossy);
  if (n_lossy > 0) std::memcpy(halves.data(), payload.data() + c.pos(), n_lossy * 2);
  out.lossy.resize(n_lossy);
  HalfToFloat(halves, out.lossy);
  for (float& v : out.lossy) v *= scale;
  return out;
}

}  // namespace geomx::comm
