// OverlayPlanner: TSEngine's coordinator logic (../shared/reference/accelerators.md §2; issue 16), without the
// transport: which node sends to which next, from link throughputs the nodes measure themselves.
//
//   * Measurements: a sender reports the wall-clock bytes per second of a transfer to a receiver; the table keeps an
//     exponential moving average per directed link (weight `ewma` for the new sample) and the round of the last
//     sample. An entry not refreshed for `expiry_rounds` rounds is forgotten, so a link that got slow or fast is
//     probed again. (TSEngine's code timed CPU time with clock() and cast 1/seconds to int; GeoMX never expired.)
//   * Pull (broadcast) phase: a node holding the new model asks whom to send it to next. Among the nodes that do
//     not have it yet, with `known` of the `n` candidates measured from the asker: with probability
//     min(known / n, max_greedy) the fastest known link (exploit), otherwise a uniformly random candidate whose link
//     is not measured yet, or any candidate when all are (explore). A real-valued epsilon-greedy rule: TSEngine's
//     integer division made it 0 until every link was known, then always greedy.
//   * Push (aggregation) phase: nodes that are ready are paired in arrival order; the pair's transfer goes in the
//     faster measured direction (the first arrival sends when neither or both directions are measured equal), and
//     towards the server whenever the server is one of the two.
//
// Draws come from a generator seeded at construction: runs repeat. Not thread-safe (the tier's scheduler thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace geomx::comm {

struct OverlayOptions {
  double ewma = 0.5;         // weight of a new throughput sample, in (0, 1]
  int64_t expiry_rounds = 5;  // a measurement older than this many rounds is forgotten
  double max_greedy = 0.9;   // cap of the exploit probability, in [0, 1]
  uint64_t seed = 1;
};

class OverlayPlanner {
 public:
  explicit OverlayPlanner(OverlayOptions options);

  // A transfer from `from` to `to` moved `bytes` in `seconds` (wall clock) during `round`. Ignored unless both are
  // positive.
  void Report(int from, int to, double bytes, double seconds, int64_t round);
  // The smoothed bytes/s of from -> to as of `round` (nullopt: never measured, or expired).
  std::optional<double> Throughput(int from, int to, int64_t round) const;

  // Pull phase: the next receiver for `sender` among `candidates` (the nodes without the model; must not be
  // empty), as of `round`.
  int NextReceiver(int sender, const std::vector<int>& candidates, int64_t round);
  // Probability that NextReceiver exploits, for these candidates (for tests and logs).
  double GreedyProbability(int sender, const std::vector<int>& candidates, int64_t round) const;

  // Exploration without a receiver to serve: with probability 1 - GreedyProbability(sender, others, round), a
  // member of `others` to send a probe to (a link not measured yet, uniformly, or any when all are), else
  // nullopt. `others` must not be empty.
  std::optional<int> Probe(int sender, const std::vector<int>& others, int64_t round);

  // Push phase: `a` arrived before `b`; returns {sender, receiver}. `server`: the node that must receive everything.
  std::pair<int, int> PairForPush(int a, int b, int server, int64_t round) const;

 private:
  struct Entry {
    double bytes_per_s = 0;
    int64_t round = 0;
  };
  const OverlayOptions options_;
  std::map<std::pair<int, int>, Entry> links_;
  std::mt19937_64 rng_;
};

}  // namespace geomx::comm
