// ShapedVan: a Van decorator that emulates a geo-distributed network inside one host and counts traffic.
//
// Shaping happens on the send path, per destination peer, with the LinkOptions of the link to that peer: a
// LinkClass::kLan peer (given by Connect) gets network.lan; a kWan peer gets network.Between(this van's party, the
// peer's party, read from its node name "party/role"), so each data centre's uplink can differ
// (comm/network_shape.h).
//   * bandwidth: each peer has its own link, modelled as a token bucket of depth zero: a message of B bytes
//     (header + data) occupies the link for B * 8 / rate seconds after every earlier message to that peer has
//     left it;
//   * latency: the message is then delivered latency_s later (a delay queue);
//   * loss (the transport is TCP: nothing is lost, losses cost time):
//       - rate: a lossy link carries at most the steady-state TCP throughput of Mathis et al. (1997),
//         MSS * 8 / RTT * sqrt(3 / (2 * loss)) bits/s (MSS 1448 bytes, RTT = 2 * latency), when that is below its
//         bandwidth: the losses fast retransmit repairs cost throughput, not waits;
//       - tail losses: each of the message's last three segments (all of them for a shorter message: no later
//         segments to trigger fast retransmit) is lost with probability `loss` per transmission and then sent
//         again after a retransmission timeout, RTT + 200 ms (Linux's minimum), doubled for every further loss of
//         the same segment. The waits hold up the link: TCP delivers in order, later messages to the peer wait.
//     Draws come from a generator seeded with ShapedVanOptions::seed and the peer's node id: runs repeat.
//   * datagrams (SendDatagram): no retransmission and no congestion control. A datagram is lost with
//     probability 1 - (1 - loss)^fragments (kDatagramBytes per fragment), otherwise delivered latency_s after
//     its turn on the link. TCP messages and datagrams share the link's bandwidth: every message takes its
//     bytes * 8 / bandwidth of the link's capacity in turn (capacity_free_at), and a TCP message also waits for
//     its own flow (link_free_at: the loss-limited rate and the retransmission timeouts), so a TCP flow slowed by
//     losses leaves the rest of the capacity to datagrams. Datagrams are delivered in order among themselves, not
//     with the TCP messages. A datagram the draws kept is handed to the inner Van's reliable Send (the emulation
//     decided its fate); on an unshaped link it goes to the inner Van's SendDatagram.
//   * priority channels (SendOnChannel, DGT's TCP-priority modes): each channel of a peer is a TCP flow of its
//     own, with its own loss-limited rate, tail losses and in-order delivery, sharing the link's capacity with
//     the peer's other flows and datagrams in the order they were accepted: on a lossy link, C + 1 flows carry up
//     to C + 1 times what one loss-limited flow does. On an unshaped link it goes to the inner Van's
//     SendOnChannel.
// A sender thread hands each message to the inner Van at its due time, in FIFO order per peer (due times to one
// peer never decrease). A link with bandwidth 0, latency 0 and loss 0 is not shaped: Send passes the message
// straight to the inner Van in the caller's thread (and still counts it).
//
// Traffic: every message accepted by Send is counted as Sent on its link class, with its full wire size, when it
// is accepted (a message that later fails to be delivered is logged and counted in delivery_failures()); every
// message returned by Recv is counted as Received on the link class of the peer it came from (meta.sender as
// told to Connect; unknown senders count as LAN).
//
// Time comes from a ShaperClock, so tests can check the shaper's accounting on a fake clock without sleeping.
// Thread-safety: as Van (Send/Connect from any thread; Recv from one thread at a time); the accessors are
// thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "comm/comm_options.h"
#include "comm/network_shape.h"
#include "comm/van.h"

namespace geomx::comm {

// The shaper's notion of time, in seconds from an arbitrary origin. Thread-safe.
class ShaperClock {
 public:
  virtual ~ShaperClock() = default;
  virtual double Now() const = 0;
  // Waits on `cv` (whose mutex `lock` holds) until Now() >= `t` or `cv` is notified. May return early; the
  // caller re-checks its condition and Now().
  virtual void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, double t) const = 0;
};

// std::chrono::steady_clock. Stateless; a process can share one.
class SteadyShaperClock : public ShaperClock {
 public:
  double Now() const override;
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, double t) const override;
};

struct ShapedVanOptions {
  NetworkShape network;    // the links: network.lan inside the party, network.Between(...) to other parties
  std::string self_party;  // this van's party ("": every kWan peer gets network.wan)
  uint64_t seed = 0;       // loss draws
};

// The retransmission timeout of the loss model for a link with this one-way latency: RTT + 200 ms.
double RetransmissionTimeout(double latency_s);
// The loss model's rate limit (Mathis et al.), in bits/s; 0 = none (no loss, or no latency).
double LossLimitedRate(const LinkOptions& link);

