// PolicyHarness: a sync mode's policies without a recipe. It builds the mode from its typed settings
// (sync::SyncSettings), puts its global and local server policies on two tiers over inproc ZeroMQ (2 data centres
// x 2 workers, one local server each, one global server, the master worker on the global tier) and lets a test
// drive the workers' side by hand through KvLinks, with the job's key schema and the given compression plan.
// Test-only code.
//
// Contract: the constructor starts both tiers and passes a barrier on each (failures are test failures); the
// destructor finalises them. Values are per key of job.job.schema, in schema order; workers are numbered over all
// data centres (dc-a's first). Not thread-safe: one test thread drives it.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/ps/job.h"
#include "algorithms/sync/sync_mode.h"
#include "comm/kv_link.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "tests/comm/ps_test_util.h"

namespace geomx::sync::testing {

inline constexpr int kDcs = 2;
inline constexpr int kWorkersPerDc = 2;
inline constexpr int kWorkers = kDcs * kWorkersPerDc;

// One value vector per key (schema order).
using KeyValues = std::vector<std::vector<float>>;

class PolicyHarness {
 public:
  // `split_bytes`: both tiers' slicing (a key of more than split_bytes / 4 floats travels as several slices).
  PolicyHarness(const SyncSettings& settings, SyncJob job, comm::LinkPlan links, int64_t split_bytes = 12)
      : transport_(comm::testing::MakeTransport("zmq")), job_(std::move(job)), links_plan_(links) {
    mode_ = std::move(CreateSyncMode(settings)).value();
    for (const ps::KeyDef& k : job_.job.schema.keys()) {
      keys_.push_back(k.key);
      sizes_.push_back(k.elems);
    }
    comm::CommOptions o = comm::testing::FastOptions();
    o.split_bytes = split_bytes;
    global_layout_ = job_.job.schema.Layout(1, o.split_bytes).value();
    comm::TierSpec gspec = comm::testing::MakeSpec(*transport_, "global", 1, kDcs + 1, o);  // + the master
    gspec.scheduler_party = "central";
    global_ = std::make_unique<comm::testing::TestTier>(*transport_, gspec,
                                                        std::vector<std::string>{"dc-a", "dc-b", "central"});
    ServerArgs gargs{&job_, global_layout_, links.global, nullptr};
    global_policy_ = std::move(mode_->MakeGlobalServer(gargs)).value();
    global_server_ = std::make_unique<comm::KvServer>(&global_->server(0), 0, global_policy_->handler());
    master_ = std::make_unique<comm::KvWorker>(&global_->worker(kDcs), 0, global_layout_);
    for (int d = 0; d < kDcs; ++d) {
      const std::string name = d == 0 ? "dc-a" : "dc-b";
      dcs_.push_back(std::make_unique<comm::testing::TestTier>(
          *transport_, comm::testing::MakeSpec(*transport_, name, 1, kWorkersPerDc, o)));
      const comm::KeyLayout local = job_.job.schema.Layout(1, o.split_bytes).value();
      uppers_.push_back(std::make_unique<comm::KvWorker>(&global_->worker(d), 0, global_layout_));
      upper_links_.push_back(comm::KvLink::Create(uppers_.back().get(), links.global).value());
      LocalServerArgs largs;
      largs.job = &job_;
      largs.layout = local;
      largs.codec = links.local;
      largs.dc_index = d;
      largs.workers = kWorkersPerDc;
      largs.upper = upper_links_.back().get();
      local_policies_.push_back(std::move(mode_->MakeLocalServer(largs)).value());
      local_servers_.push_back(
          std::make_unique<comm::KvServer>(&dcs_.back()->server(0), 0, local_policies_.back()->handler()));
      for (int w = 0; w < kWorkersPerDc; ++w) {
        kvs_.push_back(std::make_unique<comm::KvWorker>(&dcs_.back()->worker(w), 0, local));
        links_.push_back(comm::KvLink::Create(kvs_.back().get(), links.local).value());
      }
    }
    std::vector<std::function<Status()>> start = {[this] { return global_->Start(); }};
    for (auto& dc : dcs_) start.push_back([&dc] { return dc->Start(); });
    for (const Status& s : comm::testing::RunConcurrently(start)) EXPECT_TRUE(s.ok()) << s.ToString();
    std::vector<std::function<Status()>> barrier = {[this] { return BarrierAll(*global_); }};
    for (auto& dc : dcs_) barrier.push_back([&dc] { return BarrierAll(*dc); });
    for (const Status& s : comm::testing::RunConcurrently(barrier)) EXPECT_TRUE(s.ok()) << s.ToString();
  }

