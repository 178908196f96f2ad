// Tests of the kmeans estimator: a Lloyd step against a hand computation, the fixed point on separated blobs
// against blob means computed here, the distributed step and fit against the single-process ones.
#include "algorithms/estimators/kmeans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "engine/base/rng.h"

namespace geomx::algorithms {
namespace {

data::Table DenseTable(int64_t rows, int64_t cols, std::vector<float> values) {
  data::Table t;
  t.rows = rows;
  t.cols = cols;
  t.dense = std::move(values);
  return t;
}

// Three well-separated blobs in 4 dimensions with small integer offsets (every sum and squared distance is an
// exact float); labels = blob ids.
data::Table Blobs(int per_blob, uint64_t seed) {
  const float centres[3][4] = {{0, 0, 0, 0}, {20, 0, 20, 0}, {0, 20, 0, 20}};
  Rng rng(seed);
  data::Table t;
  t.cols = 4;
  for (int i = 0; i < 3 * per_blob; ++i) {
    const int b = static_cast<int>(rng.Below(3));
    for (int j = 0; j < 4; ++j) t.dense.push_back(centres[b][j] + static_cast<float>(rng.Below(5)) - 2.0f);
    t.labels.push_back(b);
    ++t.rows;
  }
  t.num_classes = 3;
  return t;
}

// Per blob, the mean of its rows, in double.
std::vector<std::vector<double>> BlobMeans(const data::Table& t) {
  std::vector<std::vector<double>> sum(3, std::vector<double>(static_cast<size_t>(t.cols), 0.0));
  std::vector<double> count(3, 0.0);
  for (int64_t i = 0; i < t.rows; ++i) {
    const int b = t.labels[static_cast<size_t>(i)];
    count[static_cast<size_t>(b)] += 1;
    for (int64_t j = 0; j < t.cols; ++j)
      sum[static_cast<size_t>(b)][static_cast<size_t>(j)] += t.dense[static_cast<size_t>(i * t.cols + j)];
  }
  for (int b = 0; b < 3; ++b) {
    for (double& v : sum[static_cast<size_t>(b)]) v /= count[static_cast<size_t>(b)];
  }
  return sum;
}

double NaiveSquaredDistance(const float* a, const float* b, int64_t d) {
  double s = 0;
  for (int64_t j = 0; j < d; ++j) s += (static_cast<double>(a[j]) - b[j]) * (static_cast<double>(a[j]) - b[j]);
  return s;
}

std::unique_ptr<Estimator> Make(const std::map<std::string, std::string>& params) {
  auto est = CreateEstimator("kmeans", params);
  EXPECT_TRUE(est.ok()) << est.status().ToString();
  return std::move(est).value();
}

std::vector<data::Table> Shards(const data::Table& t, const std::vector<int64_t>& cuts) {
  std::vector<data::Table> out;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    std::vector<int64_t> rows;
    for (int64_t i = cuts[s]; i < cuts[s + 1]; ++i) rows.push_back(i);
    out.push_back(t.Select(rows));
  }
  return out;
}

TEST(KMeansTest, OneLloydStepMatchesAHandComputation) {
  // 1-D points 0, 1, 2 (weights 1, 1, 2) near centre 0.5 and 10, 12 near centre 11.
  data::Table t = DenseTable(5, 1, {0, 1, 2, 10, 12});
  t.weights = {1, 1, 2, 1, 1};
  auto step = KMeansLloydStep(t, {0.5f, 11.0f}, 2, nullptr, 2);
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(step->assignment, (std::vector<int32_t>{0, 0, 0, 1, 1}));
  // New centres: (0 + 1 + 2*2) / 4 = 1.25 and (10 + 12) / 2 = 11.
  EXPECT_FLOAT_EQ(step->centres[0], 1.25f);
  EXPECT_FLOAT_EQ(step->centres[1], 11.0f);
  EXPECT_EQ(step->weights, (std::vector<double>{4, 2}));
  // Inertia under the given centres: 0.25 + 0.25 + 2 * 2.25 + 1 + 1 = 7.
  EXPECT_NEAR(step->inertia, 7.0, 1e-5);

  // A 3-D case with random centres against a naive nearest-centre loop.
  const data::Table blobs = Blobs(20, 5);
  const std::vector<float> centres = {1, 2, 3, 4, 15, -1, 18, 2, 0, 15, 1, 22, 9, 9, 9, 9};
  auto s2 = KMeansLloydStep(blobs, centres, 4, nullptr, 1);
  ASSERT_TRUE(s2.ok());
  std::vector<double> sum(16, 0.0), count(4, 0.0);
  double inertia = 0;
  for (int64_t i = 0; i < blobs.rows; ++i) {
    const float* x = blobs.Row(i);
    int best = 0;
    for (int c = 1; c < 4; ++c) {
      if (NaiveSquaredDistance(x, &centres[static_cast<size_t>(c * 4)], 4) <
          NaiveSquaredDistance(x, &centres[static_cast<size_t>(best * 4)], 4)) {
        best = c;
      }
    }
    EXPECT_EQ(s2->assignment[static_cast<size_t>(i)], best) << "row " << i;
    inertia += NaiveSquaredDistance(x, &centres[static_cast<size_t>(best * 4)], 4);
    count[static_cast<size_t>(best)] += 1;
    for (int j = 0; j < 4; ++j) sum[static_cast<size_t>(best * 4 + j)] += x[j];
  }
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(s2->weights[static_cast<size_t>(c)], count[static_cast<size_t>(c)]);
    for (int j = 0; j < 4; ++j) {
      const double want = count[static_cast<size_t>(c)] > 0
                              ? sum[static_cast<size_t>(c * 4 + j)] / count[static_cast<size_t>(c)]
                              : centres[static_cast<size_t>(c * 4 + j)];
      EXPECT_NEAR(s2->centres[static_cast<size_t>(c * 4 + j)], want, 1e-5);
    }
  }
  EXPECT_NEAR(s2->inertia, inertia, 1e-6 * inertia);
}

