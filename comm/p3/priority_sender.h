// PrioritySender: the send queue of P3 (priority-based parameter propagation, docs/accelerators.md).
//
// Items (one slice of one tensor each) are queued with a priority; a dedicated sender thread hands them to their
// send function in strict priority order (higher first), FIFO among equal priorities (the heap key is
// (priority, -sequence) under a strict comparison: no `<=` comparator, no unordered ties). At most
// `max_in_flight_bytes` are in flight (handed to send, not yet released) at a time, so the queue builds up
// behind the window and an item queued later with a higher priority overtakes every lower-priority item still
// queued: pre-emption at item (slice) granularity. An item already handed to send is never interrupted.
// One exception to the window: an item of a higher priority than every item in flight goes at once. Items are
// released when their *answer* arrives, and an answer needs every worker's push of that slice; two workers whose
// windows filled with different slices (one queued the last layers first because its backward pass produced them
// first, the other the first layers) would otherwise wait for each other for ever. With the exception the
// highest-priority slice no worker has finished is always sent by every worker that has it, so the job moves on;
// each exception raises the highest priority in flight, so they are bounded by the number of priorities.
//
//   PrioritySender sender({.max_in_flight_bytes = 8 * slice_bytes});
//   sender.Enqueue(/*priority=*/-layer, bytes, [&](PrioritySender::Release release) {
//     kv.SendRaw(request, [release](Status s, std::vector<Bytes> v) { ...; release(); });
//   });
//
// Release: each send function receives a Release and must make it be called exactly once (from any thread, also
// from inside send itself) when the item stops occupying the window: its answer arrived or it failed. Further
// calls are ignored.
//
// Threads: all methods are thread-safe. Send functions run on the sender thread, one at a time, without any
// lock held; they should only start the request (the network answers asynchronously).
// Lifetime: Stop() (or the destructor) drops the queued items (their send functions are destroyed, never
// called) and stops the thread; the destructor then waits until every item handed to send was released, so a
// Release never outlives the sender. Callers must make sure releases come (KvWorker: answer, error or timeout).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <set>
#include <thread>
#include <vector>

namespace geomx::comm {

struct PrioritySenderOptions {
  // The window: the sender hands out the next item only while the bytes in flight plus the item's bytes fit,
  // or when nothing is in flight (an item larger than the window goes alone). 0: unbounded.
  uint64_t max_in_flight_bytes = 0;
};

class PrioritySender {
 public:
  using Release = std::function<void()>;
  using SendFn = std::function<void(Release release)>;

  explicit PrioritySender(PrioritySenderOptions options = {});
  ~PrioritySender();

  PrioritySender(const PrioritySender&) = delete;
  PrioritySender& operator=(const PrioritySender&) = delete;

  // Queues `send` with `priority` (higher = sooner) and `bytes` (its share of the window). False after Stop().
  bool Enqueue(int64_t priority, uint64_t bytes, SendFn send);

  // Drops the queued items and stops the sender thread (items in flight stay in flight). Idempotent.
  void Stop();

  size_t queued() const;
  size_t in_flight() const;
  uint64_t in_flight_bytes() const;

 private:
  struct Item {
    int64_t priority = 0;
    uint64_t seq = 0;
    uint64_t bytes = 0;
    SendFn send;
  };
  // Strict weak order for std::priority_queue (a max-heap): a ranks below b when a has the lower priority or,
  // at equal priority, was queued later.
  struct Lower {
    bool operator()(const Item& a, const Item& b) const {
      if (a.priority != b.priority) return a.priority < b.priority;
      return a.seq > b.seq;
    }
  };

  void Loop();
  bool CanSendLocked() const;
  void OnRelease(uint64_t bytes, int64_t priority);

  const PrioritySenderOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Item, std::vector<Item>, Lower> queue_;
  uint64_t next_seq_ = 0;
  size_t in_flight_ = 0;
  uint64_t in_flight_bytes_ = 0;
  std::multiset<int64_t> in_flight_priorities_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace geomx::comm
