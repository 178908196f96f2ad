// One parameter-server role per process: ZeroMQ over TCP, shaped by the recipe's links (in-process WAN
// emulation), with this process's traffic published to <run>/traffic/<process>.json every second and at exit.
#include "cli/roles.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/cluster.h"
#include "cli/role_command.h"
#include "cli/run_report.h"
#include "cli/security.h"
#include "comm/shaped_van.h"
#include "comm/zmq_van.h"
#include "engine/base/logging.h"

namespace geomx::cli {
namespace {

// Publishes the counters periodically so the evaluating worker's metrics show live traffic.
class TrafficPublisher {
 public:
  TrafficPublisher(std::filesystem::path path, const comm::TrafficCounters* counters)
      : path_(std::move(path)), counters_(counters) {
    if (!path_.empty()) thread_ = std::thread([this] { Loop(); });
  }
  ~TrafficPublisher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (!path_.empty()) Publish();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
      lock.unlock();
      Publish();
      lock.lock();
    }
  }
  void Publish() {
    Status s = WriteTrafficFile(path_, counters_->Snapshot());
    if (!s.ok()) GEOMX_LOG(kWarning) << "traffic: " << s.ToString();
  }

  const std::filesystem::path path_;
  const comm::TrafficCounters* counters_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

// ZeroMQ binds only addresses and interface names: a party's host given as a name (a compose service, a Kubernetes
// Service, an /etc/hosts entry) is resolved to its IPv4 address here, for binds and connects alike. A name that
// does not resolve is returned as it is, and the bind or connect reports it.
std::string NumericHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return host;
  char text[INET_ADDRSTRLEN] = {};
  const auto* address = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  const bool ok = inet_ntop(AF_INET, &address->sin_addr, text, sizeof text) != nullptr;
  freeaddrinfo(found);
  return ok ? std::string(text) : host;
}

const std::string& HostOf(const Recipe& recipe, const std::string& party) {
  static const std::string kNone;
  for (const auto& dc : recipe.topology.datacentres) {
    if (dc.name == party) return dc.host;
  }
  return kNone;
}

std::string FileSafe(std::string name) {
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  return name;
}

}  // namespace

Status RunRole(const Recipe& recipe_in, const RoleSpec& spec, const std::atomic<bool>* interrupted) {
  if (!recipe_in.has_topology) return Status::InvalidArgument("this role needs a recipe with a topology section");
  GEOMX_RETURN_IF_ERROR(CheckTopologyTraining(recipe_in));
  // threads: 0 (all cores) would oversubscribe a host that runs several roles: a worker gets its share of the
  // host's cores, every other role one thread.
  Recipe recipe = recipe_in;
  if (recipe.threads == 0) {
    int on_host = 0;
    const std::string& host = spec.kind == RoleSpec::Kind::kWorker ? HostOf(recipe, spec.party) : "";
    for (const auto& dc : recipe.topology.datacentres) on_host += dc.host == host ? dc.workers : 0;
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    recipe.threads = spec.kind == RoleSpec::Kind::kWorker ? std::max(1, cores / std::max(1, on_host)) : 1;
  }
  const std::string name = ProcessName(spec);
  // Security (docs/security.md): every van of this process authenticates with the process's key and admits only
  // the job's members.
  GEOMX_ASSIGN_OR_RETURN(std::optional<ProcessSecurity> security, LoadProcessSecurity(recipe, name));
  comm::ZmqContext context;
  comm::ZmqVanOptions van_options;
  // DGT's low-priority blocks over UDP (sealed with the keys), or on a TCP connection per channel.
  const bool dgt_datagrams = recipe.accelerators.dgt_mode == "unreliable";
  van_options.datagrams = recipe.accelerators.dgt && dgt_datagrams;
  van_options.priority_channels =
      recipe.accelerators.dgt && !dgt_datagrams ? static_cast<int>(recipe.accelerators.dgt_channels) : 0;
  if (security) {
    std::map<std::string, std::string> admitted;  // public key -> member
    for (const auto& [member, key] : security->public_keys) admitted[key] = member;
    GEOMX_RETURN_IF_ERROR(context.EnableCurve(std::move(admitted)));
    van_options.curve = security->identity;
    van_options.peer_keys =
        std::make_shared<const std::map<std::string, std::string>>(std::move(security->public_keys));
  }
  comm::TrafficCounters traffic;
  ClusterEnv env;
  const comm::NetworkShape network = recipe.topology.Network();
  const uint64_t seed = recipe.seed;
  env.make_van = [&context, &traffic, network, seed, van_options](const std::string& node) {
    comm::ShapedVanOptions shaping{.network = network, .self_party = comm::PartyOfNode(node),
                                   .seed = seed ^ std::hash<std::string>()(node)};
    return std::unique_ptr<comm::Van>(std::make_unique<comm::ShapedVan>(
        std::make_unique<comm::ZmqVan>(&context, van_options), std::move(shaping), &traffic));
  };
  env.scheduler_endpoint = [](const std::string&, const std::string& host, int port) {
    return "tcp://" + NumericHost(host) + ":" + std::to_string(port);
  };
  env.node_bind = [](const std::string&, const std::string& host) { return "tcp://" + NumericHost(host) + ":0"; };
  env.traffic = &traffic;
  env.out_dir = spec.out_dir;
  env.resume = spec.resume;
  if (!spec.out_dir.empty()) env.snapshot_dir = (std::filesystem::path(spec.out_dir) / "snapshots").string();
  if (!spec.out_dir.empty() && recipe.accelerators.tsengine) {
    // TSEngine: each coordinating server's overlay of each round (global servers; local servers with the tier
    // inside data centres), one line each (O_APPEND: whole lines from every server process).
    const std::string path = (std::filesystem::path(spec.out_dir) / "overlays.jsonl").string();
    env.on_overlay = [path](const std::string& line) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      const std::string text = line + "\n";
      if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
        GEOMX_LOG(kWarning) << "tsengine: cannot append to " << path;
      }
      if (fd >= 0) ::close(fd);
    };
  }
  SetLogPrefix("");  // the launcher prefixes every line with the process name
  TrafficPublisher publisher(
      spec.out_dir.empty() ? std::filesystem::path() : std::filesystem::path(spec.out_dir) / "traffic" /
                                                           (FileSafe(name) + ".json"),
      &traffic);

  using Kind = RoleSpec::Kind;
  switch (spec.kind) {
    case Kind::kGlobalScheduler: return RunGlobalScheduler(recipe, env);
    case Kind::kGlobalServer: return RunGlobalServer(recipe, spec.rank, env);
    case Kind::kScheduler: return RunScheduler(recipe, spec.party, env);
    case Kind::kServer: return RunLocalServer(recipe, spec.party, spec.rank, env);
    case Kind::kMasterWorker: return RunMasterWorker(recipe, env);
    case Kind::kWorker: return RunWorker(recipe, spec.party, spec.rank, env, interrupted);
    case Kind::kStateServer: return RunStateServer(recipe, env);
  }
  return Status::Internal("unknown role");
}

}  // namespace geomx::cli
