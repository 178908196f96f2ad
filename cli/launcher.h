// Launcher: starts a set of child processes and supervises them until they are all gone. It is how
// `geomx train RECIPE` runs every role of a topology on one host (cli/local_topology.h, docs/deployment.md).
//
//   - Output: each child's stdout and stderr go to one pipe; the launcher re-prints it line by line as
//     "[name] line" through LauncherOptions::sink (whole lines only, never interleaved), and keeps each child's
//     last `tail_lines` lines for error reports.
//   - Failure: when a child exits non-zero or is killed by a signal, every other child gets SIGTERM, then SIGKILL
//     after `grace_period_ms`; Wait returns kInternal naming the child, its exit status and its last lines. A
//     child with ChildSpec::may_fail is only reported (lost()); the others go on.
//   - Interrupt: when *interrupted turns true (Ctrl-C), every child gets SIGINT (workers checkpoint), then SIGTERM
//     and SIGKILL, each after `grace_period_ms`; Wait returns kCancelled once all are gone.
//   - Helpers: WaitUntil relays output until a background child is ready (it printed "ready") and leaves it
//     running; RunAndCapture runs one command to completion and returns its output.
//   - No process is left behind: each child leads its own process group (so the terminal's Ctrl-C reaches only
//     the launcher, which forwards it) and has PR_SET_PDEATHSIG(SIGKILL), so it dies with the launcher; every
//     signal goes to the whole group; the destructor kills and reaps whatever is still running.
//
// Thread-safety: not thread-safe; one thread calls Start, Wait and the destructor. PR_SET_PDEATHSIG fires when
// the *thread* that forked exits, so call Start from a thread that outlives the children (the main thread).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"

namespace geomx::cli {

// The path of the running executable (/proc/self/exe): what a launcher re-executes. kInternal when unreadable.
Result<std::string> ThisExecutable();

struct ChildSpec {
  std::string name;               // "dc-a/worker0": prefixes its output and names it in errors
  std::vector<std::string> argv;  // argv[0] is the program (a path, or a name looked up in PATH)
  // Its failure does not stop the others (a worker under topology.failure_policy: continue): it is reported on a
  // "[launcher]" line and listed in lost(); Wait then returns OK if every other child exits 0. Once every child
  // that may not fail has exited 0, such a child still running after `grace_period_ms` (a worker the job dropped
  // because it froze: SIGSTOP) is killed, reported and listed in lost() too.
  bool may_fail = false;
  // With may_fail: when it fails (not exit 2, not while the job stops) the launcher starts it again with the same
  // argv, up to LauncherOptions::max_restarts times over all children (a worker rejoining its data centre under
  // topology.failure_policy continue or wait); restarts() counts them.
  bool restartable = false;
};

inline constexpr int kDefaultGracePeriodMs = 5000;

struct LauncherOptions {
  int grace_period_ms = kDefaultGracePeriodMs;  // between SIGINT/SIGTERM and the next, harder signal
  int tail_lines = 20;         // last lines kept per child for error reports
  // Receives each complete, prefixed line ("[dc-a/worker0] loss 0.31", no newline). Default: stdout, flushed per
  // line. Called on the thread that calls Wait.
  std::function<void(std::string_view line)> sink;
  bool prefix_lines = true;  // false: lines reach the sink as the child printed them, without "[name] "
  int max_restarts = 0;      // restarts of ChildSpec::restartable children, over all of them
};

class Launcher {
 public:
  explicit Launcher(LauncherOptions options = {});
  ~Launcher();  // SIGKILLs the process group of every child still running and reaps it
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Forks and executes every child. A child that cannot be executed exits 127 with the reason as its output
  // (reported by Wait). Fails (kInvalidArgument) on an empty or duplicate name or an empty argv, and (kInternal)
  // when pipes or fork fail; then the children already started are killed. Call once.
  Status Start(std::vector<ChildSpec> children);

  // Relays output until every child has exited; see the class comment for failure and interrupt handling.
  // `interrupted` may be null. Returns OK when all exited 0.
  Status Wait(const std::atomic<bool>* interrupted);

  // For children that keep running (a helper that announces it is ready): relays output until `done()` returns
  // true, checked after each batch of output (a sink that watches for a line sets what `done` reads), and leaves
  // the children running; Wait or the destructor stops them later. Returns kUnavailable when a child exits first
  // (naming it, with its exit status and last lines) and kDeadlineExceeded after `timeout`; after an error, only
  // destroy the Launcher.
  Status WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);

  // The process ids of the children, in Start order (for tests and diagnostics).
  std::vector<pid_t> pids() const;
  // Children with ChildSpec::may_fail that failed, with how they ended ("dc-a/worker1 was killed by signal 9").
  const std::vector<std::string>& lost() const { return lost_; }
  // How many times a restartable child was started again.
  int restarts() const { return restarts_; }

 private:
  struct Child {
    ChildSpec spec;
    pid_t pid = -1;
    int out_fd = -1;      // read end of the child's stdout+stderr pipe; -1 after EOF
    std::string partial;  // bytes after the last newline
    std::deque<std::string> tail;
    bool running = false;
    int wait_status = 0;  // from waitpid, once !running
    bool left_over = false;  // killed because it outlived the job (may_fail only)
  };

  bool PumpOutput();  // waits up to one poll period for output and relays it; false when no pipe is open
  // Reaps the children that exited; returns the first that failed, or -1. A restartable child is started again
  // instead when `may_restart` and restarts are left.
  int ReapExited(bool may_restart);
  Status Spawn(Child& child);  // forks and executes child.spec; fills pid, out_fd, running
  void Emit(Child& child, std::string_view line);
  void Drain(Child& child, bool to_eof);  // reads what the pipe holds; on EOF flushes the partial line
  void Reap(Child& child);                // after the child exited: kills its group's leftovers, waits
  void SignalAll(int sig);
  void KillLeftovers();  // SIGKILL to the may_fail children still running once the job is done
  size_t RunningCount() const;
  void KillAll();
  static std::string DescribeExit(int wait_status);
  static std::string LastLines(const Child& child);  // "last lines of NAME:\n  line..." for error reports

  LauncherOptions options_;
  std::vector<Child> children_;
  std::vector<std::string> lost_;
  int restarts_ = 0;
};

// Runs `argv` to completion under a Launcher (its own process group, PR_SET_PDEATHSIG, stdin /dev/null) and
// returns what it printed on stdout and stderr, each line followed by '\n'. When it cannot be executed or exits
// non-zero: the Launcher's error (see Wait), naming the command, with its last lines. When *interrupted turns true
// (may be null) the command gets SIGINT, then SIGTERM and SIGKILL, and the result is kCancelled. Blocks the caller.
Result<std::string> RunAndCapture(const std::vector<std::string>& argv,
                                  const std::atomic<bool>* interrupted = nullptr);

}  // namespace geomx::cli
