// Tests of the knn estimator against a naive O(n^2) neighbour search written here, hand-computed votes, and the
// query-broadcast top-k merge against the single-table answer.
#include "algorithms/estimators/knn.h"

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

data::Table DenseTable(int64_t rows, int64_t cols, std::vector<float> values, std::vector<int32_t> labels,
                       int num_classes) {
  data::Table t;
  t.rows = rows;
  t.cols = cols;
  t.dense = std::move(values);
  t.labels = std::move(labels);
  t.num_classes = num_classes;
  return t;
}

// Random points on a coarse grid (so that equal distances happen) with random labels.
data::Table RandomTable(int64_t rows, int64_t cols, int num_classes, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (float& v : x) v = static_cast<float>(rng.Below(7)) * 0.5f - 1.0f + 0.001f * static_cast<float>(rng.Uniform());
  std::vector<int32_t> y(static_cast<size_t>(rows));
  for (int32_t& v : y) v = static_cast<int32_t>(rng.Below(static_cast<uint64_t>(num_classes)));
  return DenseTable(rows, cols, std::move(x), std::move(y), num_classes);
}


std::unique_ptr<Estimator> Make(const std::map<std::string, std::string>& params) {
  auto est = CreateEstimator("knn", params);
  EXPECT_TRUE(est.ok()) << est.status().ToString();
  return std::move(est).value();
}

// The naive reference: every distance in double, sorted by (distance as float, index).
struct NaiveNeighbor {
  float distance;
  int64_t index;
};
std::vector<NaiveNeighbor> NaiveKnn(const data::Table& train, const data::Table& queries, int64_t q, int64_t k,
                                    bool manhattan) {
  std::vector<NaiveNeighbor> all;
  for (int64_t i = 0; i < train.rows; ++i) {
    double s = 0;
    for (int64_t j = 0; j < train.cols; ++j) {
      const double diff = static_cast<double>(queries.dense[static_cast<size_t>(q * queries.cols + j)]) -
                          train.dense[static_cast<size_t>(i * train.cols + j)];
      s += manhattan ? std::fabs(diff) : diff * diff;
    }
    all.push_back({static_cast<float>(manhattan ? s : std::sqrt(s)), i});
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const NaiveNeighbor& a, const NaiveNeighbor& b) { return a.distance < b.distance; });
  all.resize(static_cast<size_t>(k));
  return all;
}

void ExpectMatchesNaive(const std::string& metric) {
  // More training rows than one distance tile (2048) and several query blocks.
  const data::Table train = RandomTable(2500, 6, 3, 7);
  const data::Table queries = RandomTable(40, 6, 3, 8);
  auto est = Make({{"n_neighbors", "7"}, {"metric", metric}, {"batch_size", "16"}});
  ASSERT_TRUE(est->Fit(train, FitContext{}).ok());
  for (const data::Table* q : {&queries}) {
    for (int threads : {1, 2}) {
      auto nb = KnnKNeighbors(*est, *q, threads);
      ASSERT_TRUE(nb.ok()) << nb.status().ToString();
      ASSERT_EQ(nb->k, 7);
      for (int64_t i = 0; i < q->rows; ++i) {
        const auto want = NaiveKnn(train, *q, i, 7, metric == "manhattan");
        for (int64_t j = 0; j < 7; ++j) {
          const size_t at = static_cast<size_t>(i * 7 + j);
          EXPECT_EQ(nb->index[at], want[static_cast<size_t>(j)].index) << "query " << i << " neighbour " << j;
          EXPECT_EQ(nb->distance[at], want[static_cast<size_t>(j)].distance) << "query " << i << " neighbour " << j;
          EXPECT_EQ(nb->label[at], train.labels[static_cast<size_t>(want[static_cast<size_t>(j)].index)]);
        }
      }
    }
  }
  // Sparse queries give the same answer as dense ones.
  auto dense = KnnKNeighbors(*est, queries, 1);
  auto sparse = KnnKNeighbors(*est, queries.ToSparse(), 1);
  ASSERT_TRUE(dense.ok() && sparse.ok());
  EXPECT_EQ(dense->index, sparse->index);
  EXPECT_EQ(dense->distance, sparse->distance);
}

TEST(KnnTest, EuclideanNeighboursMatchNaiveSearch) { ExpectMatchesNaive("euclidean"); }
TEST(KnnTest, ManhattanNeighboursMatchNaiveSearch) { ExpectMatchesNaive("manhattan"); }

