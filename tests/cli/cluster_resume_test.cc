// Server snapshots and resume of a topology job (topology.snapshot_every, algorithms/cluster/snapshots.h): a 2 x 2
// job with two global servers and Adam at the global servers stops early, and the job resumed from the servers'
// snapshots ends with exactly the weights of the same job run without a stop. Every role is a thread of this
// process over loopback vans (cluster_test_util.h).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/cluster/snapshots.h"
#include "cluster_test_util.h"
#include "nn/checkpoint.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

namespace fs = std::filesystem;
using cluster_testing::Weights;

// Two global servers and small slices, so each server holds several slices of the model; Adam, whose moments
// and step count live on the global servers and must come back exactly.
Recipe ResumableRecipe() {
  Recipe r = cluster_testing::TwoByTwoRecipe("resume", 2);  // 16 rounds per epoch: 32 rounds
  r.topology.global_servers = 2;
  r.topology.options.split_bytes = 128;
  r.optimizer.name = "adam";
  r.optimizer.lr = 0.01f;
  r.topology.snapshot_every = 5;
  return r;
}

std::map<std::string, Weights> RunInFolder(const Recipe& r, const fs::path& run, bool resume) {
  comm::LoopbackNetwork net;
  ClusterEnv env = cluster_testing::LoopbackEnv(&net);
  env.out_dir = run.string();
  env.snapshot_dir = (run / "snapshots").string();
  env.resume = resume;
  return cluster_testing::RunCluster(r, env);
}

TEST(ClusterResumeTest, AResumedJobEndsWithTheWeightsOfAnUninterruptedOne) {
  testing::ScratchDir dir;
  const Recipe full = ResumableRecipe();
  const std::map<std::string, Weights> reference = RunInFolder(full, dir / "reference", false);
  ASSERT_EQ(reference.size(), 4u);

  Recipe first = full;
  first.training.max_iterations = 13;  // rounds 0..12: snapshots after rounds 4 and 9
  const std::map<std::string, Weights> stopped = RunInFolder(first, dir / "run", false);
  ASSERT_EQ(stopped.size(), 4u);
  for (int rank : {0, 1}) {
    EXPECT_EQ(cluster::SnapshotRounds(dir / "run" / "snapshots", cluster::GlobalServerName(rank)),
              (std::vector<int64_t>{4, 9}))
        << "global server " << rank;
  }
  EXPECT_NE(stopped.at("dc-a/worker0"), reference.at("dc-a/worker0"));  // the stop really was early

  // The snapshots are what the resumed job starts from: with global server 1's weights of round 9 shifted, the
  // resumed job ends elsewhere (a job that trained again from round 0 would end on the reference).
  fs::copy(dir / "run", dir / "tampered", fs::copy_options::recursive);
  const fs::path file = cluster::SnapshotPath(dir / "tampered" / "snapshots", cluster::GlobalServerName(1), 9);
  std::map<std::string, Tensor> tensors;
  nn::CheckpointMeta meta;
  ASSERT_TRUE(nn::ReadTensorFile(file, &tensors, &meta).ok());
  int shifted = 0;
  for (auto& [name, t] : tensors) {
    if (name.rfind("w/", 0) != 0) continue;
    float* w = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) w[i] += 0.5f;
    ++shifted;
  }
  ASSERT_GT(shifted, 0);
  ASSERT_TRUE(nn::WriteTensorFile(file, tensors, meta).ok());
  const std::map<std::string, Weights> tampered = RunInFolder(full, dir / "tampered", true);
  ASSERT_EQ(tampered.size(), 4u);
  EXPECT_NE(tampered.at("dc-a/worker0"), reference.at("dc-a/worker0"));

  const std::map<std::string, Weights> resumed = RunInFolder(full, dir / "run", true);  // rounds 10..31
  ASSERT_EQ(resumed.size(), 4u);
  for (const auto& [worker, weights] : reference) {
    EXPECT_EQ(resumed.at(worker), weights) << worker << ": the resumed job differs from the uninterrupted one";
  }
  // Snapshots went on in the resumed job: rounds 24 and 29 are the newest two.
  EXPECT_EQ(cluster::SnapshotRounds(dir / "run" / "snapshots", cluster::GlobalServerName(0)),
            (std::vector<int64_t>{24, 29}));
}

// Without snapshots the master worker refuses to start the job, naming the folder; the job does not hang.
TEST(ClusterResumeTest, ResumingWithoutSnapshotsFailsNamingTheFolder) {
  testing::ScratchDir dir;
  Recipe r = ResumableRecipe();
  r.topology.options.rendezvous_timeout_ms = 5000;
  const cluster::ClusterConfig c = std::move(ClusterConfigOf(r)).value();
  auto setup = PrepareRun(r);
  ASSERT_TRUE(setup.ok()) << setup.status().ToString();
  const Result<int64_t> start = cluster::ResumeRound(c, JobOf(r, *setup), dir / "nothing");
  ASSERT_FALSE(start.ok());
  EXPECT_EQ(start.status().code(), StatusCode::kNotFound);
  EXPECT_NE(start.status().message().find("no snapshot of central/global-server0"), std::string::npos)
      << start.status().ToString();
}

}  // namespace
}  // namespace geomx::cli
