#include "cli/launcher.h"

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
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

namespace geomx::cli {

Result<std::string> ThisExecutable() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::Internal("cannot find this executable (/proc/self/exe): " + ec.message());
  return exe.string();
}
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxLine = 64 * 1024;  // a longer "line" is emitted in pieces
constexpr int kPollMs = 50;
// After the last child exited, how long its pipe may stay open (held by an escaped grandchild) before we stop
// reading it.
constexpr auto kPipeLinger = std::chrono::milliseconds(1000);

void WriteToStdout(std::string_view line) {
  std::string buf(line);
  buf += '\n';
  std::fwrite(buf.data(), 1, buf.size(), stdout);
  std::fflush(stdout);
}

// Async-signal-safe: the child between fork and exec may only call these.
void WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w <= 0) return;
    data += w;
    n -= static_cast<size_t>(w);
  }
}

[[noreturn]] void ExecChild(char* const argv[], int out_fd, pid_t parent, const std::string& exec_error) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(137);  // the launcher died before prctl took effect
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  // Dispositions set to "ignore" and the signal mask survive exec: give the child a clean slate.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP, SIGQUIT}) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (std::strchr(argv[0], '/') != nullptr) {
    execv(argv[0], argv);
  } else {
    execvp(argv[0], argv);
  }
  int err = errno;
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + err % 10);
    err /= 10;
  } while (err > 0 && n < 15);
  WriteAll(STDERR_FILENO, exec_error.data(), exec_error.size());
  while (n > 0) WriteAll(STDERR_FILENO, &digits[--n], 1);
  WriteAll(STDERR_FILENO, ")\n", 2);
  _exit(127);
}

bool ExitedCleanly(int wait_status) { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

}  // namespace

Launcher::Launcher(LauncherOptions options) : options_(std::move(options)) {
  if (!options_.sink) options_.sink = WriteToStdout;
  options_.tail_lines = std::max(options_.tail_lines, 1);
}

Launcher::~Launcher() { KillAll(); }

Status Launcher::Start(std::vector<ChildSpec> specs) {
  if (!children_.empty()) return Status::Internal("Launcher::Start called twice");
  std::set<std::string> names;
  for (const ChildSpec& spec : specs) {
    if (spec.name.empty()) return Status::InvalidArgument("launcher: a child has an empty name");
    if (spec.argv.empty() || spec.argv[0].empty()) {
      return Status::InvalidArgument("launcher: child '" + spec.name + "' has no program");
    }
    if (!names.insert(spec.name).second) {
      return Status::InvalidArgument("launcher: two children are named '" + spec.name + "'");
    }
  }
  children_.reserve(specs.size());
  for (ChildSpec& spec : specs) {
    Child child;
    child.spec = std::move(spec);
    Status s = Spawn(child);
    if (!s.ok()) {
      KillAll();
      return s;
    }
    children_.push_back(std::move(child));
  }
  return Status::Ok();
}

Status Launcher::Spawn(Child& child) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Status::Internal("launcher: pipe for '" + child.spec.name + "': " + std::strerror(errno));
  }
  // Everything the child needs is prepared before fork: between fork and exec only async-signal-safe calls.
  std::vector<char*> argv;
  for (std::string& arg : child.spec.argv) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const std::string exec_error = "geomx launcher: cannot execute '" + child.spec.argv[0] + "' (errno ";
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) ExecChild(argv.data(), fds[1], parent, exec_error);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return Status::Internal("launcher: fork for '" + child.spec.name + "': " + std::strerror(errno));
  }
  setpgid(pid, pid);  // also done by the child; whichever runs first wins, so signals always find the group
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  child.pid = pid;
  child.out_fd = fds[0];
  child.partial.clear();
  child.running = true;
  child.wait_status = 0;
  return Status::Ok();
}

