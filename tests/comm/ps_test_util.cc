#include "ps_test_util.h"

#include <thread>
#include <utility>

#include <zmq.h>

namespace geomx::comm::testing {
namespace {

class LoopbackTransport : public Transport {
 public:
  std::unique_ptr<Van> NewVan() override { return std::make_unique<LoopbackVan>(&net_); }
  std::string Address(const std::string& name) const override { return "loop://" + name; }
  LoopbackNetwork* loopback() override { return &net_; }

 private:
  LoopbackNetwork net_;
};

class ZmqTransport : public Transport {
 public:
  std::unique_ptr<Van> NewVan() override { return std::make_unique<ZmqVan>(&ctx_); }
  void Renew() override { ++generation_; }
  std::string Address(const std::string& name) const override {
    std::string s = "inproc://g" + std::to_string(generation_) + "-";
    for (char c : name) s += c == '/' ? '-' : c;
    return s;
  }
  ZmqContext* zmq() override { return &ctx_; }

 private:
  ZmqContext ctx_;
  int generation_ = 0;
};

}  // namespace

CommOptions FastOptions() {
  CommOptions o;
  o.rendezvous_timeout_ms = 3000;
  o.request_timeout_ms = 3000;
  o.heartbeat_interval_ms = 50;
  o.heartbeat_timeout_ms = 1500;
  o.split_bytes = 256;
  return o;
}

std::unique_ptr<Transport> MakeTransport(const std::string& kind) {
  if (kind == "zmq") return std::make_unique<ZmqTransport>();
  return std::make_unique<LoopbackTransport>();
}

TierSpec MakeSpec(Transport& t, const std::string& name, int servers, int workers, CommOptions options) {
  TierSpec spec;
  spec.name = name;
  spec.scheduler_endpoint = t.Address(name + "/scheduler");
  spec.num_servers = servers;
  spec.num_workers = workers;
  spec.options = options;
  return spec;
}

void SendRawFramesForTesting(ZmqContext& ctx, const std::string& endpoint,
                             const std::vector<std::vector<std::string>>& messages) {
  void* sock = zmq_socket(ctx.raw(), ZMQ_PUSH);
  GEOMX_CHECK(sock != nullptr);
  GEOMX_CHECK_EQ(zmq_connect(sock, endpoint.c_str()), 0) << zmq_strerror(zmq_errno());
  for (const auto& frames : messages) {
    for (size_t i = 0; i < frames.size(); ++i) {
      const int flags = i + 1 < frames.size() ? ZMQ_SNDMORE : 0;
      GEOMX_CHECK_GE(zmq_send(sock, frames[i].data(), frames[i].size(), flags), 0);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // let the frames leave before closing
  int linger = 0;
  zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
  zmq_close(sock);
}

void SendMessagesForTesting(Transport& t, const std::string& endpoint, const std::vector<Message>& messages) {
  std::unique_ptr<Van> van = t.NewVan();
  GEOMX_CHECK_OK(van->Connect(999, endpoint, LinkClass::kLan, ""));
  for (const Message& m : messages) GEOMX_CHECK(van->Send(999, m).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
}

std::vector<Status> RunConcurrently(const std::vector<std::function<Status()>>& fns) {
  std::vector<Status> out(fns.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < fns.size(); ++i) threads.emplace_back([&, i] { out[i] = fns[i](); });
  for (auto& th : threads) th.join();
  return out;
}

TestTier::TestTier(Transport& t, TierSpec spec, std::vector<std::string> worker_parties)
    : t_(t), spec_(std::move(spec)) {
  for (int r = 0; r < spec_.num_servers; ++r) {
    NodeInfo n;
    n.role = NodeRole::kServer;
    n.rank = r;
    n.name = r < static_cast<int>(spec_.server_names.size()) ? spec_.server_names[r]
                                                              : spec_.name + "/server" + std::to_string(r);
    n.party = spec_.scheduler_party.empty() ? spec_.name : spec_.scheduler_party;
    TestNode node;
    node.van = t_.NewVan();
    node.address = t_.Address(spec_.name + "@" + n.name);
    node.po = std::make_unique<Postoffice>(spec_, n, node.van.get());
    servers_.push_back(std::move(node));
  }
  for (int r = 0; r < spec_.num_workers; ++r) {
    NodeInfo n;
    n.role = NodeRole::kWorker;
    n.rank = r;
    n.name = r < static_cast<int>(spec_.worker_names.size()) ? spec_.worker_names[r]
                                                              : spec_.name + "/worker" + std::to_string(r);
    n.party = r < static_cast<int>(worker_parties.size()) ? worker_parties[r] : spec_.name;
    TestNode node;
    node.van = t_.NewVan();
    node.address = t_.Address(spec_.name + "@" + n.name);
    node.po = std::make_unique<Postoffice>(spec_, n, node.van.get());
    workers_.push_back(std::move(node));
  }
}

TestTier::~TestTier() {
  // Postoffices first (they borrow the vans), then the scheduler.
  for (auto& n : servers_) n.po.reset();
  for (auto& n : workers_) n.po.reset();
  if (scheduler_) scheduler_->Stop();
  scheduler_.reset();
}

std::vector<Postoffice*> TestTier::all() {
  std::vector<Postoffice*> out;
  for (auto& n : servers_) out.push_back(n.po.get());
  for (auto& n : workers_) out.push_back(n.po.get());
  return out;
}

Status TestTier::StartScheduler() {
  scheduler_van_ = t_.NewVan();
  scheduler_ = std::make_unique<Scheduler>(spec_, scheduler_van_.get());
  Result<std::string> ep = scheduler_->Start(spec_.scheduler_endpoint);
  return ep.status();
}

Status TestTier::Start() {
  GEOMX_RETURN_IF_ERROR(StartScheduler());
  std::vector<std::function<Status()>> fns;
  for (auto& n : servers_) fns.push_back([&n] { return n.po->Start(n.address); });
  for (auto& n : workers_) fns.push_back([&n] { return n.po->Start(n.address); });
  for (const Status& s : RunConcurrently(fns)) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status TestTier::Finalize() {
  std::vector<std::function<Status()>> fns;
  for (Postoffice* po : all()) fns.push_back([po] { return po->Finalize(); });
  Status first;
  for (const Status& s : RunConcurrently(fns)) {
    if (!s.ok() && first.ok()) first = s;
  }
  Status sched = SchedulerResult();
  return first.ok() ? sched : first;
}

Status TestTier::SchedulerResult() {
  if (!scheduler_) return Status::FailedPrecondition("scheduler not started");
  if (!scheduler_waited_) {
    scheduler_status_ = scheduler_->Wait();
    scheduler_waited_ = true;
  }
  return scheduler_status_;
}

}  // namespace geomx::comm::testing
