// TSEngine's coordinator logic (comm/tsengine/overlay_planner.h): the throughput table (moving average, expiry),
// the real-valued epsilon-greedy receiver choice under an injected slow link, re-probing after expiry, and the
// push-phase pairing. Frequencies are compared with the closed-form probabilities of the rule (fixed seed).
#include "comm/tsengine/overlay_planner.h"

#include <map>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

std::map<int, double> Frequencies(OverlayPlanner& p, int sender, const std::vector<int>& candidates, int64_t round,
                                  int draws = 20000) {
  std::map<int, double> f;
  for (int i = 0; i < draws; ++i) f[p.NextReceiver(sender, candidates, round)] += 1.0 / draws;
  return f;
}

TEST(OverlayPlannerTest, ThroughputIsAMovingAverageThatExpires) {
  OverlayPlanner p({.ewma = 0.5, .expiry_rounds = 5});
  EXPECT_FALSE(p.Throughput(1, 2, 0).has_value());
  p.Report(1, 2, 1e6, 1.0, 0);
  EXPECT_DOUBLE_EQ(*p.Throughput(1, 2, 0), 1e6);
  p.Report(1, 2, 6e6, 2.0, 1);  // 3 MB/s
  EXPECT_DOUBLE_EQ(*p.Throughput(1, 2, 1), 2e6);
  EXPECT_FALSE(p.Throughput(2, 1, 1).has_value());  // directed
  EXPECT_DOUBLE_EQ(*p.Throughput(1, 2, 6), 2e6);   // 5 rounds old: still kept
  EXPECT_FALSE(p.Throughput(1, 2, 7).has_value());  // 6 rounds old: forgotten
  p.Report(1, 2, 4e6, 1.0, 10);                     // after expiry a sample replaces the old average
  EXPECT_DOUBLE_EQ(*p.Throughput(1, 2, 10), 4e6);
  p.Report(1, 2, 0, 1.0, 10);                       // nonsense samples are ignored
  p.Report(1, 2, 1e6, 0, 10);
  EXPECT_DOUBLE_EQ(*p.Throughput(1, 2, 10), 4e6);
}

TEST(OverlayPlannerTest, GreedyProbabilityIsTheKnownShareCapped) {
  OverlayPlanner p({.max_greedy = 0.9});
  const std::vector<int> c = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(p.GreedyProbability(0, c, 0), 0.0);
  p.Report(0, 2, 1e6, 1, 0);
  EXPECT_DOUBLE_EQ(p.GreedyProbability(0, c, 0), 0.25);  // TSEngine's integer division gave 0 here
  for (int j : c) p.Report(0, j, 1e6, 1, 0);
  EXPECT_DOUBLE_EQ(p.GreedyProbability(0, c, 0), 0.9);
}

// Every link from node 0 measured, the one to node 1 slow (1 MB/s), to 2 fast (50 MB/s), to 3 in between: node 2
// is chosen with probability 0.9 + 0.1 / 3 (exploit, or explore and draw it), the slow node 1 only by exploring.
TEST(OverlayPlannerTest, AnInjectedSlowLinkIsAvoidedByTheGreedyChoice) {
  OverlayPlanner p({.max_greedy = 0.9, .seed = 3});
  p.Report(0, 1, 1e6, 1, 0);
  p.Report(0, 2, 50e6, 1, 0);
  p.Report(0, 3, 40e6, 1, 0);
  const auto f = Frequencies(p, 0, {1, 2, 3}, 0);
  EXPECT_NEAR(f.at(2), 0.9 + 0.1 / 3, 0.01);
  EXPECT_NEAR(f.at(1), 0.1 / 3, 0.01);
  EXPECT_NEAR(f.at(3), 0.1 / 3, 0.01);
}