Status Launcher::Wait(const std::atomic<bool>* interrupted) {
  const auto grace = std::chrono::milliseconds(std::max(options_.grace_period_ms, 0));
  int failed = -1;  // the first child that failed, while no interrupt was seen
  bool was_interrupted = false;
  int next_signal = 0;  // escalation after `deadline`: SIGTERM, then SIGKILL; 0 = none pending
  Clock::time_point deadline{};
  Clock::time_point all_exited{};
  Clock::time_point leftovers_deadline{};  // the job's needed children are done; may_fail ones still run
  for (;;) {
    const bool pipes_open = PumpOutput();
    if (RunningCount() == 0 && (!pipes_open || Clock::now() - all_exited > kPipeLinger)) break;
    const int newly_failed = ReapExited(/*may_restart=*/failed < 0 && !was_interrupted);
    if (RunningCount() == 0 && all_exited == Clock::time_point{}) all_exited = Clock::now();
    if (newly_failed >= 0 && failed < 0 && !was_interrupted) {
      failed = newly_failed;
      SignalAll(SIGTERM);
      next_signal = SIGKILL;
      deadline = Clock::now() + grace;
    }
    if (interrupted != nullptr && interrupted->load() && !was_interrupted) {
      was_interrupted = true;
      if (failed < 0) {  // after a failure the others are already being stopped
        SignalAll(SIGINT);
        next_signal = SIGTERM;
        deadline = Clock::now() + grace;
      }
    }
    const bool needed_done = std::none_of(children_.begin(), children_.end(),
                                          [](const Child& c) { return c.running && !c.spec.may_fail; });
    if (failed < 0 && !was_interrupted && RunningCount() > 0 && needed_done) {
      if (leftovers_deadline == Clock::time_point{}) leftovers_deadline = Clock::now() + grace;
      if (Clock::now() >= leftovers_deadline) KillLeftovers();
    }
    if (next_signal != 0 && Clock::now() >= deadline && RunningCount() > 0) {
      SignalAll(next_signal);
      next_signal = next_signal == SIGTERM ? SIGKILL : 0;
      deadline = Clock::now() + grace;
    }
  }
  for (Child& c : children_) Drain(c, /*to_eof=*/true);

  if (failed >= 0) {
    const Child& c = children_[static_cast<size_t>(failed)];
    std::string msg = c.spec.name + " " + DescribeExit(c.wait_status);
    if (children_.size() > 1) msg += "; stopped the other " + std::to_string(children_.size() - 1) + " processes";
    msg.append("\n").append(LastLines(c));
    // A child that refused its input (exit 2: recipe, flags, data) makes the whole run a user error.
    const bool user_error = WIFEXITED(c.wait_status) && WEXITSTATUS(c.wait_status) == 2;
    return user_error ? Status::InvalidArgument(msg) : Status::Unavailable(msg);
  }
  if (was_interrupted) {
    return Status::Cancelled("interrupted; stopped all " + std::to_string(children_.size()) + " processes");
  }
  return Status::Ok();
}

Status Launcher::WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    PumpOutput();
    if (done()) return Status::Ok();
    for (Child& c : children_) {
      if (!c.running) continue;
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
        continue;
      }
      Drain(c, /*to_eof=*/true);
      Reap(c);
      if (done()) return Status::Ok();  // it said what we waited for on its way out
      std::string msg = c.spec.name + " " + DescribeExit(c.wait_status) + " before it was ready";
      msg.append("\n").append(LastLines(c));
      return Status::Unavailable(msg);
    }
    if (Clock::now() >= deadline) {
      std::string msg = "not ready after " + std::to_string(timeout.count()) + " ms";
      for (const Child& c : children_) msg.append("\n").append(LastLines(c));
      return Status::DeadlineExceeded(msg);
    }
  }
}

bool Launcher::PumpOutput() {
  std::vector<pollfd> fds;
  std::vector<size_t> owners;
  for (size_t i = 0; i < children_.size(); ++i) {
    if (children_[i].out_fd >= 0) {
      fds.push_back({children_[i].out_fd, POLLIN, 0});
      owners.push_back(i);
    }
  }
  if (fds.empty()) {
    usleep(kPollMs * 1000);
    return false;
  }
  if (poll(fds.data(), fds.size(), kPollMs) > 0) {  // on EINTR (Ctrl-C) the caller just goes round again
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents != 0) Drain(children_[owners[k]], /*to_eof=*/false);
    }
  }
  return true;
}

int Launcher::ReapExited(bool may_restart) {
  int failed = -1;
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    if (!c.running) continue;
    siginfo_t info{};
    // WNOWAIT: the exited child stays a zombie, so its process group id cannot be reused before Reap kills it.
    if (waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
      continue;
    }
    Reap(c);
    if (ExitedCleanly(c.wait_status) || c.left_over) continue;
    const bool user_error = WIFEXITED(c.wait_status) && WEXITSTATUS(c.wait_status) == 2;
    if (c.spec.may_fail && c.spec.restartable && may_restart && !user_error &&
        restarts_ < options_.max_restarts) {
      ++restarts_;
      Drain(c, /*to_eof=*/true);
      options_.sink("[launcher] " + c.spec.name + " " + DescribeExit(c.wait_status) + "; restarting it (" +
                    std::to_string(restarts_) + " of " + std::to_string(options_.max_restarts) +
                    ", topology.worker_restarts)");
      Status s = Spawn(c);
      if (s.ok()) continue;
      options_.sink("[launcher] " + s.message());
    }
    if (c.spec.may_fail) {
      lost_.push_back(c.spec.name + " " + DescribeExit(c.wait_status));
      const std::string line = "[launcher] " + lost_.back() + "; the job goes on without it "
                               "(topology.failure_policy: continue)";
      options_.sink(line);
      continue;
    }
    if (failed < 0) failed = static_cast<int>(i);
  }
  return failed;
}

