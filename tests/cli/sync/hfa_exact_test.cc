// sync.mode hfa with K1 > 1 and K2 > 1 (the LAN-only averages between WAN syncs) on 2 data centres x 2 workers,
// against a replay done here: every worker's model after every sync must equal a two-level average computed in the
// test from each worker's own local steps. The replay shares only the model's forward/backward and the SGD step
// with the library (each worker trains its own copy on its own fixed batches); the averaging is written out here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/train/parameter_update.h"
#include "algorithms/train/trainer.h"
#include "cli/setup.h"
#include "comm/loopback_van.h"
#include "comm/network_shape.h"
#include "comm/shaped_van.h"
#include "comm/traffic.h"
#include "datasets/loader.h"
#include "nn/optim/optimizer.h"
#include "tests/cli/cluster_test_util.h"
#include "tests/cli/sync/sync_test_util.h"

namespace geomx::cli {
namespace {

using cluster_testing::AveragingRecipe;
using cluster_testing::MaxDiff;
using cluster_testing::RunCluster;
using cluster_testing::Snapshot;
using cluster_testing::Weights;

void Load(nn::Module& model, const Weights& w) {
  auto params = model.Parameters();
  ASSERT_EQ(params.size(), w.size());
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor(params[i]->data()).CopyFrom(Tensor::FromVector(w[i], params[i]->data().shape()));
  }
}

// sum_i scale_i * w_i, element by element, in double.
Weights Combine(const std::vector<const Weights*>& ws, const std::vector<double>& scales) {
  Weights out = *ws[0];
  for (size_t p = 0; p < out.size(); ++p) {
    for (size_t j = 0; j < out[p].size(); ++j) {
      double v = 0;
      for (size_t i = 0; i < ws.size(); ++i) v += scales[i] * (*ws[i])[p][j];
      out[p][j] = static_cast<float>(v);
    }
  }
  return out;
}

// SparseLoCo's push (diloco with accelerators.links.local_to_global: bsc), written out: per parameter of at least
// `bound` elements, e = decay x e + delta (f32, as the local server's encoder rounds), the k = floor(ratio x n)
// largest |e| are sent (ties: lowest index) and leave e; smaller parameters go whole.
struct SparseLoCoReplay {
  float decay, ratio;
  size_t bound;
  Weights e_a, e_b;  // the two local servers' error feedback

