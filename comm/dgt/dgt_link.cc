#include "comm/dgt/dgt_link.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#include "comm/codec.h"
#include "comm/datagram_socket.h"
#include "comm/postoffice.h"
#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

constexpr size_t kBlockHeader = 8;  // u32 block, u32 elements
// What a datagram's Meta takes at most for a block: msgpack array of 14 with one key, one len, the codec name,
// worst-case integer sizes (checked against EncodedMetaSize in tests).
constexpr size_t kBlockMetaBytes = 64;

uint32_t ReadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void WriteU32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

size_t BlockLength(size_t block_elements, size_t elements, size_t block) {
  return std::min(block_elements, elements - block * block_elements);
}

}  // namespace

const char* DgtTransportName(DgtTransport t) {
  switch (t) {
    case DgtTransport::kDatagrams:
      return "unreliable";
    case DgtTransport::kTcpPriority:
      return "tcp-priority";
    case DgtTransport::kTcpPriority4Bit:
      return "tcp-priority-4bit";
  }
  return "?";
}

Result<DgtTransport> ParseDgtTransport(const std::string& name) {
  for (DgtTransport t : {DgtTransport::kDatagrams, DgtTransport::kTcpPriority, DgtTransport::kTcpPriority4Bit}) {
    if (name == DgtTransportName(t)) return t;
  }
  return Status::InvalidArgument("dgt: mode '" + name + "' is not unreliable, tcp-priority or tcp-priority-4bit");
}

Status ValidateDgtLinkOptions(const DgtLinkOptions& o) {
  GEOMX_RETURN_IF_ERROR(ValidateDgtOptions(o.plan));
  if (!(o.deadline_s >= 0) || o.deadline_s > 60) {
    return Status::InvalidArgument("dgt: deadline must be within 0..60 s, got " + std::to_string(o.deadline_s));
  }
  const size_t fits = (kDatagramBytes - kDatagramEnvelopeBytes - kBlockMetaBytes - kBlockHeader) / sizeof(float);
  if (o.plan.block_elements > fits) {
    return Status::InvalidArgument("dgt: a block of " + std::to_string(o.plan.block_elements * sizeof(float)) +
                                   " bytes does not fit one datagram with its headers (at most " +
                                   std::to_string(fits * sizeof(float)) + " bytes)");
  }
  return Status::Ok();
}

Bytes EncodeDgtBlock(uint32_t block, uint32_t elements, std::span<const float> values) {
  Bytes out(kBlockHeader + values.size_bytes());
  uint8_t* p = out.mutable_data();
  WriteU32(p, block);
  WriteU32(p + 4, elements);
  if (!values.empty()) std::memcpy(p + kBlockHeader, values.data(), values.size_bytes());
  return out;
}

Result<DgtBlockView> DecodeDgtBlock(const Bytes& payload) {
  if (payload.size() < kBlockHeader || (payload.size() - kBlockHeader) % sizeof(float) != 0) {
    return Status::InvalidArgument("dgt block: " + std::to_string(payload.size()) + " bytes is not a header and "
                                   "whole floats");
  }
  DgtBlockView v;
  v.block = ReadU32(payload.data());
  v.elements = ReadU32(payload.data() + 4);
  v.values = {reinterpret_cast<const float*>(payload.data() + kBlockHeader),
              (payload.size() - kBlockHeader) / sizeof(float)};
  return v;
}

Bytes EncodeDgtBlocks(size_t block_elements, std::span<const uint32_t> blocks, std::span<const uint32_t> zeros,
                      std::span<const float> values) {
  size_t floats = 0;
  for (uint32_t b : blocks) floats += BlockLength(block_elements, values.size(), b);
  const size_t header = 12 + 4 * (blocks.size() + zeros.size());
  Bytes out(header + floats * sizeof(float));
  uint8_t* p = out.mutable_data();
  WriteU32(p, static_cast<uint32_t>(values.size()));
  WriteU32(p + 4, static_cast<uint32_t>(blocks.size()));
  WriteU32(p + 8, static_cast<uint32_t>(zeros.size()));
  p += 12;
  for (uint32_t b : blocks) WriteU32(p, b), p += 4;
  for (uint32_t z : zeros) WriteU32(p, z), p += 4;
  for (uint32_t b : blocks) {
    const size_t n = BlockLength(block_elements, values.size(), b);
    std::memcpy(p, values.data() + b * block_elements, n * sizeof(float));
    p += n * sizeof(float);
  }
  return out;
}

