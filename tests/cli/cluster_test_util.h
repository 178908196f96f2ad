// Helpers shared by the tests that start every role of a small two-tier topology inside the test process (one
// thread per role, over loopback or inproc vans) and train: the 2 x 2 recipe they start from, the in-process
// ClusterEnv, starting and joining the roles, each worker's final weights, and the single-process reference run.
// Test-only code.
//
// Contract: RunRoles starts one thread per role of `r` (global scheduler, global servers, the state server when
// the sync mode has one (esync), master, then per data centre its scheduler, local servers and workers), joins every one of
// them, and reports each role that did not end OK as a non-fatal test failure naming the role. It returns only when
// every thread has ended, so the vans' LoopbackNetwork or ZmqContext only has to outlive the call. RunCluster is
// RunRoles with env.on_worker_done replaced by a collector of the workers' final weights.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/sync/sync_mode.h"
#include "algorithms/train/trainer.h"
#include "cli/cluster.h"
#include "cli/setup.h"
#include "comm/key_layout.h"
#include "comm/loopback_van.h"
#include "datasets/loader.h"
#include "nn/optim/optimizer.h"

namespace geomx::cli::cluster_testing {

using Weights = std::vector<std::vector<float>>;  // one float vector per parameter, in Parameters() order

// Data centres dc-a and dc-b with 2 workers and 1 local server each, 1 global server; an MLP with one hidden
// layer of 16 on 512 synthetic examples (16 features, 4 classes, 128 test examples), batch 8: 16 iterations per
// epoch over the 4 workers; SGD with lr 0.1; seed 5, 1 compute thread, no prefetch; rendezvous and request
// timeouts 30 s. Everything else keeps Recipe's defaults; tests change what they need.
inline Recipe TwoByTwoRecipe(const std::string& name, int epochs) {
  Recipe r;
  r.name = name;
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
  r.topology.global_servers = 1;
  for (const char* dc_name : {"dc-a", "dc-b"}) {
    comm::DataCentre dc;
    dc.name = dc_name;
    dc.workers = 2;
    dc.servers = 1;
    r.topology.datacentres.push_back(dc);
  }
  r.topology.options.rendezvous_timeout_ms = 30000;
  r.topology.options.request_timeout_ms = 30000;
  return r;
}

// TwoByTwoRecipe for the model-averaging modes (hfa, diloco, esync), several slices per large tensor.
inline Recipe AveragingRecipe(const std::string& mode, int epochs) {
  Recipe r = TwoByTwoRecipe("averaging", epochs);
  r.sync.mode = mode;
  r.topology.options.split_bytes = 256;
  return r;
}

inline Weights Snapshot(nn::Module& model) {
  Weights w;
  for (nn::Parameter* p : model.Parameters()) w.push_back(p->data().ToFloatVector());
  return w;
}

// Every node of this process reachable by name: schedulers at "<scheme>://sched-<tier>", nodes at
// "<scheme>://<node>"; vans from `make_van`.
inline ClusterEnv InProcessEnv(const std::string& scheme,
                               std::function<std::unique_ptr<comm::Van>(const std::string& node)> make_van) {
  ClusterEnv env;
  env.make_van = std::move(make_van);
  env.scheduler_endpoint = [scheme](const std::string& tier, const std::string&, int) {
    return scheme + "://sched-" + tier;
  };
  env.node_bind = [scheme](const std::string& node, const std::string&) { return scheme + "://" + node; };
  return env;
}

// Loopback vans on `net` (which must outlive every van made).
inline ClusterEnv LoopbackEnv(comm::LoopbackNetwork* net) {
  return InProcessEnv("loop", [net](const std::string&) { return std::make_unique<comm::LoopbackVan>(net); });
}

// Every role of `r` as a thread of this process; see the contract at the top. `server_recipe` (may be null): the
// recipe the local servers run with instead of `r` (a data centre configured differently).
inline void RunRoles(const Recipe& r, const ClusterEnv& env, const Recipe* server_recipe = nullptr) {
  const Recipe& rs = server_recipe != nullptr ? *server_recipe : r;
  std::mutex mu;
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
  for (int g = 0; g < r.topology.global_servers; ++g) {
    run("global-server", [&, g] { return RunGlobalServer(r, g, env); });
  }
  if (sync::TraitsOf(r.sync.mode).state_server) run("state-server", [&] { return RunStateServer(r, env); });
  run("master", [&] { return RunMasterWorker(r, env); });
  for (const auto& dc : r.topology.datacentres) {
    const std::string p = dc.name;
    run(p + "/scheduler", [&, p] { return RunScheduler(r, p, env); });
    for (int s = 0; s < dc.servers; ++s) run(p + "/server", [&, p, s] { return RunLocalServer(rs, p, s, env); });
    for (int w = 0; w < dc.workers; ++w) run(p + "/worker", [&, p, w] { return RunWorker(r, p, w, env, nullptr); });
  }
  for (auto& t : threads) t.join();
  for (const auto& [name, s] : results) EXPECT_TRUE(s.ok()) << name << ": " << s.ToString();
}

// RunRoles; returns each worker's final weights by worker name.
inline std::map<std::string, Weights> RunCluster(const Recipe& r, ClusterEnv env,
                                                 const Recipe* server_recipe = nullptr) {
  std::mutex mu;
  std::map<std::string, Weights> finals;
  env.on_worker_done = [&](const std::string& name, nn::Module& model) {
    std::lock_guard<std::mutex> lock(mu);
    finals[name] = Snapshot(model);
  };
  RunRoles(r, env, server_recipe);
  return finals;
}

// RunCluster over loopback vans; `observer` (may be null) hears the sync policies (algorithms/sync/sync_observer.h).
inline std::map<std::string, Weights> RunCluster(const Recipe& r, sync::SyncObserver* observer = nullptr) {
  comm::LoopbackNetwork net;
  ClusterEnv env = LoopbackEnv(&net);
  env.observer = observer;
  return RunCluster(r, env);
}

// Counts the averaging modes' synchronisations: every (wire key, round) a global server stepped (key_syncs) and
// those of key 0's first slice (wan_syncs: one per WAN round), and every local data-centre average.
struct AveragingCounter : sync::SyncObserver {
  std::atomic<int64_t> wan_syncs{0};
  std::atomic<int64_t> key_syncs{0};
  std::atomic<int64_t> local_averages{0};
  void OnGlobalAverage(uint64_t wire_key, int64_t) override {
    ++key_syncs;
    if (comm::KeyOfWireKey(wire_key) == 0 && comm::SliceOfWireKey(wire_key) == 0) ++wan_syncs;
  }
  void OnLocalAverage(uint64_t, int64_t) override { ++local_averages; }
};

// One process from the same initial weights, each step on all workers' batches concatenated (the mean loss over
// all of them: the mean of the workers' mean gradients), with `optimizer`.
inline Weights Reference(const Recipe& r, const nn::OptimizerConfig& optimizer) {
  auto setup = PrepareRun(r);
  EXPECT_TRUE(setup.ok()) << setup.status().ToString();
  nn::Module& model = *setup->model;
  auto opt = std::move(nn::CreateOptimizer(optimizer)).value();
  train::LocalUpdate update(opt.get());
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
      Tensor x = Tensor::FromVector(xs, Shape({n, static_cast<int64_t>(xs.size()) / n}));
      Tensor y = Tensor::FromVectorI64(ys, Shape({n}));
      EXPECT_TRUE(train::TrainStep(model, update, model.Parameters(), x, y, round++).ok());
    }
  }
  return Snapshot(model);
}

// The largest absolute difference between two weight sets (a size mismatch is a test failure).
inline float MaxDiff(const Weights& a, const Weights& b) {
  float worst = 0;
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].size(), b[i].size());
    for (size_t j = 0; j < a[i].size() && j < b[i].size(); ++j) worst = std::max(worst, std::fabs(a[i][j] - b[i][j]));
  }
  return worst;
}

// The recipe's model's initial weights.
inline Weights InitialWeights(const Recipe& r) {
  auto setup = PrepareRun(r);
  EXPECT_TRUE(setup.ok()) << setup.status().ToString();
  return Snapshot(*setup->model);
}

}  // namespace geomx::cli::cluster_testing
