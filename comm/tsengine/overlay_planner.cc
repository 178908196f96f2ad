#include "comm/tsengine/overlay_planner.h"

#include <algorithm>

#include "engine/base/check.h"

namespace geomx::comm {

OverlayPlanner::OverlayPlanner(OverlayOptions options) : options_(options), rng_(options.seed) {
  GEOMX_CHECK(options_.ewma > 0 && options_.ewma <= 1) << "ewma " << options_.ewma;
  GEOMX_CHECK(options_.expiry_rounds >= 1) << "expiry_rounds " << options_.expiry_rounds;
  GEOMX_CHECK(options_.max_greedy >= 0 && options_.max_greedy <= 1) << "max_greedy " << options_.max_greedy;
}

void OverlayPlanner::Report(int from, int to, double bytes, double seconds, int64_t round) {
  if (!(bytes > 0 && seconds > 0)) return;
  const double sample = bytes / seconds;
  auto [it, fresh] = links_.emplace(std::make_pair(from, to), Entry{sample, round});
  if (!fresh) {
    Entry& e = it->second;
    const bool expired = round - e.round > options_.expiry_rounds;
    e.bytes_per_s = expired ? sample : options_.ewma * sample + (1 - options_.ewma) * e.bytes_per_s;
    e.round = round;
  }
}

std::optional<double> OverlayPlanner::Throughput(int from, int to, int64_t round) const {
  auto it = links_.find({from, to});
  if (it == links_.end() || round - it->second.round > options_.expiry_rounds) return std::nullopt;
  return it->second.bytes_per_s;
}

double OverlayPlanner::GreedyProbability(int sender, const std::vector<int>& candidates, int64_t round) const {
  if (candidates.empty()) return 0;
  size_t known = 0;
  for (int c : candidates) known += Throughput(sender, c, round).has_value() ? 1 : 0;
  return std::min(static_cast<double>(known) / static_cast<double>(candidates.size()), options_.max_greedy);
}

int OverlayPlanner::NextReceiver(int sender, const std::vector<int>& candidates, int64_t round) {
  GEOMX_CHECK(!candidates.empty()) << "NextReceiver without candidates";
  std::vector<int> unknown;
  int best = -1;
  double best_rate = -1;
  for (int c : candidates) {
    const std::optional<double> t = Throughput(sender, c, round);
    if (!t) {
      unknown.push_back(c);
    } else if (*t > best_rate) {
      best_rate = *t;
      best = c;
    }
  }
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  if (best >= 0 && coin(rng_) < GreedyProbability(sender, candidates, round)) return best;  // exploit
  const std::vector<int>& pool = unknown.empty() ? candidates : unknown;                 // explore
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  return pool[pick(rng_)];
}

std::optional<int> OverlayPlanner::Probe(int sender, const std::vector<int>& others, int64_t round) {
  GEOMX_CHECK(!others.empty()) << "Probe without candidates";
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  if (coin(rng_) < GreedyProbability(sender, others, round)) return std::nullopt;
  std::vector<int> unknown;
  for (int c : others) {
    if (!Throughput(sender, c, round)) unknown.push_back(c);
  }
  const std::vector<int>& pool = unknown.empty() ? others : unknown;
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  return pool[pick(rng_)];
}

std::pair<int, int> OverlayPlanner::PairForPush(int a, int b, int server, int64_t round) const {
  if (a == server) return {b, a};
  if (b == server) return {a, b};
  const double ab = Throughput(a, b, round).value_or(-1), ba = Throughput(b, a, round).value_or(-1);
  return ba > ab ? std::make_pair(b, a) : std::make_pair(a, b);
}

}  // namespace geomx::comm