  // Not const: `e` is one of this replay's own buffers.
  Weights Send(const Weights& delta, Weights* e) {
    Weights sent = delta;
    if (e->empty()) {
      *e = delta;
      for (auto& p : *e) std::fill(p.begin(), p.end(), 0.0f);
    }
    for (size_t p = 0; p < delta.size(); ++p) {
      const size_t n = delta[p].size();
      if (n < bound) continue;
      std::vector<float>& v = (*e)[p];
      for (size_t j = 0; j < n; ++j) {
        v[j] *= decay;
        v[j] += delta[p][j];
      }
      std::vector<size_t> order(n);
      for (size_t j = 0; j < n; ++j) order[j] = j;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
      std::fill(sent[p].begin(), sent[p].end(), 0.0f);
      const size_t k = std::max<size_t>(1, static_cast<size_t>(ratio * static_cast<float>(n)));
      for (size_t i = 0; i < k; ++i) {
        sent[p][order[i]] = v[order[i]];
        v[order[i]] = 0.0f;
      }
    }
    return sent;
  }
};

// The replay: each worker's model after every sync, expected[sync][worker] (workers over all data centres, dc-a's
// two first), for hfa with K1 local steps per sync and a WAN sync every K2-th sync:
//   every sync     the data centre's average a_d = (w_2d + w_2d+1) / 2
//   LAN-only sync  the data centre's workers continue from a_d
//   WAN sync       delta_d = (a_d - milestone) x 2 workers; milestone += (delta_a + delta_b) / 4 workers; every
//                  worker continues from the milestone (the new global model)
// With sync.overlap D > 0 a WAN sync at sync s leaves every worker at its data centre's average a_d(s); at sync
// s + D each continues from a_d(s + D) + (the milestone of sync s - a_d(s)) instead, before that sync's own WAN
// delta (when s + D is one too) is taken from it.
// With `sparse` (diloco with a bsc push, SparseLoCo): each data centre sends SparseLoCoReplay::Send(delta_d) and
// milestone += sync.outer.lr x (sent_a + sent_b) / 4 workers.
std::vector<std::vector<Weights>> Replay(const Recipe& r, std::optional<SparseLoCoReplay> sparse = std::nullopt) {
  constexpr int kWorkers = 4;
  std::vector<RunSetup> setups;
  std::vector<std::unique_ptr<nn::Optimizer>> optimizers;
  std::vector<std::unique_ptr<train::LocalUpdate>> updates;
  std::vector<std::unique_ptr<data::DataLoader>> loaders;
  for (int w = 0; w < kWorkers; ++w) {
    auto setup = PrepareRun(r);  // the same initial weights (recipe seed) for every worker
    EXPECT_TRUE(setup.ok()) << setup.status().ToString();
    setups.push_back(std::move(setup).value());
    optimizers.push_back(std::move(nn::CreateOptimizer(r.optimizer)).value());
    updates.push_back(std::make_unique<train::LocalUpdate>(optimizers.back().get()));
    data::LoaderOptions lo;  // each worker's shard, as the cluster's workers read it
    lo.batch_size = r.data.batch_size;
    lo.prefetch = 0;
    lo.seed = r.seed;
    lo.rank = w;
    lo.world = kWorkers;
    loaders.push_back(std::make_unique<data::DataLoader>(setups[0].data.train, lo));
  }
  const int64_t per_epoch = (setups[0].data.train->size() / kWorkers) / r.data.batch_size;
  Weights milestone = Snapshot(*setups[0].model);
  struct Pending {  // an overlapped WAN sync: the sync that takes it, its global model, the averages it left
    int64_t apply;
    Weights global, sent_a, sent_b;
  };
  std::optional<Pending> pending;
  std::vector<std::vector<Weights>> expected;
  int64_t iteration = 0;
  for (int e = 0; e < r.training.epochs; ++e) {
    for (auto& l : loaders) l->StartEpoch(e);
    for (int64_t i = 0; i < per_epoch; ++i, ++iteration) {
      for (int w = 0; w < kWorkers; ++w) {
        data::Batch b;
        EXPECT_TRUE(loaders[w]->Next(&b));
        nn::Module& m = *setups[w].model;
        EXPECT_TRUE(train::TrainStep(m, *updates[w], m.Parameters(), b.x, b.y, iteration).ok());
      }
      if ((iteration + 1) % r.sync.k1 != 0) continue;
      const int64_t sync = (iteration + 1) / r.sync.k1 - 1;
      std::vector<Weights> models;
      for (int w = 0; w < kWorkers; ++w) models.push_back(Snapshot(*setups[w].model));
      Weights avg_a = Combine({&models[0], &models[1]}, {0.5, 0.5});
      Weights avg_b = Combine({&models[2], &models[3]}, {0.5, 0.5});
      if (pending && pending->apply == sync) {  // the overlapped WAN sync's global model, under the progress since
        avg_a = Combine({&avg_a, &pending->global, &pending->sent_a}, {1.0, 1.0, -1.0});
        avg_b = Combine({&avg_b, &pending->global, &pending->sent_b}, {1.0, 1.0, -1.0});
        milestone = pending->global;
        pending.reset();
      }
      std::vector<Weights> after = {avg_a, avg_a, avg_b, avg_b};
      if ((sync + 1) % r.sync.k2 == 0 && sparse) {
        Weights delta_a = avg_a, delta_b = avg_b;
        for (size_t p = 0; p < milestone.size(); ++p) {
          for (size_t j = 0; j < milestone[p].size(); ++j) {
            delta_a[p][j] = (avg_a[p][j] - milestone[p][j]) * 2.0f;
            delta_b[p][j] = (avg_b[p][j] - milestone[p][j]) * 2.0f;
          }
        }
        const Weights sent_a = sparse->Send(delta_a, &sparse->e_a);
        const Weights sent_b = sparse->Send(delta_b, &sparse->e_b);
        milestone = Combine({&milestone, &sent_a, &sent_b}, {1.0, r.sync.outer_lr / 4.0, r.sync.outer_lr / 4.0});
        after.assign(kWorkers, milestone);
      } else if ((sync + 1) % r.sync.k2 == 0) {
        Weights global = milestone;
        for (size_t p = 0; p < milestone.size(); ++p) {
          for (size_t j = 0; j < milestone[p].size(); ++j) {
            const double m = milestone[p][j];
            const double delta_a = 2.0 * (avg_a[p][j] - m), delta_b = 2.0 * (avg_b[p][j] - m);
            global[p][j] = static_cast<float>(m + (delta_a + delta_b) / kWorkers);
          }
        }
        if (r.sync.overlap == 0) {
          milestone = global;
          after.assign(kWorkers, milestone);
        } else {
          pending = Pending{sync + r.sync.overlap, global, avg_a, avg_b};
        }
      }
      for (int w = 0; w < kWorkers; ++w) Load(*setups[w].model, after[w]);
      expected.push_back(after);
    }
  }
  return expected;
}

// K1 = 2, K2 = 3, 2 epochs of 16 iterations: 16 syncs, WAN syncs at 2, 5, 8, 11, 14; the run ends on sync 15, a
// LAN-only average, so the data centres end on different models. A linear model (softmax regression) with plain
// SGD (lr 0.1).
TEST(HfaExactTest, EveryWorkersModelIsTheTwoLevelAverageOfTheReplay) {
  Recipe r = AveragingRecipe("hfa", 2);
  r.model.hidden = {};  // 16 features -> 4 classes
  r.sync.k1 = 2;
  r.sync.k2 = 3;
  sync_testing::ModelRecorder rec;
  const auto finals = RunCluster(r, &rec);
  ASSERT_EQ(finals.size(), 4u);
  EXPECT_EQ(rec.wan_syncs.load(), 5);
  const std::vector<std::vector<Weights>> expected = Replay(r);
  ASSERT_EQ(expected.size(), 16u);
  ASSERT_EQ(rec.models.size(), expected.size());
  for (int64_t s = 0; s < 16; ++s) {
    const auto& got = rec.models.at(s);
    ASSERT_EQ(got.size(), 4u) << "sync " << s;
    for (int w = 0; w < 4; ++w) {
      EXPECT_LE(MaxDiff(got.at(w), expected[s][w]), 1e-5f) << "sync " << s << " worker " << w;
    }
    // Not vacuous: a LAN-only average leaves the data centres apart; a WAN sync brings them together.
    if ((s + 1) % 3 != 0) {
      EXPECT_GT(MaxDiff(expected[s][0], expected[s][2]), 1e-4f) << "sync " << s;
    } else {
      EXPECT_EQ(MaxDiff(expected[s][0], expected[s][2]), 0.0f) << "sync " << s;
    }
  }
  for (const auto& [name, w] : finals) {
    const int dc = name.rfind("dc-a", 0) == 0 ? 0 : 2;
    EXPECT_LE(MaxDiff(w, expected[15][dc]), 1e-5f) << name;
  }
}

}  // namespace
}  // namespace geomx::cli