TEST(KMeansTest, ConvergesToTheBlobMeans) {
  const data::Table blobs = Blobs(40, 9);
  const auto means = BlobMeans(blobs);
  for (const std::string init : {"k-means++", "k-means||"}) {
    auto est = Make({{"n_clusters", "3"}, {"init", init}});
    ASSERT_TRUE(est->Fit(blobs, FitContext{}).ok());
    auto p = est->Predict(blobs, 2);
    ASSERT_TRUE(p.ok());
    const Metrics m = EvaluateTask(data::TableTask::kClustering, blobs, *p);
    EXPECT_DOUBLE_EQ(MetricValue(m, "purity"), 1.0) << init;
    EXPECT_NEAR(MetricValue(m, "nmi"), 1.0, 1e-12) << init;
    // Each cluster's centre is its blob's mean: read the centres back through the saved model.
    ModelWriter w;
    est->Save(&w);
    auto r = ModelReader::Parse(w.Encode(), "m");
    ASSERT_TRUE(r.ok());
    std::vector<float> centres;
    ASSERT_TRUE(r->GetFloats("kmeans.centres", &centres, 12).ok());
    double inertia = 0;
    for (int64_t i = 0; i < blobs.rows; ++i) {
      const int c = static_cast<int>(p->value[static_cast<size_t>(i)]);
      const int b = blobs.labels[static_cast<size_t>(i)];
      for (int j = 0; j < 4; ++j) {
        EXPECT_NEAR(centres[static_cast<size_t>(c * 4 + j)], means[static_cast<size_t>(b)][static_cast<size_t>(j)],
                    1e-5);
      }
      inertia += NaiveSquaredDistance(blobs.Row(i), &centres[static_cast<size_t>(c * 4)], 4);
    }
    EXPECT_NEAR(MetricValue(p->extra, "inertia"), inertia, 1e-9 * inertia);
    EXPECT_NEAR(MetricValue(est->ModelMetrics(blobs, *p), "inertia"), inertia, 1e-9 * inertia);
  }
}

TEST(KMeansTest, DistributedLloydStepEqualsTheLocalStepExactly) {
  const data::Table blobs = Blobs(30, 13);
  const std::vector<float> centres = {1, 2, 3, 4, 15, -1, 18, 2, 0, 15, 1, 22, 9, 9, 9, 9};
  auto local = KMeansLloydStep(blobs, centres, 4, nullptr, 1);
  ASSERT_TRUE(local.ok());
  const std::vector<int64_t> cuts = {0, 17, 18, blobs.rows};
  const auto shards = Shards(blobs, cuts);
  ThreadCollectiveGroup group(3);
  std::vector<Result<KMeansStep>> got(3, Status::Internal("not run"));
  std::vector<std::thread> workers;
  for (int r = 0; r < 3; ++r) {
    workers.emplace_back([&, r] {
      got[static_cast<size_t>(r)] = KMeansLloydStep(shards[static_cast<size_t>(r)], centres, 4, group.Worker(r), 2);
    });
  }
  for (auto& w : workers) w.join();
  std::vector<int32_t> assignment;
  for (int r = 0; r < 3; ++r) {
    const auto& s = got[static_cast<size_t>(r)];
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->centres, local->centres);
    EXPECT_EQ(s->weights, local->weights);
    EXPECT_EQ(s->inertia, local->inertia);
    assignment.insert(assignment.end(), s->assignment.begin(), s->assignment.end());
  }
  EXPECT_EQ(assignment, local->assignment);
}

