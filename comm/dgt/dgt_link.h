// DGT on a link (docs/accelerators.md, "DGT"; issue 16): the sender's and the receiver's halves of differential
// gradient transmission between a KvWorker and its servers, around the planner and the assembler
// (dgt_plan.h, dgt_assembler.h). GeoMX's placement: the local servers' push to the global servers.
//
// Transports of the lower-priority channels (DgtTransport):
//   kDatagrams (recipe mode "unreliable"): every block of channel 1..C is its own datagram (Postoffice::
//     SendDatagram, codec "dgt_block", Meta.priority -channel), most important channel first, sent BEFORE the
//     reliable request, so on one path the datagrams that survive are there before it. A lossy link may drop them:
//     the blocks that had not arrived when the round closed become the key's residual (error feedback).
//   kTcpPriority ("tcp-priority"): each channel's blocks go as ONE message on the channel's own connection
//     (Postoffice::SendOnChannel, codec "dgt_part": ZmqVan opens a connection per channel with its own IP TOS,
//     ShapedVan emulates a TCP flow per channel), sent AFTER the reliable request, channel 1 first (strict priority
//     at the sender: the capacity goes to the reliable request first). Nothing is lost: a channel's blocks that
//     come after their round closed are added into the sender's next round of the key at the receiver (GeoMX's
//     "Diff-Reception", DgtAssembler carry_late), so the sender keeps no residual for them.
//   kTcpPriority4Bit ("tcp-priority-4bit"): as kTcpPriority, with each lower-priority block quantised to 4 bits
//     (codec "dgt_part4": a scale max|x| / 7 per block, codes round(x / scale) in -7..7), and the quantisation
//     error kept as the key's residual (error feedback).
//
// One push of one wire key (DgtSender::Begin, the reliable request, DgtSender::SendLow, DgtSender::Finish):
//   1. the key's error-feedback residual is added to the values;
//   2. the planner ranks the blocks; with datagrams, the channel 1..C blocks are sent now;
//   3. the reliable request (kPushPull, codec "dgt") carries the channel-0 blocks, among them the key's last
//      block, which starts the round's deadline at the receiver;
//   4. SendLow: with a TCP-priority transport, the channel messages;
//   5. the answer is the dense aggregate (as for a dense push) and, in Meta.body, which blocks had arrived when the
//      round closed (EncodeDelivered); with datagrams the others become the key's residual.
// Invariant (tested): over the rounds, what the receiver added + the residual = what was pushed.
//
// DgtHandler, in front of the global servers' handler: collects the blocks of (sender, key, round); the round is
// complete when every block arrived, or `deadline_s` after its reliable request arrived, with zeros for the blocks
// still missing; the handler then passes the request on as a dense push of the assembled values, with the
// delivery note as its reply_body. Requests of other codecs pass straight through. Blocks that arrive after their
// round closed are counted and dropped with datagrams (the sender's residual holds them), carried into the next
// round with TCP-priority transports.
//
// Payloads (docs/wire_format.md, "DGT"), little-endian:
//   "dgt_block": u32 block index, u32 key elements, then the block's floats (<= one datagram with its header);
//   "dgt":       u32 key elements, u32 n, u32 z, n u32 block indices (increasing), z u32 indices of blocks not
//                sent because they are all zero (DgtPlanner::kNotSent), then the n blocks' floats in order;
//   "dgt_part":  as "dgt" with z = 0 (a kPush of one channel's blocks);
//   "dgt_part4": u32 key elements, u32 n, n u32 block indices (increasing), then per block: f32 scale and
//                ceil(length / 2) bytes of 4-bit codes (element 2i in the low nibble), code = q + 8.
// Malformed payloads, keys of another length than the layout's, blocks outside the key: a request is answered
// with kInvalidArgument; a datagram or a channel message is counted and dropped (no answer is expected for it).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "comm/dgt/dgt_assembler.h"
#include "comm/dgt/dgt_plan.h"
#include "comm/key_layout.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "comm/traffic.h"

