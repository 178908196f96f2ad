// k-nearest-neighbour classifier, brute force (knn.h has the neighbour contract).
//
// Predict works in blocks of `batch_size` queries against tiles of kTrainTile training rows: one distance tile
// (a GEMM for the Euclidean metric, a vectorised loop for Manhattan), then every query row of the tile is scanned
// into a small sorted candidate list (most entries fail a single compare against the list's worst). The list keeps
// a margin of extra candidates over k; at the end their distances are recomputed exactly and the best k kept, so
// reported distances and the tie order (smaller training index first) do not depend on the GEMM's rounding.
#include "algorithms/estimators/knn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/estimators/distance.h"

namespace geomx::algorithms {
namespace {

enum class KnnWeights : uint8_t { kUniform, kDistance };
enum class KnnMetric : uint8_t { kEuclidean, kManhattan };

constexpr int64_t kTrainTile = 2048;  // training rows per distance tile (a 1024 x 2048 tile is 8 MiB)
constexpr float kInf = std::numeric_limits<float>::infinity();

// Inserts the entries of one distance row (training rows base .. base+n-1) into the sorted candidate list
// (cd, ci) of capacity `cap` holding *count entries. Equal distances keep the earlier (smaller) index first.
void ScanRow(const float* dist, int64_t n, int64_t base, int64_t cap, float* cd, int64_t* ci, int64_t* count) {
  int64_t cnt = *count;
  float worst = cnt < cap ? kInf : cd[cap - 1];
  for (int64_t j = 0; j < n; ++j) {
    const float d = dist[j];
    if (cnt == cap && !(d < worst)) continue;
    int64_t p = cnt < cap ? cnt++ : cap - 1;  // when full, the worst entry is dropped
    while (p > 0 && d < cd[p - 1]) {
      cd[p] = cd[p - 1];
      ci[p] = ci[p - 1];
      --p;
    }
    cd[p] = d;
    ci[p] = base + j;
    if (cnt == cap) worst = cd[cap - 1];
  }
  *count = cnt;
}

// Orders neighbour entries: distance (NaN last), then index.
bool NearerThan(float da, int64_t ia, float db, int64_t ib) {
  if (std::isnan(da)) da = kInf;
  if (std::isnan(db)) db = kInf;
  return da < db || (da == db && ia < ib);
}

class KnnEstimator final : public Estimator {
 public:
  explicit KnnEstimator(const ParamValues& p)
      : k_(p.Int("n_neighbors")),
        weights_(p.Choice("weights") == "distance" ? KnnWeights::kDistance : KnnWeights::kUniform),
        metric_(p.Choice("metric") == "manhattan" ? KnnMetric::kManhattan : KnnMetric::kEuclidean),
        batch_size_(p.Int("batch_size")),
        keep_shards_(p.Choice("distributed") == "query") {}

  Status Fit(const data::Table& train, const FitContext& context) override;
  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    if (shard_world_ > 1) {
      return Status::FailedPrecondition(
          "knn: this model holds shard " + std::to_string(shard_rank_ + 1) + " of " + std::to_string(shard_world_) +
          " of a fit across data centres (distributed: query leaves every shard's rows where they are), so it "
          "cannot predict alone; fit with distributed: gather for a model that holds the whole training set");
    }
    GEOMX_ASSIGN_OR_RETURN(KnnNeighbors nb, Neighbors(input, threads));
    return Vote(nb, num_classes_, threads);
  }
  Result<Prediction> PredictAcross(const data::Table& input, int threads, Collective* collective) const override;
  void Save(ModelWriter* out) const override;
  Status Load(const ModelReader& in) override;

  // The k nearest training rows of every query (k capped at the training set's size).
  Result<KnnNeighbors> Neighbors(const data::Table& queries, int threads) const;
  // Class votes over neighbour lists (padding entries, index < 0, are skipped).
  Prediction Vote(const KnnNeighbors& nb, int num_classes, int threads) const;

