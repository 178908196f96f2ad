#include "comm/loopback_van.h"

#include <thread>

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

Message Msg(int64_t ts, std::string body = "") {
  Message m;
  m.meta.command = Command::kControl;
  m.meta.timestamp = ts;
  m.meta.body = std::move(body);
  return m;
}

TEST(LoopbackVanTest, DeliversInOrderAndCopiesMeta) {
  LoopbackNetwork net;
  LoopbackVan a(&net), b(&net);
  ASSERT_TRUE(a.Bind("loop://a").ok());
  ASSERT_TRUE(b.Bind("loop://b").ok());
  ASSERT_TRUE(a.Connect(2, "loop://b", LinkClass::kLan, "").ok());
  Message m = Msg(1, "hello");
  m.data.push_back(Bytes::Copy("frame"));
  ASSERT_TRUE(a.Send(2, m).ok());
  m.meta.body = "changed after send";
  for (int i = 2; i <= 50; ++i) ASSERT_TRUE(a.Send(2, Msg(i)).ok());
  Message got;
  ASSERT_TRUE(b.Recv(&got, 1000).ok());
  EXPECT_EQ(got.meta.body, "hello");
  EXPECT_EQ(got.data[0].view(), "frame");
  for (int i = 2; i <= 50; ++i) {
    ASSERT_TRUE(b.Recv(&got, 1000).ok());
    EXPECT_EQ(got.meta.timestamp, i);
  }
  EXPECT_EQ(b.Recv(&got, 10).code(), StatusCode::kDeadlineExceeded);
}

TEST(LoopbackVanTest, ConnectBeforeBindQueues) {
  LoopbackNetwork net;
  LoopbackVan a(&net), b(&net);
  ASSERT_TRUE(a.Bind("loop://a").ok());
  ASSERT_TRUE(a.Connect(2, "loop://later", LinkClass::kWan, "").ok());
  ASSERT_TRUE(a.Send(2, Msg(1)).ok());
  ASSERT_TRUE(b.Bind("loop://later").ok());
  Message got;
  ASSERT_TRUE(b.Recv(&got, 1000).ok());
  EXPECT_EQ(got.meta.timestamp, 1);
  LoopbackVan c(&net);
  EXPECT_EQ(c.Bind("loop://later").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(c.Bind("tcp://x").status().code(), StatusCode::kInvalidArgument);
}

TEST(LoopbackVanTest, DropDelayDuplicateAndIsolation) {
  LoopbackNetwork net({.drop_rate = 0.5, .seed = 3});
  LoopbackVan a(&net), b(&net);
  ASSERT_TRUE(a.Bind("loop://a").ok());
  ASSERT_TRUE(b.Bind("loop://b").ok());
  ASSERT_TRUE(a.Connect(2, "loop://b", LinkClass::kLan, "").ok());
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(a.Send(2, Msg(i)).ok());
  int received = 0;
  Message got;
  while (b.Recv(&got, 20).ok()) ++received;
  EXPECT_GT(received, 60);
  EXPECT_LT(received, 140);

  net.SetOptions({.duplicate_rate = 1.0});
  ASSERT_TRUE(a.Send(2, Msg(7)).ok());
  ASSERT_TRUE(b.Recv(&got, 100).ok());
  ASSERT_TRUE(b.Recv(&got, 100).ok());
  EXPECT_EQ(got.meta.timestamp, 7);

  net.SetOptions({.max_delay_ms = 30});
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(a.Send(2, Msg(i)).ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(b.Recv(&got, 1000).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

  net.SetOptions({});
  net.IsolateForTesting("loop://b", true);
  ASSERT_TRUE(a.Send(2, Msg(1)).ok());
  EXPECT_EQ(b.Recv(&got, 20).code(), StatusCode::kDeadlineExceeded);
}

TEST(LoopbackVanTest, InjectedGarbageAndStop) {
  LoopbackNetwork net;
  LoopbackVan b(&net);
  ASSERT_TRUE(b.Bind("loop://b").ok());
  Message wrong = Msg(1);
  wrong.meta.version = 99;
  net.InjectForTesting("loop://b", wrong);
  net.InjectForTesting("loop://b", Msg(2), Status::DataLoss("truncated frame"));
  Message unknown = Msg(3);
  unknown.meta.command = static_cast<Command>(200);
  net.InjectForTesting("loop://b", unknown);
  Message got;
  EXPECT_EQ(b.Recv(&got, 100).code(), StatusCode::kDataLoss);
  EXPECT_EQ(b.Recv(&got, 100).code(), StatusCode::kDataLoss);
  EXPECT_EQ(b.Recv(&got, 100).code(), StatusCode::kDataLoss);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    b.Stop();
  });
  EXPECT_EQ(b.Recv(&got, -1).code(), StatusCode::kCancelled);
  stopper.join();
  EXPECT_EQ(b.Send(1, Msg(1)).status().code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace geomx::comm