Result<DgtBlocksView> DecodeDgtBlocks(const Bytes& payload, size_t block_elements) {
  auto bad = [&](const std::string& why) { return Status::InvalidArgument("dgt payload: " + why); };
  if (payload.size() < 12) return bad(std::to_string(payload.size()) + " bytes, shorter than its header");
  const uint8_t* p = payload.data();
  DgtBlocksView v;
  v.elements = ReadU32(p);
  const uint64_t n = ReadU32(p + 4), z = ReadU32(p + 8);
  const uint64_t blocks = (uint64_t{v.elements} + block_elements - 1) / block_elements;
  if (n + z > blocks) {
    return bad(std::to_string(n + z) + " block indices for a key of " + std::to_string(blocks) + " blocks");
  }
  const uint64_t header = 12 + 4 * (n + z);
  if (payload.size() < header) return bad("truncated block indices");
  p += 12;
  uint64_t floats = 0;
  for (uint64_t i = 0; i < n + z; ++i, p += 4) {
    const uint32_t b = ReadU32(p);
    if (b >= blocks) return bad("block " + std::to_string(b) + " outside the key's " + std::to_string(blocks));
    auto& list = i < n ? v.blocks : v.zeros;
    if (!list.empty() && b <= list.back()) return bad("block indices not increasing");
    list.push_back(b);
    if (i < n) floats += BlockLength(block_elements, v.elements, b);
  }
  if (payload.size() != header + floats * sizeof(float)) {
    return bad(std::to_string(payload.size()) + " bytes, the indices say " +
               std::to_string(header + floats * sizeof(float)));
  }
  v.values = {reinterpret_cast<const float*>(payload.data() + header), floats};
  return v;
}

Bytes EncodeDgtBlocks4(size_t block_elements, std::span<const uint32_t> blocks, std::span<const float> values,
                       std::vector<float>* dequantised) {
  size_t body = 0;
  for (uint32_t b : blocks) body += 4 + (BlockLength(block_elements, values.size(), b) + 1) / 2;
  Bytes out(8 + 4 * blocks.size() + body);
  uint8_t* p = out.mutable_data();
  WriteU32(p, static_cast<uint32_t>(values.size()));
  WriteU32(p + 4, static_cast<uint32_t>(blocks.size()));
  p += 8;
  for (uint32_t b : blocks) WriteU32(p, b), p += 4;
  for (uint32_t b : blocks) {
    const size_t n = BlockLength(block_elements, values.size(), b);
    const float* x = values.data() + b * block_elements;
    float max = 0.0f;
    for (size_t i = 0; i < n; ++i) max = std::max(max, std::fabs(x[i]));
    const float scale = max / 7.0f;
    std::memcpy(p, &scale, 4);
    p += 4;
    std::memset(p, 0, (n + 1) / 2);
    for (size_t i = 0; i < n; ++i) {
      const float q = scale > 0 ? std::clamp(std::nearbyint(x[i] / scale), -7.0f, 7.0f) : 0.0f;
      const auto code = static_cast<uint8_t>(static_cast<int>(q) + 8);
      p[i / 2] = static_cast<uint8_t>(p[i / 2] | (i % 2 == 0 ? code : code << 4));
      if (dequantised != nullptr) (*dequantised)[b * block_elements + i] = q * scale;
    }
    p += (n + 1) / 2;
  }
  return out;
}

