// A job with no neural network over both tiers (2 data centres x 2 workers, their local servers, a global server,
// the master worker; every role a thread over loopback vans) through the parameter-server context
// (algorithms/ps/ps_context.h): per-worker vectors summed, a top-k merge, a decision the global server's rule
// writes and every worker reads back, row-sparse deltas and a pull of selected rows, and job-wide barriers. Every
// expected value is computed by hand from what the workers pushed.
#include "algorithms/ps/ps_context.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/cluster/roles.h"
#include "algorithms/cluster/worker_session.h"
#include "algorithms/ps/global_rule.h"
#include "comm/handlers/payloads.h"
#include "tests/algorithms/two_tier_job.h"

namespace geomx::ps {
namespace {

constexpr uint64_t kSums = 10;       // dense sum, 4 floats
constexpr uint64_t kNeighbours = 11;  // topk_merge
constexpr uint64_t kBest = 12;       // decision: (argmax of the summed vector, its value)
constexpr uint64_t kTable = 13;      // row-sparse, 6 rows x 2
constexpr int kWorkers = 4;

// The global rule of this job: when the summed vector of a round is complete, publish where its maximum is.
class DecideBest final : public GlobalRule {
 public:
  Result<Bytes> OnAggregate(const KeyDef& key, int64_t round, Bytes aggregate, int contributors,
                            DecisionBoard& board) override {
    if (key.key == kSums) {
      const float* v = aggregate.as<float>();
      const size_t n = aggregate.count<float>();
      const size_t best = static_cast<size_t>(std::max_element(v, v + n) - v);
      GEOMX_RETURN_IF_ERROR(board.Publish(kBest, round, {static_cast<float>(best), v[best]}));
    }
    (void)contributors;
    return aggregate;
  }
};
GEOMX_REGISTER(GlobalRuleRegistry, "test-decide-best", [](const JobDescription&) -> Result<std::unique_ptr<GlobalRule>> {
  return std::unique_ptr<GlobalRule>(new DecideBest());
});

KeySchema Schema() {
  std::vector<KeyDef> keys(4);
  keys[0] = {.key = kSums, .name = "sums", .elems = 4, .role = KeyRole::kAggregate, .init = KeyInit::kNone};
  keys[1] = {.key = kNeighbours, .name = "neighbours", .elems = 16, .reducer = "topk_merge",
             .role = KeyRole::kAggregate, .init = KeyInit::kNone};
  keys[2] = {.key = kBest, .name = "best", .elems = 2, .role = KeyRole::kDecision, .init = KeyInit::kNone};
  keys[3] = {.key = kTable, .name = "table", .elems = 12, .reducer = "row_sparse",
             .layout = KeyLayoutKind::kRowSparse, .row_width = 2, .role = KeyRole::kAggregate,
             .init = KeyInit::kZeros};
  return KeySchema(std::move(keys)).WithBarrier();
}

// What worker w pushes.
std::vector<float> SumsOf(int w) { return {1.0f * w, 2.0f - w, 0.5f * w * w, 3.0f}; }
std::vector<comm::Neighbor> NeighboursOf(int w) {
  std::vector<comm::Neighbor> n;
  for (int j = 0; j < 3; ++j) n.push_back({0.3f * (kWorkers - w) + 0.1f * j, static_cast<uint64_t>(100 * w + j), w});
  return n;
}

struct WorkerResult {
  std::vector<float> sums;
  comm::TopK neighbours;
  std::vector<float> best;
  comm::RowSparse pushed_rows;
  std::vector<float> pulled_rows;
  Status status;
};

Status RunWorker(const cluster::ClusterConfig& c, const std::string& party, int rank, const cluster::RoleEnv& env,
                 const JobDescription& job, WorkerResult* out) {
  GEOMX_ASSIGN_OR_RETURN(auto session, cluster::WorkerSession::Join(c, party, rank, job.schema, env));
  std::unique_ptr<PsContext> ps = session->MakeContext();
  const int w = ps->worker_index();
  GEOMX_RETURN_IF_ERROR(ps->Barrier());
  out->sums.resize(4);
  GEOMX_RETURN_IF_ERROR(ps->PushPull(kSums, SumsOf(w), out->sums, 0));
  GEOMX_ASSIGN_OR_RETURN(Bytes merged, ps->PushPullPayload(kNeighbours, comm::EncodeTopK(3, NeighboursOf(w)), 0));
  GEOMX_ASSIGN_OR_RETURN(out->neighbours, comm::DecodeTopK(merged));
  out->best.resize(2);
  GEOMX_RETURN_IF_ERROR(ps->PullDecision(kBest, 0, out->best));
  const std::vector<uint64_t> rows = {static_cast<uint64_t>(w), 5};
  const std::vector<float> deltas = {w + 1.0f, 2.0f * (w + 1), 1.0f, 1.0f};
  GEOMX_ASSIGN_OR_RETURN(out->pushed_rows, ps->PushRows(kTable, rows, deltas, 0));
  out->pulled_rows.resize(6);
  GEOMX_RETURN_IF_ERROR(ps->PullRows(kTable, std::vector<uint64_t>{5, 0, 4}, out->pulled_rows, 0));
  // Wrong calls are refused before anything is sent.
  std::vector<float> wrong(16);
  if (ps->PushPull(kNeighbours, wrong, wrong, 1).code() != StatusCode::kInvalidArgument) {
    return Status::Internal("a dense call on a topk_merge key was not refused");
  }
  GEOMX_RETURN_IF_ERROR(ps->Barrier());
  return session->Finish();
}

TEST(PsContextTest, AJobWithoutANeuralNetworkRunsOverBothTiers) {
  const cluster::ClusterConfig c = testing::TwoByTwoConfig();
  JobDescription job;
  job.schema = Schema();
  job.rule = "test-decide-best";
  std::vector<WorkerResult> results(kWorkers);
  const auto roles = testing::RunTwoTierJob(
      c, job, [&](const cluster::ClusterConfig& cc, const std::string& p, int r, const cluster::RoleEnv& env) {
        return RunWorker(cc, p, r, env, job, &results[cluster::WorkerIndex(cc.topology, p == "dc-a" ? 0 : 1, r)]);
      });
  for (const auto& [name, s] : roles) ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();

  // By hand: the sum over the 4 workers, the 3 nearest of all 12 candidates, the decision, the table.
  std::vector<float> sums(4, 0.0f);
  std::vector<comm::Neighbor> all;
  for (int i = 0; i < kWorkers; ++i) {
    const std::vector<float> v = SumsOf(i);
    for (size_t j = 0; j < 4; ++j) sums[j] += v[j];
    for (const comm::Neighbor& n : NeighboursOf(i)) all.push_back(n);
  }
  std::sort(all.begin(), all.end(), [](const comm::Neighbor& a, const comm::Neighbor& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
  });
  const size_t best = static_cast<size_t>(std::max_element(sums.begin(), sums.end()) - sums.begin());
  ASSERT_EQ(sums, (std::vector<float>{6.0f, 2.0f, 7.0f, 12.0f}));  // the hand computation itself
  for (int i = 0; i < kWorkers; ++i) {
    const WorkerResult& r = results[i];
    EXPECT_EQ(r.sums, sums) << "worker " << i;
    ASSERT_EQ(r.neighbours.neighbors.size(), 3u) << "worker " << i;
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(r.neighbours.neighbors[j].id, all[j].id) << "worker " << i << " neighbour " << j;
      EXPECT_FLOAT_EQ(r.neighbours.neighbors[j].distance, all[j].distance);
      EXPECT_EQ(r.neighbours.neighbors[j].label, all[j].label);
    }
    EXPECT_EQ(r.best, (std::vector<float>{static_cast<float>(best), sums[best]})) << "worker " << i;
    // Rows 0..3 got (w+1, 2(w+1)) from worker w alone; row 5 got (1, 1) from each of the 4.
    EXPECT_EQ(r.pushed_rows.rows, (std::vector<uint64_t>{0, 1, 2, 3, 5})) << "worker " << i;
    EXPECT_EQ(r.pushed_rows.values, (std::vector<float>{1, 2, 2, 4, 3, 6, 4, 8, 4, 4})) << "worker " << i;
    EXPECT_EQ(r.pulled_rows, (std::vector<float>{4, 4, 1, 2, 0, 0})) << "worker " << i;
  }
}

TEST(PsContextTest, BarrierNeedsTheBarrierKey) {
  KeySchema no_barrier({{.key = 1, .name = "x", .elems = 1, .role = KeyRole::kAggregate, .init = KeyInit::kNone}});
  PsContext ps(nullptr, nullptr, no_barrier, 0, 1);
  EXPECT_EQ(ps.Barrier().code(), StatusCode::kFailedPrecondition);
  std::vector<float> v(1);
  EXPECT_EQ(ps.PushPull(7, v, v, 0).code(), StatusCode::kInvalidArgument);  // not in the schema
  EXPECT_EQ(ps.PullDecision(1, 0, v).code(), StatusCode::kInvalidArgument);  // not a decision key
}

}  // namespace
}  // namespace geomx::ps
