// DGT (differential gradient transmission, ../shared/reference/accelerators.md §1; issue 16): which blocks of a
// pushed gradient travel on which channel. This is the sender's planning half; the channels themselves (a reliable
// one and C lower-priority ones that may lose blocks) are the transport's.
//
// A key's values are cut into fixed blocks of block_elements floats (default 350: 1400 bytes, so a block and its
// header fit one 1500-byte Ethernet frame; GeoMX's 4096-byte blocks were fragmented into three IP packets, and
// losing any one lost the block). Every round each block's contribution is updated as a moving average of its mean
// |g|:
//     c = alpha * c + (1 - alpha) * mean(|block|)
// Then, per key:
//   * the key's last block always goes on channel 0 (reliable): it ends the key's round at the receiver;
//   * a block whose contribution is exactly 0 (never anything but zeros) is not sent (kNotSent);
//   * the other blocks are ranked by contribution, highest first (ties: lower block index first); the first
//     round(k * n) of those n blocks go on channel 0, the rest are split into `channels` equal rank bins, channel
//     1 (the most important of them) to `channels` (the least).
// k adapts to the training loss when adaptive: k = max(k0 * loss / first_loss, k_min) (GeoMX read this setting
// but never applied it); otherwise k = k0. Unlike GeoMX's formula, the bins never yield channel C + 1.
//
// DgtResidual is the error feedback for blocks that never arrived (and for what quantisation left out): what was
// not delivered is added to the same key's next push, so over rounds, delivered + residual = pushed.
//
// Not thread-safe: one per sender (the local server's upward link); state persists across rounds, so a key's
// length must not change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "engine/base/status.h"

namespace geomx::comm {

struct DgtOptions {
  size_t block_elements = 350;  // floats per block (1400 bytes)
  float alpha = 0.3f;           // contribution momentum
  float k0 = 0.8f;              // fraction of the ranked blocks sent reliably
  float k_min = 0.2f;           // floor of k when adaptive
  bool adaptive_k = true;       // k follows the training loss
  int channels = 3;             // lower-priority channels, 1..7
};

// kInvalidArgument naming the field for block_elements 0, alpha outside [0, 1), k0 or k_min outside [0, 1],
// k_min > k0, channels outside 1..7.
Status ValidateDgtOptions(const DgtOptions& o);

class DgtPlanner {
 public:
  static constexpr int kNotSent = -1;

  explicit DgtPlanner(DgtOptions options);  // options must be valid (ValidateDgtOptions)

  // The training loss of the latest round (the first one fed is the reference). Non-finite or non-positive losses
  // are ignored.
  void SetLoss(double loss);
  double k() const { return k_; }

  // Updates `key`'s block contributions with this round's `values` and returns each block's channel (0 reliable,
  // 1..channels, or kNotSent). kInvalidArgument when the key's length changed since its first round.
  Result<std::vector<int>> Plan(uint64_t key, std::span<const float> values);

  // The contributions of `key`'s blocks (empty for a key never planned).
  std::vector<float> Contributions(uint64_t key) const;
  size_t NumBlocks(size_t elements) const;
  const DgtOptions& options() const { return options_; }

 private:
  struct KeyState {
    size_t elements = 0;
    std::vector<float> contribution;
  };
  const DgtOptions options_;
  double first_loss_ = 0;
  double k_;
  std::map<uint64_t, KeyState> keys_;
};

class DgtResidual {
 public:
  explicit DgtResidual(size_t block_elements) : block_elements_(block_elements) {}
  // values + the key's residual: what this round pushes (the residual is taken).
  std::vector<float> Compose(uint64_t key, std::span<const float> values);
  // After the round: the blocks of `pushed` (what Compose returned) that were not delivered become the residual.
  // delivered[b] tells block b's fate. `arrived` (empty: exactly `pushed`): what the receiver got for each element
  // of a delivered block (a quantised block's decoded values); pushed - arrived stays in the residual.
  void Settle(uint64_t key, std::span<const float> pushed, const std::vector<bool>& delivered,
              std::span<const float> arrived = {});
  std::span<const float> residual(uint64_t key) const;

 private:
  const size_t block_elements_;
  std::map<uint64_t, std::vector<float>> residual_;
};

}  // namespace geomx::comm