// Fits `params` on three shards as three threads; returns every worker's prediction of `probe`.
std::vector<Result<Prediction>> FitDistributed(const data::Table& train, const std::vector<int64_t>& cuts,
                                               const std::map<std::string, std::string>& params,
                                               const data::Table& probe) {
  const auto shards = Shards(train, cuts);
  const int world = static_cast<int>(shards.size());
  ThreadCollectiveGroup group(world);
  std::vector<Result<Prediction>> got(static_cast<size_t>(world), Status::Internal("not run"));
  std::vector<std::thread> workers;
  for (int r = 0; r < world; ++r) {
    workers.emplace_back([&, r] {
      auto est = CreateEstimator("kmeans", params);
      if (!est.ok()) return;
      FitContext ctx;
      ctx.collective = group.Worker(r);
      ctx.threads = 1 + r % 2;  // workers need not use the same thread count
      Status s = (*est)->Fit(shards[static_cast<size_t>(r)], ctx);
      got[static_cast<size_t>(r)] = s.ok() ? (*est)->Predict(probe, 1) : Result<Prediction>(s);
    });
  }
  for (auto& w : workers) w.join();
  return got;
}

TEST(KMeansTest, DistributedFitEqualsTheLocalFit) {
  const data::Table blobs = Blobs(50, 17);
  for (const std::string init : {"k-means++", "k-means||"}) {
    const std::map<std::string, std::string> params = {{"n_clusters", "5"}, {"init", init}, {"n_init", "2"}};
    auto single = Make(params);
    ASSERT_TRUE(single->Fit(blobs, FitContext{}).ok());
    auto want = single->Predict(blobs, 1);
    ASSERT_TRUE(want.ok());
    for (const auto& p : FitDistributed(blobs, {0, 60, 61, blobs.rows}, params, blobs)) {
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      EXPECT_EQ(p->value, want->value) << init;
      EXPECT_NEAR(MetricValue(p->extra, "inertia"), MetricValue(want->extra, "inertia"), 1e-6) << init;
    }
  }
}

