// The whole HiPS hierarchy in one process, as threads: a global tier (scheduler + global servers averaging with
// StoreSink) and two data centres (scheduler + local servers forwarding upward through a global-tier KvWorker +
// workers). Every worker PushPulls its gradients for several keys over 20 rounds and must end every round with
// exactly the mean over all workers of all data centres. Runs over LoopbackVan and inproc ZmqVan.
#include <thread>

#include <gtest/gtest.h>

#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/forward_sink.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/kv_link.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "ps_test_util.h"

namespace geomx::comm {
namespace {

using testing::FastOptions;
using testing::MakeSpec;
using testing::MakeTransport;
using testing::RunConcurrently;
using testing::TestTier;

struct Shape {
  int global_servers = 2;
  std::vector<int> local_servers = {2, 2};  // per data centre
  int workers_per_dc = 2;
  int rounds = 20;
};

class TwoTierTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Build(const Shape& shape) {
    shape_ = shape;
    const CommOptions o = FastOptions();
    const std::vector<KeySpec> keys = {{0, 10}, {1, 200}, {2, 64}, {3, 1}, {4, 130}};
    for (const auto& k : keys) keys_.push_back(k.key);
    global_layout_ = KeyLayout::Build(keys, shape.global_servers, o.split_bytes).value();

    // Global tier: workers are every local server, plus the master worker that initialises the weights.
    const int dcs = static_cast<int>(shape.local_servers.size());
    TierSpec gspec = MakeSpec(*t_, "global", shape.global_servers, 0, o);
    gspec.scheduler_party = "central";
    std::vector<std::string> parties;
    for (int d = 0; d < dcs; ++d) {
      for (int r = 0; r < shape.local_servers[d]; ++r) {
        gspec.worker_names.push_back(DcName(d) + "/server" + std::to_string(r));
        parties.push_back(DcName(d));
      }
    }
    gspec.worker_names.push_back("central/master");
    parties.push_back("central");
    gspec.num_workers = static_cast<int>(gspec.worker_names.size());
    for (int r = 0; r < shape.global_servers; ++r) gspec.server_names.push_back("global/server" + std::to_string(r));
    global_ = std::make_unique<TestTier>(*t_, gspec, parties);
    for (int r = 0; r < shape.global_servers; ++r) {
      aggs_.push_back(SyncAggregator::Create(global_layout_, {.expected_senders = dcs, .reducer = "sum"}, &mean_)
                          .value());
      servers_.push_back(std::make_unique<KvServer>(&global_->server(r), 0, aggs_.back().get()));
    }
    master_ = std::make_unique<KvWorker>(&global_->worker(gspec.num_workers - 1), 0, global_layout_);

    int global_rank = 0;
    for (int d = 0; d < dcs; ++d) {
      dcs_.push_back(std::make_unique<TestTier>(*t_, MakeSpec(*t_, DcName(d), shape.local_servers[d],
                                                              shape.workers_per_dc, o)));
      TestTier& dc = *dcs_.back();
      const KeyLayout local = KeyLayout::Build(keys, shape.local_servers[d], o.split_bytes).value();
      for (int r = 0; r < shape.local_servers[d]; ++r, ++global_rank) {
        uppers_.push_back(std::make_unique<KvWorker>(&global_->worker(global_rank), 0, global_layout_));
        links_.push_back(KvLink::Create(uppers_.back().get(), TierCodec{}).value());
        forwards_.push_back(std::make_unique<ForwardSink>(links_.back().get()));
        aggs_.push_back(SyncAggregator::Create(local, {.expected_senders = shape.workers_per_dc, .reducer = "sum"},
                                               forwards_.back().get())
                            .value());
        servers_.push_back(std::make_unique<KvServer>(&dc.server(r), 0, aggs_.back().get()));
      }
      for (int w = 0; w < shape.workers_per_dc; ++w) {
        workers_.push_back(std::make_unique<KvWorker>(&dc.worker(w), 0, local));
      }
    }

    std::vector<std::function<Status()>> start = {[this] { return global_->Start(); }};
    for (auto& dc : dcs_) start.push_back([&dc] { return dc->Start(); });
    for (const Status& s : RunConcurrently(start)) ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<std::function<Status()>> barrier;
    for (Postoffice* po : AllPostoffices()) barrier.push_back([po] { return po->Barrier("all"); });
    for (const Status& s : RunConcurrently(barrier)) ASSERT_TRUE(s.ok()) << s.ToString();
  }

  void TearDown() override {
    std::vector<std::function<Status()>> fin;
    if (global_) fin.push_back([this] { return global_->Finalize(); });
    for (auto& dc : dcs_) fin.push_back([&dc] { return dc->Finalize(); });
    for (const Status& s : RunConcurrently(fin)) EXPECT_TRUE(s.ok()) << s.ToString();
    workers_.clear();
    master_.reset();
    servers_.clear();
    aggs_.clear();
    forwards_.clear();
    links_.clear();
    uppers_.clear();
    dcs_.clear();
    global_.reset();
  }

  static std::string DcName(int d) { return std::string("dc-") + static_cast<char>('a' + d); }

  std::vector<Postoffice*> AllPostoffices() {
    std::vector<Postoffice*> all = global_->all();
    for (auto& dc : dcs_) {
      for (Postoffice* po : dc->all()) all.push_back(po);
    }
    return all;
  }

