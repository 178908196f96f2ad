// Customer: request/response tracking for one application (one KvWorker, or the scheduler-facing calls of a
// Postoffice). Replaces ps-lite's ever-growing tracker vector: a request lives in a map from its timestamp until it
// completes, and its result until Wait() collects it.
//
//   int64_t ts = customer.NewRequest({{server_id, "server dc-a/server1 for key 7"}}, "push");
//   ... receive thread: customer.AddResponse(ts, server_id, status, [&](RequestContext*) { copy values out });
//   Status s = customer.Wait(ts);   // OK, the first peer error, kDeadlineExceeded naming who did not answer,
//                                   // or the Postoffice's health error (via Fail)
//
// Thread-safe. Completion callbacks run on the thread that completed the request (the receive thread for a
// response, the ticker for a timeout, the caller of Fail) and never under the Customer's lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::comm {

// Per-request state owned by the requester (e.g. where a KvWorker writes the values of a response); lives as long
// as the request is pending.
class RequestContext {
 public:
  virtual ~RequestContext() = default;
};

class Customer {
 public:
  using Clock = std::chrono::steady_clock;
  using Callback = std::function<void(Status)>;

  // One peer that owes a response, and what it owes (for error messages): e.g.
  // {3, "server dc-a/server1 for key 7"}.
  struct Expected {
    int node_id = -1;
    std::string what;
  };

  // `name` prefixes error messages (e.g. "tier dc-a"). request_timeout_ms <= 0 disables timeouts. spin_us: see
  // Wait (0: sleep at once).
  static constexpr int kDefaultSpinUs = 200;
  Customer(std::string name, int request_timeout_ms, int spin_us = kDefaultSpinUs);
  ~Customer();  // pending callbacks are called with kCancelled

  // Starts a request that completes when every peer in `expected` has answered (immediately if empty).
  // `done`, when given, is called exactly once with the result and the result is not kept for Wait().
  // `context` (optional) is handed to AddResponse's `apply` and destroyed when the request completes.
  int64_t NewRequest(std::vector<Expected> expected, std::string description, Callback done = nullptr,
                     std::shared_ptr<RequestContext> context = nullptr);
  // A request that is already complete with `status` (argument errors detected before anything was sent).
  int64_t NewFailedRequest(Status status, Callback done = nullptr);

  // Records the response of `node_id` to `ts`. `apply` (may be null) runs under the Customer's lock, only when the
  // response is the first one from that peer for a live request: a late response (after a timeout) or a duplicate
  // never touches caller memory. A non-OK status completes the request with that error. Returns false when the
  // response was dropped (unknown ts, unexpected or duplicate peer).
  bool AddResponse(int64_t ts, int node_id, const Status& status,
                   const std::function<Status(RequestContext*)>& apply = nullptr);

  // Blocks until `ts` completes or its deadline passes. Collects (and forgets) the result; a second Wait on the
  // same ts, or a Wait on a request with a callback, returns kNotFound.
  // Before it sleeps, Wait polls for up to spin_us (constructor) microseconds, yielding the CPU between looks:
  // an answer that arrives meanwhile costs no wake-up of a sleeping thread (tens of microseconds on a VM, as much
  // as a whole 4 KiB round trip over loopback; docs/benchmarks.md "geomx bench comm").
  Status Wait(int64_t ts);

  // Completes every pending request with `status` (e.g. a dead peer). Later requests complete with it at once.
  void Fail(const Status& status);
  // Completes requests whose deadline has passed with kDeadlineExceeded (called periodically by the Postoffice's
  // ticker so callback-style requests time out too).
  void ExpireOverdue();

  // Number of live (not yet complete) requests; for tests of bounded memory.
  size_t num_pending() const;
  // Number of completed results waiting for Wait().
  size_t num_results() const;

 private:
  struct Request {
    std::vector<Expected> expected;
    std::vector<bool> answered;
    int remaining = 0;
    std::string description;
    Callback done;
    std::shared_ptr<RequestContext> context;
    Clock::time_point deadline;
  };
  // Completes `it` with `status`: erases it, stores the result or returns the callback to run. mu_ held.
  Callback FinishLocked(std::map<int64_t, Request>::iterator it, Status status, Status* result);
  Status TimeoutStatus(int64_t ts, const Request& r) const;

  // Polls `finished_` (yielding the CPU between looks) until it differs from `seen` or `until`.
  void SpinUntilChanged(uint64_t seen, Clock::time_point until) const;

  const std::string name_;
  const int request_timeout_ms_;
  const int spin_us_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_ts_ = 0;                        // GUARDED_BY(mu_)
  std::map<int64_t, Request> pending_;         // GUARDED_BY(mu_)
  std::map<int64_t, Status> results_;          // GUARDED_BY(mu_): completed, not yet waited for (bounded)
  Status failed_;                              // GUARDED_BY(mu_): set by Fail()
  std::atomic<uint64_t> finished_{0};          // requests completed so far (written under mu_, read by spinners)
};

}  // namespace geomx::comm
