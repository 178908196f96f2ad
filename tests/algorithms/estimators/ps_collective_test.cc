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

TEST(PsCollectiveTest, DataCentreSumsAreAnsweredByTheLocalServers) {
  // dc-a holds workers 0 and 1, dc-b workers 2 and 3: each sum covers its own data centre only.
  const std::vector<size_t> sizes = {3, 5000};
  std::vector<std::vector<std::vector<float>>> sums(kWorkers);
  std::vector<Placement> where(kWorkers);
  auto worker = [&](const cluster::ClusterConfig& c, const std::string& party, int rank,
                    const cluster::RoleEnv& env) -> Status {
    GEOMX_ASSIGN_OR_RETURN(auto session, cluster::WorkerSession::Join(c, party, rank, EstimatorJobSchema(), env));
    std::unique_ptr<ps::PsContext> ps = session->MakeContext();
    const Placement placement{.centre = session->dc_index(), .centres = 2, .centre_rank = rank, .centre_size = 2};
    PsCollective collective(ps.get(), SumCompression::kNone, 0.01f, placement);
    const int w = collective.rank();
    where[w] = collective.placement();
    for (size_t n : sizes) {
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = ValueOf(w, i);
      GEOMX_RETURN_IF_ERROR(collective.DataCentreSum("local", v));
      sums[w].push_back(std::move(v));
    }
    // A job-wide sum still sums everybody after the local ones.
    std::vector<float> one = {1.0f};
    GEOMX_RETURN_IF_ERROR(collective.AllReduceSum("all", one));
    if (one[0] != 4.0f) return Status::Internal("job-wide sum " + std::to_string(one[0]));
    return session->Finish();
  };
  for (const auto& [name, s] : RunTwoTierJob(Config(), Job(), worker)) {
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  }
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(where[w].centre, w / 2);
    EXPECT_EQ(where[w].centre_rank, w % 2);
    ASSERT_EQ(sums[w].size(), sizes.size());
    for (size_t k = 0; k < sizes.size(); ++k) {
      for (size_t i = 0; i < sizes[k]; i += 7) {
        // By hand: dc-a: (1 + 2)(i%13) - (0 + 1)/2; dc-b: (3 + 4)(i%13) - (2 + 3)/2.
        const float want = w < 2 ? 3.0f * static_cast<float>(i % 13) - 0.5f : 7.0f * static_cast<float>(i % 13) - 2.5f;
        EXPECT_FLOAT_EQ(sums[w][k][i], want) << "worker " << w << " size " << sizes[k] << " at " << i;
      }
    }
  }
}

TEST(PsCollectiveTest, LocalSumKeysKeepTheirRoleInTheJobDescription) {
  ps::KeySchema schema = EstimatorJobSchema();
  const ps::KeyDef* local = nullptr;
  for (const ps::KeyDef& k : schema.keys()) {
    if (k.role == ps::KeyRole::kLocal && local == nullptr) local = &k;
  }
  ASSERT_NE(local, nullptr);
  EXPECT_STREQ(ps::KeyRoleName(local->role), "local");
  // The schema's text form keeps the role (local servers fetch the schema from the global server as text).
  Result<ps::KeySchema> again = ps::KeySchema::Decode(schema.Encode());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->Find(local->key)->role, ps::KeyRole::kLocal);
}

TEST(PsCollectiveTest, CompressibleSumsTravelAsFp16WithAnExactTail) {
  // 5,000 lossy values (worker w: ValueOf(w, i), so the sum is 10 (i % 13) - 3, at most 117 in size) and a tail
  // of two exact values; twice, to see the rounds of the FP16 key advance.
  std::vector<std::vector<float>> got(kWorkers);
  auto worker = [&](const cluster::ClusterConfig& c, const std::string& party, int rank,
                    const cluster::RoleEnv& env) -> Status {
    GEOMX_ASSIGN_OR_RETURN(auto session, cluster::WorkerSession::Join(c, party, rank, EstimatorJobSchema(), env));
    std::unique_ptr<ps::PsContext> ps = session->MakeContext();
    PsCollective collective(ps.get(), SumCompression::kFp16);
    const int w = collective.rank();
    for (int round = 0; round < 2; ++round) {
      std::vector<float> v(5002);
      for (size_t i = 0; i < 5000; ++i) v[i] = ValueOf(w, i);
      v[5000] = 1e8f + static_cast<float>(w);  // exact: 4e8 + 6 is representable, FP16 would lose it entirely
      v[5001] = static_cast<float>(round);
      GEOMX_RETURN_IF_ERROR(collective.AllReduceSumCompressible("test", v, 2));
      got[w] = v;
    }
    return session->Finish();
  };
  for (const auto& [name, s] : RunTwoTierJob(Config(), Job(), worker)) {
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  }
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_EQ(got[w].size(), 5002u);
    // Three encodings (worker, local server, global server), each within max * 2^-12 of its input.
    for (size_t i = 0; i < 5000; ++i) {
      EXPECT_NEAR(got[w][i], 10.0f * static_cast<float>(i % 13) - 3.0f, 3 * 130.0 / 4096) << i;
    }
    EXPECT_EQ(got[w][5000], 4e8f + 6.0f);
    EXPECT_EQ(got[w][5001], 4.0f);  // round 1 from each of the four workers
  }
}