  int64_t k() const { return k_; }
  int num_classes() const { return num_classes_; }
  bool fitted() const { return cols_ > 0; }

 private:
  // Takes the training set (dense, rows x cols) and checks what a classifier needs of it (a shard of a fit that
  // keeps the shards apart may be small, empty or of one class: the job checked the whole).
  Status SetTrainingSet(std::vector<float> x, std::vector<int32_t> labels, int64_t rows, int64_t cols, int num_classes,
                        int threads, bool shard = false);

  const int64_t k_;
  const KnnWeights weights_;
  const KnnMetric metric_;
  const int64_t batch_size_;
  const bool keep_shards_;  // distributed: query

  int shard_rank_ = 0, shard_world_ = 1;  // > 1: this model holds one shard of a fit across workers
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  int num_classes_ = 0;
  std::vector<float> x_;      // rows_ x cols_
  std::vector<float> norms_;  // ||x_i||^2 (Euclidean metric only)
  std::vector<int32_t> labels_;
};

// What a shard must satisfy before it can join a fit: labels present and in range. Sets *num_classes.
Status CheckShard(const data::Table& train, int* num_classes) {
  if (train.rows > 0 && !train.has_labels()) {
    return Status::InvalidArgument("knn: the training table has no class labels");
  }
  if (train.has_labels() && static_cast<int64_t>(train.labels.size()) != train.rows) {
    return Status::InvalidArgument("knn: the training table has " + std::to_string(train.labels.size()) +
                                   " labels for " + std::to_string(train.rows) + " rows");
  }
  int top = -1;
  for (int64_t i = 0; i < train.rows; ++i) {
    const int32_t y = train.labels[static_cast<size_t>(i)];
    if (y < 0 || (train.num_classes > 0 && y >= train.num_classes)) {
      return Status::InvalidArgument("knn: row " + std::to_string(i) + " has class id " + std::to_string(y) +
                                     " outside [0, " + std::to_string(train.num_classes) + ")");
    }
    top = std::max(top, y);
  }
  *num_classes = std::max(train.num_classes, top + 1);
  return Status::Ok();
}

std::vector<float> DenseRows(const data::Table& t) {
  if (!t.sparse) return t.dense;
  std::vector<float> out(static_cast<size_t>(t.rows * t.cols));
  for (int64_t i = 0; i < t.rows; ++i) t.CopyRow(i, out.data() + i * t.cols);
  return out;
}

Status KnnEstimator::Fit(const data::Table& train, const FitContext& context) {
  int num_classes = 0;
  Status local = CheckShard(train, &num_classes);
  if (context.collective == nullptr) {
    GEOMX_RETURN_IF_ERROR(local);
    if (train.rows == 0) return Status::InvalidArgument("knn: the training table is empty");
    std::vector<int32_t> labels = train.labels;
    GEOMX_RETURN_IF_ERROR(
        SetTrainingSet(DenseRows(train), std::move(labels), train.rows, train.cols, num_classes, context.threads));
  } else {
    // The distributed fit makes every worker hold the union of the shards (the training set is the model): one
    // header gather so that every worker takes the same branch, then the rows and the labels.
    Collective* c = context.collective;
    std::vector<float> header = {local.ok() ? 1.0f : 0.0f, static_cast<float>(train.rows),
                                 static_cast<float>(train.cols), static_cast<float>(num_classes)};
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> headers, c->AllGather("knn.fit.header", header));
    if (headers.size() != 4 * static_cast<size_t>(c->world())) return Status::Internal("knn: bad header gather");
    GEOMX_RETURN_IF_ERROR(local);
    int64_t total = 0;
    for (int r = 0; r < c->world(); ++r) {
      const float* h = &headers[4 * static_cast<size_t>(r)];
      if (h[0] == 0.0f) return Status::FailedPrecondition("knn: worker " + std::to_string(r) + " rejected its shard");
      if (static_cast<int64_t>(h[2]) != train.cols) {
        return Status::InvalidArgument("knn: worker " + std::to_string(r) + " has " +
                                       std::to_string(static_cast<int64_t>(h[2])) + " columns, this one " +
                                       std::to_string(train.cols));
      }
      total += static_cast<int64_t>(h[1]);
      num_classes = std::max(num_classes, static_cast<int>(h[3]));
    }
    if (total == 0) return Status::InvalidArgument("knn: the training table is empty (on every worker)");
    if (k_ > total) {
      return Status::InvalidArgument("knn: n_neighbors (" + std::to_string(k_) +
                                     ") is larger than the training set (" + std::to_string(total) + " rows)");
    }
    if (keep_shards_) {
      // The data never moves: this worker keeps its own rows; predictions go through PredictAcross.
      std::vector<int32_t> labels = train.labels;
      GEOMX_RETURN_IF_ERROR(
          SetTrainingSet(DenseRows(train), std::move(labels), train.rows, train.cols, num_classes, context.threads,
                         /*shard=*/true));
      shard_rank_ = c->rank();
      shard_world_ = c->world();
      if (context.observer != nullptr) {
        context.observer->OnStep(1, {{"train_rows", static_cast<double>(total)}});
      }
      return Status::Ok();
    }
    std::vector<float> mine = DenseRows(train);
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> x, c->AllGather("knn.fit.rows", mine));
    std::vector<float> my_labels(train.labels.begin(), train.labels.end());
    GEOMX_ASSIGN_OR_RETURN(std::vector<float> y, c->AllGather("knn.fit.labels", my_labels));
    if (x.size() != static_cast<size_t>(total * train.cols) || y.size() != static_cast<size_t>(total)) {
      return Status::Internal("knn: the gathered training set has the wrong size");
    }
    std::vector<int32_t> labels(y.size());
    for (size_t i = 0; i < y.size(); ++i) labels[i] = static_cast<int32_t>(y[i]);
    GEOMX_RETURN_IF_ERROR(
        SetTrainingSet(std::move(x), std::move(labels), total, train.cols, num_classes, context.threads));
  }
  if (context.observer != nullptr) {
    context.observer->OnStep(1, {{"train_rows", static_cast<double>(rows_)}});
  }
  return Status::Ok();
}