TEST(KnnTest, EqualDistancesGoToTheSmallerTrainingIndex) {
  // Rows 1, 3 and 4 are the same point; the query sits on it.
  const data::Table train = DenseTable(5, 2, {5, 5, 1, 1, 9, 9, 1, 1, 1, 1}, {0, 1, 0, 0, 1}, 2);
  const data::Table query = DenseTable(1, 2, {1, 1}, {0}, 2);
  auto est = Make({{"n_neighbors", "2"}});
  ASSERT_TRUE(est->Fit(train, FitContext{}).ok());
  auto nb = KnnKNeighbors(*est, query, 1);
  ASSERT_TRUE(nb.ok());
  EXPECT_EQ(nb->index, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(nb->distance, (std::vector<float>{0, 0}));
}

TEST(KnnTest, UniformVoteSharesAreProbabilities) {
  // 1-D points; the query at 0 has neighbours 0.1 (class 1), -0.2 (class 0), 0.3 (class 1).
  const data::Table train = DenseTable(5, 1, {0.1f, -0.2f, 0.3f, 5, -5}, {1, 0, 1, 2, 2}, 3);
  const data::Table query = DenseTable(1, 1, {0}, {0}, 3);
  auto est = Make({{"n_neighbors", "3"}});
  ASSERT_TRUE(est->Fit(train, FitContext{}).ok());
  auto p = est->Predict(query, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->value[0], 1.0f);
  ASSERT_EQ(p->proba_columns, 3);
  EXPECT_FLOAT_EQ(p->proba[0], 1.0f / 3);
  EXPECT_FLOAT_EQ(p->proba[1], 2.0f / 3);
  EXPECT_FLOAT_EQ(p->proba[2], 0.0f);
}

TEST(KnnTest, DistanceWeightingByHandAndExactDuplicateWinsOutright) {
  // Query 0: neighbours at 1 (class 0), 2 (class 1), 3 (class 1): weights 1, 1/2, 1/3 -> class 0 has 6/11.
  const data::Table train = DenseTable(4, 1, {1, 2, 3, 40}, {0, 1, 1, 0}, 2);
  auto est = Make({{"n_neighbors", "3"}, {"weights", "distance"}});
  ASSERT_TRUE(est->Fit(train, FitContext{}).ok());
  auto p = est->Predict(DenseTable(1, 1, {0}, {0}, 2), 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->value[0], 0.0f);
  EXPECT_NEAR(p->proba[0], 6.0 / 11, 1e-6);
  EXPECT_NEAR(p->proba[1], 5.0 / 11, 1e-6);
  // A query equal to a training row of class 1 among closer-voting class-0 rows: the duplicate wins outright.
  const data::Table train2 = DenseTable(5, 2, {0, 0, 0.1f, 0, 0, 0.1f, -0.1f, 0, 0, -0.1f}, {1, 0, 0, 0, 0}, 2);
  auto uniform = Make({{"n_neighbors", "5"}});
  auto weighted = Make({{"n_neighbors", "5"}, {"weights", "distance"}});
  ASSERT_TRUE(uniform->Fit(train2, FitContext{}).ok());
  ASSERT_TRUE(weighted->Fit(train2, FitContext{}).ok());
  const data::Table on_point = DenseTable(1, 2, {0, 0}, {1}, 2);
  auto pu = uniform->Predict(on_point, 1);
  auto pw = weighted->Predict(on_point, 1);
  ASSERT_TRUE(pu.ok() && pw.ok());
  EXPECT_EQ(pu->value[0], 0.0f);
  EXPECT_FLOAT_EQ(pu->proba[0], 0.8f);
  EXPECT_EQ(pw->value[0], 1.0f);
  EXPECT_EQ(pw->proba[1], 1.0f);
  EXPECT_EQ(pw->proba[0], 0.0f);
}

// Three contiguous shards in rank order, with a duplicated point across shards so that ties cross workers.
std::vector<data::Table> Shards(const data::Table& t, const std::vector<int64_t>& cuts) {
  std::vector<data::Table> out;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    std::vector<int64_t> rows;
    for (int64_t i = cuts[s]; i < cuts[s + 1]; ++i) rows.push_back(i);
    out.push_back(t.Select(rows));
  }
  return out;
}

