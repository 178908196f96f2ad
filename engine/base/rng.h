// Rng: a small, seedable, reproducible random generator (xoshiro256**), explicit everywhere (no global RNG).
// Same seed => same sequence on every platform. Not thread-safe: one Rng per thread/owner.
// State() / SetState() let checkpoints save and restore the exact position.
#pragma once

#include <array>
#include <cstdint>

namespace geomx {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { Seed(seed); }
  void Seed(uint64_t seed);

  uint64_t NextU64();
  // Uniform in [0, 1).
  double Uniform();
  float UniformF() { return static_cast<float>(Uniform()); }
  // Uniform integer in [0, n). n > 0.
  uint64_t Below(uint64_t n);
  // Standard normal (Box-Muller, no cached value so State() is the whole state).
  double Normal();
  // Gamma(shape, 1) (Marsaglia-Tsang); used by Dirichlet partitions.
  double Gamma(double shape);
  // A child generator whose stream is independent of this one (for per-worker / per-thread streams).
  Rng Fork(uint64_t stream_id) const;

  std::array<uint64_t, 4> State() const { return s_; }
  void SetState(const std::array<uint64_t, 4>& s) { s_ = s; }

 private:
  std::array<uint64_t, 4> s_{};
};

}  // namespace geomx
