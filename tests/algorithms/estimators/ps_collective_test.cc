// The estimators' Collective over the hierarchical parameter server (algorithms/estimators/ps_collective.h): every
// role of a 2 data centre x 2 worker topology as a thread over loopback vans. Sums of every size class (and of a
// length that needs two chunks) and gathers of unequal lengths are checked against hand computations; then a whole
// estimator job fitted through the parameter server matches the same job fitted through the in-process
// ThreadCollective on the same shards.
#include "algorithms/estimators/ps_collective.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "algorithms/cluster/estimator_worker.h"
#include "algorithms/cluster/roles.h"
#include "algorithms/cluster/tiers.h"
#include "algorithms/cluster/worker_session.h"
#include "algorithms/estimators/fit_job.h"
#include "tests/algorithms/two_tier_job.h"

namespace geomx::algorithms {
namespace {

constexpr int kWorkers = 4;

using testing::RunTwoTierJob;

cluster::ClusterConfig Config() { return testing::TwoByTwoConfig(60000); }

ps::JobDescription Job() {
  ps::JobDescription job;
  job.schema = EstimatorJobSchema();
  return job;
}

// What worker w contributes to a sum of n floats.
float ValueOf(int w, size_t i) { return static_cast<float>((w + 1) * (i % 13)) - 0.5f * static_cast<float>(w); }

TEST(PsCollectiveTest, SumsOfEverySizeAndGathersInRankOrder) {
  const std::vector<size_t> sizes = {1, 3, 256, 257, 5000, (size_t{1} << 20) + 10};  // the last needs two chunks
  std::vector<std::vector<std::vector<float>>> sums(kWorkers);
  std::vector<std::vector<float>> gathered(kWorkers);
  std::vector<int> ranks(kWorkers, -1);
  auto worker = [&](const cluster::ClusterConfig& c, const std::string& party, int rank,
                    const cluster::RoleEnv& env) -> Status {
    GEOMX_ASSIGN_OR_RETURN(auto session, cluster::WorkerSession::Join(c, party, rank, EstimatorJobSchema(), env));
    std::unique_ptr<ps::PsContext> ps = session->MakeContext();
    PsCollective collective(ps.get());
    const int w = collective.rank();
    ranks[w] = w;
    for (size_t n : sizes) {
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = ValueOf(w, i);
      GEOMX_RETURN_IF_ERROR(collective.AllReduceSum("test", v));
      sums[w].push_back(std::move(v));
    }
    // Worker w gathers w + 1 copies of 10 * w (worker 0: one value).
    GEOMX_ASSIGN_OR_RETURN(gathered[w], collective.AllGather("g", std::vector<float>(w + 1, 10.0f * w)));
    if (collective.world() != kWorkers) return Status::Internal("world");
    return session->Finish();
  };
  for (const auto& [name, s] : RunTwoTierJob(Config(), Job(), worker)) {
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  }
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_EQ(ranks[w], w);
    ASSERT_EQ(sums[w].size(), sizes.size());
    for (size_t k = 0; k < sizes.size(); ++k) {
      ASSERT_EQ(sums[w][k].size(), sizes[k]);
      for (size_t i = 0; i < sizes[k]; i += 97) {
        // By hand: sum over w of (w+1)(i%13) - w/2 = 10 (i%13) - 3.
        EXPECT_FLOAT_EQ(sums[w][k][i], 10.0f * static_cast<float>(i % 13) - 3.0f) << "size " << sizes[k] << " at " << i;
      }
      EXPECT_FLOAT_EQ(sums[w][k].back(), 10.0f * static_cast<float>((sizes[k] - 1) % 13) - 3.0f);
    }
    EXPECT_EQ(gathered[w], (std::vector<float>{0, 10, 10, 20, 20, 20, 30, 30, 30, 30})) << "worker " << w;
  }
}

TEST(PsCollectiveTest, AnEstimatorFittedOverTheParameterServerMatchesTheInProcessCollective) {
  EstimatorJob job;
  job.algorithm = "kmeans";
  job.params = {{"n_clusters", "4"}, {"max_iter", "20"}};
  job.data.name = "synthetic";
  job.data.synthetic_train = 800;
  job.data.synthetic_test = 200;
  job.data.synthetic_classes = 4;
  job.data.synthetic_shape = {6};
  job.threads = 1;
  job.seed = 5;
  std::vector<Metrics> over_ps(kWorkers);
  auto worker = [&](const cluster::ClusterConfig& c, const std::string& party, int rank,
                    const cluster::RoleEnv& env) -> Status {
    GEOMX_ASSIGN_OR_RETURN(EstimatorOutcome o, cluster::RunEstimatorWorker(c, party, rank, job, env, nullptr, nullptr));
    over_ps[cluster::WorkerIndex(c.topology, party == "dc-a" ? 0 : 1, rank)] = o.test;
    return Status::Ok();
  };
  for (const auto& [name, s] : RunTwoTierJob(Config(), Job(), worker)) {
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  }

  ThreadCollectiveGroup group(kWorkers);
  std::vector<Metrics> in_process(kWorkers);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorkers; ++r) {
    threads.emplace_back([&, r] {
      auto o = RunEstimatorJob(job, nullptr, nullptr, group.Worker(r));
      if (o.ok()) in_process[r] = o->test;
    });
  }
  for (auto& t : threads) t.join();
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_FALSE(over_ps[w].empty()) << "worker " << w;
    ASSERT_EQ(over_ps[w].size(), in_process[w].size());
    for (size_t m = 0; m < over_ps[w].size(); ++m) {
      EXPECT_EQ(over_ps[w][m].name, in_process[w][m].name);
      // The same sums in another order: equal up to float rounding.
      EXPECT_NEAR(over_ps[w][m].value, in_process[w][m].value, 1e-3 * (1 + std::abs(in_process[w][m].value)))
          << over_ps[w][m].name << " on worker " << w;
    }
    EXPECT_GT(MetricValue(over_ps[w], "purity"), 0.5) << "four blobs: well above chance (0.25)";
  }
}

}  // namespace
}  // namespace geomx::algorithms