Status KnnEstimator::SetTrainingSet(std::vector<float> x, std::vector<int32_t> labels, int64_t rows, int64_t cols,
                                    int num_classes, int threads, bool shard) {
  if (k_ > rows && !shard) {
    return Status::InvalidArgument("knn: n_neighbors (" + std::to_string(k_) + ") is larger than the training set (" +
                                   std::to_string(rows) + " rows)");
  }
  std::vector<bool> seen(static_cast<size_t>(num_classes), false);
  int distinct = 0;
  for (int32_t y : labels) {
    if (!seen[static_cast<size_t>(y)]) ++distinct;
    seen[static_cast<size_t>(y)] = true;
  }
  if (distinct < 2 && !shard) {
    return Status::InvalidArgument("knn: the training labels hold a single class; a classifier needs at least two");
  }
  rows_ = rows;
  cols_ = cols;
  num_classes_ = num_classes;
  x_ = std::move(x);
  labels_ = std::move(labels);
  norms_.clear();
  if (metric_ == KnnMetric::kEuclidean) {
    norms_.resize(static_cast<size_t>(rows));
    RowSquaredNorms(x_.data(), rows, cols, norms_.data(), threads);
  }
  return Status::Ok();
}

Result<KnnNeighbors> KnnEstimator::Neighbors(const data::Table& queries, int threads) const {
  if (!fitted()) return Status::FailedPrecondition("knn: the model is neither fitted nor loaded");
  if (queries.cols != cols_) {
    return Status::InvalidArgument("knn: the input has " + std::to_string(queries.cols) +
                                   " columns, the model was trained on " + std::to_string(cols_));
  }
  threads = std::max(1, threads);
  const int64_t k = std::min(k_, rows_);
  // Candidates kept per query before the exact re-ranking: a margin over k absorbs the GEMM's rounding.
  const int64_t cap = std::min(rows_, k + std::max<int64_t>(k, 16));
  KnnNeighbors out;
  out.queries = queries.rows;
  out.k = k;
  const size_t total = static_cast<size_t>(queries.rows * k);
  out.distance.resize(total);
  out.index.resize(total);
  out.rank.assign(total, 0);
  out.label.resize(total);
  if (queries.rows == 0 || rows_ == 0) return out;

  const int64_t block = std::min(batch_size_, queries.rows);
  const int64_t tile_cols = std::min(kTrainTile, rows_);
  std::vector<float> qbuf(queries.sparse ? static_cast<size_t>(block * cols_) : 0);
  std::vector<float> qnorm(static_cast<size_t>(block));
  std::vector<float> tile(static_cast<size_t>(block * tile_cols));
  std::vector<float> cand_d(static_cast<size_t>(block * cap));
  std::vector<int64_t> cand_i(static_cast<size_t>(block * cap));
  std::vector<int64_t> cand_n(static_cast<size_t>(block));
  const bool l2 = metric_ == KnnMetric::kEuclidean;

  for (int64_t q0 = 0; q0 < queries.rows; q0 += block) {
    const int64_t m = std::min(block, queries.rows - q0);
    const float* qa = nullptr;
    if (queries.sparse) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < m; ++i) queries.CopyRow(q0 + i, qbuf.data() + i * cols_);
      qa = qbuf.data();
    } else {
      qa = queries.Row(q0);
    }
    if (l2) RowSquaredNorms(qa, m, cols_, qnorm.data(), threads);
    std::fill(cand_n.begin(), cand_n.end(), 0);
    for (int64_t t0 = 0; t0 < rows_; t0 += kTrainTile) {
      const int64_t nt = std::min(kTrainTile, rows_ - t0);
      const float* xb = x_.data() + t0 * cols_;
      if (l2) {
        DotBlock(qa, m, xb, nt, cols_, tile.data(), threads);
      } else {
        L1Block(qa, m, xb, nt, cols_, tile.data(), threads);
      }
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < m; ++i) {
        float* row = tile.data() + i * nt;
        if (l2) {  // dot products -> squared distances while the row is in cache (SquaredL2Block's formula)
          const float qn = qnorm[static_cast<size_t>(i)];
          const float* bn = norms_.data() + t0;
          for (int64_t j = 0; j < nt; ++j) row[j] = std::max(0.0f, qn + bn[j] - 2.0f * row[j]);
        }
        ScanRow(row, nt, t0, cap, cand_d.data() + i * cap, cand_i.data() + i * cap, cand_n.data() + i);
      }
    }
    // Exact distances of the candidates, then the best k in (distance, index) order.
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      std::vector<std::pair<float, int64_t>> c(static_cast<size_t>(cand_n[i]));
      for (int64_t j = 0; j < cand_n[i]; ++j) {
        const int64_t t = cand_i[i * cap + j];
        const float* a = qa + i * cols_;
        const float* b = x_.data() + t * cols_;
        const double d = l2 ? std::sqrt(SquaredL2(a, b, cols_)) : L1(a, b, cols_);
        c[static_cast<size_t>(j)] = {static_cast<float>(d), t};
      }
      const int64_t keep = std::min(k, cand_n[i]);
      std::partial_sort(c.begin(), c.begin() + keep, c.end(),
                        [](const auto& a, const auto& b) { return NearerThan(a.first, a.second, b.first, b.second); });
      const size_t base = static_cast<size_t>((q0 + i) * k);
      for (int64_t j = 0; j < k; ++j) {
        const bool real = j < keep;
        out.distance[base + j] = real ? c[static_cast<size_t>(j)].first : kInf;
        out.index[base + j] = real ? c[static_cast<size_t>(j)].second : -1;
        out.label[base + j] = real ? labels_[static_cast<size_t>(c[static_cast<size_t>(j)].second)] : -1;
      }
    }
  }
  return out;
}