  // Global worker g's gradient: small multiples of 0.25, so every sum and the mean over 4 workers are exact.
  static float Grad(int g, uint64_t key, int64_t round, uint64_t j) {
    return static_cast<float>((g + 1) * (round + 1)) + 0.25f * static_cast<float>(j % 7) + static_cast<float>(key);
  }
  static float Init(uint64_t key, uint64_t j) { return 1000.0f * static_cast<float>(key) - 0.5f * j; }

  // Runs the whole scenario: the master initialises, every worker pulls the initial weights, then trains.
  void RunScenario() {
    const int total = static_cast<int>(workers_.size());
    std::vector<std::function<Status()>> fns;
    fns.push_back([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // workers ask first: their pulls must wait
      std::vector<std::vector<float>> init;
      std::vector<const float*> ptrs;
      for (uint64_t k : keys_) {
        init.emplace_back(global_layout_.length(k));
        for (uint64_t j = 0; j < init.back().size(); ++j) init.back()[j] = Init(k, j);
      }
      for (auto& v : init) ptrs.push_back(v.data());
      return master_->Wait(master_->Push(keys_, ptrs, kInitRound));
    });
    for (int g = 0; g < total; ++g) {
      fns.push_back([this, g, total]() -> Status {
        KvWorker& kv = *workers_[g];
        std::vector<std::vector<float>> weights, grads;
        std::vector<float*> outs;
        std::vector<const float*> ins;
        for (uint64_t k : keys_) {
          weights.emplace_back(kv.layout().length(k), -1.0f);
          grads.emplace_back(kv.layout().length(k));
        }
        for (auto& v : weights) outs.push_back(v.data());
        for (auto& v : grads) ins.push_back(v.data());
        GEOMX_RETURN_IF_ERROR(kv.Wait(kv.Pull(keys_, outs, kInitRound)));
        for (size_t i = 0; i < keys_.size(); ++i) {
          for (uint64_t j = 0; j < weights[i].size(); ++j) {
            if (weights[i][j] != Init(keys_[i], j)) {
              return Status::Internal("worker " + std::to_string(g) + ": wrong initial value of key " +
                                      std::to_string(keys_[i]));
            }
          }
        }
        for (int64_t round = 0; round < shape_.rounds; ++round) {
          for (size_t i = 0; i < keys_.size(); ++i) {
            for (uint64_t j = 0; j < grads[i].size(); ++j) grads[i][j] = Grad(g, keys_[i], round, j);
          }
          GEOMX_RETURN_IF_ERROR(kv.Wait(kv.PushPull(keys_, ins, outs, round)));
          for (size_t i = 0; i < keys_.size(); ++i) {
            for (uint64_t j = 0; j < weights[i].size(); ++j) {
              double sum = 0;
              for (int h = 0; h < total; ++h) sum += Grad(h, keys_[i], round, j);
              const float expected = static_cast<float>(sum / total);
              if (weights[i][j] != expected) {
                return Status::Internal("worker " + std::to_string(g) + " round " + std::to_string(round) +
                                        " key " + std::to_string(keys_[i]) + "[" + std::to_string(j) +
                                        "]: got " + std::to_string(weights[i][j]) + ", expected " +
                                        std::to_string(expected));
              }
            }
          }
        }
        return Status::Ok();
      });
    }
    for (const Status& s : RunConcurrently(fns)) ASSERT_TRUE(s.ok()) << s.ToString();
    for (const auto& a : aggs_) EXPECT_EQ(a->num_open_rounds(), 0u);
    for (const auto& u : uppers_) EXPECT_EQ(u->num_pending(), 0u);
  }

  std::unique_ptr<testing::Transport> t_ = MakeTransport(GetParam());
  Shape shape_;
  std::vector<uint64_t> keys_;
  KeyLayout global_layout_;
  StoreSink mean_;
  std::unique_ptr<TestTier> global_;
  std::vector<std::unique_ptr<TestTier>> dcs_;
  std::vector<std::unique_ptr<KvWorker>> uppers_;  // each local server's worker in the global tier
  std::vector<std::unique_ptr<KvLink>> links_;     // ... and its (dense) link
  std::vector<std::unique_ptr<ForwardSink>> forwards_;
  std::vector<std::unique_ptr<SyncAggregator>> aggs_;
  std::vector<std::unique_ptr<KvServer>> servers_;
  std::unique_ptr<KvWorker> master_;
  std::vector<std::unique_ptr<KvWorker>> workers_;
};

TEST_P(TwoTierTest, EveryWorkerGetsTheExactGlobalMeanEveryRound) {
  Build(Shape{});
  RunScenario();
}

TEST_P(TwoTierTest, UnevenTiersStillAverageOverAllWorkers) {
  // 3 global servers, data centres with 1 and 2 local servers and 3 workers each: the slices still map 1:1.
  Build(Shape{.global_servers = 3, .local_servers = {1, 2}, .workers_per_dc = 3, .rounds = 5});
  RunScenario();
}

TEST_P(TwoTierTest, SurvivesDuplicatedAndReorderedMessages) {
  LoopbackNetwork* net = t_->loopback();
  if (net == nullptr) GTEST_SKIP() << "fault injection is a LoopbackVan feature";
  // From registration on, 20% of all messages arrive twice and every message is delayed by up to 3 ms.
  static uint64_t runs = 0;  // a new seed on every --gtest_repeat iteration
  net->SetOptions({.duplicate_rate = 0.2, .max_delay_ms = 3, .seed = 11 + runs++});
  Build(Shape{.rounds = 10});
  RunScenario();
  net->SetOptions({});
}

INSTANTIATE_TEST_SUITE_P(Transports, TwoTierTest, ::testing::Values("loopback", "zmq"));

}  // namespace
}  // namespace geomx::comm
