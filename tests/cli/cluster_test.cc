// Every role of a two-data-centre topology as threads of this process. The FSA equivalence tests check that a
// HiPS run (2 data centres x 2 workers, plain SGD) ends with the same weights as one process training on the
// combined batches, with 1 or 2 global servers and 1 or 2 local servers per data centre.
#include "cli/cluster.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "cli/setup.h"
#include "comm/loopback_van.h"
#include "comm/zmq_van.h"
#include "tests/cli/cluster_test_util.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

using cluster_testing::InProcessEnv;
using cluster_testing::LoopbackEnv;
using cluster_testing::Reference;
using cluster_testing::RunCluster;
using cluster_testing::Weights;

Recipe MakeRecipe(int global_servers, int local_servers, int epochs = 1) {
  Recipe r = cluster_testing::TwoByTwoRecipe("cluster", epochs);
  r.topology.global_servers = global_servers;
  for (auto& dc : r.topology.datacentres) dc.servers = local_servers;
  r.topology.options.split_bytes = 256;  // split the 16x16 weight (1 KB) over several servers
  return r;
}

void ExpectSameWeights(const Weights& a, const Weights& b, const std::string& who) {
  ASSERT_EQ(a.size(), b.size()) << who;
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    for (size_t j = 0; j < a[i].size(); ++j) worst = std::max(worst, std::fabs(a[i][j] - b[i][j]));
  }
  EXPECT_LE(worst, 1e-5f) << who << ": max abs difference to single-process training";
}

class FsaEquivalenceTest : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(FsaEquivalenceTest, TwoByTwoMatchesSingleProcess) {
  const auto [global_servers, local_servers] = GetParam();
  const Recipe r = MakeRecipe(global_servers, local_servers);
  comm::LoopbackNetwork net;
  const auto finals = RunCluster(r, LoopbackEnv(&net));
  ASSERT_EQ(finals.size(), 4u);
  const Weights ref = Reference(r, r.optimizer);
  for (const auto& [name, w] : finals) ExpectSameWeights(w, ref, name);
  // The weights moved: training happened.
  auto setup = PrepareRun(r);
  EXPECT_GT(testing::MaxAbsDiff(Tensor::FromVector(ref[0], Shape({static_cast<int64_t>(ref[0].size())})),
                                Tensor::FromVector(setup->model->Parameters()[0]->data().ToFloatVector(),
                                                   Shape({static_cast<int64_t>(ref[0].size())}))),
            1e-3f);
}

INSTANTIATE_TEST_SUITE_P(Servers, FsaEquivalenceTest,
                         ::testing::Values(std::make_pair(1, 1), std::make_pair(2, 1), std::make_pair(1, 2)),
                         [](const auto& info) {
                           return "gs" + std::to_string(info.param.first) + "_ls" +
                                  std::to_string(info.param.second);
                         });

// Every role as threads over inproc ZeroMQ for 100 iterations (also under AddressSanitizer: `make sanitize`,
// docs/sanitizers.md).
TEST(ClusterTest, HundredIterationsOverInprocZeroMq) {
  Recipe r = MakeRecipe(2, 1, /*epochs=*/7);  // 16 iterations per epoch -> 112 >= 100
  r.training.max_iterations = 100;
  comm::ZmqContext ctx;
  const ClusterEnv env =
      InProcessEnv("inproc", [&ctx](const std::string&) { return std::make_unique<comm::ZmqVan>(&ctx); });
  const auto finals = RunCluster(r, env);
  ASSERT_EQ(finals.size(), 4u);
  // FSA: every worker holds the same weights at the end.
  const Weights& first = finals.begin()->second;
  for (const auto& [name, w] : finals) ExpectSameWeights(w, first, name);
}

}  // namespace
}  // namespace geomx::cli