// What the shaper has accounted for one destination peer (all times on the ShaperClock).
struct PeerAccounting {
  uint64_t messages = 0;
  uint64_t bytes = 0;               // wire bytes (header + data)
  double transmit_seconds = 0;      // sum of the messages' serialisation times (bytes * 8 / rate)
  uint64_t timeouts = 0;            // retransmission timeouts of tail losses (loss > 0)
  double timeout_seconds = 0;       // the time they held the link
  double link_free_at = 0;          // when the emulated TCP flow finishes sending the last accepted message
  double capacity_free_at = 0;      // when the link's capacity has carried every accepted message and datagram
  uint64_t datagrams = 0;           // datagrams accepted (counted in messages and bytes too)
  uint64_t datagrams_lost = 0;      // of which the loss draws dropped
  double last_due = 0;              // when the last accepted message is (or was) handed to the inner Van
};

class ShapedVan : public Van {
 public:
  // Owns `inner`. `counters` (may be null) and `clock` (null: an internal SteadyShaperClock) are borrowed and
  // must outlive this van.
  ShapedVan(std::unique_ptr<Van> inner, ShapedVanOptions options, TrafficCounters* counters,
            const ShaperClock* clock = nullptr);
  ~ShapedVan() override;  // Stop()s; messages not yet due are dropped
  ShapedVan(const ShapedVan&) = delete;
  ShapedVan& operator=(const ShapedVan&) = delete;

  Result<std::string> Bind(const std::string& address) override;
  // Remembers `link` (and the party in `peer_name`) for shaping and for classifying messages received from
  // `node_id`; `peer_name` goes to the inner Van too.
  Status Connect(int node_id, const std::string& endpoint, LinkClass link, const std::string& peer_name) override;
  // Unshaped links: the inner Van's result. Shaped links: queues the message and returns its wire size at once;
  // kNotFound for a node never connected, kCancelled after Stop().
  Result<size_t> Send(int node_id, const Message& msg) override;
  // As Send, on the link's unreliable channel (see the class comment); a lost datagram is counted as sent.
  Result<size_t> SendDatagram(int node_id, const Message& msg) override;
  // As Send, on the channel's own emulated TCP flow (see the class comment).
  Result<size_t> SendOnChannel(int node_id, const Message& msg, int channel) override;
  Status Recv(Message* msg, int timeout_ms) override;
  // Stops the sender thread (dropping messages not yet due), then the inner Van. Idempotent.
  void Stop() override;
  bool authenticates() const override { return inner_->authenticates(); }

  // The shaper's accounting for `node_id` (zeros for a peer never sent to).
  PeerAccounting Accounting(int node_id) const;
  // Messages the sender thread could not hand to the inner Van (logged when they happen).
  uint64_t delivery_failures() const;
  // Messages accepted by Send and not yet handed to the inner Van.
  size_t queued() const;

 private:
  struct Pending {
    double due;
    Message msg;
  };
  // A priority channel's TCP flow (channel 0's state is in PeerAccounting and Peer::queue).
  struct Flow {
    double link_free_at = 0;
    double last_due = 0;
    std::deque<Pending> queue;  // due times never decrease
  };
  struct Peer {
    LinkClass link = LinkClass::kLan;
    LinkOptions options;        // the link's characteristics (set by Connect)
    std::mt19937_64 draws;      // loss draws, seeded by Connect
    PeerAccounting accounting;
    std::deque<Pending> queue;  // due times never decrease
    std::deque<Pending> datagram_queue;  // datagrams; due times never decrease
    double datagram_last_due = 0;
    std::map<int, Flow> channels;  // priority channel >= 1 -> its flow
    bool delivering = false;    // the sender thread is handing this peer's queue head to the inner Van
  };
  LinkOptions LinkFor(LinkClass link, const std::string& peer_name) const;
  // The seconds of retransmission timeouts a message of `bytes` waits for on `peer`'s lossy link.
  double TailLossWait(size_t bytes, Peer* peer);
  // channel: -1 a datagram, 0 Send's flow, >= 1 a priority channel's flow.
  Result<size_t> Accept(int node_id, const Message& msg, int channel);
  // Whether anything of `peer` is queued or being delivered.
  static bool Busy(const Peer& peer);
  void SenderLoop();

  std::unique_ptr<Van> inner_;
  const ShapedVanOptions options_;
  TrafficCounters* const counters_;
  SteadyShaperClock steady_clock_;
  const ShaperClock* const clock_;

  mutable std::mutex mu_;
  std::condition_variable cv_;           // new message queued, or stopping
  std::map<int, Peer> peers_;            // guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  uint64_t delivery_failures_ = 0;       // guarded by mu_
  size_t queued_ = 0;                    // guarded by mu_
  std::mutex stop_mu_;                   // serialises Stop() calls (joining the sender thread once)
  std::thread sender_;                   // runs SenderLoop until Stop()
};

}  // namespace geomx::comm
