#include "comm/shaped_van.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>

#include "comm/codec.h"
#include "engine/base/check.h"
#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

size_t WireSize(const Message& msg) { return EncodedMetaSize(msg.meta) + msg.data_bytes(); }

bool IsShaped(const LinkOptions& link) { return link.bandwidth_bps > 0 || link.latency_s > 0 || link.loss > 0; }

bool Valid(const LinkOptions& link) {
  return link.bandwidth_bps >= 0 && link.latency_s >= 0 && link.loss >= 0 && link.loss < 1;
}

constexpr double kSegmentBytes = 1448;  // TCP payload per segment on a 1500-byte MTU with timestamps
constexpr double kMinRto = 0.2;         // Linux's minimum retransmission timeout
constexpr size_t kTailSegments = 3;     // segments not followed by three others: no fast retransmit

}  // namespace

double RetransmissionTimeout(double latency_s) { return 2 * latency_s + kMinRto; }

double LossLimitedRate(const LinkOptions& link) {
  if (link.loss <= 0 || link.latency_s <= 0) return 0;
  return kSegmentBytes * 8 / (2 * link.latency_s) * std::sqrt(1.5 / link.loss);
}

double SteadyShaperClock::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void SteadyShaperClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                                  double t) const {
  const auto when = std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(t)));
  cv.wait_until(lock, when);
}

ShapedVan::ShapedVan(std::unique_ptr<Van> inner, ShapedVanOptions options, TrafficCounters* counters,
                     const ShaperClock* clock)
    : inner_(std::move(inner)),
      options_(options),
      counters_(counters),
      clock_(clock != nullptr ? clock : &steady_clock_) {
  GEOMX_CHECK(inner_ != nullptr);
  GEOMX_CHECK(Valid(options_.network.wan) && Valid(options_.network.lan)) << "invalid link options";
  for (const auto& [dc, link] : options_.network.uplinks) GEOMX_CHECK(Valid(link)) << "invalid uplink of " << dc;
  for (const auto& [pair, link] : options_.network.direct) GEOMX_CHECK(Valid(link)) << "invalid direct link";
  sender_ = std::thread([this] { SenderLoop(); });
}

ShapedVan::~ShapedVan() { Stop(); }

LinkOptions ShapedVan::LinkFor(LinkClass link, const std::string& peer_name) const {
  if (link == LinkClass::kLan) return options_.network.lan;
  const std::string peer = PartyOfNode(peer_name);
  if (peer.empty() || peer == options_.self_party) return options_.network.wan;
  return options_.network.Between(options_.self_party, peer);
}

double ShapedVan::TailLossWait(size_t bytes, Peer* peer) {
  const LinkOptions& o = peer->options;
  if (o.loss <= 0) return 0;
  const size_t segments = std::max<size_t>(1, static_cast<size_t>(std::ceil(static_cast<double>(bytes) /
                                                                             kSegmentBytes)));
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  double wait = 0;
  for (size_t s = 0; s < std::min(segments, kTailSegments); ++s) {
    double rto = RetransmissionTimeout(o.latency_s);
    while (uniform(peer->draws) < o.loss) {
      wait += rto;
      rto *= 2;
      peer->accounting.timeouts += 1;
    }
  }
  peer->accounting.timeout_seconds += wait;
  return wait;
}

Result<std::string> ShapedVan::Bind(const std::string& address) { return inner_->Bind(address); }

Status ShapedVan::Connect(int node_id, const std::string& endpoint, LinkClass link, const std::string& peer_name) {
  GEOMX_RETURN_IF_ERROR(inner_->Connect(node_id, endpoint, link, peer_name));
  std::lock_guard<std::mutex> lock(mu_);
  Peer& peer = peers_[node_id];
  peer.link = link;
  peer.options = LinkFor(link, peer_name);
  peer.draws.seed(options_.seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(node_id + 1)));
  return Status::Ok();
}

Result<size_t> ShapedVan::Send(int node_id, const Message& msg) { return Accept(node_id, msg, 0); }

Result<size_t> ShapedVan::SendDatagram(int node_id, const Message& msg) { return Accept(node_id, msg, -1); }

Result<size_t> ShapedVan::SendOnChannel(int node_id, const Message& msg, int channel) {
  if (channel < 1) return Status::InvalidArgument("ShapedVan::SendOnChannel: channel " + std::to_string(channel));
  return Accept(node_id, msg, channel);
}

bool ShapedVan::Busy(const Peer& peer) {
  if (!peer.queue.empty() || !peer.datagram_queue.empty() || peer.delivering) return true;
  for (const auto& [c, flow] : peer.channels) {
    if (!flow.queue.empty()) return true;
  }
  return false;
}

