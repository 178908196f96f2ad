// The global server's job gate (algorithms/cluster/job_gate.h) on a real tier over loopback vans: a local server's
// "get-job" waits for the master worker's "set-job" and then gets the same job; data before the job waits and is
// served once the job is installed; the job is installed once; a repeated identical job is accepted, a different
// one refused; garbage is refused.
#include "algorithms/cluster/job_gate.h"

#include <atomic>
#include <future>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "comm/codec.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "tests/comm/ps_test_util.h"

namespace geomx::cluster {
namespace {

ps::JobDescription Job(float lr) {
  ps::JobDescription job;
  job.schema = ps::KeySchema({{.key = 0, .name = "w", .elems = 4}});
  job.plan.iterations_per_epoch = 7;
  job.optimizer.name = "sgd";
  job.optimizer.lr = lr;
  return job;
}

TEST(JobGateTest, QueriesAndDataWaitForTheJob) {
  auto transport = comm::testing::MakeTransport("loopback");
  comm::testing::TestTier tier(*transport, comm::testing::MakeSpec(*transport, "global", 1, 2));
  comm::StoreSink sink;
  std::unique_ptr<comm::SyncAggregator> agg;
  std::atomic<int> installs{0};
  JobGate gate([&](const ps::JobDescription& job) -> Result<comm::ServerHandler*> {
    ++installs;
    GEOMX_ASSIGN_OR_RETURN(comm::KeyLayout layout, job.schema.Layout(1, 1 << 20));
    GEOMX_ASSIGN_OR_RETURN(agg, comm::SyncAggregator::Create(layout, {.expected_senders = 1}, &sink));
    return static_cast<comm::ServerHandler*>(agg.get());
  });
  comm::KvServer server(&tier.server(0), 0, &gate);
  const comm::KeyLayout layout = Job(0.1f).schema.Layout(1, 1 << 20).value();
  comm::KvWorker local(&tier.worker(0), 0, layout);
  comm::KvWorker master(&tier.worker(1), 0, layout);
  ASSERT_TRUE(tier.Start().ok());

  // Data before the job (a local server that learnt the job from another global server first, seen in
  // P3Test.SameWeightsAsFsaWithWorkerOptimizer): it waits, and is served once the job is installed.
  std::vector<float> v(4, 1.0f), out(4), early_out(4, -1.0f);
  std::vector<float> early_in(4, 3.0f);
  const uint64_t keys[] = {0};
  const float* in[] = {v.data()};
  float* outs[] = {out.data()};
  const float* early_ins[] = {early_in.data()};
  float* early_outs[] = {early_out.data()};
  const int early = local.PushPull(keys, early_ins, early_outs, 0);

  // A local server asks first; the answer comes once the master has sent the job.
  auto query = std::async(std::launch::async, [&] {
    return local.QueryControl(0, comm::EncodeFields({{"command", ps::kGetJobCommand}}));
  });
  EXPECT_EQ(query.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  ASSERT_TRUE(master.SendControl(ps::EncodeJob(Job(0.1f))).ok());
  Result<std::string> body = query.get();
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  Result<ps::JobDescription> got = ps::DecodeJob(*body);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->plan.iterations_per_epoch, 7);
  EXPECT_FLOAT_EQ(got->optimizer.lr, 0.1f);
  EXPECT_EQ(gate.job()->schema.Encode(), Job(0.1f).schema.Encode());

  // The held push was served by the job's handler: round 0 is the mean of that one push.
  ASSERT_TRUE(local.Wait(early).ok());
  EXPECT_EQ(early_out, early_in);
  // Once installed, data flows to the job's handler directly.
  ASSERT_TRUE(master.Wait(master.Push(keys, in, comm::kInitRound)).ok());
  ASSERT_TRUE(local.Wait(local.PushPull(keys, in, outs, 1)).ok());
  EXPECT_EQ(out, v);  // the mean of one push

  // The same job again is fine (a retried send); another is not; garbage is not; installed once.
  EXPECT_TRUE(master.SendControl(ps::EncodeJob(Job(0.1f))).ok());
  EXPECT_EQ(master.SendControl(ps::EncodeJob(Job(0.2f))).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(master.SendControl(comm::EncodeFields({{"command", ps::kSetJobCommand}, {"keys", "x"}})).ok());
  EXPECT_FALSE(master.SendControl("not msgpack").ok());
  EXPECT_EQ(installs.load(), 1);
  ASSERT_TRUE(tier.Finalize().ok());
}

TEST(JobGateTest, AJobThatCannotBeInstalledIsRefusedWithTheReason) {
  auto transport = comm::testing::MakeTransport("loopback");
  comm::testing::TestTier tier(*transport, comm::testing::MakeSpec(*transport, "global", 1, 1));
  JobGate gate([](const ps::JobDescription&) -> Result<comm::ServerHandler*> {
    return Status::InvalidArgument("sync.mode: nothing to serve");
  });
  comm::KvServer server(&tier.server(0), 0, &gate);
  comm::KvWorker master(&tier.worker(0), 0, comm::KeyLayout());
  ASSERT_TRUE(tier.Start().ok());
  Status s = master.SendControl(ps::EncodeJob(Job(0.1f)));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nothing to serve"), std::string::npos) << s.ToString();
  EXPECT_FALSE(gate.job().has_value());
  ASSERT_TRUE(tier.Finalize().ok());
}

}  // namespace
}  // namespace geomx::cluster
