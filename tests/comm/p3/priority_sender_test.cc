// PrioritySender: strict priority order, FIFO within a priority, the in-flight window, pre-emption of queued
// items by a later higher-priority one, and shutdown with items queued and in flight. The send functions record
// what was sent and keep the Release; the test decides when an item "answers". No wall-clock thresholds: waits
// are on conditions (with a generous guard so a broken sender fails instead of hanging).
#include "comm/p3/priority_sender.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <thread>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

// Records the order in which the sender hands items out and holds their releases.
class Recorder {
 public:
  PrioritySender::SendFn Item(std::string name) {
    return [this, name](PrioritySender::Release release) {
      std::unique_lock<std::mutex> lock(mu_);
      sent_.push_back(name);
      releases_.push_back(release);
      cv_.notify_all();
      lock.unlock();
      if (closed_) release();
    };
  }
  // Waits until `n` items were sent; false if that does not happen (a broken sender).
  bool WaitSent(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return sent_.size() >= n; });
  }
  void Release(size_t i) {
    PrioritySender::Release r;
    {
      std::lock_guard<std::mutex> lock(mu_);
      r = releases_.at(i);
    }
    r();
  }
  // Releases everything sent so far and from now on (repeated releases are ignored), so the sender can be
  // destroyed even when an assertion failed half-way.
  void Close() {
    closed_ = true;
    std::vector<PrioritySender::Release> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all = releases_;
    }
    for (auto& r : all) r();
  }
  std::vector<std::string> sent() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> sent_;
  std::vector<PrioritySender::Release> releases_;
  std::atomic<bool> closed_{false};
};

// Declared after the sender: closes the recorder before the sender's destructor waits for in-flight items.
struct CloseOnExit {
  Recorder& rec;
  ~CloseOnExit() { rec.Close(); }
};

TEST(PrioritySenderTest, HigherPriorityFirstAndFifoWithinAPriority) {
  Recorder rec;
  PrioritySender sender({.max_in_flight_bytes = 100});
  CloseOnExit close{rec};
  // "blocker" fills the window (with the highest priority: nothing may pass it), so everything below queues and
  // is ordered by the heap alone.
  ASSERT_TRUE(sender.Enqueue(9, 100, rec.Item("blocker")));
  ASSERT_TRUE(rec.WaitSent(1));
  ASSERT_TRUE(sender.Enqueue(-3, 100, rec.Item("layer3.a")));
  ASSERT_TRUE(sender.Enqueue(-1, 100, rec.Item("layer1.a")));
  ASSERT_TRUE(sender.Enqueue(-3, 100, rec.Item("layer3.b")));
  ASSERT_TRUE(sender.Enqueue(0, 100, rec.Item("layer0.a")));
  ASSERT_TRUE(sender.Enqueue(-1, 100, rec.Item("layer1.b")));
  ASSERT_TRUE(sender.Enqueue(0, 100, rec.Item("layer0.b")));
  ASSERT_TRUE(sender.Enqueue(-3, 100, rec.Item("layer3.c")));
  EXPECT_EQ(sender.queued(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    rec.Release(i);
    ASSERT_TRUE(rec.WaitSent(i + 2));
  }
  EXPECT_EQ(rec.sent(), (std::vector<std::string>{"blocker", "layer0.a", "layer0.b", "layer1.a", "layer1.b",
                                                  "layer3.a", "layer3.b", "layer3.c"}));
}

// Many equal priorities: FIFO must hold beyond what a small heap would keep by accident.
TEST(PrioritySenderTest, TiesStayFifoAtScale) {
  Recorder rec;
  PrioritySender sender({.max_in_flight_bytes = 1});
  CloseOnExit close{rec};
  ASSERT_TRUE(sender.Enqueue(100, 1, rec.Item("blocker")));
  ASSERT_TRUE(rec.WaitSent(1));
  std::vector<std::string> expected{"blocker"};
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(sender.Enqueue(i % 2 == 0 ? 5 : 7, 1, rec.Item(std::to_string(i))));
  }
  for (int i = 1; i < 200; i += 2) expected.push_back(std::to_string(i));
  for (int i = 0; i < 200; i += 2) expected.push_back(std::to_string(i));
  for (size_t i = 0; i < 200; ++i) {
    rec.Release(i);
    ASSERT_TRUE(rec.WaitSent(i + 2));
  }
  EXPECT_EQ(rec.sent(), expected);
}

