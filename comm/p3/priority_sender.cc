#include "comm/p3/priority_sender.h"

#include <atomic>
#include <memory>
#include <utility>

namespace geomx::comm {

PrioritySender::PrioritySender(PrioritySenderOptions options) : options_(options) {
  thread_ = std::thread([this] { Loop(); });
}

PrioritySender::~PrioritySender() {
  Stop();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return in_flight_ == 0; });
}

bool PrioritySender::Enqueue(int64_t priority, uint64_t bytes, SendFn send) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return false;
    queue_.push(Item{priority, next_seq_++, bytes, std::move(send)});
  }
  cv_.notify_all();
  return true;
}

void PrioritySender::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    while (!queue_.empty()) queue_.pop();
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

size_t PrioritySender::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

size_t PrioritySender::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

uint64_t PrioritySender::in_flight_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_bytes_;
}

bool PrioritySender::CanSendLocked() const {
  if (queue_.empty()) return false;
  if (options_.max_in_flight_bytes == 0 || in_flight_ == 0) return true;
  if (queue_.top().priority > *in_flight_priorities_.rbegin()) return true;  // see the class comment
  return in_flight_bytes_ + queue_.top().bytes <= options_.max_in_flight_bytes;
}

void PrioritySender::OnRelease(uint64_t bytes, int64_t priority) {
  // Notify under the lock: the destructor returns (and destroys cv_) as soon as it sees in_flight_ == 0, so a
  // notify after unlocking could touch a destroyed condition variable (TSan, docs/sanitizers.md).
  std::lock_guard<std::mutex> lock(mu_);
  --in_flight_;
  in_flight_bytes_ -= bytes;
  in_flight_priorities_.erase(in_flight_priorities_.find(priority));
  cv_.notify_all();
}

void PrioritySender::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopped_ || CanSendLocked(); });
    if (stopped_) return;
    // priority_queue::top() is const: move the send function out through a copy of the item's fields.
    Item item = queue_.top();
    queue_.pop();
    ++in_flight_;
    in_flight_bytes_ += item.bytes;
    in_flight_priorities_.insert(item.priority);
    lock.unlock();
    auto released = std::make_shared<std::atomic<bool>>(false);
    const uint64_t bytes = item.bytes;
    const int64_t priority = item.priority;
    item.send([this, released, bytes, priority] {
      if (!released->exchange(true)) OnRelease(bytes, priority);
    });
    item.send = nullptr;  // destroy what the send function captured outside the lock
    lock.lock();
  }
}

}  // namespace geomx::comm