Prediction KnnEstimator::Vote(const KnnNeighbors& nb, int num_classes, int threads) const {
  Prediction p;
  p.value.assign(static_cast<size_t>(nb.queries), 0.0f);
  p.proba.assign(static_cast<size_t>(nb.queries * num_classes), 0.0f);
  p.proba_columns = num_classes;
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
  for (int64_t q = 0; q < nb.queries; ++q) {
    const size_t base = static_cast<size_t>(q * nb.k);
    bool exact_hit = false;  // a zero distance wins outright under distance weighting (as scikit-learn)
    if (weights_ == KnnWeights::kDistance) {
      for (int64_t j = 0; j < nb.k; ++j) exact_hit |= nb.index[base + j] >= 0 && nb.distance[base + j] == 0.0f;
    }
    std::vector<double> votes(static_cast<size_t>(num_classes), 0.0);
    double sum = 0;
    for (int64_t j = 0; j < nb.k; ++j) {
      const int32_t y = nb.label[base + j];
      if (nb.index[base + j] < 0 || y < 0 || y >= num_classes) continue;
      const float d = nb.distance[base + j];
      double w = 1.0;
      if (weights_ == KnnWeights::kDistance) w = exact_hit ? (d == 0.0f ? 1.0 : 0.0) : 1.0 / d;
      votes[static_cast<size_t>(y)] += w;
      sum += w;
    }
    int best = 0;
    for (int c = 0; c < num_classes; ++c) {
      if (votes[static_cast<size_t>(c)] > votes[static_cast<size_t>(best)]) best = c;
      if (sum > 0) p.proba[static_cast<size_t>(q * num_classes + c)] = static_cast<float>(votes[c] / sum);
    }
    p.value[static_cast<size_t>(q)] = static_cast<float>(best);
  }
  return p;
}