TEST(PsCollectiveTest, TopKSumsSendTheLargestWithErrorFeedback) {
  // 8 lossy values and 1 exact, ratio 0.25: each worker sends its 2 largest |value + residual|. Worker w's input is
  // w + 1 at indices 2w, 2w + 1 and 0.01 (i + 1) at every other index i. Rounds 1 and 2 send exactly the w + 1
  // pairs (the small values wait in the residual); round 3 has no input, so the residuals go: 0.02 (i + 1) at
  // each worker's two largest other indices.
  std::vector<std::vector<std::vector<float>>> got(kWorkers);
  auto worker = [&](const cluster::ClusterConfig& c, const std::string& party, int rank,
                    const cluster::RoleEnv& env) -> Status {
    GEOMX_ASSIGN_OR_RETURN(auto session, cluster::WorkerSession::Join(c, party, rank, EstimatorJobSchema(), env));
    std::unique_ptr<ps::PsContext> ps = session->MakeContext();
    PsCollective collective(ps.get(), SumCompression::kTopK, 0.25f);
    const int w = collective.rank();
    for (int round = 0; round < 3; ++round) {
      std::vector<float> v(9, 0.0f);
      if (round < 2) {
        for (int i = 0; i < 8; ++i) v[i] = i / 2 == w ? static_cast<float>(w + 1) : 0.01f * static_cast<float>(i + 1);
      }
      v[8] = static_cast<float>(w);
      GEOMX_RETURN_IF_ERROR(collective.AllReduceSumCompressible("g", v, 1));
      got[w].push_back(v);
    }
    return session->Finish();
  };
  for (const auto& [name, s] : RunTwoTierJob(Config(), Job(), worker)) {
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  }
  const std::vector<float> pairs = {1, 1, 2, 2, 3, 3, 4, 4, 6};
  const std::vector<float> tail = {0, 0, 0, 0, 0.10f, 0.12f, 3 * 0.14f, 3 * 0.16f, 6};
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_EQ(got[w].size(), 3u);
    EXPECT_EQ(got[w][0], pairs) << "worker " << w;
    EXPECT_EQ(got[w][1], pairs) << "worker " << w;
    for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(got[w][2][i], tail[i], 1e-6) << "worker " << w << " index " << i;
  }
}

// Two rounds of an FTRL row table (alpha 0.5, beta 1, no L1/L2): worker w pushes row 10w + 1 with gradient
// (w + 1, -(w + 1)) and everyone pushes row 999 with (1, 1); then only worker 1 pushes row 1 with (1, 0).
// By McMahan's Algorithm 1 from a zero state, one gradient g gives z = g, n = g^2, w = -g alpha / (beta + |g|).
RowTableSpec TestTable() {
  RowTableSpec t;
  t.name = "t.weights";
  t.rows = 1000;
  t.width = 2;
  t.rule = "online-update";
  t.hyper.name = "ftrl";
  t.hyper.lr = 0.5f;
  t.hyper.ftrl_beta = 1.0f;
  t.hyper.l1 = 0.0f;
  t.hyper.weight_decay = 0.0f;
  return t;
}

void RowTableRounds(Collective* c, std::vector<RowUpdate>* out) {
  const RowTableSpec t = TestTable();
  const int w = c->rank();
  const float g = static_cast<float>(w + 1);
  const std::vector<uint64_t> rows = {999, static_cast<uint64_t>(10 * w + 1)};
  Result<RowUpdate> first = c->PushRowGradients(t, rows, std::vector<float>{1, 1, g, -g});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  out->push_back(*first);
  const std::vector<uint64_t> second_rows = w == 1 ? std::vector<uint64_t>{1} : std::vector<uint64_t>{};
  const std::vector<float> second_grads = w == 1 ? std::vector<float>{1, 0} : std::vector<float>{};
  Result<RowUpdate> second = c->PushRowGradients(t, second_rows, second_grads);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  out->push_back(*second);
}

