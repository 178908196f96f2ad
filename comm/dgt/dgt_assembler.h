// DgtAssembler: the receiving half of DGT (comm/dgt/dgt_plan.h; issue 16). Blocks of one sender's push of one key
// arrive in any order, on any channel, each tagged with its round. A round of (sender, key) is complete when every
// block arrived, or when its last block (the end marker, always on the reliable channel) arrived and `deadline_s`
// has passed since: the low-priority blocks still missing then count as zeros. A block of a round that was already
// closed is not dropped: it is added into the same block of that sender's next round of the key (late data is
// delayed, not lost; GeoMX's "Diff-Reception"), unless `carry_late` is false (the sender's error feedback then
// sends what did not arrive again: comm/dgt/dgt_link.h); it is then only counted.
// At most one round of (sender, key) is open at a time: a block of a later round while one is open is refused (a
// sender pushes round r + 1 only after round r was answered), so memory stays bounded whatever blocks claim.
//
// Time is passed in (seconds on any monotonic clock), so tests need no sleeping. Not thread-safe (the server's
// receive thread). Memory: one pending vector per open (sender, key, round) and one carry vector per (sender, key).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "engine/base/status.h"

namespace geomx::comm {

class DgtAssembler {
 public:
  DgtAssembler(size_t block_elements, double deadline_s, bool carry_late = true)
      : block_elements_(block_elements), deadline_s_(deadline_s), carry_late_(carry_late) {}

  // Block `block` of (sender, key, round) holding values.size() floats of a key of `elements`. kInvalidArgument
  // for a block outside the key or of the wrong length, or a key whose length changed; a second copy of the same
  // block of an open round is ignored. kOutOfRange for a block of a round after the one still open.
  Status Add(int sender, uint64_t key, int64_t round, size_t block, std::span<const float> values, size_t elements,
             double now_s);

  // The assembled values of (sender, key, round) once it is complete or past its deadline (missing blocks zero,
  // late blocks of the previous round added in), and the round is closed; nullopt while it is still waiting.
  // `delivered` (may be null) receives which blocks had arrived.
  std::optional<std::vector<float>> TakeIfReady(int sender, uint64_t key, int64_t round, double now_s,
                                                std::vector<bool>* delivered = nullptr);
  // When the round's deadline passes (seconds on the caller's clock): its end marker's arrival + deadline_s;
  // nullopt while the end marker has not arrived or for a round not open.
  std::optional<double> DeadlineOf(int sender, uint64_t key, int64_t round) const;

  // Blocks that arrived after their round closed and were carried into the next round.
  uint64_t late_blocks() const { return late_blocks_; }
  // Blocks missing when their rounds closed at the deadline.
  uint64_t missing_blocks() const { return missing_blocks_; }

 private:
  struct Open {
    std::vector<float> values;
    std::vector<bool> present;
    size_t received = 0;
    double end_marker_at = -1;  // when the last block arrived (< 0: not yet)
  };
  using Id = std::tuple<int, uint64_t, int64_t>;  // sender, key, round

  const size_t block_elements_;
  const double deadline_s_;
  const bool carry_late_;
  std::map<Id, Open> open_;
  std::map<std::pair<int, uint64_t>, int64_t> closed_through_;         // latest closed round per (sender, key)
  std::map<std::pair<int, uint64_t>, std::vector<float>> carry_;       // late blocks for the next round
  std::map<std::pair<int, uint64_t>, size_t> elements_;                // each key's length
  uint64_t late_blocks_ = 0;
  uint64_t missing_blocks_ = 0;
};

}  // namespace geomx::comm