namespace geomx::comm {

inline constexpr const char* kDgtBlockCodec = "dgt_block";
inline constexpr const char* kDgtCodec = "dgt";
inline constexpr const char* kDgtPartCodec = "dgt_part";
inline constexpr const char* kDgtPart4Codec = "dgt_part4";

// How the lower-priority channels travel (see the file comment).
enum class DgtTransport { kDatagrams, kTcpPriority, kTcpPriority4Bit };
// "unreliable", "tcp-priority", "tcp-priority-4bit" (the recipe's accelerators.dgt.mode).
const char* DgtTransportName(DgtTransport t);
Result<DgtTransport> ParseDgtTransport(const std::string& name);

// DGT's settings for a link (recipe accelerators.dgt, cli/sync_rules.cc).
struct DgtLinkOptions {
  // Blocks, ranking, k, channels. 334 floats: a block, its headers and a sealed datagram's envelope fit one
  // 1472-byte UDP payload (ValidateDgtLinkOptions).
  DgtOptions plan{.block_elements = 334};
  double deadline_s = 0.02;  // how long a round waits for missing blocks after its reliable request arrived
  DgtTransport transport = DgtTransport::kDatagrams;
};
// ValidateDgtOptions, plus deadline_s in 0..60 and a block that fits one datagram with its meta, its header and the
// datagram envelope (comm/datagram_socket.h kDatagramEnvelopeBytes): at most 334 floats.
Status ValidateDgtLinkOptions(const DgtLinkOptions& o);

// Payloads (see the file comment).
Bytes EncodeDgtBlock(uint32_t block, uint32_t elements, std::span<const float> values);
struct DgtBlockView {
  uint32_t block = 0;
  uint32_t elements = 0;
  std::span<const float> values;
};
Result<DgtBlockView> DecodeDgtBlock(const Bytes& payload);
// The blocks `blocks` (increasing) of `values` (the whole key), and the zero blocks not sent.
Bytes EncodeDgtBlocks(size_t block_elements, std::span<const uint32_t> blocks, std::span<const uint32_t> zeros,
                      std::span<const float> values);
struct DgtBlocksView {
  uint32_t elements = 0;
  std::vector<uint32_t> blocks;
  std::vector<uint32_t> zeros;
  std::span<const float> values;  // the blocks' floats, one after the other
};
// Checks the counts and sizes against the payload and `block_elements`.
Result<DgtBlocksView> DecodeDgtBlocks(const Bytes& payload, size_t block_elements);
// One channel's blocks, 4-bit (see the file comment). `dequantised` (may be null) receives, for each element of
// the key, what the receiver will decode for the blocks encoded (other elements untouched; sized by the caller).
Bytes EncodeDgtBlocks4(size_t block_elements, std::span<const uint32_t> blocks, std::span<const float> values,
                       std::vector<float>* dequantised);
struct DgtBlocks4View {
  uint32_t elements = 0;
  std::vector<uint32_t> blocks;
  std::vector<float> values;  // the blocks' decoded floats, one after the other
};
// Checks the counts and sizes against the payload and `block_elements`.
Result<DgtBlocks4View> DecodeDgtBlocks4(const Bytes& payload, size_t block_elements);
// Which blocks arrived, one bit per block; Decode checks the count.
std::string EncodeDelivered(const std::vector<bool>& delivered);
Result<std::vector<bool>> DecodeDelivered(const std::string& body, size_t blocks);

// Per channel (0 = reliable): what the sender sent and what did not arrive (from the answers).
struct DgtChannelCounters {
  uint64_t blocks = 0;
  uint64_t bytes = 0;  // payload bytes
  uint64_t lost = 0;   // blocks that had not arrived when their round closed
};

class DgtSender {
 public:
  // `kv` and `traffic` (may be null: the run's per-channel figures) are borrowed; options must be valid.
  DgtSender(KvWorker* kv, DgtLinkOptions options, TrafficCounters* traffic = nullptr);

