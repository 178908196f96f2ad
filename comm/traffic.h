// Traffic accounting per link class (WAN between data centres, LAN inside one) and direction. The parameter
// server's Van adds to these on every send/receive; the trainer writes them to metrics.jsonl and summary.json.
// In a single-process run nothing crosses a link, so every counter stays zero. Thread-safe (atomics).
#pragma once

#include <atomic>
#include <cstdint>

namespace geomx::comm {

enum class LinkClass : uint8_t { kLan = 0, kWan = 1 };
enum class Direction : uint8_t { kSent = 0, kReceived = 1 };

// DGT's channels (comm/dgt/dgt_link.h): 0 is the reliable one, 1..7 the lower-priority ones.
inline constexpr int kDgtChannels = 8;
struct DgtChannelTraffic {
  uint64_t blocks = 0;  // blocks sent on the channel
  uint64_t bytes = 0;   // their payload bytes
  uint64_t lost = 0;    // of which had not arrived when their round closed
};

struct TrafficSnapshot {
  uint64_t wan_bytes_sent = 0, wan_bytes_received = 0, wan_messages = 0;
  uint64_t lan_bytes_sent = 0, lan_bytes_received = 0, lan_messages = 0;
  // Bytes put on WAN / LAN links. Summed over every node of a job this is the traffic on the wire (each
  // message is sent once and received once; counting both would count it twice).
  uint64_t wan_bytes() const { return wan_bytes_sent; }
  uint64_t lan_bytes() const { return lan_bytes_sent; }
  DgtChannelTraffic dgt[kDgtChannels];  // the local servers' DGT pushes, per channel (zeros without DGT)
  TrafficSnapshot& operator+=(const TrafficSnapshot& o) {
    for (int c = 0; c < kDgtChannels; ++c) {
      dgt[c].blocks += o.dgt[c].blocks;
      dgt[c].bytes += o.dgt[c].bytes;
      dgt[c].lost += o.dgt[c].lost;
    }
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
  // DGT: `blocks` of `bytes` sent on `channel` (0..kDgtChannels-1), and `lost` of them that never arrived.
  void AddDgt(int channel, uint64_t blocks, uint64_t bytes, uint64_t lost);
  TrafficSnapshot Snapshot() const;

 private:
  std::atomic<uint64_t> dgt_[kDgtChannels][3] = {};  // [channel][blocks, bytes, lost]
  std::atomic<uint64_t> bytes_[2][2] = {};  // [link][direction]
  std::atomic<uint64_t> messages_[2] = {};  // [link]
};

}  // namespace geomx::comm
