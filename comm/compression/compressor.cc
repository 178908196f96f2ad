#include "comm/compression/compressor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <utility>

namespace geomx::comm {
namespace {

constexpr uint32_t kMagic = 0x31435847u;  // "GXC1" as little-endian bytes 'G' 'X' 'C' '1'
constexpr size_t kHeader = 16;
constexpr uint64_t kMaxSparseLength = uint64_t{1} << 32;  // u32 indices

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void Store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Kinds registered by their own files (RegisterFrameKind), indexed by the kind byte.
struct ExtraKinds {
  std::mutex mu;
  std::map<uint8_t, FrameKindDef> defs;  // GUARDED_BY(mu); filled during static initialisation
};
ExtraKinds& Extra() {
  static ExtraKinds k;
  return k;
}
const FrameKindDef* ExtraKind(uint8_t kind) {
  ExtraKinds& k = Extra();
  std::lock_guard<std::mutex> lock(k.mu);
  auto it = k.defs.find(kind);
  return it == k.defs.end() ? nullptr : &it->second;
}

// A checked view of a frame.
struct FrameView {
  FrameKind kind = FrameKind::kRaw;
  uint64_t length = 0;
  uint64_t count = 0;          // kSparse
  const uint8_t* body = nullptr;  // after the header (kSparse: after the count)
  const FrameKindDef* extra = nullptr;  // a registered kind (kSign, kInt8, kPowerSgd)
};

Result<FrameView> Parse(const Bytes& f) {
  auto bad = [&](const std::string& what) {
    return Status::DataLoss("compressed frame of " + std::to_string(f.size()) + " bytes: " + what);
  };
  if (f.size() < kHeader) return bad("shorter than the 16-byte header");
  const uint8_t* p = f.data();
  if (Load<uint32_t>(p) != kMagic) return bad("bad magic (not a GXC1 frame)");
  if (p[5] != 0 || p[6] != 0 || p[7] != 0) return bad("reserved header bytes are not zero");
  FrameView v;
  v.length = Load<uint64_t>(p + 8);
  const size_t rest = f.size() - kHeader;
  // Every element of a frame takes at least 2 bytes (kFp16) or the frame is sparse: bound before multiplying.
  switch (p[4]) {
    case static_cast<uint8_t>(FrameKind::kRaw):
      v.kind = FrameKind::kRaw;
      if (v.length > rest / 4 || v.length * 4 != rest) {
        return bad("kRaw frame of " + std::to_string(v.length) + " elements needs " +
                   (v.length > rest / 4 ? std::string("more") : std::to_string(v.length * 4)) + " body bytes, has " +
                   std::to_string(rest));
      }
      break;
    case static_cast<uint8_t>(FrameKind::kFp16):
      v.kind = FrameKind::kFp16;
      if (v.length > rest / 2 || v.length * 2 != rest) {
        return bad("kFp16 frame of " + std::to_string(v.length) + " elements does not match its " +
                   std::to_string(rest) + " body bytes");
      }
      break;
    case static_cast<uint8_t>(FrameKind::kSparse): {
      v.kind = FrameKind::kSparse;
      if (rest < 8) return bad("kSparse frame without its count");
      v.count = Load<uint64_t>(p + kHeader);
      if (v.count > v.length) {
        return bad("kSparse frame with " + std::to_string(v.count) + " entries for " + std::to_string(v.length) +
                   " elements");
      }
      if (v.length > kMaxSparseLength) return bad("kSparse frame longer than 2^32 elements");
      if (v.count > (rest - 8) / 8 || v.count * 8 != rest - 8) {
        return bad("kSparse frame of " + std::to_string(v.count) + " entries does not match its " +
                   std::to_string(rest - 8) + " entry bytes");
      }
      const uint8_t* idx = p + kHeader + 8;
      int64_t prev = -1;
      for (uint64_t i = 0; i < v.count; ++i) {
        const uint32_t k = Load<uint32_t>(idx + 4 * i);
        if (k >= v.length || static_cast<int64_t>(k) <= prev) {
          return bad("kSparse index " + std::to_string(k) + " at entry " + std::to_string(i) +
                     (k >= v.length ? " is out of range" : " is not increasing") + " (length " +
                     std::to_string(v.length) + ")");
        }
        prev = k;
      }
      v.body = p + kHeader + 8;
      return v;
    }
    default: {
      const FrameKindDef* def = ExtraKind(p[4]);
      if (def == nullptr) return bad("unknown kind " + std::to_string(p[4]));
      Status ok = def->check(p + kHeader, rest, v.length);
      if (!ok.ok()) return bad(std::string(def->name) + " frame of " + std::to_string(v.length) + " elements: " +
                               ok.message());
      v.kind = def->kind;
      v.extra = def;
      break;
    }
  }
  v.body = p + kHeader;
  return v;
}

// Applies a checked frame: op(i, value) for each element it carries (dense kinds: every element).
template <typename Op>
void ForEach(const FrameView& v, Op op) {
  if (v.extra != nullptr) {  // its check bounded length by the body size: the buffer is a few times the frame
    std::vector<float> dense(static_cast<size_t>(v.length));
    v.extra->decode(v.body, v.length, dense.data());
    for (uint64_t i = 0; i < v.length; ++i) op(i, dense[i]);
    return;
  }
  switch (v.kind) {
    case FrameKind::kRaw:
      for (uint64_t i = 0; i < v.length; ++i) op(i, Load<float>(v.body + 4 * i));
      break;
    case FrameKind::kFp16: {
      constexpr size_t kChunk = 1024;
      uint16_t h[kChunk];
      float f[kChunk];
      for (uint64_t base = 0; base < v.length; base += kChunk) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, v.length - base));
        std::memcpy(h, v.body + 2 * base, n * 2);
        HalfToFloat(std::span<const uint16_t>(h, n), std::span<float>(f, n));
        for (size_t i = 0; i < n; ++i) op(base + i, f[i]);
      }
      break;
    }
    case FrameKind::kSign:
    case FrameKind::kInt8:
    case FrameKind::kPowerSgd:
      break;  // registered kinds: handled above
    case FrameKind::kSparse: {
      const uint8_t* idx = v.body;
      const uint8_t* val = v.body + 4 * v.count;
      for (uint64_t i = 0; i < v.count; ++i) op(Load<uint32_t>(idx + 4 * i), Load<float>(val + 4 * i));
      break;
    }
  }
}