// Two of four links known (2 fast, 3 slow): exploit (p = 0.5) picks 2; exploring draws only the unmeasured 1 and
// 4. The known slow link is never chosen while unmeasured ones remain.
TEST(OverlayPlannerTest, ExplorationProbesUnmeasuredLinksFirst) {
  OverlayPlanner p({.max_greedy = 0.9, .seed = 4});
  p.Report(0, 2, 50e6, 1, 0);
  p.Report(0, 3, 1e6, 1, 0);
  const auto f = Frequencies(p, 0, {1, 2, 3, 4}, 0);
  EXPECT_NEAR(f.at(2), 0.5, 0.015);
  EXPECT_NEAR(f.at(1), 0.25, 0.015);
  EXPECT_NEAR(f.at(4), 0.25, 0.015);
  EXPECT_EQ(f.count(3), 0u);
}

// Expiry forces re-probing: five rounds after the last measurements the choice is still greedy; past that every
// link is unknown again and the choice is uniform (exploration), so the slow link gets measured anew.
TEST(OverlayPlannerTest, ExpiredMeasurementsAreProbedAgain) {
  OverlayPlanner p({.expiry_rounds = 5, .max_greedy = 0.9, .seed = 5});
  p.Report(0, 1, 1e6, 1, 0);
  p.Report(0, 2, 50e6, 1, 0);
  EXPECT_NEAR(Frequencies(p, 0, {1, 2}, 5).at(2), 0.95, 0.01);
  const auto later = Frequencies(p, 0, {1, 2}, 6);
  EXPECT_NEAR(later.at(1), 0.5, 0.015);
  EXPECT_NEAR(later.at(2), 0.5, 0.015);
}

TEST(OverlayPlannerTest, PushPairsSendTowardsTheServerOrTheFasterWay) {
  OverlayPlanner p({});
  EXPECT_EQ(p.PairForPush(0, 5, /*server=*/0, 0), std::make_pair(5, 0));
  EXPECT_EQ(p.PairForPush(5, 0, 0, 0), std::make_pair(5, 0));
  EXPECT_EQ(p.PairForPush(3, 4, 0, 0), std::make_pair(3, 4));  // nothing measured: the first arrival sends
  p.Report(4, 3, 9e6, 1, 0);
  p.Report(3, 4, 1e6, 1, 0);
  EXPECT_EQ(p.PairForPush(3, 4, 0, 0), std::make_pair(4, 3));  // 4 -> 3 is faster
}

// Probe: explores with probability 1 - min(known / n, max_greedy), unmeasured links first, else none.
TEST(OverlayPlannerTest, ProbesExploreWithTheComplementOfTheGreedyProbability) {
  OverlayPlanner p({.max_greedy = 0.9, .seed = 11});
  constexpr int kDraws = 20000;
  auto frequencies = [&](int64_t round) {
    std::map<int, double> f;
    for (int i = 0; i < kDraws; ++i) {
      const std::optional<int> t = p.Probe(0, {1, 2, 3}, round);
      f[t.value_or(-1)] += 1.0 / kDraws;
    }
    return f;
  };
  auto none = frequencies(0);  // nothing measured: always a probe, uniformly
  EXPECT_EQ(none.count(-1), 0u);
  for (int c : {1, 2, 3}) EXPECT_NEAR(none[c], 1.0 / 3, 0.015) << c;
  p.Report(0, 1, 1e6, 1, 0);
  p.Report(0, 2, 2e6, 1, 0);  // 2 of 3 known: a probe 1/3 of the time, always to the unmeasured 3
  auto some = frequencies(0);
  EXPECT_NEAR(some[-1], 2.0 / 3, 0.015);
  EXPECT_NEAR(some[3], 1.0 / 3, 0.015);
  EXPECT_EQ(some.count(1) + some.count(2), 0u);
  p.Report(0, 3, 3e6, 1, 0);  // all known: the cap leaves 10 % of probes, to any of them
  auto all = frequencies(0);
  EXPECT_NEAR(all[-1], 0.9, 0.01);
  for (int c : {1, 2, 3}) EXPECT_NEAR(all[c], 0.1 / 3, 0.008) << c;
}

}  // namespace
}  // namespace geomx::comm