Result<Prediction> KnnEstimator::PredictAcross(const data::Table& input, int threads, Collective* collective) const {
  if (collective == nullptr || shard_world_ <= 1) return Predict(input, threads);
  return KnnPredictDistributed(*this, input, collective, threads);
}

void KnnEstimator::Save(ModelWriter* out) const {
  const std::vector<int64_t> shape = {rows_, cols_, num_classes_};
  out->PutInts("knn.shape", shape);
  if (shard_world_ > 1) out->PutInts("knn.shard", std::vector<int64_t>{shard_rank_, shard_world_});
  out->PutFloats("knn.x", x_);
  const std::vector<int64_t> labels(labels_.begin(), labels_.end());
  out->PutInts("knn.labels", labels);
}

Status KnnEstimator::Load(const ModelReader& in) {
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts("knn.shape", &shape, 3));
  const int64_t rows = shape[0], cols = shape[1], num_classes = shape[2];
  if (rows < (in.Has("knn.shard") ? 0 : 1) || cols < 1 || rows > std::numeric_limits<int64_t>::max() / cols ||
      num_classes < 2 ||
      num_classes > std::numeric_limits<int32_t>::max()) {
    return Status::DataLoss(in.source() + ": section 'knn.shape' holds an impossible shape");
  }
  std::vector<float> x;
  GEOMX_RETURN_IF_ERROR(in.GetFloats("knn.x", &x, rows * cols));
  std::vector<int64_t> labels64;
  GEOMX_RETURN_IF_ERROR(in.GetInts("knn.labels", &labels64, rows));
  std::vector<int32_t> labels(labels64.size());
  for (size_t i = 0; i < labels64.size(); ++i) {
    if (labels64[i] < 0 || labels64[i] >= num_classes) {
      return Status::DataLoss(in.source() + ": section 'knn.labels' holds class id " + std::to_string(labels64[i]) +
                              " outside [0, " + std::to_string(num_classes) + ")");
    }
    labels[i] = static_cast<int32_t>(labels64[i]);
  }
  int64_t shard_rank = 0, shard_world = 1;
  if (in.Has("knn.shard")) {
    std::vector<int64_t> shard;
    GEOMX_RETURN_IF_ERROR(in.GetInts("knn.shard", &shard, 2));
    shard_rank = shard[0];
    shard_world = shard[1];
    if (shard_world < 2 || shard_world > (1 << 20) || shard_rank < 0 || shard_rank >= shard_world) {
      return Status::DataLoss(in.source() + ": section 'knn.shard' holds an impossible shard");
    }
  }
  Status s = SetTrainingSet(std::move(x), std::move(labels), rows, cols, static_cast<int>(num_classes), 1,
                            /*shard=*/shard_world > 1);
  if (!s.ok()) return Status::DataLoss(in.source() + ": " + s.message());
  shard_rank_ = static_cast<int>(shard_rank);
  shard_world_ = static_cast<int>(shard_world);
  return Status::Ok();
}

