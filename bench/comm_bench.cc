#include "bench/comm_bench.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>

#include <zmq.h>

#include "comm/customer.h"
#include "comm/handlers/aggregate_sink.h"
#include "comm/handlers/sync_aggregator.h"
#include "comm/key_layout.h"
#include "comm/kv_server.h"
#include "comm/kv_worker.h"
#include "comm/node.h"
#include "comm/postoffice.h"
#include "comm/scheduler.h"
#include "comm/zmq_van.h"
#include "engine/base/bytes.h"

namespace geomx::bench {
using comm::IdentitySink;
using comm::KeyLayout;
using comm::KeySpec;
using comm::KvServer;
using comm::KvWorker;
using comm::NodeInfo;
using comm::NodeRole;
using comm::Postoffice;
using comm::Scheduler;
using comm::SyncAggregator;
using comm::TierSpec;
using comm::ZmqContext;
using comm::ZmqVan;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kLoopback = "tcp://127.0.0.1:0";
constexpr int kAppId = 0;
constexpr size_t kMaxBytes = size_t{1} << 30;

std::string ZmqError() { return zmq_strerror(zmq_errno()); }

struct SocketCloser {
  void operator()(void* s) const {
    if (s != nullptr) zmq_close(s);
  }
};
using Socket = std::unique_ptr<void, SocketCloser>;

// A socket with ZmqVan's settings (no linger, unlimited high-water marks) and a receive timeout.
Result<Socket> NewSocket(ZmqContext* ctx, int type, int recv_timeout_ms) {
  Socket s(zmq_socket(ctx->raw(), type));
  if (!s) return Status::Internal("bench raw: zmq_socket: " + ZmqError());
  const int zero = 0;
  if (zmq_setsockopt(s.get(), ZMQ_LINGER, &zero, sizeof(int)) != 0 ||
      zmq_setsockopt(s.get(), ZMQ_SNDHWM, &zero, sizeof(int)) != 0 ||
      zmq_setsockopt(s.get(), ZMQ_RCVHWM, &zero, sizeof(int)) != 0 ||
      zmq_setsockopt(s.get(), ZMQ_RCVTIMEO, &recv_timeout_ms, sizeof(int)) != 0) {
    return Status::Internal("bench raw: zmq_setsockopt: " + ZmqError());
  }
  return s;
}

// Binds `s` to a free loopback port; returns the endpoint.
Result<std::string> BindLoopback(void* s) {
  if (zmq_bind(s, kLoopback) != 0) {
    return Status::Unavailable(std::string("bench raw: bind ") + kLoopback + ": " + ZmqError());
  }
  char endpoint[256];
  size_t size = sizeof(endpoint);
  if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, endpoint, &size) != 0) {
    return Status::Internal("bench raw: ZMQ_LAST_ENDPOINT: " + ZmqError());
  }
  return std::string(endpoint);
}

// Zero-copy frame over a Bytes, exactly as ZmqVan sends data frames: ZeroMQ holds a reference to the owner until
// the bytes are on the wire.
void ReleaseOwner(void* /*data*/, void* hint) {
  std::unique_ptr<std::shared_ptr<const void>> owner(static_cast<std::shared_ptr<const void>*>(hint));
}
bool InitFrame(const Bytes& b, zmq_msg_t* zm) {
  auto owner = std::make_unique<std::shared_ptr<const void>>(b.owner());
  if (zmq_msg_init_data(zm, const_cast<uint8_t*>(b.data()), b.size(), ReleaseOwner, owner.get()) != 0) return false;
  owner.release();  // ZeroMQ's now
  return true;
}

// The raw side: PUSH/PULL each way, like ZmqVan's sockets; the echo thread sends back what it received.
// Sockets are created here and then used by one thread each (the caller: client_*, the echo thread: echo_*).
class RawPingPong {
 public:
  explicit RawPingPong(int timeout_ms) : timeout_ms_(timeout_ms) {}
  ~RawPingPong() {
    stop_ = true;
    if (echo_.joinable()) echo_.join();  // the echo socket's receive timeout bounds this to ~100 ms
  }
  RawPingPong(const RawPingPong&) = delete;
  RawPingPong& operator=(const RawPingPong&) = delete;

