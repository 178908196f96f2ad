// The process launcher (cli/launcher.h) and free ports (cli/free_ports.h), with /bin/sh scripts as children:
// prefixed output, teardown when one child fails, Ctrl-C forwarding, nothing left behind, waiting for a helper to
// be ready, and RunAndCapture.
#include "cli/launcher.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/free_ports.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

ChildSpec Sh(const std::string& name, const std::string& script) { return {name, {"/bin/sh", "-c", script}}; }

// A launcher whose output is collected instead of printed; short grace period so tests stay quick.
struct Collecting {
  std::vector<std::string> lines;
  Launcher launcher;
  explicit Collecting(int grace_ms = 300, std::function<void(std::string_view)> also = nullptr, int restarts = 0)
      : launcher(LauncherOptions{.grace_period_ms = grace_ms,
                                 .tail_lines = 3,
                                 .sink = [this, also](std::string_view l) {
                                   lines.emplace_back(l);
                                   if (also) also(l);
                                 },
                                 .max_restarts = restarts}) {}
  bool Has(const std::string& line) const { return std::find(lines.begin(), lines.end(), line) != lines.end(); }
};

// True once `pid` no longer runs (gone, or a zombie waiting for a parent that is not us). Waits a bounded time for
// a signal to take effect: this is progress, not timing.
bool IsGone(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    size_t paren = text.rfind(')');
    if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

pid_t ReadPid(const std::filesystem::path& file) {
  std::ifstream in(file);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

// Shell snippet: wait (bounded) until every file exists and is non-empty.
std::string WaitForFiles(const std::vector<std::filesystem::path>& files) {
  std::string cond;
  for (const auto& f : files) cond += std::string(cond.empty() ? "" : " || ") + "[ ! -s '" + f.string() + "' ]";
  return "i=0; while " + cond + "; do i=$((i+1)); [ $i -gt 1000 ] && exit 99; sleep 0.01; done; ";
}

TEST(LauncherTest, PrefixesEveryLineWithTheChildName) {
  Collecting c;
  ASSERT_TRUE(
      c.launcher
          .Start({Sh("dc-a/worker0", "echo hello; echo world >&2"),
                  Sh("central/server", "printf 'part one, '; sleep 0.1; printf 'part two\\n'; printf 'no newline'")})
          .ok());
  Status s = c.launcher.Wait(nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(c.Has("[dc-a/worker0] hello"));
  EXPECT_TRUE(c.Has("[dc-a/worker0] world"));                 // stderr too
  EXPECT_TRUE(c.Has("[central/server] part one, part two"));  // one line, though written in two pieces
  EXPECT_TRUE(c.Has("[central/server] no newline"));          // flushed at the end
  EXPECT_EQ(c.lines.size(), 4u);
}

TEST(LauncherTest, OneFailureStopsTheOthersAndIsReportedWithItsLastLines) {
  testing::ScratchDir dir;
  const auto p1 = dir / "slow1.pid";
  const auto p2 = dir / "stubborn.pid";
  Collecting c;
  ASSERT_TRUE(c.launcher
                  .Start({Sh("dc-a/worker0", "echo $$ > '" + p1.string() + "'; exec sleep 1000"),
                          // Ignores SIGTERM: needs the SIGKILL after the grace period.
                          Sh("dc-a/server0", "trap '' TERM; echo $$ > '" + p2.string() + "'; exec sleep 1000"),
                          Sh("dc-b/worker1",
                             WaitForFiles({p1, p2}) +
                                 "echo line 1; echo line 2; echo line 3; echo cannot reach dc-b/server0 >&2; exit 3")})
                  .ok());
  Status s = c.launcher.Wait(nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  const std::string& m = s.message();
  EXPECT_NE(m.find("dc-b/worker1 exited with status 3"), std::string::npos) << m;
  EXPECT_NE(m.find("stopped the other 2 processes"), std::string::npos) << m;
  EXPECT_NE(m.find("cannot reach dc-b/server0"), std::string::npos) << m;
  EXPECT_EQ(m.find("line 1"), std::string::npos) << "only the last tail_lines (3) lines: " << m;
  EXPECT_NE(m.find("line 2"), std::string::npos) << m;
  for (const auto& f : {p1, p2}) {
    pid_t pid = ReadPid(f);
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(IsGone(pid)) << f;
  }
  for (pid_t pid : c.launcher.pids()) EXPECT_TRUE(IsGone(pid));
}

TEST(LauncherTest, ExitStatus2IsAUserErrorAndSignalsAreNamed) {
  {
    Collecting c;
    ASSERT_TRUE(c.launcher.Start({Sh("a", "echo bad recipe; exit 2")}).ok());
    Status s = c.launcher.Wait(nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  }
  {
    Collecting c;
    ASSERT_TRUE(c.launcher.Start({Sh("b", "kill -USR1 $$")}).ok());
    Status s = c.launcher.Wait(nullptr);
    EXPECT_NE(s.message().find("b was killed by signal 10 (SIGUSR1)"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("(no output)"), std::string::npos) << s.ToString();
  }
}

TEST(LauncherTest, InterruptSendsSigintThenEscalates) {
  testing::ScratchDir dir;
  const auto marker = dir / "got-int";
  const auto p_ignorer = dir / "ignorer.pid";
  std::atomic<bool> interrupted{false};
  std::atomic<int> ready{0};
  Collecting c(300, [&](std::string_view line) {
    if (line.find("ready") != std::string_view::npos && ++ready == 2) interrupted = true;  // "Ctrl-C"
  });
  ASSERT_TRUE(c.launcher
                  .Start({Sh("dc-a/worker0", "trap 'echo checkpointing; touch \"" + marker.string() +
                                                 "\"; exit 130' INT; echo ready; while :; do sleep 0.05; done"),
                          // Ignores SIGINT: gets SIGTERM after the grace period.
                          Sh("dc-a/worker1",
                             "trap '' INT; echo $$ > '" + p_ignorer.string() + "'; echo ready; exec sleep 1000")})
                  .ok());
  Status s = c.launcher.Wait(&interrupted);
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_TRUE(std::filesystem::exists(marker)) << "the worker trapping SIGINT did not get it";
  EXPECT_TRUE(c.Has("[dc-a/worker0] checkpointing"));
  EXPECT_TRUE(IsGone(ReadPid(p_ignorer)));
  for (pid_t pid : c.launcher.pids()) EXPECT_TRUE(IsGone(pid));
}

TEST(LauncherTest, AllSucceed) {
  Collecting c;
  ASSERT_TRUE(c.launcher.Start({Sh("a", "exit 0"), Sh("b", "echo done"), Sh("c", "sleep 0.2")}).ok());
  EXPECT_TRUE(c.launcher.Wait(nullptr).ok());
}

// Regression (issue 18): under topology.failure_policy: continue a frozen worker (SIGSTOP) is dropped from the job,
// but its process never exits; the launcher waited for it forever after the job ended. Now it is killed once the
// children the job needs are done, and listed as lost; the job's status is OK.
TEST(LauncherTest, AMayFailChildThatOutlivesTheJobIsKilled) {
  testing::ScratchDir dir;
  const auto pid_file = dir / "frozen.pid";
  Collecting c;
  ChildSpec frozen = Sh("frozen", "echo $$ > '" + pid_file.string() + "'; kill -STOP $$; exit 0");
  frozen.may_fail = true;
  ChildSpec quick = Sh("quick", "exit 0");
  quick.may_fail = true;
  ASSERT_TRUE(c.launcher.Start({Sh("server", "sleep 0.3"), std::move(frozen), std::move(quick)}).ok());
  EXPECT_TRUE(c.launcher.Wait(nullptr).ok());
  ASSERT_EQ(c.launcher.lost().size(), 1u);
  EXPECT_EQ(c.launcher.lost()[0],
            "frozen was still running after the job ended (dropped from it, e.g. frozen); killed");
  EXPECT_TRUE(c.Has("[launcher] " + c.launcher.lost()[0]));
  const pid_t pid = ReadPid(pid_file);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(IsGone(pid));
}

// topology.worker_restarts: a failed restartable child is started again with the same argv, up to max_restarts
// times over all children; then it is lost like any may_fail child. A child that exits 2 (bad input) is not
// restarted: it would fail again.
TEST(LauncherTest, RestartableChildrenAreStartedAgainUpToTheLimit) {
  testing::ScratchDir dir;
  const std::string runs = (dir / "runs").string();
  Collecting c(300, nullptr, /*restarts=*/3);
  ChildSpec flaky = Sh("flaky", "echo run >> '" + runs + "'; exit 3");
  flaky.may_fail = true;
  flaky.restartable = true;
  ChildSpec refused = Sh("refused", "exit 2");
  refused.may_fail = true;
  refused.restartable = true;
  ASSERT_TRUE(c.launcher.Start({Sh("server", "sleep 0.5"), std::move(flaky), std::move(refused)}).ok());
  EXPECT_TRUE(c.launcher.Wait(nullptr).ok());
  EXPECT_EQ(testing::ReadFile(runs), "run\nrun\nrun\nrun\n");  // the first start and 3 restarts
  EXPECT_EQ(c.launcher.restarts(), 3);
  EXPECT_TRUE(c.Has("[launcher] flaky exited with status 3; restarting it (3 of 3, topology.worker_restarts)"));
  EXPECT_EQ(c.launcher.lost(),
            (std::vector<std::string>{"refused exited with status 2", "flaky exited with status 3"}));
}

TEST(LauncherTest, NoGrandchildIsLeftBehind) {
  testing::ScratchDir dir;
  const auto pid_file = dir / "grandchild.pid";
  Collecting c;
  ASSERT_TRUE(c.launcher.Start({Sh("a", "sleep 1000 & echo $! > '" + pid_file.string() + "'; exit 0")}).ok());
  EXPECT_TRUE(c.launcher.Wait(nullptr).ok());
  pid_t grandchild = ReadPid(pid_file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(IsGone(grandchild));
}

TEST(LauncherTest, DestructorKillsWhatStillRuns) {
  std::vector<pid_t> pids;
  {
    Collecting c;
    ASSERT_TRUE(c.launcher.Start({Sh("a", "exec sleep 1000"), Sh("b", "trap '' TERM INT; exec sleep 1000")}).ok());
    pids = c.launcher.pids();
  }
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t pid : pids) EXPECT_TRUE(IsGone(pid));
}

TEST(LauncherTest, ProgramThatCannotRunIsReported) {
  Collecting c;
  ASSERT_TRUE(c.launcher.Start({{"dc-a/scheduler", {"/nonexistent/geomx", "serve"}}}).ok());
  Status s = c.launcher.Wait(nullptr);
  EXPECT_NE(s.message().find("dc-a/scheduler exited with status 127"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("cannot execute '/nonexistent/geomx'"), std::string::npos) << s.ToString();
}

TEST(LauncherTest, RejectsBadSpecs) {
  Launcher a;
  EXPECT_EQ(a.Start({Sh("x", "true"), Sh("x", "true")}).code(), StatusCode::kInvalidArgument);
  Launcher b;
  EXPECT_EQ(b.Start({{"", {"/bin/true"}}}).code(), StatusCode::kInvalidArgument);
  Launcher c;
  EXPECT_EQ(c.Start({{"y", {}}}).code(), StatusCode::kInvalidArgument);
}

TEST(LauncherTest, WaitUntilLeavesAReadyChildRunningUntilWaitStopsIt) {
  bool ready = false;
  Collecting c(/*grace_ms=*/300, [&ready](std::string_view l) { ready = ready || l == "[helper] ready"; });
  ASSERT_TRUE(c.launcher.Start({Sh("helper", "echo starting; echo ready; exec sleep 1000")}).ok());
  Status s = c.launcher.WaitUntil([&ready] { return ready; }, std::chrono::seconds(30));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const pid_t pid = c.launcher.pids().at(0);
  EXPECT_EQ(kill(pid, 0), 0) << "the ready child should still run";
  std::atomic<bool> stop{true};
  EXPECT_EQ(c.launcher.Wait(&stop).code(), StatusCode::kCancelled);
  EXPECT_TRUE(IsGone(pid));
}

TEST(LauncherTest, WaitUntilReportsAChildThatExitsBeforeItIsReady) {
  Collecting c;
  ASSERT_TRUE(c.launcher.Start({Sh("helper", "echo 'no tun device'; exit 3")}).ok());
  Status s = c.launcher.WaitUntil([] { return false; }, std::chrono::seconds(30));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("helper exited with status 3 before it was ready"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("no tun device"), std::string::npos) << s.ToString();
}

TEST(LauncherTest, WaitUntilGivesUpAfterTheTimeout) {
  Collecting c;
  ASSERT_TRUE(c.launcher.Start({Sh("helper", "echo warming up; exec sleep 1000")}).ok());
  Status s = c.launcher.WaitUntil([] { return false; }, std::chrono::milliseconds(100));
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  const pid_t pid = c.launcher.pids().at(0);
  EXPECT_EQ(kill(pid, 0), 0);  // still running: the destructor stops it
}

TEST(RunAndCaptureTest, ReturnsTheUnprefixedOutputOfBothStreams) {
  Result<std::string> out = RunAndCapture({"/bin/sh", "-c", "echo one; echo two >&2; printf three"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "one\ntwo\nthree\n");
  Result<std::string> path_lookup = RunAndCapture({"sh", "-c", "echo found"});
  ASSERT_TRUE(path_lookup.ok()) << path_lookup.status().ToString();
  EXPECT_EQ(*path_lookup, "found\n");
}

TEST(RunAndCaptureTest, FailureNamesTheCommandWithItsExitAndLastLines) {
  Result<std::string> out = RunAndCapture({"/bin/sh", "-c", "echo 'Cannot find device'; exit 1"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(out.status().message().find("exited with status 1"), std::string::npos) << out.status().ToString();
  EXPECT_NE(out.status().message().find("Cannot find device"), std::string::npos) << out.status().ToString();
  EXPECT_NE(out.status().message().find("/bin/sh -c"), std::string::npos) << out.status().ToString();
  Result<std::string> missing = RunAndCapture({"/nonexistent/tool"});
  EXPECT_NE(missing.status().message().find("cannot execute '/nonexistent/tool'"), std::string::npos)
      << missing.status().ToString();
  EXPECT_EQ(RunAndCapture({}).status().code(), StatusCode::kInvalidArgument);
}

TEST(RunAndCaptureTest, InterruptStopsTheCommand) {
  std::atomic<bool> interrupted{true};
  Result<std::string> out = RunAndCapture({"/bin/sh", "-c", "exec sleep 1000"}, &interrupted);
  EXPECT_EQ(out.status().code(), StatusCode::kCancelled) << out.status().ToString();
}

TEST(FreePortsTest, DistinctAndBindable) {
  Result<std::vector<int>> ports = PickFreePorts("127.0.0.1", 8);
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  ASSERT_EQ(ports->size(), 8u);
  EXPECT_EQ(std::set<int>(ports->begin(), ports->end()).size(), 8u);
  for (int port : *ports) {
    EXPECT_GT(port, 0);
    EXPECT_LE(port, 65535);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << "port " << port;
    close(fd);
  }
  // Regression (CI): ports the kernel chose (ephemeral) could be taken by another process's port-0 bind or
  // outgoing connection before the scheduler bound them. Picked ports lie below the ephemeral range.
  int ephemeral_lo = 0, ephemeral_hi = 0;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_lo >> ephemeral_hi;
  if (ephemeral_lo > 11000) {
    for (int port : *ports) EXPECT_LT(port, ephemeral_lo) << "port " << port << " is in the ephemeral range";
  }
  EXPECT_TRUE(PickFreePorts("localhost", 1).ok());
  EXPECT_TRUE(PickFreePorts("127.0.0.1", 0)->empty());
  EXPECT_EQ(PickFreePorts("192.0.2.1", 1).status().code(), StatusCode::kInvalidArgument);  // not ours (TEST-NET-1)
}

}  // namespace
}  // namespace geomx::cli
