#include "bench/netns.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "cli/launcher.h"
#include "cli/recipe_units.h"
#include "cli/train_command.h"

namespace geomx::bench {
namespace {

std::string Join(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

// Runs commands through cli::Launcher (own process group, PR_SET_PDEATHSIG: nothing outlives the harness).
// Not thread-safe; call from the thread that outlives the spawned helpers (PR_SET_PDEATHSIG follows the thread).
class SystemRunner final : public CommandRunner {
 public:
  Result<std::string> Run(const std::vector<std::string>& argv) override {
    Result<std::string> out = cli::RunAndCapture(argv);
    if (!out.ok()) return Status::Internal(out.status().message());
    return out;
  }

  Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& ready_word) override {
    auto helper = std::make_unique<Helper>();
    Helper* h = helper.get();  // the sink writes into the helper it belongs to; both live in helpers_
    cli::LauncherOptions options;
    options.grace_period_ms = 3000;
    options.prefix_lines = false;
    options.sink = [h](std::string_view line) {  // its last lines come back in WaitUntil's errors
      h->ready = h->ready || line.find(h->ready_word) != std::string_view::npos;
    };
    h->ready_word = ready_word;
    h->launcher = std::make_unique<cli::Launcher>(std::move(options));
    GEOMX_RETURN_IF_ERROR(h->launcher->Start({cli::ChildSpec{"helper", argv}}));
    Status st = h->launcher->WaitUntil([h] { return h->ready; }, std::chrono::seconds(15));
    if (!st.ok()) return Status::Internal(Join(argv) + ": " + st.message());  // ~Launcher kills it
    const pid_t pid = h->launcher->pids().front();
    helpers_[pid] = std::move(helper);
    return pid;
  }

  // SIGINT, then SIGTERM and SIGKILL 3 s apart (Launcher::Wait); reaps it.
  void Kill(pid_t pid) override {
    auto it = helpers_.find(pid);
    if (it == helpers_.end()) return;
    const std::atomic<bool> stop{true};
    (void)it->second->launcher->Wait(&stop);
    helpers_.erase(it);
  }

 private:
  struct Helper {
    std::string ready_word;
    bool ready = false;
    std::unique_ptr<cli::Launcher> launcher;
  };
  std::map<pid_t, std::unique_ptr<Helper>> helpers_;
};

bool OnPath(const char* tool) {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    if (access((std::string(dir) + "/" + tool).c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<CommandRunner> SystemCommandRunner() { return std::make_unique<SystemRunner>(); }

NetnsShaper::NetnsShaper(std::unique_ptr<CommandRunner> runner, std::string prefix)
    : runner_(std::move(runner)), prefix_(std::move(prefix)) {}

NetnsShaper::~NetnsShaper() { (void)Teardown(); }

Status NetnsShaper::CheckCanRun() {
  if (geteuid() != 0) {
    return Status::InvalidArgument(
        "--netns needs root (it creates network namespaces, veth/TUN links and tc qdiscs); run as root, or drop "
        "--netns to use the in-process WAN emulator");
  }
  for (const char* tool : {"ip", "tc"}) {
    if (!OnPath(tool)) {
      return Status::InvalidArgument(std::string("--netns: '") + tool +
                                     "' not found (Debian package iproute2: scripts/install-deps.sh --bench)");
    }
  }
  return Status::Ok();
}

std::vector<std::string> NetnsShaper::RemoveStale(CommandRunner* runner) {
  std::vector<std::string> removed;
  auto list = runner->Run({"ip", "netns", "list"});
  if (!list.ok()) return removed;
  size_t pos = 0;
  while (pos < list->size()) {
    const size_t eol = std::min(list->find('\n', pos), list->size());
    const std::string line = list->substr(pos, eol - pos);
    pos = eol + 1;
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind("gmx", 0) != 0) continue;
    const size_t dash = name.find('-');
    if (dash == std::string::npos || dash == 3) continue;
    const std::string digits = name.substr(3, dash - 3);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(digits.c_str()));
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // its harness still runs
    if (runner->Run({"ip", "netns", "del", name}).ok()) removed.push_back(name);
  }
  return removed;
}

std::vector<std::string> InProcessWanOff(const cli::Recipe& recipe) {
  std::vector<std::string> sets = {"topology.links.wan.bandwidth=0", "topology.links.wan.latency=0",
                                   "topology.links.wan.loss=0"};
  for (size_t i = 0; i < recipe.topology.datacentres.size(); ++i) {
    for (const char* field : {"bandwidth", "latency", "loss"}) {
      sets.push_back("topology.datacentres[" + std::to_string(i) + "]." + field + "=0");
    }
  }
  if (!recipe.topology.direct_links.empty()) sets.push_back("topology.links.direct=[]");
  return sets;
}

Status NetnsShaper::AddLink(const LinkEnd& x, const LinkEnd& y, const comm::LinkOptions& link,
                            const std::string& python, const std::string& delay_line, uint64_t seed) {
  auto run = [&](std::vector<std::string> argv) -> Status {
    auto r = runner_->Run(argv);
    return r.ok() ? Status::Ok() : r.status();
  };
  if (link.latency_s > 0 || link.loss > 0) {
    // The user-space delay line delays (and drops) packets: this kernel has no netem.
    char delay[32], loss[32];
    std::snprintf(delay, sizeof(delay), "%.6f", link.latency_s);
    std::snprintf(loss, sizeof(loss), "%.6f", link.loss);
    GEOMX_ASSIGN_OR_RETURN(pid_t pid, runner_->Spawn({python, delay_line, x.dev, y.dev, delay, loss,
                                                      std::to_string(seed)}, "ready"));
    created_.push_back("process " + std::to_string(pid));
  } else {
    GEOMX_RETURN_IF_ERROR(run({"ip", "link", "add", x.dev, "type", "veth", "peer", "name", y.dev}));
    created_.push_back("link " + x.dev);
  }
  for (const LinkEnd& e : {x, y}) {
    GEOMX_RETURN_IF_ERROR(run({"ip", "link", "set", e.dev, "netns", e.ns}));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", e.ns, "addr", "add", e.address + "/24", "dev", e.dev}));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", e.ns, "link", "set", e.dev, "up"}));
    if (link.bandwidth_bps > 0) {
      GEOMX_RETURN_IF_ERROR(run({"ip", "netns", "exec", e.ns, "tc", "qdisc", "add", "dev", e.dev, "root", "tbf",
                                 "rate", cli::BandwidthText(link.bandwidth_bps), "burst", "64kb", "latency", "400ms"}));
    }
  }
  wan_ends_.push_back(x);
  return Status::Ok();
}

