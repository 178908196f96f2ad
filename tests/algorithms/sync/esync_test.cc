// ESync (algorithms/sync/esync.h) without a cluster: the rule, the state server's bookkeeping, and its protocol
// over loopback vans with workers as threads.
#include "algorithms/sync/esync.h"

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/codec.h"
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

// The state server's van as with security on (comm/zmq_van.h with CURVE): it authenticates, and Message::peer is
// the sender's member. Here the member is told by the endpoint the sender answers on (its own bind), as the key
// of a CURVE connection tells it.
class AuthenticatingVan final : public comm::Van {
 public:
  AuthenticatingVan(comm::LoopbackNetwork* net, std::map<std::string, std::string> members)
      : inner_(net), members_(std::move(members)) {}
  Result<std::string> Bind(const std::string& address) override { return inner_.Bind(address); }
  Status Connect(int node, const std::string& endpoint, comm::LinkClass link, const std::string& peer) override {
    return inner_.Connect(node, endpoint, link, peer);
  }
  Result<size_t> Send(int node, const comm::Message& msg) override { return inner_.Send(node, msg); }
  Status Recv(comm::Message* msg, int timeout_ms) override {
    GEOMX_RETURN_IF_ERROR(inner_.Recv(msg, timeout_ms));
    std::map<std::string, std::string> f;
    msg->peer = comm::DecodeFields(msg->meta.body, &f).ok() && members_.count(f["endpoint"])
                    ? members_.at(f["endpoint"])
                    : "stranger";
    return Status::Ok();
  }
  void Stop() override { inner_.Stop(); }
  bool authenticates() const override { return true; }

 private:
  comm::LoopbackVan inner_;
  const std::map<std::string, std::string> members_;
};

// Security (issue 18): a worker's rank is bound to its authenticated member. Another member asking for worker 0
// gets no answer and changes nothing; before, its request took worker 0's place in the round and the real worker
// 0 was refused ("twice in one round").
TEST(EsyncStateServerTest, ARequestForAnotherWorkersRankIsDropped) {
  comm::LoopbackNetwork net;
  StateServerArgs args;
  std::map<std::string, std::string> members;
  for (int w = 0; w < 2; ++w) {
    members["loop://w" + std::to_string(w) + "@state-server"] = "dc-a/worker" + std::to_string(w);
  }
  members["loop://evil@state-server"] = "dc-b/worker0";  // a member of the job, but not worker 0
  args.make_van = [&net, members] { return std::make_unique<AuthenticatingVan>(&net, members); };
  args.endpoint = "loop://state-server";
  args.workers = 2;
  args.timeout_ms = 30000;
  args.worker_names = {"dc-a/worker0", "dc-a/worker1"};
  Status server;
  std::thread st([&] { server = RunEsyncStateServer(args, /*max_local_steps=*/8); });
  auto access = [&](const std::string& bind, int timeout_ms) {
    StateServerAccess a;
    a.make_van = [&net] { return std::make_unique<comm::LoopbackVan>(&net); };
    a.endpoint = args.endpoint;
    a.bind = bind;
    a.timeout_ms = timeout_ms;
    return a;
  };
  {
    auto impostor = EsyncStateClient::Connect(access("loop://evil@state-server", 300), 0);
    ASSERT_TRUE(impostor.ok()) << impostor.status().ToString();
    EXPECT_FALSE((*impostor)->Ask(0, 0.0).ok());  // no answer
  }
  std::vector<std::thread> workers;
  std::vector<Status> results(2);
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      auto client = EsyncStateClient::Connect(access("loop://w" + std::to_string(w) + "@state-server", 30000), w);
      if (!client.ok()) {
        results[w] = client.status();
        return;
      }
      Result<int> steps = (*client)->Ask(0, 0.0);
      results[w] = steps.ok() ? (*client)->Finish(1) : steps.status();
    });
  }
  for (auto& t : workers) t.join();
  st.join();
  for (int w = 0; w < 2; ++w) EXPECT_TRUE(results[w].ok()) << "worker " << w << ": " << results[w].ToString();
  EXPECT_TRUE(server.ok()) << server.ToString();
}

}  // namespace
}  // namespace geomx::sync
