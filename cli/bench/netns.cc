#include "cli/bench/netns.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cli/recipe_units.h"

namespace geomx::cli::bench {
namespace {

std::string Join(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

pid_t ForkExec(const std::vector<std::string>& argv, int* out_fd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot execute %s\n", args[0]);
    _exit(127);
  }
  close(fds[1]);
  *out_fd = fds[0];
  return pid;
}

class SystemRunner final : public CommandRunner {
 public:
  ~SystemRunner() override {
    for (auto& [pid, fd] : fds_) close(fd);
  }
  Result<std::string> Run(const std::vector<std::string>& argv) override {
    int fd = -1;
    const pid_t pid = ForkExec(argv, &fd);
    if (pid < 0) return Status::Internal("cannot start " + Join(argv));
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) out.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::string msg = Join(argv);
      msg.append(" failed: ").append(out.substr(0, 400));
      return Status::Internal(msg);
    }
    return out;
  }
  Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& ready_word) override {
    int fd = -1;
    const pid_t pid = ForkExec(argv, &fd);
    if (pid < 0) return Status::Internal("cannot start " + Join(argv));
    fds_[pid] = fd;
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (out.find(ready_word) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) {
        Kill(pid);
        return Status::Internal(Join(argv) + ": not ready after 15 s: " + out.substr(0, 400));
      }
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[1024];
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) {
        Kill(pid);
        return Status::Internal(Join(argv) + " exited: " + out.substr(0, 400));
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return pid;
  }
  void Kill(pid_t pid) override {
    kill(pid, SIGTERM);
    int st = 0;
    for (int i = 0; i < 30; ++i) {
      if (waitpid(pid, &st, WNOHANG) == pid) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (i == 29) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
      }
    }
    auto it = fds_.find(pid);
    if (it != fds_.end()) {
      close(it->second);
      fds_.erase(it);
    }
  }

 private:
  std::map<pid_t, int> fds_;
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

Status NetnsShaper::Setup(const Recipe& recipe, const std::string& python, const std::string& delay_line) {
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
      const std::string r = BandwidthText(rate);
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

std::string NetnsShaper::PartyNetsEnv() const {
  std::string s;
  for (const auto& [party, p] : parties_) {
    if (!s.empty()) s += ';';
    s.append(party).append("=").append(p.ns).append("@").append(p.ip);
  }
  return s;
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

}  // namespace geomx::cli::bench
