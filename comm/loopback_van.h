// LoopbackVan: an in-memory Van for tests (style R16). Every node of a test shares one LoopbackNetwork; a van
// binds "loop://<name>" and peers connect to that endpoint. No serialization: a sent Message is copied (Meta by
// value, data frames shared: Bytes are immutable once sent), so nodes never share mutable state.
//
// Fault injection (LoopbackOptions, seeded, so a failing run can be replayed): drop a message, delay it by up to
// max_delay_ms (which also reorders), or deliver it twice. Tests can also isolate an endpoint (everything to and
// from it vanishes, like a crashed host) and inject messages into a node's queue as if they came from the wire:
// malformed ones (Recv then returns kDataLoss, like ZmqVan for bad bytes) or arbitrary Metas.
//
// Semantics follow ZmqVan: connecting before the peer has bound is fine (messages wait in the peer's mailbox);
// sending to a stopped or isolated peer silently drops; Recv on a van with a wrong-version message returns
// kDataLoss. Delivery order per (sender, receiver) is FIFO unless delays are injected.
//
// Thread-safety: LoopbackNetwork and LoopbackVan are thread-safe (Send/Connect from any thread, Recv from one).
// Ownership: vans borrow the network, which must outlive them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>

#include "comm/van.h"

namespace geomx::comm {

struct LoopbackOptions {
  double drop_rate = 0;       // probability that a message is lost
  double duplicate_rate = 0;  // probability that a message is delivered twice
  int max_delay_ms = 0;       // each message is delayed uniformly in [0, max_delay_ms]
  uint64_t seed = 1;
};

class LoopbackNetwork {
 public:
  explicit LoopbackNetwork(LoopbackOptions options = {});
  ~LoopbackNetwork();
  LoopbackNetwork(const LoopbackNetwork&) = delete;
  LoopbackNetwork& operator=(const LoopbackNetwork&) = delete;

  // Changes the fault injection from now on.
  void SetOptions(const LoopbackOptions& options);
  // Messages to or from `endpoint` are dropped from now on (true) or again delivered (false).
  void IsolateForTesting(const std::string& endpoint, bool isolated);
  // Puts `msg` into `endpoint`'s queue as if it arrived from the wire. A non-OK `recv_error` makes the receiver's
  // Recv return that error instead (a frame that failed to decode).
  void InjectForTesting(const std::string& endpoint, Message msg, Status recv_error = Status::Ok());
  // Messages accepted by Send so far (including dropped ones); for tests.
  uint64_t messages_sent() const;

 private:
  friend class LoopbackVan;
  struct Mailbox;
  struct Entry;
  std::shared_ptr<Mailbox> GetMailbox(const std::string& endpoint);  // creates it if needed
  Status Deliver(const std::string& from, const std::string& to, const Message& msg);

  mutable std::mutex mu_;
  LoopbackOptions options_;                                // GUARDED_BY(mu_)
  std::mt19937_64 rng_;                                    // GUARDED_BY(mu_)
  std::map<std::string, std::shared_ptr<Mailbox>> boxes_;  // GUARDED_BY(mu_)
  std::set<std::string> isolated_;                         // GUARDED_BY(mu_)
  uint64_t sent_ = 0;                                      // GUARDED_BY(mu_)
  uint64_t next_anonymous_ = 0;                            // GUARDED_BY(mu_)
};

class LoopbackVan : public Van {
 public:
  explicit LoopbackVan(LoopbackNetwork* network);
  ~LoopbackVan() override;  // Stop()s

  // "loop://name" binds that name (kAlreadyExists if another live van holds it); "loop://" picks a fresh name.
  Result<std::string> Bind(const std::string& address) override;
  // `peer_name` is not used (loopback links are not authenticated).
  Status Connect(int node_id, const std::string& endpoint, LinkClass link, const std::string& peer_name) override;
  // kNotFound for an unconnected id; kCancelled after Stop; otherwise OK (even when the message is lost).
  Result<size_t> Send(int node_id, const Message& msg) override;
  Status Recv(Message* msg, int timeout_ms) override;
  void Stop() override;

  const std::string& endpoint() const { return endpoint_; }

 private:
  LoopbackNetwork* const network_;
  std::mutex mu_;
  std::map<int, std::string> peers_;  // GUARDED_BY(mu_)
  std::string endpoint_;              // written once by Bind
  std::shared_ptr<LoopbackNetwork::Mailbox> box_;  // written once by Bind
  bool stopped_ = false;              // GUARDED_BY(mu_)
};

}  // namespace geomx::comm
