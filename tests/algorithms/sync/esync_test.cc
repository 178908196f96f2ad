// ESync (algorithms/sync/esync.h) without a cluster: the rule, the state server's bookkeeping, and its protocol
// over loopback vans with workers as threads.
#include "algorithms/sync/esync.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/loopback_van.h"

namespace geomx::sync {
namespace {

TEST(EsyncRuleTest, FastWorkersFillTheSlowestWorkersStep) {
  EXPECT_EQ(EsyncLocalSteps(std::vector<double>{0.1, 0.4, 0.1, 0.4}, 16), (std::vector<int>{4, 1, 4, 1}));
  EXPECT_EQ(EsyncLocalSteps(std::vector<double>{0.3, 0.1, 0.2}, 16), (std::vector<int>{1, 3, 1}));
  EXPECT_EQ(EsyncLocalSteps(std::vector<double>{0.01, 1.0}, 16), (std::vector<int>{16, 1}));  // clamped
  EXPECT_EQ(EsyncLocalSteps(std::vector<double>{0.01, 1.0}, 1), (std::vector<int>{1, 1}));
  EXPECT_EQ(EsyncLocalSteps(std::vector<double>{0.0, 0.0}, 16), (std::vector<int>{1, 1}));  // not measured yet
  EXPECT_EQ(EsyncLocalSteps(std::vector<double>{0.0, 0.5, 0.1}, 16), (std::vector<int>{1, 1, 5}));
}

TEST(EsyncPlannerTest, AnswersARoundWhenEveryWorkerAsked) {
  EsyncPlanner p(3, 8);
  auto a = p.Ask(0, 0, 0.1);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
  EXPECT_EQ(p.Ask(0, 0, 0.1).status().code(), StatusCode::kInvalidArgument);  // twice in one round
  EXPECT_EQ(p.Ask(1, 1, 0.1).status().code(), StatusCode::kInvalidArgument);  // not the open round
  EXPECT_EQ(p.Ask(3, 0, 0.1).status().code(), StatusCode::kInvalidArgument);  // not a worker
  EXPECT_EQ(p.Ask(1, 0, -1.0).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(p.Ask(1, 0, 0.4).ok());
  auto last = p.Ask(2, 0, 0.2);
  ASSERT_TRUE(last.ok());
  ASSERT_TRUE(last->has_value());
  EXPECT_EQ(**last, (std::vector<int>{4, 1, 2}));
  EXPECT_EQ(p.round(), 1);
  EXPECT_FALSE(p.all_finished());
  for (int w = 0; w < 3; ++w) EXPECT_TRUE(p.Finish(w).ok());
  EXPECT_TRUE(p.all_finished());
  EXPECT_EQ(p.Finish(5).code(), StatusCode::kInvalidArgument);
}

// The state server over loopback vans: three workers with fixed step times ask for three rounds.
TEST(EsyncStateServerTest, AnswersEveryWorkerByTheRule) {
  comm::LoopbackNetwork net;
  StateServerArgs args;
  args.make_van = [&net] { return std::make_unique<comm::LoopbackVan>(&net); };
  args.endpoint = "loop://state-server";
  args.workers = 3;
  args.timeout_ms = 30000;
  Status server;
  std::thread st([&] { server = RunEsyncStateServer(args, /*max_local_steps=*/8); });
  const std::vector<double> seconds = {0.05, 0.2, 0.1};
  std::vector<std::vector<int>> got(3);
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w) {
    workers.emplace_back([&, w] {
      StateServerAccess access;
      access.make_van = [&net] { return std::make_unique<comm::LoopbackVan>(&net); };
      access.endpoint = args.endpoint;
      access.bind = "loop://w" + std::to_string(w) + "@state-server";
      access.timeout_ms = 30000;
      auto client = EsyncStateClient::Connect(access, w);
      ASSERT_TRUE(client.ok()) << client.status().ToString();
      for (int64_t round = 0; round < 3; ++round) {
        auto steps = (*client)->Ask(round, round == 0 ? 0.0 : seconds[w]);
        ASSERT_TRUE(steps.ok()) << steps.status().ToString();
        got[w].push_back(*steps);
      }
      auto wrong = (*client)->Ask(7, 0.1);  // a round that is not open: refused with the reason
      EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(wrong.status().message().find("round 7"), std::string::npos) << wrong.status().message();
      EXPECT_TRUE((*client)->Finish(3).ok());
    });
  }
  for (auto& t : workers) t.join();
  st.join();
  EXPECT_TRUE(server.ok()) << server.ToString();
  EXPECT_EQ(got[0], (std::vector<int>{1, 4, 4}));
  EXPECT_EQ(got[1], (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(got[2], (std::vector<int>{1, 2, 2}));
}

}  // namespace
}  // namespace geomx::sync
