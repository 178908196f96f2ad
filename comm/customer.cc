#include "comm/customer.h"

#include <algorithm>
#include <cstdio>
#include <thread>
#include <utility>

#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

// Results nobody waits for (a caller that dropped its ts) must not grow memory forever.
constexpr size_t kMaxResults = 1 << 16;

std::string Seconds(int ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", ms / 1000.0);
  return buf;
}

}  // namespace

Customer::Customer(std::string name, int request_timeout_ms, int spin_us)
    : name_(std::move(name)), request_timeout_ms_(request_timeout_ms), spin_us_(spin_us < 0 ? 0 : spin_us) {}

Customer::~Customer() { Fail(Status::Cancelled(name_ + ": shutting down")); }

int64_t Customer::NewRequest(std::vector<Expected> expected, std::string description, Callback done,
                             std::shared_ptr<RequestContext> context) {
  Callback run;
  Status result;
  int64_t ts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ts = next_ts_++;
    Request r;
    r.remaining = static_cast<int>(expected.size());
    r.answered.assign(expected.size(), false);
    r.expected = std::move(expected);
    r.description = std::move(description);
    r.done = std::move(done);
    r.context = std::move(context);
    r.deadline = request_timeout_ms_ > 0 ? Clock::now() + std::chrono::milliseconds(request_timeout_ms_)
                                         : Clock::time_point::max();
    auto it = pending_.emplace(ts, std::move(r)).first;
    if (!failed_.ok()) {
      run = FinishLocked(it, failed_, &result);
    } else if (it->second.remaining == 0) {
      run = FinishLocked(it, Status::Ok(), &result);
    }
  }
  cv_.notify_all();
  if (run) run(result);
  return ts;
}

int64_t Customer::NewFailedRequest(Status status, Callback done) {
  Callback run;
  int64_t ts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ts = next_ts_++;
    Request r;
    r.done = std::move(done);
    auto it = pending_.emplace(ts, std::move(r)).first;
    Status result;
    run = FinishLocked(it, status, &result);
  }
  cv_.notify_all();
  if (run) run(status);
  return ts;
}

Customer::Callback Customer::FinishLocked(std::map<int64_t, Request>::iterator it, Status status, Status* result) {
  Callback done = std::move(it->second.done);
  if (!done) {
    if (results_.size() >= kMaxResults) {
      GEOMX_LOG(kWarning) << name_ << ": dropping the result of ts=" << results_.begin()->first
                          << " (never waited for)";
      results_.erase(results_.begin());
    }
    results_.emplace(it->first, status);
  }
  *result = std::move(status);
  pending_.erase(it);
  finished_.fetch_add(1, std::memory_order_release);
  return done;
}

bool Customer::AddResponse(int64_t ts, int node_id, const Status& status,
                           const std::function<Status(RequestContext*)>& apply) {
  Callback run;
  Status result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(ts);
    if (it == pending_.end()) return false;
    Request& r = it->second;
    size_t slot = r.expected.size();
    for (size_t i = 0; i < r.expected.size(); ++i) {
      if (r.expected[i].node_id == node_id && !r.answered[i]) {
        slot = i;
        break;
      }
    }
    if (slot == r.expected.size()) return false;
    r.answered[slot] = true;
    --r.remaining;
    Status s = status;
    if (s.ok() && apply) s = apply(r.context.get());
    if (!s.ok()) {
      run = FinishLocked(it, std::move(s), &result);
    } else if (r.remaining == 0) {
      run = FinishLocked(it, Status::Ok(), &result);
    } else {
      return true;
    }
  }
  cv_.notify_all();
  if (run) run(result);
  return true;
}

Status Customer::TimeoutStatus(int64_t ts, const Request& r) const {
  std::string missing;
  for (size_t i = 0; i < r.expected.size(); ++i) {
    if (r.answered[i]) continue;
    if (!missing.empty()) missing += "; ";
    missing += r.expected[i].what;
  }
  std::string msg = name_ + ": no response from " + missing + " (" + r.description + ", ts=" +
                    std::to_string(ts) + ") after " + Seconds(request_timeout_ms_);
  return Status::DeadlineExceeded(std::move(msg));
}

void Customer::SpinUntilChanged(uint64_t seen, Clock::time_point until) const {
  while (finished_.load(std::memory_order_acquire) == seen && Clock::now() < until) {
    std::this_thread::yield();  // whoever completes the request may need this core
  }
}

Status Customer::Wait(int64_t ts) {
  const Clock::time_point spin_until = Clock::now() + std::chrono::microseconds(spin_us_);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    auto done = results_.find(ts);
    if (done != results_.end()) {
      Status s = std::move(done->second);
      results_.erase(done);
      return s;
    }
    auto it = pending_.find(ts);
    if (it == pending_.end()) {
      return Status::NotFound(name_ + ": unknown request ts=" + std::to_string(ts) +
                              " (already waited for, or completed through a callback)");
    }
    if (it->second.done) {
      return Status::FailedPrecondition(name_ + ": ts=" + std::to_string(ts) + " completes through a callback");
    }
    if (Clock::now() >= it->second.deadline) {
      Status timeout = TimeoutStatus(ts, it->second);
      Status result;
      FinishLocked(it, timeout, &result);
      results_.erase(ts);
      return timeout;
    }
    const Clock::time_point deadline = it->second.deadline;  // the entry may be erased while we sleep
    if (Clock::now() < spin_until) {
      // Poll (without the lock) until some request completes, then look again; sleep once spin_us has passed.
      const uint64_t seen = finished_.load(std::memory_order_relaxed);
      lock.unlock();
      SpinUntilChanged(seen, std::min(spin_until, deadline));
      lock.lock();
      continue;
    }
    cv_.wait_until(lock, deadline);
  }
}

void Customer::Fail(const Status& status) {
  std::vector<std::pair<Callback, Status>> run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.ok()) failed_ = status;
    while (!pending_.empty()) {
      Status result;
      Callback cb = FinishLocked(pending_.begin(), status, &result);
      if (cb) run.emplace_back(std::move(cb), std::move(result));
    }
  }
  cv_.notify_all();
  for (auto& [cb, s] : run) cb(s);
}

void Customer::ExpireOverdue() {
  std::vector<std::pair<Callback, Status>> run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    for (auto it = pending_.begin(); it != pending_.end();) {
      auto next = std::next(it);
      if (now >= it->second.deadline) {
        Status result;
        Callback cb = FinishLocked(it, TimeoutStatus(it->first, it->second), &result);
        if (cb) run.emplace_back(std::move(cb), std::move(result));
      }
      it = next;
    }
  }
  cv_.notify_all();
  for (auto& [cb, s] : run) cb(s);
}

size_t Customer::num_pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

size_t Customer::num_results() const {
  std::lock_guard<std::mutex> lock(mu_);
  return results_.size();
}

}  // namespace geomx::comm