  ~PolicyHarness() {
    std::vector<std::function<Status()>> fin = {[this] { return global_->Finalize(); }};
    for (auto& dc : dcs_) fin.push_back([&dc] { return dc->Finalize(); });
    for (const Status& s : comm::testing::RunConcurrently(fin)) EXPECT_TRUE(s.ok()) << s.ToString();
    links_.clear();
    kvs_.clear();
    local_servers_.clear();
    upper_links_.clear();
    uppers_.clear();
    local_policies_.clear();
    global_server_.reset();
    master_.reset();
    global_policy_.reset();
  }

  // The master worker's initial weights of every key (round kInitRound), losslessly on the global tier.
  void PushInitial(const KeyValues& values) {
    auto link = comm::KvLink::Create(master_.get(), comm::LosslessSender(links_plan_.global)).value();
    std::vector<const float*> ptrs;
    for (const auto& v : values) ptrs.push_back(v.data());
    ASSERT_TRUE(link->Push(keys_, ptrs, comm::kInitRound).ok());
  }

  // Worker w's local server goes on without it, as under topology.failure_policy: continue (the scheduler's
  // kNodeLeft); Round then leaves it out.
  void DropWorker(int w) {
    const int d = w / kWorkersPerDc;
    ASSERT_TRUE(local_policies_[d]->RemoveSender(dcs_[d]->worker(w % kWorkersPerDc).my_id()).ok());
    dropped_.push_back(w);
  }

  // Every worker (not dropped) PushPulls its values (values[worker][key]) at `round` concurrently; returns what
  // each got back (zeros for a dropped worker).
  std::vector<KeyValues> Round(const std::vector<KeyValues>& values, int64_t round) {
    std::vector<KeyValues> out = Empty();
    std::vector<std::function<Status()>> calls;
    for (size_t w = 0; w < links_.size(); ++w) {
      if (std::find(dropped_.begin(), dropped_.end(), static_cast<int>(w)) != dropped_.end()) continue;
      calls.push_back([&, w] {
        std::vector<const float*> in;
        std::vector<float*> outs;
        for (size_t k = 0; k < keys_.size(); ++k) {
          in.push_back(values[w][k].data());
          outs.push_back(out[w][k].data());
        }
        return links_[w]->PushPull(keys_, in, outs, round);
      });
    }
    for (const Status& s : comm::testing::RunConcurrently(calls)) EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  // Every worker pulls round kInitRound.
  std::vector<KeyValues> PullInitial() {
    std::vector<KeyValues> out = Empty();
    std::vector<std::function<Status()>> calls;
    for (size_t w = 0; w < links_.size(); ++w) {
      calls.push_back([&, w] {
        std::vector<float*> outs;
        for (size_t k = 0; k < keys_.size(); ++k) outs.push_back(out[w][k].data());
        return links_[w]->Pull(keys_, outs, comm::kInitRound);
      });
    }
    for (const Status& s : comm::testing::RunConcurrently(calls)) EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  ServerPolicy& global_policy() { return *global_policy_; }
  const comm::KeyLayout& layout() const { return global_layout_; }

 private:
  std::vector<KeyValues> Empty() const {
    std::vector<KeyValues> out(links_.size());
    for (KeyValues& kv : out) {
      for (uint64_t n : sizes_) kv.emplace_back(n, 0.0f);
    }
    return out;
  }

  static Status BarrierAll(comm::testing::TestTier& tier) {
    std::vector<std::function<Status()>> fns;
    for (comm::Postoffice* po : tier.all()) fns.push_back([po] { return po->Barrier("all"); });
    for (const Status& s : comm::testing::RunConcurrently(fns)) GEOMX_RETURN_IF_ERROR(s);
    return Status::Ok();
  }

  std::unique_ptr<comm::testing::Transport> transport_;
  SyncJob job_;
  const comm::LinkPlan links_plan_;
  std::vector<uint64_t> keys_;
  std::vector<uint64_t> sizes_;
  std::unique_ptr<SyncMode> mode_;
  comm::KeyLayout global_layout_;
  std::unique_ptr<comm::testing::TestTier> global_;
  std::vector<std::unique_ptr<comm::testing::TestTier>> dcs_;
  std::unique_ptr<ServerPolicy> global_policy_;
  std::unique_ptr<comm::KvServer> global_server_;
  std::unique_ptr<comm::KvWorker> master_;
  std::vector<std::unique_ptr<comm::KvWorker>> uppers_;
  std::vector<std::unique_ptr<comm::KvLink>> upper_links_;
  std::vector<std::unique_ptr<ServerPolicy>> local_policies_;
  std::vector<std::unique_ptr<comm::KvServer>> local_servers_;
  std::vector<std::unique_ptr<comm::KvWorker>> kvs_;
  std::vector<std::unique_ptr<comm::KvLink>> links_;
  std::vector<int> dropped_;
};

}  // namespace geomx::sync::testing