Bytes SparseFrame(uint64_t length, const std::vector<uint32_t>& idx, const std::vector<float>& val) {
  Bytes b = NewFrame(FrameKind::kSparse, length, 8 + 8 * idx.size());
  uint8_t* p = b.mutable_data() + kHeader;
  Store<uint64_t>(p, idx.size());
  if (!idx.empty()) {
    std::memcpy(p + 8, idx.data(), 4 * idx.size());
    std::memcpy(p + 8 + 4 * idx.size(), val.data(), 4 * val.size());
  }
  return b;
}

Status CheckState(std::string_view who, std::span<const float> values, CompressorState& state, bool needs_momentum) {
  if (state.residual.empty()) {
    state.residual.assign(values.size(), 0.0f);
    if (needs_momentum) state.momentum.assign(values.size(), 0.0f);
  }
  if (state.residual.size() != values.size()) {
    return Status::InvalidArgument(std::string(who) + ": slice of " + std::to_string(values.size()) +
                                   " elements, this key's state has " + std::to_string(state.residual.size()));
  }
  if (needs_momentum && state.momentum.size() != values.size()) state.momentum.assign(values.size(), 0.0f);
  return Status::Ok();
}

class RawCompressor final : public Compressor {
 public:
  std::string_view name() const override { return "raw"; }
  Result<Bytes> Encode(std::span<const float> values, CompressorState& state) const override {
    ++state.calls;
    return RawFrame(values);
  }
};