Result<DgtBlocks4View> DecodeDgtBlocks4(const Bytes& payload, size_t block_elements) {
  auto bad = [&](const std::string& why) { return Status::InvalidArgument("dgt 4-bit payload: " + why); };
  if (payload.size() < 8) return bad(std::to_string(payload.size()) + " bytes, shorter than its header");
  const uint8_t* p = payload.data();
  DgtBlocks4View v;
  v.elements = ReadU32(p);
  const uint64_t n = ReadU32(p + 4);
  const uint64_t blocks = (uint64_t{v.elements} + block_elements - 1) / block_elements;
  if (n > blocks) return bad(std::to_string(n) + " blocks for a key of " + std::to_string(blocks));
  if (payload.size() < 8 + 4 * n) return bad("truncated block indices");
  p += 8;
  uint64_t expected = 8 + 4 * n;
  for (uint64_t i = 0; i < n; ++i, p += 4) {
    const uint32_t b = ReadU32(p);
    if (b >= blocks) return bad("block " + std::to_string(b) + " outside the key's " + std::to_string(blocks));
    if (!v.blocks.empty() && b <= v.blocks.back()) return bad("block indices not increasing");
    v.blocks.push_back(b);
    expected += 4 + (BlockLength(block_elements, v.elements, b) + 1) / 2;
  }
  if (payload.size() != expected) {
    return bad(std::to_string(payload.size()) + " bytes, the indices say " + std::to_string(expected));
  }
  for (uint32_t b : v.blocks) {
    const size_t len = BlockLength(block_elements, v.elements, b);
    float scale;
    std::memcpy(&scale, p, 4);
    p += 4;
    for (size_t i = 0; i < len; ++i) {
      const int code = i % 2 == 0 ? p[i / 2] & 0xf : p[i / 2] >> 4;
      v.values.push_back(static_cast<float>(code - 8) * scale);
    }
    p += (len + 1) / 2;
  }
  return v;
}

std::string EncodeDelivered(const std::vector<bool>& delivered) {
  std::string out((delivered.size() + 7) / 8, '\0');
  for (size_t b = 0; b < delivered.size(); ++b) {
    if (delivered[b]) out[b / 8] = static_cast<char>(out[b / 8] | (1 << (b % 8)));
  }
  return out;
}

Result<std::vector<bool>> DecodeDelivered(const std::string& body, size_t blocks) {
  if (body.size() != (blocks + 7) / 8) {
    return Status::DataLoss("dgt: the answer's delivery note has " + std::to_string(body.size()) + " bytes for " +
                            std::to_string(blocks) + " blocks");
  }
  std::vector<bool> out(blocks);
  for (size_t b = 0; b < blocks; ++b) out[b] = (static_cast<uint8_t>(body[b / 8]) >> (b % 8)) & 1;
  return out;
}

// --- sender -------------------------------------------------------------------------------------------------

DgtSender::DgtSender(KvWorker* kv, DgtLinkOptions options, TrafficCounters* traffic)
    : kv_(kv),
      options_(options),
      traffic_(traffic),
      planner_(options.plan),
      residual_(options.plan.block_elements),
      counters_(static_cast<size_t>(options.plan.channels) + 1) {}

