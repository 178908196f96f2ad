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

Status NetnsShaper::Setup(const cli::Recipe& recipe, const std::string& python, const std::string& delay_line) {
  const comm::Topology& t = recipe.topology;
  const double rate = t.options.wan.bandwidth_bps;
  const double delay = t.options.wan.latency_s;
  if (delay > 0 && !std::filesystem::exists(delay_line)) {
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
  const std::string central_ns = prefix_ + "-c";
  GEOMX_RETURN_IF_ERROR(add_ns(central_ns));
  GEOMX_RETURN_IF_ERROR(run({"ip", "netns", "exec", central_ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"}));
  for (size_t i = 0; i < t.datacentres.size(); ++i) {
    const std::string ns = prefix_ + "-d" + std::to_string(i);
    const std::string a = prefix_ + "c" + std::to_string(i), b = prefix_ + "d" + std::to_string(i);
    const std::string net = "10.203." + std::to_string(i + 1) + ".";
    GEOMX_RETURN_IF_ERROR(add_ns(ns));
    if (delay > 0) {
      char ms[32];
      std::snprintf(ms, sizeof(ms), "%.6f", delay);
      GEOMX_ASSIGN_OR_RETURN(pid_t pid, runner_->Spawn({python, delay_line, a, b, ms}, "ready"));
      created_.push_back("process " + std::to_string(pid));
    } else {
      GEOMX_RETURN_IF_ERROR(run({"ip", "link", "add", a, "type", "veth", "peer", "name", b}));
      created_.push_back("link " + a);
    }
    GEOMX_RETURN_IF_ERROR(run({"ip", "link", "set", a, "netns", central_ns}));
    GEOMX_RETURN_IF_ERROR(run({"ip", "link", "set", b, "netns", ns}));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", central_ns, "addr", "add", net + "1/24", "dev", a}));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", ns, "addr", "add", net + "2/24", "dev", b}));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", central_ns, "link", "set", a, "up"}));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", ns, "link", "set", b, "up"}));
    GEOMX_RETURN_IF_ERROR(run({"ip", "-n", ns, "route", "add", "default", "via", net + "1"}));
    if (rate > 0) {
      const std::string r = cli::BandwidthText(rate);
      for (const auto& [where, dev] : {std::pair{central_ns, a}, std::pair{ns, b}}) {
        GEOMX_RETURN_IF_ERROR(run({"ip", "netns", "exec", where, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
                                   "rate", r, "burst", "64kb", "latency", "400ms"}));
      }
    }
    parties_[t.datacentres[i].name] = PartyNet{ns, net + "2", b};
    central_links_.push_back(a);
    if (i == 0) parties_["central"] = PartyNet{central_ns, net + "1", a};
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
  created_.clear();
  parties_.clear();
  central_links_.clear();
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
  const auto it = parties_.find("central");
  if (it == parties_.end()) return 0;
  uint64_t total = 0;
  for (const std::string& dev : central_links_) {
    for (const char* dir : {"tx_bytes", "rx_bytes"}) {
      auto r = runner_->Run({"ip", "netns", "exec", it->second.ns, "cat",
                             "/sys/class/net/" + dev + "/statistics/" + dir});
      if (r.ok()) total += std::strtoull(r->c_str(), nullptr, 10);
    }
  }
  return total;
}

}  // namespace geomx::bench