class Fp16Compressor final : public Compressor {
 public:
  std::string_view name() const override { return "fp16"; }
  Result<Bytes> Encode(std::span<const float> values, CompressorState& state) const override {
    ++state.calls;
    Bytes b = NewFrame(FrameKind::kFp16, values.size(), 2 * values.size());
    std::vector<uint16_t> h(values.size());
    FloatToHalf(values, h);
    if (!h.empty()) std::memcpy(b.mutable_data() + kHeader, h.data(), 2 * h.size());
    return b;
  }
};

// Lossless: the non-zeros, or kRaw when that is not smaller.
class SparseCompressor final : public Compressor {
 public:
  std::string_view name() const override { return "sparse"; }
  Result<Bytes> Encode(std::span<const float> values, CompressorState& state) const override {
    ++state.calls;
    const uint64_t n = values.size();
    if (n > kMaxSparseLength) return RawFrame(values);
    uint64_t nnz = 0;
    for (float x : values) nnz += (x != 0.0f || std::signbit(x)) ? 1 : 0;  // -0.0 kept: lossless bit for bit
    if (8 + 8 * nnz >= 4 * n) return RawFrame(values);
    std::vector<uint32_t> idx;
    std::vector<float> val;
    idx.reserve(nnz);
    val.reserve(nnz);
    for (uint64_t i = 0; i < n; ++i) {
      if (values[i] != 0.0f || std::signbit(values[i])) {
        idx.push_back(static_cast<uint32_t>(i));
        val.push_back(values[i]);
      }
    }
    return SparseFrame(n, idx, val);
  }
};

uint64_t Mix(uint64_t x) { return MixBits(x); }

// k = max(1, floor(ratio * n)) with the ratio as the user wrote it: 0.01f is 0.0099999998, and 1% of 10000
// must be 100, not 99 (the float goes through its shortest decimal form first).
uint64_t KeptCount(float ratio, uint64_t n) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.7g", static_cast<double>(ratio));
  const double r = std::strtod(text, nullptr);
  const double k = std::floor(r * static_cast<double>(n) * (1.0 + 1e-12));
  return std::max<uint64_t>(1, std::min<uint64_t>(n, static_cast<uint64_t>(k)));
}

// |x| for selection; NaN ranks above everything (it is sent, not hidden in the residual).
inline float Mag(float x) { return std::isnan(x) ? std::numeric_limits<float>::infinity() : std::fabs(x); }

class BscCompressor final : public Compressor {
 public:
  explicit BscCompressor(const CompressorConfig& c) : c_(c) {}
  std::string_view name() const override { return "bsc"; }

  Result<Bytes> Encode(std::span<const float> g, CompressorState& state) const override {
    const uint64_t n = g.size();
    if (n > kMaxSparseLength) {
      return Status::InvalidArgument("bsc: a slice of " + std::to_string(n) +
                                     " elements exceeds the 2^32 that u32 indices address; lower split_bytes");
    }
    const bool mom = c_.momentum > 0.0f;
    GEOMX_RETURN_IF_ERROR(CheckState("bsc", g, state, mom));
    const uint64_t call = state.calls++;
    std::vector<float>& v = state.residual;
    if (c_.residual_decay != 1.0f) {
      for (uint64_t i = 0; i < n; ++i) v[i] *= c_.residual_decay;
    }
    if (mom) {
      std::vector<float>& u = state.momentum;
      for (uint64_t i = 0; i < n; ++i) {
        u[i] = c_.momentum * u[i] + g[i];
        v[i] += u[i];
      }
    } else {
      for (uint64_t i = 0; i < n; ++i) v[i] += g[i];
    }
    if (n == 0) return SparseFrame(0, {}, {});
    const uint64_t k = KeptCount(c_.ratio, n);
    std::vector<uint32_t> idx;
    if (k >= n) {
      for (uint64_t i = 0; i < n; ++i) idx.push_back(static_cast<uint32_t>(i));
    } else if (c_.sampled) {
      idx = SampledSelect(v, k, call);
    } else {
      idx = ExactSelect(v, k);
    }
    std::vector<uint32_t> kept;
    std::vector<float> val;
    kept.reserve(idx.size());
    val.reserve(idx.size());
    for (uint32_t i : idx) {
      if (v[i] == 0.0f) continue;  // nothing to send
      kept.push_back(i);
      val.push_back(v[i]);
      v[i] = 0.0f;  // error feedback: what is sent leaves the residual
      if (mom) state.momentum[i] = 0.0f;  // momentum factor masking
    }
    return SparseFrame(n, kept, val);
  }