Result<DgtSender::Push> DgtSender::Begin(uint64_t wire_key, std::span<const float> values, int64_t round,
                                         int num_merged) {
  const KeySlice* slice = kv_->layout().FindWireKey(wire_key);
  if (slice == nullptr || slice->length != values.size()) {
    return Status::InvalidArgument("dgt: wire key " + std::to_string(wire_key) + " with " +
                                   std::to_string(values.size()) + " values is not a slice of the layout");
  }
  Push push;
  push.wire_key = wire_key;
  {
    std::lock_guard<std::mutex> lock(mu_);
    push.pushed = residual_.Compose(wire_key, values);
    GEOMX_ASSIGN_OR_RETURN(push.channels, planner_.Plan(wire_key, push.pushed));
  }
  Postoffice* po = kv_->postoffice();
  const std::vector<int> servers = po->ServerIds();
  if (slice->server_rank >= static_cast<int>(servers.size())) {
    return Status::FailedPrecondition("dgt: no server of rank " + std::to_string(slice->server_rank));
  }
  push.server = servers[slice->server_rank];
  const size_t be = options_.plan.block_elements;
  const auto elements = static_cast<uint32_t>(values.size());
  const bool datagrams = options_.transport == DgtTransport::kDatagrams;
  push.arrives = push.pushed;
  std::vector<DgtChannelCounters> sent(counters_.size());
  auto message = [&](const char* codec, int channel, Bytes payload) {
    Message m;
    m.meta.command = Command::kPush;
    m.meta.app_id = kv_->app_id();
    m.meta.round = round;
    m.meta.codec = codec;
    m.meta.priority = -channel;
    m.meta.keys = {wire_key};
    m.meta.lens = {static_cast<uint32_t>(payload.size())};
    sent[channel].bytes += payload.size();
    m.data.push_back(std::move(payload));
    return m;
  };
  for (int channel = 1; channel <= options_.plan.channels; ++channel) {
    std::vector<uint32_t> blocks;
    for (size_t b = 0; b < push.channels.size(); ++b) {
      if (push.channels[b] == channel) blocks.push_back(static_cast<uint32_t>(b));
    }
    sent[channel].blocks += blocks.size();
    if (blocks.empty()) continue;
    if (!datagrams) {
      Bytes payload = options_.transport == DgtTransport::kTcpPriority
                          ? EncodeDgtBlocks(be, blocks, {}, push.pushed)
                          : EncodeDgtBlocks4(be, blocks, push.pushed, &push.arrives);
      const char* codec = options_.transport == DgtTransport::kTcpPriority ? kDgtPartCodec : kDgtPart4Codec;
      push.low.emplace_back(channel, message(codec, channel, std::move(payload)));
      continue;
    }
    for (uint32_t b : blocks) {
      const size_t n = BlockLength(be, values.size(), b);
      Status s = po->SendDatagram(
          push.server, message(kDgtBlockCodec, channel,
                               EncodeDgtBlock(b, elements, std::span<const float>(push.pushed).subspan(b * be, n))));
      if (!s.ok()) return s.WithContext("dgt: sending a block");
    }
  }
  std::vector<uint32_t> reliable, zeros;
  for (size_t b = 0; b < push.channels.size(); ++b) {
    if (push.channels[b] == 0) reliable.push_back(static_cast<uint32_t>(b));
    if (push.channels[b] == DgtPlanner::kNotSent) zeros.push_back(static_cast<uint32_t>(b));
  }
  push.request.command = Command::kPushPull;
  push.request.codec = kDgtCodec;
  push.request.round = round;
  push.request.num_merged = num_merged;
  push.request.wire_keys = {wire_key};
  push.request.payloads = {EncodeDgtBlocks(be, reliable, zeros, push.pushed)};
  push.request.reply_body = std::make_shared<std::string>();
  sent[0].blocks += reliable.size();
  sent[0].bytes += push.request.payloads[0].size();
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t c = 0; c < sent.size(); ++c) {
    counters_[c].blocks += sent[c].blocks;
    counters_[c].bytes += sent[c].bytes;
    if (traffic_ != nullptr) traffic_->AddDgt(static_cast<int>(c), sent[c].blocks, sent[c].bytes, 0);
  }
  return push;
}

Status DgtSender::SendLow(Push* push) {
  Postoffice* po = kv_->postoffice();
  for (auto& [channel, m] : push->low) {
    Status s = po->SendOnChannel(push->server, std::move(m), channel);
    if (!s.ok()) return s.WithContext("dgt: sending channel " + std::to_string(channel));
  }
  push->low.clear();
  return Status::Ok();
}

Result<std::vector<float>> DgtSender::Finish(const Push& push, const std::vector<Bytes>& answer) {
  const size_t blocks = push.channels.size();
  GEOMX_ASSIGN_OR_RETURN(std::vector<bool> delivered, DecodeDelivered(*push.request.reply_body, blocks));
  if (answer.size() != 1 || answer[0].size() != push.pushed.size() * sizeof(float)) {
    return Status::DataLoss("dgt: the answer for wire key " + std::to_string(push.wire_key) + " is not " +
                            std::to_string(push.pushed.size()) + " floats");
  }
  std::vector<float> out(push.pushed.size());
  std::memcpy(out.data(), answer[0].data(), answer[0].size());
  std::lock_guard<std::mutex> lock(mu_);
  // With TCP-priority transports nothing is lost: a block not there when the round closed is added into the next
  // round at the receiver, so only the quantisation error stays behind.
  const bool datagrams = options_.transport == DgtTransport::kDatagrams;
  residual_.Settle(push.wire_key, push.pushed, datagrams ? delivered : std::vector<bool>(blocks, true),
                   push.arrives);
  for (size_t b = 0; b < blocks; ++b) {
    const int c = push.channels[b];
    if (c < 0 || delivered[b]) continue;
    counters_[static_cast<size_t>(c)].lost += 1;
    if (traffic_ != nullptr) traffic_->AddDgt(c, 0, 0, 1);
  }
  return out;
}