const KnnEstimator* AsKnn(const Estimator& e) { return dynamic_cast<const KnnEstimator*>(&e); }

EstimatorDef MakeKnnDef() {
  EstimatorDef def;
  def.name = "knn";
  def.title = "k-Nearest Neighbors";
  def.task = data::TableTask::kClassification;
  def.help =
      "Brute-force k-nearest-neighbour classifier (as scikit-learn's KNeighborsClassifier with algorithm='brute'). "
      "Fit stores the training rows; predict finds the n_neighbors nearest training rows of each query (Euclidean "
      "distances as one GEMM per block of queries, Manhattan by a vectorised loop; ties go to the earlier training "
      "row) and votes, uniformly or by 1/distance (an exact match wins outright). predict_proba = the vote shares.";
  def.distributed =
      "distributed: query (default): the data never moves; every worker keeps its shard, queries are broadcast, each "
      "worker sends its local top-k (distance, label, index) per query and every worker merges them; distributed: "
      "gather: the fit gathers the shards into one self-contained model";
  def.params = {
      IntParam("n_neighbors", 5, 1, 1000000, "neighbours that vote (at most the training set's rows)"),
      ChoiceParam("weights", "uniform", {"uniform", "distance"},
                  "vote weight: uniform, or 1/distance (a zero distance wins outright)"),
      ChoiceParam("metric", "euclidean", {"euclidean", "manhattan"}, "distance: euclidean (p=2) or manhattan (p=1)"),
      IntParam("batch_size", 1024, 1, 1 << 20, "queries per distance block (memory: batch_size x 2048 floats)"),
      ChoiceParam("distributed", "query", {"query", "gather"},
                  "across data centres: query keeps every shard where it is and merges top-k lists per query (the "
                  "saved model is one shard); gather moves the shards into one model that predicts alone"),
  };
  def.create = [](const ParamValues& p) -> std::unique_ptr<Estimator> { return std::make_unique<KnnEstimator>(p); };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeKnnDef());

Result<KnnNeighbors> KnnKNeighbors(const Estimator& model, const data::Table& queries, int threads) {
  const KnnEstimator* knn = AsKnn(model);
  if (knn == nullptr) return Status::InvalidArgument("KnnKNeighbors: the model is not a knn estimator");
  return knn->Neighbors(queries, threads);
}