void ExpectRowTableRoundsByHand(const std::vector<RowUpdate>& got) {
  ASSERT_EQ(got.size(), 2u);
  auto one = [](float g) { return -g * 0.5f / (1.0f + std::fabs(g)); };
  EXPECT_EQ(got[0].rows, (std::vector<uint64_t>{1, 11, 21, 31, 999}));  // the union, sorted
  const std::vector<float> want0 = {one(1), one(-1), one(2), one(-2), one(3), one(-3), one(4), one(-4),
                                    one(4), one(4)};
  ASSERT_EQ(got[0].values.size(), want0.size());
  for (size_t i = 0; i < want0.size(); ++i) EXPECT_NEAR(got[0].values[i], want0[i], 1e-6) << i;
  // Row 1 again with g = (1, 0): sigma = (sqrt 2 - 1) / 0.5, z = 1 + 1 + sigma / 4, w = -z / ((1 + sqrt 2) / 0.5);
  // the second column had no gradient and keeps its weight.
  const double sigma = (std::sqrt(2.0) - 1.0) / 0.5, z = 2.0 + sigma * 0.25;
  EXPECT_EQ(got[1].rows, (std::vector<uint64_t>{1}));
  ASSERT_EQ(got[1].values.size(), 2u);
  EXPECT_NEAR(got[1].values[0], -z / ((1.0 + std::sqrt(2.0)) / 0.5), 1e-6);
  EXPECT_NEAR(got[1].values[1], one(-1), 1e-7);
}

TEST(PsCollectiveTest, RowTablesApplyTheRuleToTheSummedRowsOnTheGlobalServer) {
  Result<ps::JobDescription> job = EstimatorJobDescription({TestTable()});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->rule, "online-update");
  std::vector<std::vector<RowUpdate>> over_ps(kWorkers);
  auto worker = [&](const cluster::ClusterConfig& c, const std::string& party, int rank,
                    const cluster::RoleEnv& env) -> Status {
    GEOMX_ASSIGN_OR_RETURN(auto session, cluster::WorkerSession::Join(c, party, rank, job->schema, env));
    std::unique_ptr<ps::PsContext> ps = session->MakeContext();
    PsCollective collective(ps.get());
    RowTableRounds(&collective, &over_ps[collective.rank()]);
    return session->Finish();
  };
  for (const auto& [name, s] : RunTwoTierJob(Config(), *job, worker)) {
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  }
  for (int w = 0; w < kWorkers; ++w) {
    SCOPED_TRACE("parameter server, worker " + std::to_string(w));
    ExpectRowTableRoundsByHand(over_ps[w]);
  }
  // The in-process collective emulates the same step.
  ThreadCollectiveGroup group(kWorkers);
  std::vector<std::vector<RowUpdate>> in_process(kWorkers);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorkers; ++r) threads.emplace_back([&, r] { RowTableRounds(group.Worker(r), &in_process[r]); });
  for (auto& t : threads) t.join();
  for (int w = 0; w < kWorkers; ++w) {
    SCOPED_TRACE("threads, worker " + std::to_string(w));
    ExpectRowTableRoundsByHand(in_process[w]);
  }
}

TEST(PsCollectiveTest, ATableTheJobDidNotDeclareIsRefused) {
  auto worker = [&](const cluster::ClusterConfig& c, const std::string& party, int rank,
                    const cluster::RoleEnv& env) -> Status {
    GEOMX_ASSIGN_OR_RETURN(auto session, cluster::WorkerSession::Join(c, party, rank, EstimatorJobSchema(), env));
    std::unique_ptr<ps::PsContext> ps = session->MakeContext();
    PsCollective collective(ps.get());
    RowTableSpec t;
    t.name = "undeclared";
    t.rows = 4;
    t.width = 1;
    Result<RowUpdate> r = collective.PushRowGradients(t, std::vector<uint64_t>{0}, std::vector<float>{1});
    if (r.ok() || r.status().code() != StatusCode::kInvalidArgument) return Status::Internal("accepted");
    if (r.status().message().find("Estimator::RowTables") == std::string::npos) return r.status();
    return session->Finish();
  };
  for (const auto& [name, s] : RunTwoTierJob(Config(), Job(), worker)) {
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  }
}