void DgtSender::SetLoss(double loss) {
  std::lock_guard<std::mutex> lock(mu_);
  planner_.SetLoss(loss);
}

double DgtSender::k() const {
  std::lock_guard<std::mutex> lock(mu_);
  return planner_.k();
}

std::vector<DgtChannelCounters> DgtSender::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

std::vector<float> DgtSender::residual(uint64_t wire_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::span<const float> r = residual_.residual(wire_key);
  return {r.begin(), r.end()};
}

// --- receiver -----------------------------------------------------------------------------------------------

DgtHandler::DgtHandler(ServerHandler* inner, KeyLayout layout, DgtLinkOptions options)
    : inner_(inner),
      layout_(std::move(layout)),
      options_(options),
      assembler_(options.plan.block_elements, options.deadline_s,
                 /*carry_late=*/options.transport != DgtTransport::kDatagrams) {
  deadline_thread_ = std::thread([this] { DeadlineLoop(); });
}

DgtHandler::~DgtHandler() { Stop(); }

void DgtHandler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  std::lock_guard<std::mutex> join(join_mu_);
  if (deadline_thread_.joinable()) deadline_thread_.join();
}

double DgtHandler::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void DgtHandler::AddBlock(int sender, uint64_t wire_key, int64_t round, uint32_t block,
                          std::span<const float> values, uint32_t elements, double now) {
  const KeySlice* slice = layout_.FindWireKey(wire_key);
  Status s = slice == nullptr || slice->length != elements
                 ? Status::InvalidArgument("dgt: wire key " + std::to_string(wire_key) + " of " +
                                           std::to_string(elements) + " values is not a slice of this server")
                 : assembler_.Add(sender, wire_key, round, block, values, elements, now);
  if (!s.ok()) {
    ++refused_;
    GEOMX_LOG(kDebug) << "dgt: dropped a block from node " << sender << ": " << s.message();
  }
}

void DgtHandler::HandleBlocks(const KvRequest& req, double now, std::unique_lock<std::mutex>& lock) {
  const Meta& meta = req.meta;
  if (meta.command != Command::kPush || req.data.size() != 1 || meta.keys.size() != 1) {
    ++refused_;
    return;
  }
  const size_t be = options_.plan.block_elements;
  const uint64_t wk = meta.keys[0];
  if (meta.codec == kDgtBlockCodec) {
    Result<DgtBlockView> v = DecodeDgtBlock(req.data[0]);
    if (!v.ok()) {
      ++refused_;
      return;
    }
    AddBlock(meta.sender, wk, meta.round, v->block, v->values, v->elements, now);
  } else {
    // A channel message: its blocks one after the other, f32 or decoded from 4 bits.
    uint32_t elements = 0;
    std::vector<uint32_t> blocks;
    std::span<const float> values;
    Result<DgtBlocksView> plain = Status::Cancelled("");
    Result<DgtBlocks4View> coded = Status::Cancelled("");
    if (meta.codec == kDgtPartCodec) {
      plain = DecodeDgtBlocks(req.data[0], be);
      if (plain.ok() && plain->zeros.empty()) {
        elements = plain->elements;
        blocks = plain->blocks;
        values = plain->values;
      }
    } else if ((coded = DecodeDgtBlocks4(req.data[0], be)).ok()) {
      elements = coded->elements;
      blocks = coded->blocks;
      values = coded->values;
    }
    if (elements == 0) {
      ++refused_;
      return;
    }
    size_t offset = 0;
    for (uint32_t b : blocks) {
      const size_t n = BlockLength(be, elements, b);
      AddBlock(meta.sender, wk, meta.round, b, values.subspan(offset, n), elements, now);
      offset += n;
    }
  }
  TryComplete(Id{meta.sender, wk, meta.round}, now, lock);
}