std::vector<pid_t> Launcher::pids() const {
  std::vector<pid_t> out;
  for (const Child& c : children_) out.push_back(c.pid);
  return out;
}

void Launcher::Emit(Child& child, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (options_.prefix_lines) {
    std::string prefixed = "[" + child.spec.name + "] ";
    prefixed.append(line);
    options_.sink(prefixed);
  } else {
    options_.sink(line);
  }
  child.tail.emplace_back(line);
  while (child.tail.size() > static_cast<size_t>(options_.tail_lines)) child.tail.pop_front();
}

void Launcher::Drain(Child& child, bool to_eof) {
  if (child.out_fd < 0) return;
  char buf[8192];
  for (;;) {
    ssize_t n = read(child.out_fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      child.partial.append(buf, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl = child.partial.find('\n'); nl != std::string::npos; nl = child.partial.find('\n', start)) {
        Emit(child, std::string_view(child.partial).substr(start, nl - start));
        start = nl + 1;
      }
      child.partial.erase(0, start);
      while (child.partial.size() >= kMaxLine) {
        Emit(child, std::string_view(child.partial).substr(0, kMaxLine));
        child.partial.erase(0, kMaxLine);
      }
      continue;
    }
    // n == 0: EOF. n < 0: EAGAIN (nothing more for now), or an error.
    if (n == 0 || errno != EAGAIN || to_eof) {
      if (!child.partial.empty()) Emit(child, child.partial);
      child.partial.clear();
      close(child.out_fd);
      child.out_fd = -1;
    }
    return;
  }
}

void Launcher::Reap(Child& child) {
  kill(-child.pid, SIGKILL);  // leftovers in its group (a shell's background jobs); the leader is a zombie
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  child.wait_status = status;
  child.running = false;
}

void Launcher::KillLeftovers() {
  for (Child& c : children_) {
    if (!c.running || c.left_over) continue;
    c.left_over = true;
    lost_.push_back(c.spec.name + " was still running after the job ended (dropped from it, e.g. frozen); killed");
    options_.sink("[launcher] " + lost_.back());
    kill(-c.pid, SIGKILL);  // a stopped process cannot handle a gentler signal
  }
}

void Launcher::SignalAll(int sig) {
  for (const Child& c : children_) {
    if (c.running) kill(-c.pid, sig);
  }
}

size_t Launcher::RunningCount() const {
  return static_cast<size_t>(
      std::count_if(children_.begin(), children_.end(), [](const Child& c) { return c.running; }));
}

void Launcher::KillAll() {
  for (Child& c : children_) {
    if (c.running) {
      kill(-c.pid, SIGKILL);
      kill(c.pid, SIGKILL);  // in case it has not joined its own group yet
      Reap(c);
    }
    if (c.out_fd >= 0) {
      close(c.out_fd);
      c.out_fd = -1;
    }
  }
}

std::string Launcher::DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (name != nullptr ? std::string(" (SIG") + name + ")" : "");
  }
  return "stopped (wait status " + std::to_string(wait_status) + ")";
}

std::string Launcher::LastLines(const Child& child) {
  std::string out = "last lines of " + child.spec.name + ":";
  if (child.tail.empty()) out += " (no output)";
  for (const std::string& line : child.tail) out += "\n  " + line;
  return out;
}

Result<std::string> RunAndCapture(const std::vector<std::string>& argv, const std::atomic<bool>* interrupted) {
  if (argv.empty()) return Status::InvalidArgument("RunAndCapture: empty command");
  std::string name;  // the command line names the child in errors
  for (const std::string& arg : argv) name.append(name.empty() ? "" : " ").append(arg);
  std::string output;
  LauncherOptions options;
  options.prefix_lines = false;
  options.sink = [&output](std::string_view line) { output.append(line).append("\n"); };
  Launcher launcher(std::move(options));
  GEOMX_RETURN_IF_ERROR(launcher.Start({ChildSpec{name, argv}}));
  GEOMX_RETURN_IF_ERROR(launcher.Wait(interrupted));
  return output;
}

}  // namespace geomx::cli