  // One push in flight: the reliable request to send (KvWorker::SendRaw / KvLink) and what Finish needs.
  struct Push {
    RawRequest request;
    uint64_t wire_key = 0;
    int server = 0;                 // the node the blocks go to
    std::vector<float> pushed;      // values + residual
    std::vector<float> arrives;     // what the receiver adds for a delivered block (pushed, or 4-bit decoded)
    std::vector<int> channels;      // per block
    std::vector<std::pair<int, Message>> low;  // TCP-priority: the channel messages SendLow sends
  };
  // Steps 1-2 of the file comment; the returned request is step 3. kInvalidArgument for a wire key not in the
  // layout or a length that is not the key's.
  Result<Push> Begin(uint64_t wire_key, std::span<const float> values, int64_t round, int num_merged);
  // Step 4, after the reliable request was sent (nothing to do with datagrams). Takes push->low.
  Status SendLow(Push* push);
  // Step 5: the answer's values (`answer`: the frames of a successful request) decoded; the residual settled.
  Result<std::vector<float>> Finish(const Push& push, const std::vector<Bytes>& answer);

  // The latest training loss (adaptive k; DgtPlanner::SetLoss).
  void SetLoss(double loss);
  double k() const;
  std::vector<DgtChannelCounters> counters() const;  // channels + 1 entries
  // What the key's next push adds (the blocks that did not arrive); empty for a key never pushed.
  std::vector<float> residual(uint64_t wire_key) const;

 private:
  KvWorker* const kv_;
  const DgtLinkOptions options_;
  TrafficCounters* const traffic_;
  mutable std::mutex mu_;
  DgtPlanner planner_;                     // GUARDED_BY(mu_)
  DgtResidual residual_;                   // GUARDED_BY(mu_)
  std::vector<DgtChannelCounters> counters_;  // GUARDED_BY(mu_)
};

class DgtHandler : public ServerHandler {
 public:
  // `inner` is borrowed and must outlive this handler; `layout` is the tier's (lengths of the wire keys).
  DgtHandler(ServerHandler* inner, KeyLayout layout, DgtLinkOptions options);
  ~DgtHandler() override;  // Stop()s

  void Handle(const KvRequest& req, KvServer& server) override;
  // Stops the deadline thread (idempotent): rounds still waiting for their deadline are not answered. Call before
  // the KvServer of the waiting requests goes away.
  void Stop();

  // Blocks missing when their rounds closed, blocks that came after, datagrams and channel messages refused as
  // malformed.
  uint64_t missing_blocks() const;
  uint64_t late_blocks() const;
  uint64_t refused_blocks() const;

 private:
  using Id = std::tuple<int, uint64_t, int64_t>;  // sender, wire key, round
  struct Waiting {
    KvRequest req;
    KvServer* server = nullptr;
  };
  // The blocks of a datagram or a channel message (a malformed one is counted and dropped), then TryComplete.
  void HandleBlocks(const KvRequest& req, double now, std::unique_lock<std::mutex>& lock);
  // Adds one block; counts and drops it when refused.
  void AddBlock(int sender, uint64_t wire_key, int64_t round, uint32_t block, std::span<const float> values,
                uint32_t elements, double now);
  // The round's request, answered through `inner_` once the assembler closes it; schedules its deadline.
  void TryComplete(const Id& id, double now, std::unique_lock<std::mutex>& lock);
  void DeadlineLoop();
  double Now() const;

  ServerHandler* const inner_;
  const KeyLayout layout_;
  const DgtLinkOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  DgtAssembler assembler_;                // GUARDED_BY(mu_)
  std::map<Id, Waiting> waiting_;         // GUARDED_BY(mu_): rounds whose reliable request arrived
  std::set<std::pair<double, Id>> deadlines_;  // GUARDED_BY(mu_)
  uint64_t refused_ = 0;                  // GUARDED_BY(mu_)
  bool stopping_ = false;                 // GUARDED_BY(mu_)
  std::mutex join_mu_;  // serialises Stop()'s join
  std::thread deadline_thread_;
};

}  // namespace geomx::comm