TEST(KMeansTest, MiniBatchFindsTheBlobsOnEveryWorkerAlike) {
  const data::Table blobs = Blobs(100, 19);
  const std::map<std::string, std::string> params = {
      {"n_clusters", "3"}, {"algorithm", "minibatch"}, {"batch_size", "32"}};
  auto single = Make(params);
  ASSERT_TRUE(single->Fit(blobs, FitContext{}).ok());
  auto p = single->Predict(blobs, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(MetricValue(EvaluateTask(data::TableTask::kClustering, blobs, *p), "purity"), 1.0);
  const auto got = FitDistributed(blobs, {0, 100, 200, blobs.rows}, params, blobs);
  for (const auto& g : got) {
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_DOUBLE_EQ(MetricValue(EvaluateTask(data::TableTask::kClustering, blobs, *g), "purity"), 1.0);
    EXPECT_EQ(g->value, got[0]->value);
    EXPECT_EQ(MetricValue(g->extra, "inertia"), MetricValue(got[0]->extra, "inertia"));
  }
}

TEST(KMeansTest, MoreInitialisationsNeverEndWorse) {
  Rng rng(3);
  data::Table t = DenseTable(200, 2, {});
  for (int i = 0; i < 400; ++i) t.dense.push_back(static_cast<float>(rng.Uniform()));
  double inertia[2];
  for (int i = 0; i < 2; ++i) {
    auto est = Make({{"n_clusters", "6"}, {"n_init", i == 0 ? "1" : "6"}, {"max_iter", "5"}});
    ASSERT_TRUE(est->Fit(t, FitContext{}).ok());
    auto p = est->Predict(t, 1);
    ASSERT_TRUE(p.ok());
    inertia[i] = MetricValue(p->extra, "inertia");
  }
  EXPECT_LE(inertia[1], inertia[0] * (1 + 1e-6));  // run 0 is the same in both, the best of six can only be lower
}

TEST(KMeansTest, SparseInputClustersLikeDense) {
  const data::Table blobs = Blobs(20, 23);
  data::Table sparse = blobs;
  sparse.sparse = true;
  sparse.dense.clear();
  sparse.row_ptr = {0};
  for (int64_t i = 0; i < blobs.rows; ++i) {
    for (int j = 0; j < 4; ++j) {
      const float v = blobs.dense[static_cast<size_t>(i * 4 + j)];
      if (v != 0) {
        sparse.col_index.push_back(j);
        sparse.values.push_back(v);
      }
    }
    sparse.row_ptr.push_back(static_cast<int64_t>(sparse.values.size()));
  }
  auto a = Make({{"n_clusters", "3"}});
  auto b = Make({{"n_clusters", "3"}});
  ASSERT_TRUE(a->Fit(blobs, FitContext{}).ok());
  ASSERT_TRUE(b->Fit(sparse, FitContext{}).ok());
  auto pa = a->Predict(blobs, 1);
  auto pb = b->Predict(sparse, 1);
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ(pa->value, pb->value);
}

TEST(KMeansTest, SaveLoadRoundTripPredictsIdentically) {
  const data::Table blobs = Blobs(20, 29);
  auto est = Make({{"n_clusters", "4"}});
  ASSERT_TRUE(est->Fit(blobs, FitContext{}).ok());
  ModelWriter w;
  est->Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "kmeans.model");
  ASSERT_TRUE(r.ok());
  auto loaded = Make({{"n_clusters", "4"}});
  ASSERT_TRUE(loaded->Load(*r).ok());
  auto a = est->Predict(blobs, 1);
  auto b = loaded->Predict(blobs, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->value, b->value);
  EXPECT_EQ(MetricValue(a->extra, "inertia"), MetricValue(b->extra, "inertia"));
  // A model saved with another n_clusters, or with too few centre values, is data loss.
  EXPECT_EQ(Make({{"n_clusters", "5"}})->Load(*r).code(), StatusCode::kDataLoss);
  ModelWriter bad;
  bad.PutInts("kmeans.shape", std::vector<int64_t>{4, 1000000});
  bad.PutFloats("kmeans.centres", std::vector<float>(16, 0.0f));
  bad.PutNumber("kmeans.inertia", 1);
  auto rb = ModelReader::Parse(bad.Encode(), "bad.model");
  ASSERT_TRUE(rb.ok());
  EXPECT_EQ(Make({{"n_clusters", "4"}})->Load(*rb).code(), StatusCode::kDataLoss);
}

TEST(KMeansTest, RejectsBadParametersAndImpossibleFits) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{{"n_clusters", "0"},
                                                                                    {"init", "bogus"},
                                                                                    {"algorithm", "elkan"},
                                                                                    {"tol", "-1"},
                                                                                    {"n_init", "0"},
                                                                                    {"clusters", "3"}}) {
    EXPECT_EQ(CreateEstimator("kmeans", {{name, value}}).status().code(), StatusCode::kInvalidArgument)
        << name << "=" << value;
  }
  const data::Table small = DenseTable(3, 2, {0, 0, 1, 1, 2, 2});
  Status s = Make({{"n_clusters", "4"}})->Fit(small, FitContext{});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("n_clusters (4) is larger than the training set (3 rows)"), std::string::npos)
      << s.message();
  EXPECT_EQ(Make({})->Fit(DenseTable(0, 2, {}), FitContext{}).code(), StatusCode::kInvalidArgument);
  auto est = Make({{"n_clusters", "2"}});
  ASSERT_TRUE(est->Fit(small, FitContext{}).ok());
  auto p = est->Predict(DenseTable(1, 3, {0, 0, 0}), 1);
  ASSERT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("3 columns"), std::string::npos) << p.status().message();
  EXPECT_EQ(KMeansLloydStep(small, {0, 0, 1}, 2, nullptr, 1).status().code(), StatusCode::kInvalidArgument);
}

TEST(KMeansTest, InterruptedFitIsCancelled) {
  const data::Table blobs = Blobs(20, 31);
  std::atomic<bool> stop{true};
  FitContext ctx;
  ctx.interrupted = &stop;
  EXPECT_EQ(Make({{"n_clusters", "3"}})->Fit(blobs, ctx).code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace geomx::algorithms