 private:
  // The k largest |v|, in increasing index order; ties at the threshold go to the lowest indices.
  static std::vector<uint32_t> ExactSelect(const std::vector<float>& v, uint64_t k) {
    std::vector<float> mag(v.size());
    for (size_t i = 0; i < v.size(); ++i) mag[i] = Mag(v[i]);
    std::nth_element(mag.begin(), mag.begin() + static_cast<int64_t>(k - 1), mag.end(), std::greater<float>());
    const float t = mag[k - 1];
    uint64_t above = 0;
    for (float m : mag) above += m > t ? 1 : 0;  // mag is a permutation: counts are exact
    uint64_t ties = k - above;
    std::vector<uint32_t> out;
    out.reserve(k);
    for (size_t i = 0; i < v.size(); ++i) {
      const float m = Mag(v[i]);
      if (m > t || (m == t && ties > 0)) {
        if (m == t) --ties;
        out.push_back(static_cast<uint32_t>(i));
      }
    }
    return out;
  }

  // Threshold from a fresh random sample (seed mixed with the call counter), then at most k of the entries at or
  // above it: the largest ones when more qualify (no bias towards low indices).
  std::vector<uint32_t> SampledSelect(const std::vector<float>& v, uint64_t k, uint64_t call) const {
    const uint64_t n = v.size();
    const uint64_t s = std::min<uint64_t>(
        n, std::max<uint64_t>(512, static_cast<uint64_t>(std::ceil(static_cast<double>(c_.sample_fraction) * n))));
    std::mt19937_64 rng(Mix(c_.seed ^ Mix(call + 1)));
    std::vector<float> sample(s);
    for (uint64_t i = 0; i < s; ++i) sample[i] = Mag(v[rng() % n]);
    const uint64_t ks = std::max<uint64_t>(
        1, std::min<uint64_t>(s, static_cast<uint64_t>(std::ceil(static_cast<double>(k) * s / n))));
    std::nth_element(sample.begin(), sample.begin() + static_cast<int64_t>(ks - 1), sample.end(),
                     std::greater<float>());
    const float t = sample[ks - 1];
    std::vector<uint32_t> cand;
    for (uint64_t i = 0; i < n; ++i) {
      if (Mag(v[i]) >= t) cand.push_back(static_cast<uint32_t>(i));
    }
    if (cand.size() > k) {
      std::nth_element(cand.begin(), cand.begin() + static_cast<int64_t>(k - 1), cand.end(),
                       [&](uint32_t a, uint32_t b) {
                         const float ma = Mag(v[a]), mb = Mag(v[b]);
                         return ma != mb ? ma > mb : a < b;
                       });
      cand.resize(k);
      std::sort(cand.begin(), cand.end());
    }
    return cand;
  }

  const CompressorConfig c_;
};

template <typename T>
CompressorRegistry::Factory Plain() {
  return [](const CompressorConfig&) -> Result<std::unique_ptr<Compressor>> {
    return std::unique_ptr<Compressor>(std::make_unique<T>());
  };
}

