// Server snapshot files (algorithms/cluster/snapshots.h): naming, pruning, the latest round common to every
// server, and refusals of files that are not what their name says. ServerOptimizer's round-completion hook that
// triggers them.
#include "algorithms/cluster/snapshots.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/sync/server_optimizer.h"
#include "tests/testutil.h"

namespace geomx::cluster {
namespace {

namespace fs = std::filesystem;

// A state of one vector entry "v" holding `value` (and its restore target).
class OneVector final : public ps::ServerState {
 public:
  explicit OneVector(float value) : value_(value) {}
  Status SaveState(const std::string& prefix, ps::StateTensors* out) const override {
    (*out)[prefix + "v"] = ps::StateVector({value_, value_ + 1});
    return Status::Ok();
  }
  Status RestoreState(const std::string& prefix, const ps::StateTensors& in) override {
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> v, ps::StateVectorOf(in, prefix + "v"));
    if (v.size() != 2) return Status::DataLoss("v");
    value_ = v[0];
    return Status::Ok();
  }
  float value() const { return value_; }

 private:
  float value_;
};

// A policy whose Restore records what it got.
class RecordingPolicy final : public sync::ServerPolicy {
 public:
  comm::ServerHandler* handler() override { return nullptr; }
  Status Restore(const ps::StateTensors& saved, int64_t round) override {
    restored_round = round;
    names.clear();
    for (const auto& [name, t] : saved) names.push_back(name);
    return state.RestoreState("", saved);
  }
  OneVector state{0};
  int64_t restored_round = -1;
  std::vector<std::string> names;
};

TEST(SnapshotsTest, KeepsTheNewestTwoAndRestoresOneRound) {
  testing::ScratchDir dir;
  for (int64_t round : {4, 9, 14}) {
    ASSERT_TRUE(WriteSnapshot(dir.path(), "central/global-server0", round, OneVector(float(round))).ok());
  }
  EXPECT_EQ(SnapshotRounds(dir.path(), "central/global-server0"), (std::vector<int64_t>{9, 14}));
  EXPECT_TRUE(fs::exists(dir / "central/global-server0/round-000000000014.state"));
  EXPECT_FALSE(fs::exists(dir / "central/global-server0/round-000000000004.state"));

  RecordingPolicy policy;
  ASSERT_TRUE(RestoreSnapshot(dir.path(), "central/global-server0", 9, policy).ok());
  EXPECT_EQ(policy.restored_round, 9);
  EXPECT_EQ(policy.state.value(), 9.0f);
  EXPECT_EQ(policy.names, (std::vector<std::string>{"v"}));  // the round entry is the file's, not the state's
}

TEST(SnapshotsTest, TheLatestCommonRoundOfEveryServer) {
  testing::ScratchDir dir;
  const std::string a = GlobalServerName(0), b = GlobalServerName(1);
  EXPECT_EQ(a, "central/global-server0");
  for (int64_t round : {4, 9}) ASSERT_TRUE(WriteSnapshot(dir.path(), a, round, OneVector(1)).ok());
  // b died before writing round 9.
  ASSERT_TRUE(WriteSnapshot(dir.path(), b, 4, OneVector(1)).ok());
  Result<int64_t> common = LatestCommonSnapshot(dir.path(), {a, b});
  ASSERT_TRUE(common.ok()) << common.status().ToString();
  EXPECT_EQ(*common, 4);
  EXPECT_EQ(*LatestCommonSnapshot(dir.path(), {a}), 9);

  // Files that are not snapshots are ignored; a server without any is named.
  std::ofstream(dir / "central/global-server0/round-12.state.tmp") << "partial";
  std::ofstream(dir / "central/global-server0/notes.txt") << "x";
  EXPECT_EQ(SnapshotRounds(dir.path(), a), (std::vector<int64_t>{4, 9}));
  Result<int64_t> missing = LatestCommonSnapshot(dir.path(), {a, GlobalServerName(2)});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("central/global-server2"), std::string::npos)
      << missing.status().ToString();

  // Rounds without one in common: {9} and {14, 19}.
  testing::ScratchDir other;
  ASSERT_TRUE(WriteSnapshot(other.path(), a, 9, OneVector(1)).ok());
  for (int64_t round : {14, 19}) ASSERT_TRUE(WriteSnapshot(other.path(), b, round, OneVector(1)).ok());
  EXPECT_EQ(LatestCommonSnapshot(other.path(), {a, b}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(LatestCommonSnapshot(other.path(), {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(SnapshotsTest, AFileThatIsNotItsRoundsSnapshotIsRefused) {
  testing::ScratchDir dir;
  const std::string node = GlobalServerName(0);
  ASSERT_TRUE(WriteSnapshot(dir.path(), node, 4, OneVector(1)).ok());
  RecordingPolicy policy;
  // Missing.
  EXPECT_EQ(RestoreSnapshot(dir.path(), node, 5, policy).code(), StatusCode::kNotFound);
  // Renamed: the file says round 4.
  fs::copy_file(SnapshotPath(dir.path(), node, 4), SnapshotPath(dir.path(), node, 8));
  Status renamed = RestoreSnapshot(dir.path(), node, 8, policy);
  EXPECT_EQ(renamed.code(), StatusCode::kDataLoss) << renamed.ToString();
  EXPECT_NE(renamed.message().find("not the snapshot of round 8"), std::string::npos) << renamed.ToString();
  // Damaged.
  std::ofstream(SnapshotPath(dir.path(), node, 12), std::ios::binary) << "garbage, not a tensor file";
  EXPECT_FALSE(RestoreSnapshot(dir.path(), node, 12, policy).ok());
  EXPECT_EQ(policy.restored_round, -1);  // nothing reached the policy
}

// The hook fires once per round, in the Step of the last of the server's keys, with the weights of that round.
TEST(SnapshotsTest, ServerOptimizerReportsARoundOnceEveryKeyStepped) {
  sync::ServerOptimizer opt(nn::LrScheduleConfig{}, 10, 100);
  nn::OptimizerConfig sgd;
  sgd.name = "sgd";
  sgd.lr = 1.0f;
  ASSERT_TRUE(opt.SetRule(sgd).ok());
  std::vector<int64_t> rounds;
  std::vector<float> weights_at_report;
  opt.OnRoundComplete(3, [&](int64_t round) {
    rounds.push_back(round);
    for (uint64_t k : {1, 2, 3}) weights_at_report.push_back((*opt.Weights(k))[0]);
  });
  for (uint64_t k : {1, 2, 3}) opt.InitKey(k, std::vector<float>{10.0f});
  const std::vector<float> grad = {1.0f};
  ASSERT_TRUE(opt.Step(2, grad, 0).ok());
  ASSERT_TRUE(opt.Step(1, grad, 0).ok());
  EXPECT_TRUE(rounds.empty());
  ASSERT_TRUE(opt.Step(3, grad, 0).ok());
  EXPECT_EQ(rounds, (std::vector<int64_t>{0}));
  EXPECT_EQ(weights_at_report, (std::vector<float>{9.0f, 9.0f, 9.0f}));  // 10 - lr x 1, every key
  for (uint64_t k : {3, 1}) ASSERT_TRUE(opt.Step(k, grad, 1).ok());
  EXPECT_EQ(rounds.size(), 1u);
  ASSERT_TRUE(opt.Step(2, grad, 1).ok());
  EXPECT_EQ(rounds, (std::vector<int64_t>{0, 1}));
}

}  // namespace
}  // namespace geomx::cluster