namespace geomx::cli {
namespace {

// sync.overlap: the same run with each WAN sync overlapping the next D local averages, D = 2 (the update lands
// between two WAN syncs) and D = K2 = 3 (it lands on the next WAN sync, whose delta then starts from it). With
// `wan_latency_s` > 0 the WAN is emulated that slow, so the local average that takes an update completes before
// the update arrives and waits for it: the result must not depend on when it arrives.
void ExpectOverlapMatchesTheReplay(int overlap, double wan_latency_s = 0) {
  Recipe r = AveragingRecipe("hfa", 2);
  r.model.hidden = {};
  r.sync.k1 = 2;
  r.sync.k2 = 3;
  r.sync.overlap = overlap;
  sync_testing::ModelRecorder rec;
  comm::LoopbackNetwork net;
  comm::TrafficCounters traffic;
  comm::NetworkShape network;
  network.wan = {.bandwidth_bps = 0, .latency_s = wan_latency_s};
  ClusterEnv env = cluster_testing::InProcessEnv("loop", [&](const std::string& node) -> std::unique_ptr<comm::Van> {
    if (wan_latency_s <= 0) return std::make_unique<comm::LoopbackVan>(&net);
    comm::ShapedVanOptions shaping{.network = network, .self_party = comm::PartyOfNode(node), .seed = 7};
    return std::make_unique<comm::ShapedVan>(std::make_unique<comm::LoopbackVan>(&net), shaping, &traffic);
  });
  env.observer = &rec;
  const auto finals = RunCluster(r, env);
  ASSERT_EQ(finals.size(), 4u);
  EXPECT_EQ(rec.wan_syncs.load(), 5);
  const std::vector<std::vector<Weights>> expected = Replay(r);
  ASSERT_EQ(expected.size(), 16u);
  ASSERT_EQ(rec.models.size(), expected.size());
  Recipe waiting = r;
  waiting.sync.overlap = 0;
  const std::vector<std::vector<Weights>> without = Replay(waiting);
  for (int64_t s = 0; s < 16; ++s) {
    const auto& got = rec.models.at(s);
    ASSERT_EQ(got.size(), 4u) << "sync " << s;
    for (int w = 0; w < 4; ++w) {
      EXPECT_LE(MaxDiff(got.at(w), expected[s][w]), 1e-5f) << "sync " << s << " worker " << w;
    }
  }
  // Not vacuous: the data centres never share a model (each WAN sync's update lands under local progress), and
  // the trajectory differs from the waiting one from the first WAN sync on.
  for (int64_t s = 2; s < 16; ++s) {
    EXPECT_GT(MaxDiff(expected[s][0], expected[s][2]), 1e-4f) << "sync " << s;
    EXPECT_GT(MaxDiff(expected[s][0], without[s][0]), 1e-4f) << "sync " << s;
  }
  for (const auto& [name, w] : finals) {
    const int dc = name.rfind("dc-a", 0) == 0 ? 0 : 2;
    EXPECT_LE(MaxDiff(w, expected[15][dc]), 1e-5f) << name;
  }
}

TEST(HfaExactTest, AnOverlappedWanSyncLandsTwoAveragesLater) { ExpectOverlapMatchesTheReplay(2); }
TEST(HfaExactTest, AnOverlapOfK2AveragesLandsOnTheNextWanSync) { ExpectOverlapMatchesTheReplay(3); }
TEST(HfaExactTest, AnOverlappedUpdateThatArrivesLateIsWaitedFor) { ExpectOverlapMatchesTheReplay(1, 0.03); }

}  // namespace
}  // namespace geomx::cli

