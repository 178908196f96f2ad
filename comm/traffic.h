// Traffic accounting per link class (WAN between data centres, LAN inside one) and direction. The parameter
// server's Van adds to these on every send/receive; the trainer writes them to metrics.jsonl and summary.json.
// In a single-process run nothing crosses a link, so every counter stays zero. Thread-safe (atomics).
#pragma once

#include <atomic>
#include <cstdint>

namespace geomx::comm {

enum class LinkClass : uint8_t { kLan = 0, kWan = 1 };
enum class Direction : uint8_t { kSent = 0, kReceived = 1 };

struct TrafficSnapshot {
  uint64_t wan_bytes_sent = 0, wan_bytes_received = 0, wan_messages = 0;
  uint64_t lan_bytes_sent = 0, lan_bytes_received = 0, lan_messages = 0;
  // Bytes put on WAN / LAN links. Summed over every node of a job this is the traffic on the wire (each
  // message is sent once and received once; counting both would count it twice).
  uint64_t wan_bytes() const { return wan_bytes_sent; }
  uint64_t lan_bytes() const { return lan_bytes_sent; }
  TrafficSnapshot& operator+=(const TrafficSnapshot& o) {
    wan_bytes_sent += o.wan_bytes_sent;
    wan_bytes_received += o.wan_bytes_received;
    wan_messages += o.wan_messages;
    lan_bytes_sent += o.lan_bytes_sent;
    lan_bytes_received += o.lan_bytes_received;
    lan_messages += o.lan_messages;
    return *this;
  }
};

class TrafficCounters {
 public:
  // Records one message of `bytes` on a link of class `link` in direction `dir`.
  void Add(LinkClass link, Direction dir, uint64_t bytes);
  TrafficSnapshot Snapshot() const;

 private:
  std::atomic<uint64_t> bytes_[2][2] = {};  // [link][direction]
  std::atomic<uint64_t> messages_[2] = {};  // [link]
};

}  // namespace geomx::comm