namespace {

// The query-broadcast top-k merge (knn.h). *num_classes gets the widest class count among the workers.
Result<KnnNeighbors> MergedNeighbors(const KnnEstimator* knn, const data::Table& queries, Collective* collective,
                                     int threads, int* num_classes) {
  *num_classes = knn->num_classes();
  if (collective == nullptr) return knn->Neighbors(queries, threads);
  const int world = collective->world();
  Result<KnnNeighbors> mine = knn->Neighbors(queries, threads);
  // Header: whether each worker could answer, its k, class count and query count, so that all agree or all fail.
  const std::vector<float> header = {mine.ok() ? 1.0f : 0.0f, static_cast<float>(knn->k()),
                                     static_cast<float>(knn->num_classes()), static_cast<float>(queries.rows)};
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> headers, collective->AllGather("knn.query.header", header));
  if (headers.size() != 4 * static_cast<size_t>(world)) return Status::Internal("knn: bad header gather");
  if (!mine.ok()) return mine.status();
  for (int r = 0; r < world; ++r) {
    const float* h = &headers[4 * static_cast<size_t>(r)];
    if (h[0] == 0.0f) return Status::FailedPrecondition("knn: worker " + std::to_string(r) + " could not answer");
    if (h[1] != header[1] || h[3] != header[3]) {
      return Status::InvalidArgument("knn: workers disagree on n_neighbors or on the queries (worker " +
                                     std::to_string(r) + ")");
    }
    *num_classes = std::max(*num_classes, static_cast<int>(h[2]));
  }
  const int64_t k = knn->k(), nq = queries.rows;
  // Local lists with id = rank << 40 | index, so that (distance, id) orders ties by (rank, index); padding has
  // id kNoNeighbor. The servers merge per query (Collective::AllMergeTopK).
  constexpr int kIndexBits = 40;
  const uint64_t my_rank = static_cast<uint64_t>(collective->rank());
  std::vector<comm::Neighbor> lists(static_cast<size_t>(nq * k), comm::Neighbor{kInf, comm::kNoNeighbor, -1});
  for (int64_t q = 0; q < nq; ++q) {
    for (int64_t j = 0; j < mine->k && j < k; ++j) {
      const size_t src = static_cast<size_t>(q * mine->k + j);
      if (mine->index[src] < 0) continue;
      lists[static_cast<size_t>(q * k + j)] = {mine->distance[src],
                                               my_rank << kIndexBits | static_cast<uint64_t>(mine->index[src]),
                                               mine->label[src]};
    }
  }
  GEOMX_ASSIGN_OR_RETURN(std::vector<comm::Neighbor> merged,
                         collective->AllMergeTopK("knn.query.topk", static_cast<uint64_t>(k),
                                                  static_cast<uint64_t>(nq), lists));
  if (merged.size() != lists.size()) return Status::Internal("knn: bad top-k merge");
  KnnNeighbors out;
  out.queries = nq;
  out.k = k;
  const size_t total = static_cast<size_t>(nq * k);
  out.distance.resize(total);
  out.index.resize(total);
  out.rank.resize(total);
  out.label.resize(total);
  for (size_t at = 0; at < total; ++at) {
    const comm::Neighbor& e = merged[at];
    const bool real = e.id != comm::kNoNeighbor;
    out.distance[at] = e.distance;
    out.rank[at] = real ? static_cast<int32_t>(e.id >> kIndexBits) : -1;
    out.index[at] = real ? static_cast<int64_t>(e.id & ((uint64_t{1} << kIndexBits) - 1)) : -1;
    out.label[at] = static_cast<int32_t>(e.label);
  }
  return out;
}

}  // namespace

Result<KnnNeighbors> KnnKNeighborsDistributed(const Estimator& local, const data::Table& queries,
                                              Collective* collective, int threads) {
  const KnnEstimator* knn = AsKnn(local);
  if (knn == nullptr) return Status::InvalidArgument("KnnKNeighborsDistributed: the model is not a knn estimator");
  int num_classes = 0;
  return MergedNeighbors(knn, queries, collective, threads, &num_classes);
}

Result<Prediction> KnnPredictDistributed(const Estimator& local, const data::Table& queries, Collective* collective,
                                         int threads) {
  const KnnEstimator* knn = AsKnn(local);
  if (knn == nullptr) return Status::InvalidArgument("KnnPredictDistributed: the model is not a knn estimator");
  // Every worker votes over the same classes: the widest class count among the shards.
  int num_classes = 0;
  GEOMX_ASSIGN_OR_RETURN(KnnNeighbors nb, MergedNeighbors(knn, queries, collective, threads, &num_classes));
  return knn->Vote(nb, num_classes, threads);
}

}  // namespace geomx::algorithms
