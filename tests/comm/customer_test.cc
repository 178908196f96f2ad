#include "comm/customer.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

TEST(CustomerTest, CompletesWhenEveryPeerAnswered) {
  Customer c("tier t", 2000);
  const int64_t ts = c.NewRequest({{1, "server a"}, {2, "server b"}}, "push");
  EXPECT_TRUE(c.AddResponse(ts, 1, Status::Ok()));
  EXPECT_FALSE(c.AddResponse(ts, 1, Status::Ok())) << "duplicate answer";
  EXPECT_FALSE(c.AddResponse(ts, 3, Status::Ok())) << "unexpected peer";
  EXPECT_EQ(c.num_pending(), 1u);
  EXPECT_TRUE(c.AddResponse(ts, 2, Status::Ok()));
  EXPECT_TRUE(c.Wait(ts).ok());
  EXPECT_EQ(c.Wait(ts).code(), StatusCode::kNotFound);
  EXPECT_EQ(c.num_pending(), 0u);
  EXPECT_EQ(c.num_results(), 0u);
}

TEST(CustomerTest, TimeoutNamesMissingPeersKeysAndTimestamp) {
  Customer c("tier dc-a", 100);
  c.NewRequest({}, "warm-up");  // ts 0
  const int64_t ts = c.NewRequest({{1, "server dc-a/server0 for key 3"}, {2, "server dc-a/server1 for key 7"}},
                                  "pushpull round 4");
  c.AddResponse(ts, 1, Status::Ok());
  const Status s = c.Wait(ts);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("no response from server dc-a/server1 for key 7"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("ts=1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("after 0.1 s"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("server0"), std::string::npos) << s.message();
  // A late answer is dropped and never touches caller memory.
  bool applied = false;
  EXPECT_FALSE(c.AddResponse(ts, 2, Status::Ok(), [&](RequestContext*) {
    applied = true;
    return Status::Ok();
  }));
  EXPECT_FALSE(applied);
}

TEST(CustomerTest, PeerErrorAndCallbacks) {
  Customer c("t", 2000);
  Status got;
  int calls = 0;
  const int64_t ts = c.NewRequest({{1, "a"}, {2, "b"}}, "pull", [&](Status s) {
    got = s;
    ++calls;
  });
  c.AddResponse(ts, 1, Status::InvalidArgument("bad key"));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got.code(), StatusCode::kInvalidArgument);
  c.AddResponse(ts, 2, Status::Ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(c.Wait(ts).code(), StatusCode::kNotFound);
}

TEST(CustomerTest, ExpireOverdueRunsCallbacks) {
  Customer c("t", 30);
  std::atomic<int> timeouts{0};
  for (int i = 0; i < 10; ++i) {
    c.NewRequest({{1, "a"}}, "push", [&](Status s) { timeouts += s.code() == StatusCode::kDeadlineExceeded; });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.ExpireOverdue();
  EXPECT_EQ(timeouts.load(), 10);
  EXPECT_EQ(c.num_pending(), 0u);
}

TEST(CustomerTest, FailWakesWaitersPromptlyAndFailsLaterRequests) {
  Customer c("t", 60000);
  const int64_t ts = c.NewRequest({{1, "a"}}, "push");
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    c.Fail(Status::Unavailable("node dc-a/worker1 declared dead"));
  });
  const auto start = std::chrono::steady_clock::now();
  const Status s = c.Wait(ts);
  t.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(c.Wait(c.NewRequest({{1, "a"}}, "push")).code(), StatusCode::kUnavailable);
}

// Wait polls before it sleeps (spin_us). Another request's completion during the poll must not end the wait:
// the waiter gets its own request's result, which comes later.
TEST(CustomerTest, APollingWaitReturnsItsOwnResultNotAnotherCompletion) {
  Customer c("t", 60000, /*spin_us=*/2'000'000);
  const int64_t a = c.NewRequest({{1, "server a"}}, "pushpull a");
  const int64_t b = c.NewRequest({{1, "server a"}}, "pushpull b");
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    c.AddResponse(b, 1, Status::Ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    c.AddResponse(a, 1, Status::FailedPrecondition("a refused"));
  });
  const Status s = c.Wait(a);
  t.join();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("a refused"), std::string::npos) << s.ToString();
  EXPECT_TRUE(c.Wait(b).ok());
}

// The poll ends at the request's deadline, however long spin_us is (over half an hour here: a poll that ignored the
// deadline would hang this test until ctest's timeout).
TEST(CustomerTest, APollingWaitStillTimesOut) {
  Customer c("tier t", 50, /*spin_us=*/2'000'000'000);
  const int64_t ts = c.NewRequest({{1, "server a for key 2"}}, "push round 3");
  const Status s = c.Wait(ts);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("server a for key 2"), std::string::npos) << s.ToString();
}

TEST(CustomerTest, MemoryStaysBounded) {
  Customer c("t", 2000);
  for (int i = 0; i < 10000; ++i) {
    const int64_t ts = c.NewRequest({{1, "a"}}, "push", [](Status) {});
    c.AddResponse(ts, 1, Status::Ok());
  }
  EXPECT_EQ(c.num_pending(), 0u);
  EXPECT_EQ(c.num_results(), 0u);
}

}  // namespace
}  // namespace geomx::comm