namespace {

constexpr const char* kTcpCc = "net.ipv4.tcp_congestion_control";

std::string TrimmedLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

Status NetnsShaper::Setup(const cli::Recipe& recipe, const std::string& python, const std::string& delay_line,
                          const std::string& tcp_cc) {
  const comm::Topology& t = recipe.topology;
  const comm::NetworkShape network = t.Network();
  bool needs_delay_line = false;
  for (const auto& [dc, link] : network.uplinks) needs_delay_line |= link.latency_s > 0 || link.loss > 0;
  for (const auto& [pair, link] : network.direct) needs_delay_line |= link.latency_s > 0 || link.loss > 0;
  if (needs_delay_line && !std::filesystem::exists(delay_line)) {
    return Status::NotFound("--netns: the delay line " + delay_line + " is missing");
  }
  auto run = [&](std::vector<std::string> argv) -> Status {
    auto r = runner_->Run(argv);
    return r.ok() ? Status::Ok() : r.status();
  };
  auto add_ns = [&](const std::string& ns) -> Status {
    GEOMX_RETURN_IF_ERROR(run({"ip", "netns", "add", ns}));
    created_.push_back("netns " + ns);
    return run({"ip", "-n", ns, "link", "set", "lo", "up"});
  };
  if (!tcp_cc.empty()) {
    GEOMX_ASSIGN_OR_RETURN(std::string offered,
                           runner_->Run({"sysctl", "-n", "net.ipv4.tcp_available_congestion_control"}));
    offered = " " + TrimmedLine(offered) + " ";
    if (tcp_cc.find(' ') != std::string::npos || offered.find(" " + tcp_cc + " ") == std::string::npos) {
      return Status::InvalidArgument("--tcp-cc " + tcp_cc + ": this kernel offers" + TrimmedLine(offered));
    }
    GEOMX_ASSIGN_OR_RETURN(std::string host, runner_->Run({"sysctl", "-n", kTcpCc}));
    host = TrimmedLine(host);
    if (host != tcp_cc) {
      GEOMX_RETURN_IF_ERROR(run({"sysctl", "-qw", std::string(kTcpCc) + "=" + tcp_cc}));
      restore_cc_ = host;
    }
  }
  const std::string central_ns = prefix_ + "-c";
  GEOMX_RETURN_IF_ERROR(add_ns(central_ns));
  GEOMX_RETURN_IF_ERROR(run({"ip", "netns", "exec", central_ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"}));
  for (size_t i = 0; i < t.datacentres.size(); ++i) {
    const std::string& name = t.datacentres[i].name;
    const std::string ns = prefix_ + "-d" + std::to_string(i);
    const std::string net = "10.203." + std::to_string(i + 1) + ".";
    GEOMX_RETURN_IF_ERROR(add_ns(ns));
    const LinkEnd central{central_ns, prefix_ + "c" + std::to_string(i), net + "1"};
    const LinkEnd dc{ns, prefix_ + "d" + std::to_string(i), net + "2"};
    GEOMX_RETURN_IF_ERROR(AddLink(central, dc, network.Uplink(name), python, delay_line, recipe.seed + i));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", ns, "route", "add", "default", "via", net + "1"}));
    parties_[name] = PartyNet{ns, net + "2", dc.dev};
    if (i == 0) parties_["central"] = PartyNet{central_ns, net + "1", central.dev};
  }
  if (!restore_cc_.empty()) {  // every namespace exists: the host gets its default back
    GEOMX_RETURN_IF_ERROR(run({"sysctl", "-qw", std::string(kTcpCc) + "=" + restore_cc_}));
    restore_cc_.clear();
  }
  if (!tcp_cc.empty()) {
    for (const auto& [party, p] : parties_) {
      GEOMX_ASSIGN_OR_RETURN(std::string got, runner_->Run({"ip", "netns", "exec", p.ns, "sysctl", "-n", kTcpCc}));
      if (TrimmedLine(got) != tcp_cc) {
        return Status::FailedPrecondition("--tcp-cc " + tcp_cc + ": namespace " + p.ns + " uses " +
                                          TrimmedLine(got) + " (this kernel does not give new namespaces the "
                                          "host's default)");
      }
    }
  }
  // Direct links between data centres: a subnet of their own, and a host route to each other's party address.
  size_t k = 0;
  for (const comm::DirectLink& d : t.direct_links) {
    const std::string net = "10.204." + std::to_string(k + 1) + ".";
    const LinkEnd x{parties_.at(d.from).ns, prefix_ + "x" + std::to_string(k), net + "1"};
    const LinkEnd y{parties_.at(d.to).ns, prefix_ + "y" + std::to_string(k), net + "2"};
    GEOMX_RETURN_IF_ERROR(AddLink(x, y, d.link, python, delay_line, recipe.seed + 1000 + k));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", x.ns, "route", "add", parties_.at(d.to).ip + "/32", "via", y.address}));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", y.ns, "route", "add", parties_.at(d.from).ip + "/32", "via", x.address}));
    ++k;
  }
  return Status::Ok();
}

Status NetnsShaper::Teardown() {
  Status first = Status::Ok();
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    const std::string& what = *it;
    const size_t sp = what.find(' ');
    const std::string kind = what.substr(0, sp), name = what.substr(sp + 1);
    if (kind == "process") {
      runner_->Kill(static_cast<pid_t>(std::atoi(name.c_str())));
      continue;
    }
    // A link moved into a namespace dies with it; deleting it here fails harmlessly when it is already gone.
    auto r = kind == "netns" ? runner_->Run({"ip", "netns", "del", name}) : runner_->Run({"ip", "link", "del", name});
    if (!r.ok() && kind == "netns" && first.ok()) first = r.status();
  }
  if (!restore_cc_.empty()) {  // Setup stopped while the host's default was changed
    auto r = runner_->Run({"sysctl", "-qw", std::string(kTcpCc) + "=" + restore_cc_});
    if (!r.ok() && first.ok()) first = r.status();
    restore_cc_.clear();
  }
  created_.clear();
  parties_.clear();
  wan_ends_.clear();
  return first;
}

std::vector<std::string> NetnsShaper::PartyNetnsArgs() const {
  std::vector<std::string> args;
  for (const auto& [party, p] : parties_) {
    args.push_back("--party-netns");
    args.push_back(cli::FormatPartyNetns(party, cli::PartyNetns{p.ns, p.ip}));
  }
  return args;
}

uint64_t NetnsShaper::WanBytes() {
  uint64_t total = 0;
  for (const LinkEnd& end : wan_ends_) {
    for (const char* dir : {"tx_bytes", "rx_bytes"}) {
      const std::string counter = "/sys/class/net/" + end.dev + "/statistics/" + dir;
      auto r = runner_->Run({"ip", "netns", "exec", end.ns, "cat", counter});
      if (r.ok()) total += std::strtoull(r->c_str(), nullptr, 10);
    }
  }
  return total;
}

}  // namespace geomx::bench
