// Every role of a two-data-centre topology as threads of this process. The FSA equivalence tests check that a
// HiPS run (2 data centres x 2 workers, plain SGD) ends with the same weights as one process training on the
// combined batches, with 1 or 2 global servers and 1 or 2 local servers per data centre.
#include "cli/cluster.h"

#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "cli/setup.h"
#include "cli/trainer.h"
#include "comm/loopback_van.h"
#include "comm/zmq_van.h"
#include "datasets/loader.h"
#include "engine/ops.h"
#include "nn/optim/optimizer.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

Recipe MakeRecipe(int global_servers, int local_servers, int epochs = 1) {
  Recipe r;
  r.name = "cluster";
  r.seed = 5;
  r.threads = 1;
  r.model.name = "mlp";
  r.model.hidden = {16};
  r.data.name = "synthetic";
  r.data.synthetic_train = 512;
  r.data.synthetic_test = 128;
  r.data.synthetic_classes = 4;
  r.data.synthetic_shape = {16};
  r.data.batch_size = 8;
  r.data.prefetch = 0;
  r.optimizer.name = "sgd";
  r.optimizer.lr = 0.1f;
  r.training.epochs = epochs;
  r.has_topology = true;
  r.topology.global_servers = global_servers;
  for (const char* name : {"dc-a", "dc-b"}) {
    comm::DataCentre dc;
    dc.name = name;
    dc.workers = 2;
    dc.servers = local_servers;
    r.topology.datacentres.push_back(dc);
  }
  r.topology.options.split_bytes = 256;  // split the 16x16 weight (1 KB) over several servers
  r.topology.options.rendezvous_timeout_ms = 30000;
  r.topology.options.request_timeout_ms = 30000;
  return r;
}

using Weights = std::vector<std::vector<float>>;

Weights Snapshot(nn::Module& model) {
  Weights w;
  for (nn::Parameter* p : model.Parameters()) w.push_back(p->data().ToFloatVector());
  return w;
}

// Runs every role as a thread; returns each worker's final weights.
std::map<std::string, Weights> RunCluster(const Recipe& r, ClusterEnv env) {
  std::mutex mu;
  std::map<std::string, Weights> finals;
  env.on_worker_done = [&](const std::string& name, nn::Module& model) {
    std::lock_guard<std::mutex> lock(mu);
    finals[name] = Snapshot(model);
  };
  std::vector<std::thread> threads;
  std::vector<std::pair<std::string, Status>> results;
  auto run = [&](std::string name, std::function<Status()> fn) {
    threads.emplace_back([&, name, fn] {
      Status s = fn();
      std::lock_guard<std::mutex> lock(mu);
      results.emplace_back(name, s);
    });
  };
  run("global-scheduler", [&] { return RunGlobalScheduler(r, env); });
  for (int g = 0; g < r.topology.global_servers; ++g) run("global-server", [&, g] { return RunGlobalServer(r, g, env); });
  run("master", [&] { return RunMasterWorker(r, env); });
  for (const auto& dc : r.topology.datacentres) {
    const std::string p = dc.name;
    run(p + "/scheduler", [&, p] { return RunScheduler(r, p, env); });
    for (int s = 0; s < dc.servers; ++s) run(p + "/server", [&, p, s] { return RunLocalServer(r, p, s, env); });
    for (int w = 0; w < dc.workers; ++w) run(p + "/worker", [&, p, w] { return RunWorker(r, p, w, env, nullptr); });
  }
  for (auto& t : threads) t.join();
  for (const auto& [name, s] : results) EXPECT_TRUE(s.ok()) << name << ": " << s.ToString();
  return finals;
}

// One process, same initial weights, each step on the 4 workers' batches concatenated (mean loss over all of
// them = the mean of the workers' mean gradients).
Weights Reference(const Recipe& r) {
  auto setup = PrepareRun(r);
  EXPECT_TRUE(setup.ok()) << setup.status().ToString();
  nn::Module& model = *setup->model;
  auto opt = std::move(nn::CreateOptimizer(r.optimizer)).value();
  LocalUpdate update(opt.get());
  const int world = r.topology.total_workers();
  std::vector<std::unique_ptr<data::DataLoader>> loaders;
  for (int k = 0; k < world; ++k) {
    data::LoaderOptions lo;
    lo.batch_size = r.data.batch_size;
    lo.prefetch = 0;
    lo.seed = r.seed;
    lo.rank = k;
    lo.world = world;
    loaders.push_back(std::make_unique<data::DataLoader>(setup->data.train, lo));
  }
  const int64_t per_epoch = (setup->data.train->size() / world) / r.data.batch_size;
  int64_t round = 0;
  for (int e = 0; e < r.training.epochs; ++e) {
    for (auto& l : loaders) l->StartEpoch(e);
    for (int64_t i = 0; i < per_epoch; ++i) {
      std::vector<float> xs;
      std::vector<int64_t> ys;
      for (auto& l : loaders) {
        data::Batch b;
        EXPECT_TRUE(l->Next(&b));
        auto xv = b.x.ToFloatVector();
        auto yv = b.y.ToI64Vector();
        xs.insert(xs.end(), xv.begin(), xv.end());
        ys.insert(ys.end(), yv.begin(), yv.end());
      }
      const int64_t n = static_cast<int64_t>(ys.size());
      Tensor x = Tensor::FromVector(xs, Shape({n, 16}));
      Tensor y = Tensor::FromVectorI64(ys, Shape({n}));
      EXPECT_TRUE(TrainStep(model, update, model.Parameters(), x, y, round++).ok());
    }
  }
  return Snapshot(model);
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

ClusterEnv LoopbackEnv(comm::LoopbackNetwork* net) {
  ClusterEnv env;
  env.make_van = [net](const std::string&) { return std::make_unique<comm::LoopbackVan>(net); };
  env.scheduler_endpoint = [](const std::string& tier, const std::string&, int) { return "loop://sched-" + tier; };
  env.node_bind = [](const std::string& node, const std::string&) { return "loop://" + node; };
  return env;
}

class FsaEquivalenceTest : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(FsaEquivalenceTest, TwoByTwoMatchesSingleProcess) {
  const auto [global_servers, local_servers] = GetParam();
  const Recipe r = MakeRecipe(global_servers, local_servers);
  comm::LoopbackNetwork net;
  const auto finals = RunCluster(r, LoopbackEnv(&net));
  ASSERT_EQ(finals.size(), 4u);
  const Weights ref = Reference(r);
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

// Every role as threads over inproc ZeroMQ for 100 iterations (run under AddressSanitizer in CI's ASan job).
TEST(ClusterTest, HundredIterationsOverInprocZeroMq) {
  Recipe r = MakeRecipe(2, 1, /*epochs=*/7);  // 16 iterations per epoch -> 112 >= 100
  r.training.max_iterations = 100;
  comm::ZmqContext ctx;
  ClusterEnv env;
  env.make_van = [&ctx](const std::string&) { return std::make_unique<comm::ZmqVan>(&ctx); };
  env.scheduler_endpoint = [](const std::string& tier, const std::string&, int) { return "inproc://sched-" + tier; };
  env.node_bind = [](const std::string& node, const std::string&) { return "inproc://" + node; };
  const auto finals = RunCluster(r, env);
  ASSERT_EQ(finals.size(), 4u);
  // FSA: every worker holds the same weights at the end.
  const Weights& first = finals.begin()->second;
  for (const auto& [name, w] : finals) ExpectSameWeights(w, first, name);
}

}  // namespace
}  // namespace geomx::cli