  Status Start(ZmqContext* ctx) {
    GEOMX_ASSIGN_OR_RETURN(client_in_, NewSocket(ctx, ZMQ_PULL, timeout_ms_));
    GEOMX_ASSIGN_OR_RETURN(client_out_, NewSocket(ctx, ZMQ_PUSH, timeout_ms_));
    GEOMX_ASSIGN_OR_RETURN(echo_in_, NewSocket(ctx, ZMQ_PULL, /*recv_timeout_ms=*/100));
    GEOMX_ASSIGN_OR_RETURN(echo_out_, NewSocket(ctx, ZMQ_PUSH, timeout_ms_));
    GEOMX_ASSIGN_OR_RETURN(std::string client_ep, BindLoopback(client_in_.get()));
    GEOMX_ASSIGN_OR_RETURN(std::string echo_ep, BindLoopback(echo_in_.get()));
    if (zmq_connect(client_out_.get(), echo_ep.c_str()) != 0 || zmq_connect(echo_out_.get(), client_ep.c_str()) != 0) {
      return Status::Unavailable("bench raw: connect: " + ZmqError());
    }
    echo_ = std::thread([this] { EchoLoop(); });
    return Status::Ok();
  }

  // Seconds for `iterations` round trips of `payload`, after `warmup` untimed ones. spin_us > 0: the client waits
  // for each echo as KvWorker::Wait does (comm/customer.h): it polls (non-blocking receive, yielding the CPU between
  // looks) for up to spin_us microseconds before it blocks; 0: it blocks at once.
  Result<double> Time(const Bytes& payload, int warmup, int iterations, int spin_us) {
    Clock::time_point t0 = Clock::now();
    for (int i = 0; i < warmup + iterations; ++i) {
      if (i == warmup) t0 = Clock::now();
      zmq_msg_t out;
      if (!InitFrame(payload, &out)) return Status::ResourceExhausted("bench raw: zmq_msg_init_data: " + ZmqError());
      if (zmq_msg_send(&out, client_out_.get(), 0) < 0) {
        zmq_msg_close(&out);
        return Status::Internal("bench raw: send: " + ZmqError());
      }
      zmq_msg_t in;
      zmq_msg_init(&in);
      int rc = ReceivePolling(&in, spin_us);
      while (rc < 0 && (rc = zmq_msg_recv(&in, client_in_.get(), 0)) < 0 && zmq_errno() == EINTR) {
      }
      const size_t got = zmq_msg_size(&in);
      zmq_msg_close(&in);
      if (rc < 0) {
        return Status::DeadlineExceeded("bench raw: no echo of " + std::to_string(payload.size()) + " bytes within " +
                                        std::to_string(timeout_ms_) + " ms (round trip " + std::to_string(i) + ")");
      }
      if (got != payload.size()) {
        return Status::DataLoss("bench raw: echo of " + std::to_string(got) + " bytes, sent " +
                                std::to_string(payload.size()));
      }
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

 private:
  // Non-blocking receives for up to spin_us; the result of the last one (< 0: nothing came).
  int ReceivePolling(zmq_msg_t* in, int spin_us) {
    if (spin_us <= 0) return -1;
    const Clock::time_point until = Clock::now() + std::chrono::microseconds(spin_us);
    int rc;
    while ((rc = zmq_msg_recv(in, client_in_.get(), ZMQ_DONTWAIT)) < 0 && Clock::now() < until) {
      std::this_thread::yield();
    }
    return rc;
  }

  void EchoLoop() {
    while (!stop_) {
      zmq_msg_t m;
      zmq_msg_init(&m);
      // Blocking receive (timeout 100 ms, to see stop_): the tightest loop ZeroMQ offers. The received message is
      // sent on as is, without a copy.
      if (zmq_msg_recv(&m, echo_in_.get(), 0) >= 0) zmq_msg_send(&m, echo_out_.get(), 0);
      zmq_msg_close(&m);
    }
  }

  const int timeout_ms_;
  Socket client_in_, client_out_, echo_in_, echo_out_;
  std::atomic<bool> stop_{false};
  std::thread echo_;
};

// Runs `fn` for both nodes at once (Start, Barrier and Finalize block until the other node does the same).
Status OnBoth(Postoffice* a, Postoffice* b, const std::function<Status(Postoffice*)>& fn) {
  Status sa;
  std::thread t([&] { sa = fn(a); });
  Status sb = fn(b);
  t.join();
  return sa.ok() ? sb : sa;
}

// The kv side: a one-tier parameter server over ZmqVan tcp, every node on its own threads.
// Destruction without Finalize (error paths) stops every thread: members are declared in dependency order.
class KvTier {
 public:
  explicit KvTier(ZmqContext* ctx) : scheduler_van_(ctx), server_van_(ctx), worker_van_(ctx) {}
  KvTier(const KvTier&) = delete;
  KvTier& operator=(const KvTier&) = delete;

  Status Start(const std::vector<size_t>& sizes, const CommBenchOptions& o) {
    TierSpec spec;
    spec.name = "bench";
    spec.num_servers = 1;
    spec.num_workers = 1;
    spec.options.rendezvous_timeout_ms = o.timeout_ms;
    spec.options.request_timeout_ms = o.timeout_ms;
    spec.options.split_bytes = o.split_bytes;
    scheduler_ = std::make_unique<Scheduler>(spec, &scheduler_van_);
    GEOMX_ASSIGN_OR_RETURN(spec.scheduler_endpoint, scheduler_->Start(kLoopback));
    std::vector<KeySpec> keys;
    for (size_t i = 0; i < sizes.size(); ++i) keys.push_back({.key = i, .elems = sizes[i] / sizeof(float)});
    GEOMX_ASSIGN_OR_RETURN(KeyLayout layout, KeyLayout::Build(keys, 1, o.split_bytes));
    GEOMX_ASSIGN_OR_RETURN(aggregator_,
                           SyncAggregator::Create(layout, {.expected_senders = 1, .reducer = "sum"}, &sink_));
    server_po_ = std::make_unique<Postoffice>(
        spec, NodeInfo{.role = NodeRole::kServer, .rank = 0, .name = "bench/server0", .party = "bench"}, &server_van_);
    worker_po_ = std::make_unique<Postoffice>(
        spec, NodeInfo{.role = NodeRole::kWorker, .rank = 0, .name = "bench/worker0", .party = "bench"}, &worker_van_);
    server_ = std::make_unique<KvServer>(server_po_.get(), kAppId, aggregator_.get());
    worker_ = std::make_unique<KvWorker>(worker_po_.get(), kAppId, layout);
    GEOMX_RETURN_IF_ERROR(
        OnBoth(server_po_.get(), worker_po_.get(), [](Postoffice* po) { return po->Start(kLoopback); }));
    return OnBoth(server_po_.get(), worker_po_.get(), [](Postoffice* po) { return po->Barrier("all"); });
  }

  // Seconds for `iterations` PushPulls of `payload` as key `key`, after `warmup` untimed ones. Checks that the
  // answer is what was pushed (IdentitySink of one sender's sum).
  Result<double> Time(uint64_t key, const Bytes& payload, int warmup, int iterations) {
    out_.assign(payload.size() / sizeof(float), -1.0f);
    const uint64_t keys[1] = {key};
    const Bytes values[1] = {payload};
    float* const outs[1] = {out_.data()};
    Clock::time_point t0 = Clock::now();
    for (int i = 0; i < warmup + iterations; ++i) {
      if (i == warmup) t0 = Clock::now();
      const int64_t ts = worker_->PushPull(std::span<const uint64_t>(keys), std::span<const Bytes>(values),
                                           std::span<float* const>(outs), round_++);
      GEOMX_RETURN_IF_ERROR(
          worker_->Wait(ts).WithContext("bench kv: PushPull of " + std::to_string(payload.size()) + " bytes"));
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (std::memcmp(out_.data(), payload.data(), payload.size()) != 0) {
      return Status::Internal("bench kv: the answer to a PushPull of " + std::to_string(payload.size()) +
                              " bytes differs from the pushed value");
    }
    return seconds;
  }

  // Goodbye of both nodes, then the scheduler's result.
  Status Finalize() {
    worker_.reset();
    server_.reset();
    Status nodes = OnBoth(server_po_.get(), worker_po_.get(), [](Postoffice* po) { return po->Finalize(); });
    if (!nodes.ok()) scheduler_->Stop();
    Status sched = scheduler_->Wait();
    return nodes.ok() ? sched : nodes;
  }

 private:
  ZmqVan scheduler_van_, server_van_, worker_van_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Postoffice> server_po_, worker_po_;
  IdentitySink sink_;
  std::unique_ptr<SyncAggregator> aggregator_;
  std::unique_ptr<KvServer> server_;
  std::unique_ptr<KvWorker> worker_;
  std::vector<float> out_;
  int64_t round_ = 0;  // one counter for all keys: every PushPull opens a fresh round of its key
};

Status Validate(const CommBenchOptions& o) {
  if (o.sizes.empty()) return Status::InvalidArgument("sizes: give at least one message size");
  for (size_t n : o.sizes) {
    if (n < sizeof(float) || n % sizeof(float) != 0 || n > kMaxBytes) {
      return Status::InvalidArgument("sizes: " + std::to_string(n) +
                                     " bytes is not a multiple of 4 in [4, 1 GiB] (the kv side sends f32 values)");
    }
  }
  if (o.iterations < 0) return Status::InvalidArgument("iterations: must be >= 0 (0 = by size)");
  if (o.warmup < -1) return Status::InvalidArgument("warmup: must be >= 0 (-1 = by iterations)");
  if (o.repeats < 1) return Status::InvalidArgument("repeats: must be >= 1");
  if (o.io_threads < 1) return Status::InvalidArgument("io_threads: must be >= 1");
  if (o.timeout_ms < 1) return Status::InvalidArgument("timeout_ms: must be >= 1");
  return Status::Ok();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

Result<CommBenchRow> MeasureSize(RawPingPong& raw, KvTier& kv, uint64_t key, size_t bytes, const CommBenchOptions& o) {
  CommBenchRow row;
  row.bytes = bytes;
  row.iterations =
      o.iterations > 0 ? o.iterations : static_cast<int>(std::clamp<size_t>((size_t{200} << 20) / bytes, 20, 2000));
  const int warmup = o.warmup >= 0 ? o.warmup : std::max(2, row.iterations / 10);
  Bytes payload(bytes);
  float* f = reinterpret_cast<float*>(payload.mutable_data());
  for (size_t i = 0; i < bytes / sizeof(float); ++i) f[i] = 0.5f * static_cast<float>(i % 4096);
  std::vector<double> raw_s, poll_s, kv_s, ratios, blocking_ratios;
  for (int r = 0; r < o.repeats; ++r) {
    // The order rotates from repeat to repeat, so that no path is always timed first or last.
    double rs = 0, ps = 0, ks = 0;
    for (int j = 0; j < 3; ++j) {
      const int path = (r + j) % 3;
      Result<double> t = path == 0   ? raw.Time(payload, warmup, row.iterations, /*spin_us=*/0)
                         : path == 1 ? raw.Time(payload, warmup, row.iterations, comm::Customer::kDefaultSpinUs)
                                     : kv.Time(key, payload, warmup, row.iterations);
      if (!t.ok()) return t.status();
      (path == 0 ? rs : path == 1 ? ps : ks) = *t;
    }
    raw_s.push_back(rs);
    poll_s.push_back(ps);
    kv_s.push_back(ks);
    // Back-to-back timings see (nearly) the same load from other processes.
    ratios.push_back(ps / ks);
    blocking_ratios.push_back(rs / ks);
  }
  const double raw_t = Median(raw_s);
  const double poll_t = Median(poll_s);
  const double kv_t = Median(kv_s);
  const double moved_mb = 2.0 * static_cast<double>(bytes) * row.iterations / 1e6;
  row.raw_zmq_mb_s = moved_mb / raw_t;
  row.raw_poll_mb_s = moved_mb / poll_t;
  row.kv_mb_s = moved_mb / kv_t;
  row.ratio = Median(ratios);
  row.ratio_min = *std::min_element(ratios.begin(), ratios.end());
  row.ratio_max = *std::max_element(ratios.begin(), ratios.end());
  row.ratio_blocking = Median(blocking_ratios);
  row.raw_us_per_roundtrip = raw_t / row.iterations * 1e6;
  row.raw_poll_us_per_roundtrip = poll_t / row.iterations * 1e6;
  row.kv_us_per_roundtrip = kv_t / row.iterations * 1e6;
  return row;
}

}  // namespace

Result<std::vector<CommBenchRow>> RunCommBench(const CommBenchOptions& options) {
  GEOMX_RETURN_IF_ERROR(Validate(options));
  // Declared in dependency order: destroyed kv, raw, then the context (which waits for their sockets).
  ZmqContext ctx(options.io_threads);
  RawPingPong raw(options.timeout_ms);
  GEOMX_RETURN_IF_ERROR(raw.Start(&ctx));
  KvTier kv(&ctx);
  GEOMX_RETURN_IF_ERROR(kv.Start(options.sizes, options));
  std::vector<CommBenchRow> rows;
  for (size_t i = 0; i < options.sizes.size(); ++i) {
    GEOMX_ASSIGN_OR_RETURN(CommBenchRow row, MeasureSize(raw, kv, i, options.sizes[i], options));
    rows.push_back(row);
  }
  GEOMX_RETURN_IF_ERROR(kv.Finalize());
  return rows;
}

}  // namespace geomx::bench