TEST(KnnTest, TopKMergeOverThreeShardsEqualsTheSingleTable) {
  for (const std::string weights : {"uniform", "distance"}) {
    data::Table train = RandomTable(300, 4, 4, 11);
    // Row 250 (shard 2) duplicates row 10 (shard 0): equal distances must resolve to the lower (rank, index).
    std::copy(train.dense.begin() + 10 * 4, train.dense.begin() + 11 * 4, train.dense.begin() + 250 * 4);
    data::Table queries = RandomTable(25, 4, 4, 12);
    std::copy(train.dense.begin() + 10 * 4, train.dense.begin() + 11 * 4, queries.dense.begin());
    const std::map<std::string, std::string> params = {{"n_neighbors", "6"}, {"weights", weights}};
    auto single = Make(params);
    ASSERT_TRUE(single->Fit(train, FitContext{}).ok());
    auto want = KnnKNeighbors(*single, queries, 1);
    auto want_pred = single->Predict(queries, 1);
    ASSERT_TRUE(want.ok() && want_pred.ok());
    ASSERT_EQ(want->index[0], 10);  // query 0 sits on the duplicated point: rows 10 and 250 at distance 0
    ASSERT_EQ(want->index[1], 250);

    const std::vector<int64_t> cuts = {0, 90, 200, 300};
    const std::vector<data::Table> shards = Shards(train, cuts);
    ThreadCollectiveGroup group(3);
    std::vector<Result<KnnNeighbors>> got(3, Status::Internal("not run"));
    std::vector<Result<Prediction>> got_pred(3, Status::Internal("not run"));
    std::vector<std::thread> workers;
    for (int r = 0; r < 3; ++r) {
      workers.emplace_back([&, r] {
        auto local = CreateEstimator("knn", params);
        if (!local.ok() || !(*local)->Fit(shards[static_cast<size_t>(r)], FitContext{}).ok()) return;
        got[static_cast<size_t>(r)] = KnnKNeighborsDistributed(**local, queries, group.Worker(r), 1);
        got_pred[static_cast<size_t>(r)] = KnnPredictDistributed(**local, queries, group.Worker(r), 2);
      });
    }
    for (auto& w : workers) w.join();
    for (int r = 0; r < 3; ++r) {
      const auto& nb = got[static_cast<size_t>(r)];
      ASSERT_TRUE(nb.ok()) << nb.status().ToString();
      ASSERT_EQ(nb->k, want->k);
      for (size_t j = 0; j < want->index.size(); ++j) {
        const int64_t global = cuts[static_cast<size_t>(nb->rank[j])] + nb->index[j];
        EXPECT_EQ(global, want->index[j]) << "entry " << j;
        EXPECT_EQ(nb->distance[j], want->distance[j]) << "entry " << j;
        EXPECT_EQ(nb->label[j], want->label[j]);
      }
      const auto& p = got_pred[static_cast<size_t>(r)];
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      EXPECT_EQ(p->value, want_pred->value);
      EXPECT_EQ(p->proba, want_pred->proba);
    }
  }
}

// Fits one knn per shard as the threads of a 3-worker collective and checks that every worker's prediction of
// `queries` (PredictAcross through its collective) equals a single model's over `train`. Returns the models.
using Params = std::map<std::string, std::string>;
std::vector<std::unique_ptr<Estimator>> ExpectShardsPredictLikeTheUnion(const Params& params, const data::Table& train,
                                                                        const std::vector<data::Table>& shards,
                                                                        const data::Table& queries) {
  auto single = Make({{"n_neighbors", params.at("n_neighbors")}});
  EXPECT_TRUE(single->Fit(train, FitContext{}).ok());
  auto want = single->Predict(queries, 1);
  EXPECT_TRUE(want.ok());
  const int world = static_cast<int>(shards.size());
  ThreadCollectiveGroup group(world);
  std::vector<Result<Prediction>> got(static_cast<size_t>(world), Status::Internal("not run"));
  std::vector<std::unique_ptr<Estimator>> models(static_cast<size_t>(world));
  std::vector<std::thread> workers;
  for (int r = 0; r < world; ++r) {
    workers.emplace_back([&, r] {
      auto est = CreateEstimator("knn", params);
      if (!est.ok()) return;
      FitContext ctx;
      ctx.collective = group.Worker(r);
      Status s = (*est)->Fit(shards[static_cast<size_t>(r)], ctx);
      got[static_cast<size_t>(r)] = s.ok() ? (*est)->PredictAcross(queries, 1, group.Worker(r)) : Result<Prediction>(s);
      models[static_cast<size_t>(r)] = std::move(*est);
    });
  }
  for (auto& w : workers) w.join();
  for (const auto& p : got) {
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok() || !want.ok()) continue;
    EXPECT_EQ(p->value, want->value);
    EXPECT_EQ(p->proba, want->proba);
  }
  return models;
}

TEST(KnnTest, DistributedFitGathersTheUnion) {
  const data::Table train = RandomTable(200, 3, 3, 21);
  const data::Table queries = RandomTable(30, 3, 3, 22);
  ExpectShardsPredictLikeTheUnion({{"n_neighbors", "4"}, {"distributed", "gather"}}, train,
                                  Shards(train, {0, 50, 51, 200}), queries);
}