namespace geomx::cli {
namespace {

// diloco with a bsc push runs SparseLoCo (algorithms/sync/averaging.h): the local servers' error feedback decays
// by sync.outer.momentum and the global server steps plain SGD at sync.outer.lr on the mean of the sparse pushes.
// K1 = 2, K2 = 3 as above; the 64 weights are sparsified (k = 6), the 4 biases go whole. Every worker's model
// after every sync must equal the replay's, which writes the decaying top-k out.
TEST(HfaExactTest, DilocoWithASparsePushIsSparseLoCo) {
  using cluster_testing::InitialWeights;
  Recipe r = AveragingRecipe("diloco", 2);
  r.model.hidden = {};
  r.sync.k1 = 2;
  r.sync.k2 = 3;
  r.sync.outer_lr = 0.8f;
  r.sync.outer_momentum = 0.5f;
  r.accelerators.local_to_global = "bsc";
  r.accelerators.global_to_local = "bsc";
  r.accelerators.bsc_ratio = 0.1f;
  r.accelerators.size_lower_bound = 16;
  sync_testing::ModelRecorder rec;
  const auto finals = RunCluster(r, &rec);
  ASSERT_EQ(finals.size(), 4u);
  const SparseLoCoReplay sparse{.decay = 0.5f, .ratio = 0.1f, .bound = 16};
  const std::vector<std::vector<Weights>> expected = Replay(r, sparse);
  ASSERT_EQ(expected.size(), 16u);
  ASSERT_EQ(rec.models.size(), expected.size());
  for (int64_t s = 0; s < 16; ++s) {
    for (int w = 0; w < 4; ++w) {
      EXPECT_LE(MaxDiff(rec.models.at(s).at(w), expected[s][w]), 1e-5f) << "sync " << s << " worker " << w;
    }
  }
  // Not vacuous: the global model moves in at most 2k = 12 of the 64 weights per WAN sync, and the decay matters
  // (plain error feedback, decay 1, gives other models).
  Weights before = InitialWeights(r);
  for (int64_t s = 2; s < 16; s += 3) {
    const Weights& global = expected[s][0];
    size_t big = 0;
    for (size_t p = 0; p < global.size(); ++p) big = global[p].size() > global[big].size() ? p : big;
    ASSERT_EQ(global[big].size(), 64u);
    size_t changed = 0;
    for (size_t j = 0; j < 64; ++j) changed += global[big][j] != before[big][j] ? 1 : 0;
    EXPECT_GT(changed, 0u) << "WAN sync " << s;
    EXPECT_LE(changed, 12u) << "WAN sync " << s;
    before = global;
  }
  SparseLoCoReplay plain = sparse;
  plain.decay = 1.0f;
  EXPECT_GT(MaxDiff(Replay(r, plain)[15][0], expected[15][0]), 1e-4f);
  for (const auto& [name, w] : finals) {
    const int dc = name.rfind("dc-a", 0) == 0 ? 0 : 2;
    EXPECT_LE(MaxDiff(w, expected[15][dc]), 1e-5f) << name;
  }
}

}  // namespace
}  // namespace geomx::cli
