// summary.json of a whole topology run (cli/run_report.h TopologySummaryJson): it agrees with the job's ending
// whatever the evaluating worker managed to write. Expected texts are written out by hand.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cli/run_report.h"

namespace geomx::cli {
namespace {

const char kTraffic[] =
    "{\"wan_bytes\": 7, \"lan_bytes\": 0, \"wan_bytes_sent\": 7, \"wan_bytes_received\": 0, "
    "\"lan_bytes_sent\": 0, \"lan_bytes_received\": 0, \"wan_messages\": 1, \"lan_messages\": 0}";

class TopologySummaryTest : public ::testing::Test {
 protected:
  TopologySummaryTest() : run_(std::move(RunDir::Create(dir_.path() / "run", "name: r\n")).value()) {
    recipe_.name = "geo";
    traffic_.wan_bytes_sent = 7;
    traffic_.wan_messages = 1;
  }
  struct TempDir {
    TempDir() : p(std::filesystem::temp_directory_path() / ("geomx-summary-" + std::to_string(::getpid()))) {
      std::filesystem::remove_all(p);
      std::filesystem::create_directories(p);
    }
    ~TempDir() { std::filesystem::remove_all(p); }
    const std::filesystem::path& path() const { return p; }
    std::filesystem::path p;
  } dir_;
  RunDir run_;
  Recipe recipe_;
  comm::TrafficSnapshot traffic_;
};

TEST_F(TopologySummaryTest, AWorkerCompletedButTheJobFailed) {
  const std::string written =
      "{\"status\": \"completed\", \"name\": \"geo\", \"iterations\": 40, \"traffic\": {\"wan_bytes\": 1, "
      "\"lan_bytes\": 2}, \"peak_rss_bytes\": 9}\n";
  EXPECT_EQ(TopologySummaryJson(written, "failed", "UNAVAILABLE: dc-a/scheduler exited 1", recipe_, run_, traffic_),
            std::string("{\"status\": \"failed\", \"error\": \"UNAVAILABLE: dc-a/scheduler exited 1\", \"name\": "
                        "\"geo\", \"iterations\": 40, \"traffic\": ") +
                kTraffic + ", \"peak_rss_bytes\": 9}");
}

TEST_F(TopologySummaryTest, TheWorkersOwnErrorIsReplacedByTheJobs) {
  const std::string written =
      "{\"status\": \"failed\", \"error\": \"a \\\"quoted\\\" {brace} error\", \"name\": \"geo\", \"traffic\": {}}";
  EXPECT_EQ(TopologySummaryJson(written, "failed", "job error", recipe_, run_, traffic_),
            std::string("{\"status\": \"failed\", \"error\": \"job error\", \"name\": \"geo\", \"traffic\": ") +
                kTraffic + "}");
  EXPECT_EQ(TopologySummaryJson(written, "completed", "", recipe_, run_, traffic_),
            std::string("{\"status\": \"completed\", \"name\": \"geo\", \"traffic\": ") + kTraffic + "}");
}

TEST_F(TopologySummaryTest, NoWorkerSummaryGivesAMinimalOne) {
  const std::string expected = std::string("{\"status\": \"interrupted\", \"error\": \"CANCELLED: interrupted\", "
                                           "\"name\": \"geo\", \"traffic\": ") +
                               kTraffic + ", \"run_dir\": \"" + run_.path().string() + "\"}";
  EXPECT_EQ(TopologySummaryJson("", "interrupted", "CANCELLED: interrupted", recipe_, run_, traffic_), expected);
  // Truncated or foreign text is not trusted either.
  EXPECT_EQ(TopologySummaryJson("{\"status\": \"completed\", \"traffic\": {\"wan", "interrupted",
                                "CANCELLED: interrupted", recipe_, run_, traffic_),
            expected);
  EXPECT_EQ(TopologySummaryJson("[1, 2]", "interrupted", "CANCELLED: interrupted", recipe_, run_, traffic_),
            expected);
}

// Each process writes its traffic file; the run's figures are their sums. DGT's channels appear only when they
// carried blocks (here channels 0 and 2), and add up across the processes' files.
TEST_F(TopologySummaryTest, DgtChannelsAreWrittenAndSummedOverTheProcesses) {
  comm::TrafficSnapshot a, b;
  a.wan_bytes_sent = 100;
  a.dgt[0] = {10, 1000, 0};
  a.dgt[2] = {5, 700, 2};
  b.wan_bytes_sent = 50;
  b.dgt[2] = {1, 140, 1};
  EXPECT_NE(TrafficJson(a).find("\"dgt_blocks_2\": 5, \"dgt_bytes_2\": 700, \"dgt_lost_2\": 2"), std::string::npos)
      << TrafficJson(a);
  EXPECT_EQ(TrafficJson(a).find("dgt_blocks_1"), std::string::npos);
  EXPECT_EQ(TrafficJson(comm::TrafficSnapshot{}).find("dgt"), std::string::npos);
  const std::filesystem::path dir = dir_.path() / "traffic";
  ASSERT_TRUE(WriteTrafficFile(dir / "a.json", a).ok());
  ASSERT_TRUE(WriteTrafficFile(dir / "b.json", b).ok());
  const comm::TrafficSnapshot sum = ReadTrafficDir(dir);
  EXPECT_EQ(sum.wan_bytes_sent, 150u);
  EXPECT_EQ(sum.dgt[0].blocks, 10u);
  EXPECT_EQ(sum.dgt[2].blocks, 6u);
  EXPECT_EQ(sum.dgt[2].bytes, 840u);
  EXPECT_EQ(sum.dgt[2].lost, 3u);
  EXPECT_EQ(sum.dgt[1].blocks, 0u);
}

}  // namespace
}  // namespace geomx::cli