void DgtHandler::Handle(const KvRequest& req, KvServer& server) {
  const Meta& meta = req.meta;
  const bool carries_blocks =
      meta.codec == kDgtBlockCodec || meta.codec == kDgtPartCodec || meta.codec == kDgtPart4Codec;
  if (!carries_blocks && meta.codec != kDgtCodec) return inner_->Handle(req, server);
  const double now = Now();
  std::unique_lock<std::mutex> lock(mu_);
  if (carries_blocks) return HandleBlocks(req, now, lock);
  auto refuse = [&](const Status& s) {
    lock.unlock();
    server.Respond(req, {}, s);
  };
  if (meta.command != Command::kPushPull || meta.keys.size() != 1) {
    return refuse(Status::InvalidArgument("dgt: a request is a pushpull of one wire key"));
  }
  const uint64_t wk = meta.keys[0];
  const KeySlice* slice = layout_.FindWireKey(wk);
  Result<DgtBlocksView> v = DecodeDgtBlocks(req.data[0], options_.plan.block_elements);
  if (!v.ok()) return refuse(v.status());
  if (slice == nullptr || slice->length != v->elements) {
    return refuse(Status::InvalidArgument("dgt: wire key " + std::to_string(wk) + " of " +
                                          std::to_string(v->elements) + " values is not a slice of this server"));
  }
  const Id id{meta.sender, wk, meta.round};
  if (waiting_.count(id) != 0) return refuse(Status::InvalidArgument("dgt: a second request for the same round"));
  // The request's blocks, and zeros for the blocks its sender did not send; its last block starts the deadline.
  const size_t be = options_.plan.block_elements;
  const std::vector<float> zero(be, 0.0f);
  size_t offset = 0;
  std::vector<std::pair<uint32_t, std::span<const float>>> blocks;
  for (uint32_t b : v->blocks) {
    const size_t n = BlockLength(be, v->elements, b);
    blocks.emplace_back(b, v->values.subspan(offset, n));
    offset += n;
  }
  for (uint32_t z : v->zeros) {
    blocks.emplace_back(z, std::span<const float>(zero).first(BlockLength(be, v->elements, z)));
  }
  for (const auto& [b, values] : blocks) AddBlock(meta.sender, wk, meta.round, b, values, v->elements, now);
  waiting_[id] = Waiting{req, &server};
  TryComplete(id, now, lock);
}

void DgtHandler::TryComplete(const Id& id, double now, std::unique_lock<std::mutex>& lock) {
  auto w = waiting_.find(id);
  if (w == waiting_.end()) return;  // blocks only: the request decides
  const auto& [sender, wk, round] = id;
  std::vector<bool> delivered;
  std::optional<std::vector<float>> values = assembler_.TakeIfReady(sender, wk, round, now, &delivered);
  if (!values) {
    if (std::optional<double> due = assembler_.DeadlineOf(sender, wk, round)) {
      if (deadlines_.insert({*due, id}).second) cv_.notify_all();
    }
    return;
  }
  Waiting waiting = std::move(w->second);
  waiting_.erase(w);
  KvRequest dense = std::move(waiting.req);
  dense.meta.codec.clear();
  dense.meta.lens = {static_cast<uint32_t>(values->size())};
  dense.data = {Bytes::Copy(values->data(), values->size() * sizeof(float))};
  dense.reply_body = EncodeDelivered(delivered);
  lock.unlock();
  inner_->Handle(dense, *waiting.server);
  lock.lock();
}

void DgtHandler::DeadlineLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (deadlines_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const auto [due, id] = *deadlines_.begin();
    const double now = Now();
    if (now < due) {
      cv_.wait_for(lock, std::chrono::duration<double>(due - now));
      continue;
    }
    deadlines_.erase(deadlines_.begin());
    TryComplete(id, now, lock);
  }
}

uint64_t DgtHandler::missing_blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return assembler_.missing_blocks();
}

uint64_t DgtHandler::late_blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return assembler_.late_blocks();
}

uint64_t DgtHandler::refused_blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

}  // namespace geomx::comm