// A job fitted over the parameter server and over the in-process collective on the same shards: the same test
// metrics (the same sums in another order: equal up to float rounding).
void ExpectParameterServerMatchesThreads(const EstimatorJob& job, std::vector<Metrics>* metrics = nullptr) {
  Result<PreparedEstimatorJob> prepared = PrepareEstimatorJob(job);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  std::vector<Metrics> over_ps(kWorkers);
  auto worker = [&](const cluster::ClusterConfig& c, const std::string& party, int rank,
                    const cluster::RoleEnv& env) -> Status {
    GEOMX_ASSIGN_OR_RETURN(EstimatorOutcome o, cluster::RunEstimatorWorker(c, party, rank, job, env, nullptr, nullptr));
    over_ps[cluster::WorkerIndex(c.topology, party == "dc-a" ? 0 : 1, rank)] = o.test;
    return Status::Ok();
  };
  for (const auto& [name, s] : RunTwoTierJob(Config(), prepared->ps_job, worker)) {
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  }

  ThreadCollectiveGroup group({2, 2});  // the topology's data centres (DataCentreSum)
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
      EXPECT_NEAR(over_ps[w][m].value, in_process[w][m].value, 1e-3 * (1 + std::abs(in_process[w][m].value)))
          << over_ps[w][m].name << " on worker " << w;
    }
  }
  if (metrics != nullptr) *metrics = over_ps;
}

TEST(PsCollectiveTest, KnnQueryBroadcastOverTheServersMatchesTheInProcessCollective) {
  // distributed: query: the per-query top-k lists are merged by the local and global servers (topk_rows).
  EstimatorJob job;
  job.algorithm = "knn";
  job.params = {{"n_neighbors", "5"}};
  job.data.name = "synthetic";
  job.data.synthetic_train = 600;
  job.data.synthetic_test = 150;
  job.data.synthetic_classes = 3;
  job.data.synthetic_shape = {6};
  job.seed = 7;
  std::vector<Metrics> over_ps;
  ExpectParameterServerMatchesThreads(job, &over_ps);
  ASSERT_EQ(over_ps.size(), static_cast<size_t>(kWorkers));
  for (const Metrics& m : over_ps) EXPECT_GT(MetricValue(m, "accuracy"), 0.5);
}

TEST(PsCollectiveTest, FtrlAndFtmlOverTheirRowTablesMatchTheInProcessCollective) {
  for (const char* name : {"ftrl", "ftml"}) {
    SCOPED_TRACE(name);
    EstimatorJob job;
    job.algorithm = name;
    job.params = {{"batch_size", "4"}, {"epochs", "2"}};
    job.data.name = "synthetic";
    job.data.synthetic_train = 400;
    job.data.synthetic_test = 200;
    job.data.synthetic_classes = 3;
    job.data.synthetic_shape = {6};
    job.seed = 3;
    ExpectParameterServerMatchesThreads(job);
  }
}

TEST(PsCollectiveTest, VotingGbdtOverTheServersMatchesTheInProcessCollective) {
  // tree_learner voting: data-centre histograms on the local sum keys, votes and chosen features' sums job-wide.
  EstimatorJob job;
  job.algorithm = "gbdt";
  job.params = {{"max_iter", "4"}, {"max_leaf_nodes", "8"}, {"tree_learner", "voting"}, {"top_k", "3"}};
  job.data.name = "synthetic";
  job.data.synthetic_train = 1200;
  job.data.synthetic_test = 300;
  job.data.synthetic_classes = 3;
  job.data.synthetic_shape = {12};
  job.threads = 1;
  job.seed = 3;
  std::vector<Metrics> over_ps;
  ExpectParameterServerMatchesThreads(job, &over_ps);
  for (const Metrics& m : over_ps) EXPECT_GT(MetricValue(m, "accuracy"), 0.6) << "three classes: chance is 0.33";
}

TEST(PsCollectiveTest, HierarchicalSvmCascadeOverTheServersMatchesTheInProcessCollective) {
  // The data-centre level of the cascade gathers on the local gather key (answered by the local servers).
  EstimatorJob job;
  job.algorithm = "svm";
  job.params = {{"C", "1"}};
  job.data.name = "synthetic";
  job.data.synthetic_train = 600;
  job.data.synthetic_test = 150;
  job.data.synthetic_classes = 3;
  job.data.synthetic_shape = {6};
  job.threads = 1;
  job.seed = 4;
  std::vector<Metrics> over_ps;
  ExpectParameterServerMatchesThreads(job, &over_ps);
  for (const Metrics& m : over_ps) EXPECT_GT(MetricValue(m, "accuracy"), 0.6) << "three classes: chance is 0.33";
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
  std::vector<Metrics> over_ps;
  ExpectParameterServerMatchesThreads(job, &over_ps);
  ASSERT_EQ(over_ps.size(), static_cast<size_t>(kWorkers));
  for (const Metrics& m : over_ps) EXPECT_GT(MetricValue(m, "purity"), 0.5) << "four blobs: well above chance (0.25)";
}

}  // namespace
}  // namespace geomx::algorithms