TEST(KnnTest, QueryModeKeepsTheShardsApartAndPredictsLikeTheUnion) {
  // distributed: query (the default): each worker fits only its shard, the test predictions go through the
  // collective (top-k lists per query) and equal a single model over the union; a shard of one class, and one
  // smaller than k, are fine. The saved model is one shard and refuses to predict alone.
  const data::Table train = RandomTable(200, 3, 3, 21);
  const data::Table queries = RandomTable(30, 3, 3, 22);
  std::vector<std::unique_ptr<Estimator>> models = ExpectShardsPredictLikeTheUnion(
      {{"n_neighbors", "4"}}, train, Shards(train, {0, 2, 60, 200}), queries);  // shard 0: 2 rows
  ASSERT_TRUE(models[1] != nullptr);
  ModelWriter writer;
  models[1]->Save(&writer);
  auto reader = ModelReader::Parse(writer.Encode(), "shard.model");
  ASSERT_TRUE(reader.ok());
  auto loaded = Make({{"n_neighbors", "4"}});
  ASSERT_TRUE(loaded->Load(*reader).ok());
  for (const Estimator* m : {models[1].get(), loaded.get()}) {
    Result<Prediction> alone = m->Predict(queries, 1);
    EXPECT_EQ(alone.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(alone.status().message().find("shard 2 of 3"), std::string::npos) << alone.status().ToString();
  }
}

TEST(KnnTest, SaveLoadRoundTripPredictsIdentically) {
  const data::Table train = RandomTable(120, 5, 3, 31);
  const data::Table queries = RandomTable(20, 5, 3, 32);
  const std::map<std::string, std::string> params = {
      {"n_neighbors", "3"}, {"weights", "distance"}, {"metric", "manhattan"}};
  auto est = Make(params);
  ASSERT_TRUE(est->Fit(train, FitContext{}).ok());
  ModelWriter writer;
  est->Save(&writer);
  const std::string bytes = writer.Encode();
  auto reader = ModelReader::Parse(bytes, "knn.model");
  ASSERT_TRUE(reader.ok());
  auto loaded = Make(params);
  ASSERT_TRUE(loaded->Load(*reader).ok());
  auto a = est->Predict(queries, 1);
  auto b = loaded->Predict(queries, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->value, b->value);
  EXPECT_EQ(a->proba, b->proba);
  // A file whose training set is short is data loss, not a crash.
  ModelWriter bad;
  bad.PutInts("knn.shape", std::vector<int64_t>{1000000, 5, 3});
  bad.PutFloats("knn.x", std::vector<float>(10, 0.0f));
  bad.PutInts("knn.labels", std::vector<int64_t>(2, 0));
  auto bad_reader = ModelReader::Parse(bad.Encode(), "bad.model");
  ASSERT_TRUE(bad_reader.ok());
  Status s = Make(params)->Load(*bad_reader);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
}

TEST(KnnTest, RejectsBadParameters) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{{"n_neighbors", "0"},
                                                                                    {"weights", "gaussian"},
                                                                                    {"metric", "cosine"},
                                                                                    {"batch_size", "0"},
                                                                                    {"neighbours", "3"}}) {
    auto est = CreateEstimator("knn", {{name, value}});
    EXPECT_EQ(est.status().code(), StatusCode::kInvalidArgument) << name << "=" << value;
  }
}

TEST(KnnTest, RejectsWrongColumnsAndImpossibleFits) {
  const data::Table train = RandomTable(10, 3, 2, 41);
  auto est = Make({{"n_neighbors", "3"}});
  ASSERT_TRUE(est->Fit(train, FitContext{}).ok());
  auto p = est->Predict(RandomTable(2, 4, 2, 42), 1);
  ASSERT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("4 columns"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("3"), std::string::npos);

  Status big = Make({{"n_neighbors", "11"}})->Fit(train, FitContext{});
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.message().find("larger than the training set (10 rows)"), std::string::npos) << big.message();

  data::Table empty = DenseTable(0, 3, {}, {}, 2);
  EXPECT_EQ(Make({})->Fit(empty, FitContext{}).code(), StatusCode::kInvalidArgument);
  data::Table one_class = DenseTable(6, 1, {1, 2, 3, 4, 5, 6}, {1, 1, 1, 1, 1, 1}, 2);
  EXPECT_EQ(Make({})->Fit(one_class, FitContext{}).code(), StatusCode::kInvalidArgument);
  data::Table unlabelled = DenseTable(6, 1, {1, 2, 3, 4, 5, 6}, {}, 0);
  EXPECT_EQ(Make({})->Fit(unlabelled, FitContext{}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Make({})->Predict(train, 1).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace geomx::algorithms