Result<size_t> ShapedVan::Accept(int node_id, const Message& msg, int channel) {
  const bool datagram = channel < 0;
  const size_t bytes = WireSize(msg);
  LinkClass link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status::Cancelled("ShapedVan::Send: van is stopped");
    auto it = peers_.find(node_id);
    if (it == peers_.end()) {
      return Status::NotFound("ShapedVan::Send: node " + std::to_string(node_id) + " is not connected");
    }
    Peer& peer = it->second;
    link = peer.link;
    const LinkOptions& options = peer.options;
    PeerAccounting& acc = peer.accounting;
    const double now = clock_->Now();
    if (IsShaped(options) || Busy(peer)) {
      // Not shaped only when nothing of this peer is still queued: otherwise it would overtake (FIFO per peer).
      const double capacity = options.bandwidth_bps > 0 ? static_cast<double>(bytes) * 8.0 / options.bandwidth_bps
                                                        : 0.0;
      acc.capacity_free_at = std::max(now, acc.capacity_free_at) + capacity;
      acc.messages += 1;
      acc.bytes += bytes;
      if (counters_ != nullptr) counters_->Add(link, Direction::kSent, bytes);
      if (datagram) {
        acc.datagrams += 1;
        acc.transmit_seconds += capacity;
        const double fragments = std::ceil(static_cast<double>(bytes) / static_cast<double>(kDatagramBytes));
        std::uniform_real_distribution<double> uniform(0.0, 1.0);
        if (options.loss > 0 && uniform(peer.draws) >= std::pow(1.0 - options.loss, fragments)) {
          acc.datagrams_lost += 1;
          return bytes;
        }
        const double due = std::max(acc.capacity_free_at + options.latency_s, peer.datagram_last_due);
        peer.datagram_last_due = due;
        peer.datagram_queue.push_back(Pending{due, msg});
      } else {
        double rate = options.bandwidth_bps;
        const double loss_rate = LossLimitedRate(options);
        if (loss_rate > 0 && (rate == 0 || loss_rate < rate)) rate = loss_rate;
        const double transmit = rate > 0 ? static_cast<double>(bytes) * 8.0 / rate : 0.0;
        Flow* flow = channel > 0 ? &peer.channels[channel] : nullptr;
        double& link_free_at = flow != nullptr ? flow->link_free_at : acc.link_free_at;
        double& last_due = flow != nullptr ? flow->last_due : acc.last_due;
        const double start = std::max(now, link_free_at);
        link_free_at = std::max(start + transmit + TailLossWait(bytes, &peer), acc.capacity_free_at);
        const double due = std::max(link_free_at + options.latency_s, last_due);
        last_due = due;
        acc.transmit_seconds += transmit;
        (flow != nullptr ? flow->queue : peer.queue).push_back(Pending{due, msg});
      }
      ++queued_;
      cv_.notify_one();
      return bytes;
    }
    acc.link_free_at = std::max(now, acc.link_free_at);
    acc.capacity_free_at = std::max(now, acc.capacity_free_at);
    acc.last_due = std::max(now, acc.last_due);
    acc.messages += 1;
    acc.bytes += bytes;
    if (datagram) acc.datagrams += 1;
  }
  // Unshaped link: straight through, in the caller's thread (a datagram on the inner van's unreliable channel: the
  // link's real loss applies, e.g. under `geomx bench --netns`).
  Result<size_t> sent = datagram      ? inner_->SendDatagram(node_id, msg)
                        : channel == 0 ? inner_->Send(node_id, msg)
                                       : inner_->SendOnChannel(node_id, msg, channel);
  if (sent.ok() && counters_ != nullptr) counters_->Add(link, Direction::kSent, bytes);
  return sent;
}

void ShapedVan::SenderLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    // The earliest due queue head over all peers (a handful of peers: a scan beats keeping a heap in sync).
    int next_id = 0;
    Peer* next = nullptr;
    std::deque<Pending>* next_queue = nullptr;
    for (auto& [id, peer] : peers_) {
      auto consider = [&, id = id, p = &peer](std::deque<Pending>* q) {
        if (!q->empty() && (next_queue == nullptr || q->front().due < next_queue->front().due)) {
          next_id = id;
          next = p;
          next_queue = q;
        }
      };
      consider(&peer.queue);
      consider(&peer.datagram_queue);
      for (auto& [c, flow] : peer.channels) consider(&flow.queue);
    }
    if (next == nullptr) {
      cv_.wait(lock);
      continue;
    }
    const double due = next_queue->front().due;
    if (clock_->Now() < due) {
      clock_->WaitUntil(lock, cv_, due);  // a Send may queue an earlier message meanwhile: rescan
      continue;
    }
    Pending item = std::move(next_queue->front());
    next_queue->pop_front();
    --queued_;
    next->delivering = true;
    lock.unlock();
    Result<size_t> sent = inner_->Send(next_id, item.msg);
    lock.lock();
    next->delivering = false;  // `next` stays valid: peers_ entries are never erased
    if (!sent.ok()) {
      ++delivery_failures_;
      GEOMX_LOG(kWarning) << "ShapedVan: could not deliver a " << CommandName(item.msg.meta.command)
                          << " message to node " << next_id << ": " << sent.status().ToString();
    }
  }
}

Status ShapedVan::Recv(Message* msg, int timeout_ms) {
  GEOMX_RETURN_IF_ERROR(inner_->Recv(msg, timeout_ms));
  if (counters_ != nullptr) {
    LinkClass link = LinkClass::kLan;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = peers_.find(msg->meta.sender);
      if (it != peers_.end()) link = it->second.link;
    }
    counters_->Add(link, Direction::kReceived, WireSize(*msg));
  }
  return Status::Ok();
}

void ShapedVan::Stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (sender_.joinable()) sender_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, peer] : peers_) {
      queued_ -= peer.queue.size() + peer.datagram_queue.size();
      peer.queue.clear();
      peer.datagram_queue.clear();
      for (auto& [c, flow] : peer.channels) {
        queued_ -= flow.queue.size();
        flow.queue.clear();
      }
    }
  }
  inner_->Stop();
}

PeerAccounting ShapedVan::Accounting(int node_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(node_id);
  return it == peers_.end() ? PeerAccounting{} : it->second.accounting;
}

uint64_t ShapedVan::delivery_failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return delivery_failures_;
}

size_t ShapedVan::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

}  // namespace geomx::comm