Result<std::unique_ptr<Compressor>> MakeBsc(const CompressorConfig& c) {
  if (!(c.ratio > 0.0f && c.ratio < 1.0f)) {
    return Status::InvalidArgument("bsc: ratio " + std::to_string(c.ratio) + " is not in (0, 1)");
  }
  if (!(c.momentum >= 0.0f && c.momentum < 1.0f)) {
    return Status::InvalidArgument("bsc: momentum " + std::to_string(c.momentum) + " is not in [0, 1)");
  }
  if (!(c.residual_decay >= 0.0f && c.residual_decay <= 1.0f)) {
    return Status::InvalidArgument("bsc: residual_decay " + std::to_string(c.residual_decay) + " is not in [0, 1]");
  }
  if (c.sampled && !(c.sample_fraction > 0.0f && c.sample_fraction <= 1.0f)) {
    return Status::InvalidArgument("bsc: sample_fraction " + std::to_string(c.sample_fraction) +
                                   " is not in (0, 1]");
  }
  return std::unique_ptr<Compressor>(std::make_unique<BscCompressor>(c));
}

}  // namespace

GEOMX_REGISTER(CompressorRegistry, "raw", Plain<RawCompressor>(), "dense f32 frames (lossless)");
GEOMX_REGISTER(CompressorRegistry, "fp16", Plain<Fp16Compressor>(), "IEEE binary16, round-to-nearest-even");
GEOMX_REGISTER(CompressorRegistry, "sparse", Plain<SparseCompressor>(), "lossless non-zeros (or raw if smaller)");
GEOMX_REGISTER(CompressorRegistry, "bsc", MakeBsc, "Bi-Sparse push: top-k with error feedback and momentum");

uint64_t MixBits(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Bytes NewFrame(FrameKind kind, uint64_t length, size_t body) {
  Bytes b(kHeader + body);
  uint8_t* p = b.mutable_data();
  std::memset(p, 0, b.size());
  Store(p, kMagic);
  p[4] = static_cast<uint8_t>(kind);
  Store(p + 8, length);
  return b;
}

bool RegisterFrameKind(const FrameKindDef& def) {
  ExtraKinds& k = Extra();
  std::lock_guard<std::mutex> lock(k.mu);
  return k.defs.emplace(static_cast<uint8_t>(def.kind), def).second;
}

Result<std::unique_ptr<Compressor>> MakeCompressor(const std::string& name, const CompressorConfig& config) {
  Result<std::unique_ptr<Compressor>> c = CompressorRegistry::Global().Create(name, config);
  if (!c.ok()) return c.status().WithContext("compressor");
  return c;
}

Result<uint64_t> FrameLength(const Bytes& frame) {
  GEOMX_ASSIGN_OR_RETURN(FrameView v, Parse(frame));
  return v.length;
}

Status ValidateFrame(const Bytes& frame, uint64_t length) {
  GEOMX_ASSIGN_OR_RETURN(FrameView v, Parse(frame));
  if (v.length != length) {
    return Status::DataLoss("compressed frame describes " + std::to_string(v.length) + " elements, expected " +
                            std::to_string(length));
  }
  return Status::Ok();
}

Status DecodeFrame(const Bytes& frame, std::span<float> out) {
  GEOMX_RETURN_IF_ERROR(ValidateFrame(frame, out.size()));
  FrameView v = Parse(frame).value();
  if (v.kind == FrameKind::kRaw) {
    if (!out.empty()) std::memcpy(out.data(), v.body, 4 * out.size());
    return Status::Ok();
  }
  if (v.kind == FrameKind::kSparse) std::fill(out.begin(), out.end(), 0.0f);
  ForEach(v, [&](uint64_t i, float x) { out[i] = x; });
  return Status::Ok();
}

Status AddFrame(const Bytes& frame, std::span<float> acc) {
  GEOMX_RETURN_IF_ERROR(ValidateFrame(frame, acc.size()));
  FrameView v = Parse(frame).value();
  ForEach(v, [&](uint64_t i, float x) { acc[i] += x; });
  return Status::Ok();
}

Bytes RawFrame(std::span<const float> values) {
  Bytes b = NewFrame(FrameKind::kRaw, values.size(), 4 * values.size());
  if (!values.empty()) std::memcpy(b.mutable_data() + kHeader, values.data(), 4 * values.size());
  return b;
}

}  // namespace geomx::comm
