#include "comm/traffic.h"

namespace geomx::comm {

void TrafficCounters::Add(LinkClass link, Direction dir, uint64_t bytes) {
  const int l = static_cast<int>(link);
  bytes_[l][static_cast<int>(dir)].fetch_add(bytes, std::memory_order_relaxed);
  messages_[l].fetch_add(1, std::memory_order_relaxed);
}

void TrafficCounters::AddDgt(int channel, uint64_t blocks, uint64_t bytes, uint64_t lost) {
  if (channel < 0 || channel >= kDgtChannels) return;
  dgt_[channel][0].fetch_add(blocks, std::memory_order_relaxed);
  dgt_[channel][1].fetch_add(bytes, std::memory_order_relaxed);
  dgt_[channel][2].fetch_add(lost, std::memory_order_relaxed);
}

TrafficSnapshot TrafficCounters::Snapshot() const {
  TrafficSnapshot s;
  for (int c = 0; c < kDgtChannels; ++c) {
    s.dgt[c] = {dgt_[c][0].load(std::memory_order_relaxed), dgt_[c][1].load(std::memory_order_relaxed),
                dgt_[c][2].load(std::memory_order_relaxed)};
  }
  const int lan = static_cast<int>(LinkClass::kLan), wan = static_cast<int>(LinkClass::kWan);
  s.lan_bytes_sent = bytes_[lan][0].load(std::memory_order_relaxed);
  s.lan_bytes_received = bytes_[lan][1].load(std::memory_order_relaxed);
  s.lan_messages = messages_[lan].load(std::memory_order_relaxed);
  s.wan_bytes_sent = bytes_[wan][0].load(std::memory_order_relaxed);
  s.wan_bytes_received = bytes_[wan][1].load(std::memory_order_relaxed);
  s.wan_messages = messages_[wan].load(std::memory_order_relaxed);
  return s;
}

}  // namespace geomx::comm