// P3's point: the slices of the last layers are queued first (backprop order), the window is full, and the first
// layer's slices queued afterwards overtake every queued last-layer slice; the slice on the wire is not
// interrupted.
TEST(PrioritySenderTest, LaterHigherPrioritySlicesPreemptQueuedOnes) {
  Recorder rec;
  PrioritySender sender({.max_in_flight_bytes = 2 * 40});
  CloseOnExit close{rec};
  for (int s = 0; s < 4; ++s) ASSERT_TRUE(sender.Enqueue(-2, 40, rec.Item("fc2." + std::to_string(s))));
  ASSERT_TRUE(rec.WaitSent(2));  // the window holds two 40-byte slices
  EXPECT_EQ(sender.queued(), 2u);
  EXPECT_EQ(sender.in_flight(), 2u);
  EXPECT_EQ(sender.in_flight_bytes(), 80u);
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(sender.Enqueue(0, 40, rec.Item("conv1." + std::to_string(s))));
  ASSERT_TRUE(sender.Enqueue(-1, 40, rec.Item("fc1.0")));
  // conv1.0 outranks everything in flight: it goes at once, past the full window; conv1.1 (not higher than
  // conv1.0) and fc1.0 wait for room.
  ASSERT_TRUE(rec.WaitSent(3));
  EXPECT_EQ(sender.in_flight(), 3u);
  EXPECT_EQ(sender.queued(), 4u);
  rec.Release(0);
  rec.Release(1);
  rec.Release(2);
  ASSERT_TRUE(rec.WaitSent(5));
  for (size_t i = 3; i < 7; ++i) {
    rec.Release(i);
    ASSERT_TRUE(rec.WaitSent(std::min<size_t>(i + 3, 7)));
  }
  EXPECT_EQ(rec.sent(),
            (std::vector<std::string>{"fc2.0", "fc2.1", "conv1.0", "conv1.1", "fc1.0", "fc2.2", "fc2.3"}));
}

// Two workers' senders and a server that answers a slice only once both workers sent it (a synchronous round).
// Worker A queues its slices while its backward pass produces them, last layer first; worker B queues them all at
// once after its backward pass, first layer first. With a window of two slices and no exception each would fill
// its window with slices the other has not sent and wait for ever; the exception for a higher priority than
// everything in flight lets every slice through.
TEST(PrioritySenderTest, WorkersThatQueuedInOppositeOrdersDoNotWaitForEachOther) {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::vector<PrioritySender::Release>> waiting;  // slice -> the workers' releases
  int answered = 0;
  auto slice = [&](const std::string& name) {
    return [&, name](PrioritySender::Release release) {
      std::vector<PrioritySender::Release> both;
      {
        std::lock_guard<std::mutex> lock(mu);
        waiting[name].push_back(release);
        if (waiting[name].size() == 2) {
          both = waiting[name];
          ++answered;
          cv.notify_all();
        }
      }
      for (auto& r : both) r();
    };
  };
  const std::vector<std::pair<int, std::string>> layers = {{0, "conv1"}, {-1, "conv2"}, {-2, "fc1"}, {-3, "fc2"}};
  PrioritySender a({.max_in_flight_bytes = 2}), b({.max_in_flight_bytes = 2});
  auto enqueue = [&](PrioritySender& sender, int priority, const std::string& name) {
    for (int s = 0; s < 3; ++s) ASSERT_TRUE(sender.Enqueue(priority, 1, slice(name + "." + std::to_string(s))));
  };
  enqueue(a, -3, "fc2");  // A's backward produced the last layer: its window fills with fc2.0 and fc2.1
  for (int i = 0; i < 3000 && a.in_flight() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(a.in_flight(), 2u);
  for (const auto& [priority, name] : layers) enqueue(b, priority, name);  // B: conv1.0 and conv1.1 go first
  for (int i = 0; i < 3000 && b.in_flight() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int l = 2; l >= 0; --l) enqueue(a, layers[l].first, layers[l].second);  // the rest of A's backward
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return answered == 12; }))
      << answered << " of 12 slices answered";
  const bool done = answered == 12;
  lock.unlock();
  if (!done) {  // release what is stuck so the senders can be destroyed
    a.Stop();
    b.Stop();
    std::lock_guard<std::mutex> relock(mu);
    for (auto& [name, rs] : waiting) {
      for (auto& r : rs) r();
    }
  }
}

TEST(PrioritySenderTest, ReleaseTwiceCountsOnceAndInlineReleaseWorks) {
  PrioritySender sender({.max_in_flight_bytes = 10});
  std::mutex mu;
  std::condition_variable cv;
  int sent = 0;
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(sender.Enqueue(i, 10, [&](PrioritySender::Release release) {
      release();  // answered at once (an immediate argument error in KvWorker)
      release();  // ignored
      std::lock_guard<std::mutex> lock(mu);
      ++sent;
      cv.notify_all();
    }));
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return sent == 50; }));
  lock.unlock();
  EXPECT_EQ(sender.in_flight(), 0u);
  EXPECT_EQ(sender.in_flight_bytes(), 0u);
}

// Stop drops what is queued (never sent) and refuses new items; the destructor waits for the item in flight.
TEST(PrioritySenderTest, StopDropsQueuedItemsAndDestructorWaitsForInFlight) {
  Recorder rec;
  auto sender = std::make_unique<PrioritySender>(PrioritySenderOptions{.max_in_flight_bytes = 1});
  CloseOnExit close{rec};
  ASSERT_TRUE(sender->Enqueue(0, 1, rec.Item("a")));
  ASSERT_TRUE(rec.WaitSent(1));
  ASSERT_TRUE(sender->Enqueue(0, 1, rec.Item("b")));
  sender->Stop();
  EXPECT_EQ(sender->queued(), 0u);
  EXPECT_FALSE(sender->Enqueue(0, 1, rec.Item("c")));
  std::thread releaser([&] { rec.Release(0); });
  sender.reset();  // returns once "a" was released
  releaser.join();
  EXPECT_EQ(rec.sent(), (std::vector<std::string>{"a"}));
}

}  // namespace
}  // namespace geomx::comm
