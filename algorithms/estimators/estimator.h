// Estimator: a classical learning algorithm (docs/algorithms.md) behind one interface, so that the recipe, the CLI
// (`geomx train`, `eval`, `predict`, `algos`), the run folder, `geomx bench algos` and the parameter-server
// hierarchy treat logistic regression, SVMs, KNN, k-means, FTRL/FTML (and later the ensembles) alike.
//
// Contract:
//  - An estimator is created from resolved parameters (params.h) by its registry entry. Fit() learns from a Table
//    (datasets/table.h) and may be called once; Predict() is const and thread-compatible (several threads may
//    predict at once once Fit or Load returned).
//  - Fit() checks what the parameters cannot (a classifier given one class, an empty table, a task mismatch) and
//    returns kInvalidArgument for it. It honours FitContext::threads and ::interrupted (returns kCancelled), and
//    reports progress through FitContext::observer (one call per epoch/pass/iteration batch).
//  - Across data centres FitContext::collective is set: each worker holds a shard, and the estimator's
//    distributed form (docs/algorithms.md) runs through the collective's sums and gathers; rank 0's model is the
//    job's model. Without a collective the same Fit() is the single-process algorithm.
//  - Save() writes everything Predict() needs into a ModelWriter; Load() reads it back (kDataLoss naming the
//    section for a malformed file). The hyper-parameters, scaler, class names and column count are written by the
//    caller (model_io.h), not by the estimator.
//  - A new algorithm is one file: a class deriving from Estimator, its EstimatorDef and GEOMX_REGISTER_ESTIMATOR,
//    plus its line in algorithms/CMakeLists.txt (docs/adding_an_algorithm.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "algorithms/estimators/model_file.h"
#include "algorithms/estimators/params.h"
#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::algorithms {

// A metric name and value ("accuracy", 0.84). Names: accuracy, rmse, mae, r2, ndcg@10, map, inertia, purity, nmi,
// loss, objective, support_vectors, ... (docs/algorithms.md lists them).
struct Metric {
  std::string name;
  double value = 0;
};
using Metrics = std::vector<Metric>;
// The value of `name` in `metrics`, or `fallback`.
double MetricValue(const Metrics& metrics, const std::string& name, double fallback = -1);

// What Predict() returns, one entry per row of the input table.
struct Prediction {
  // Classification: the class id; regression: the value; ranking: the score; clustering: the cluster id.
  std::vector<float> value;
  // Optional: rows x proba_columns class probabilities (logistic regression, KNN), row-major.
  std::vector<float> proba;
  int64_t proba_columns = 0;
  // Optional model-level figures for this input (k-means: inertia).
  Metrics extra;
};

struct Artefact;

// Progress during Fit: `step` counts the estimator's own unit (epoch, pass, outer iteration), `metrics` what it
// knows then (training loss, test accuracy when FitContext::eval is set and cheap to compute). OnArtefact: a file
// for the run folder written while fitting (the gan's samples-<step>.png at each evaluation). Default: dropped.
class FitObserver {
 public:
  virtual ~FitObserver() = default;
  virtual void OnStep(int64_t step, const Metrics& metrics) = 0;
  virtual void OnArtefact(const Artefact& artefact) { (void)artefact; }
};

struct FitContext {
  int threads = 1;                                // compute threads (>= 1)
  uint64_t seed = 42;                             // every random choice (shuffles, initialisation)
  FitObserver* observer = nullptr;                // may be null
  const data::Table* eval = nullptr;              // held-out table for progress metrics; may be null
  Collective* collective = nullptr;               // set when fitting across workers (each holds a shard)
  const std::atomic<bool>* interrupted = nullptr;  // set by Ctrl-C; Fit returns kCancelled soon after
  bool Interrupted() const { return interrupted != nullptr && interrupted->load(std::memory_order_relaxed); }
};

// A file a run folder holds beside the model: `geomx train` writes each (docs/algorithms.md says which).
struct Artefact {
  std::string name;      // a plain file name: "trees.json"
  std::string contents;
};

class Estimator {
 public:
  virtual ~Estimator() = default;
  virtual Status Fit(const data::Table& train, const FitContext& context) = 0;
  virtual Result<Prediction> Predict(const data::Table& input, int threads) const = 0;
  virtual void Save(ModelWriter* out) const = 0;
  virtual Status Load(const ModelReader& in) = 0;
  // Metrics only the model can tell on `table` beyond the task's standard ones (k-means: inertia; SVM: number of
  // support vectors). Default: none.
  virtual Metrics ModelMetrics(const data::Table& table, const Prediction& prediction) const;
  // The row tables (collective.h) Fit() will use across workers on a training table of `cols` columns and
  // `num_classes` classes (0 for other tasks), so that the job can declare them before it starts. Default: none.
  virtual std::vector<RowTableSpec> RowTables(int64_t cols, int num_classes) const;
  // Predict() for a model fitted across workers: every worker of the job calls it with the same `input` and its
  // collective; an estimator whose prediction needs every shard (a KNN that left each shard's rows where they were)
  // answers through the collective. Default: Predict(input, threads).
  virtual Result<Prediction> PredictAcross(const data::Table& input, int threads, Collective* collective) const;
  // Files describing the fitted model for people and other tools, written beside the model by `geomx train` (the
  // tree ensembles' JSON dump and feature importances). Default: none.
  virtual std::vector<Artefact> Artefacts() const;
};

struct EstimatorDef {
  std::string name;   // recipe `algorithm.name`: "logreg", "svm", "knn"
  std::string title;  // "Logistic Regression"
  data::TableTask task = data::TableTask::kClassification;
  std::string help;   // one paragraph for `geomx algos NAME`
  std::string distributed;  // its distributed form, one line (what crosses the parameter server)
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Estimator>(const ParamValues&)> create;
};

// The registry of estimators, filled during static initialisation (GEOMX_REGISTER_ESTIMATOR).
class EstimatorRegistry {
 public:
  static bool Add(EstimatorDef def);
  static const EstimatorDef* Find(const std::string& name);
  static std::vector<const EstimatorDef*> All();  // sorted by name
  static std::vector<std::string> Names();
};

#define GEOMX_ESTIMATOR_CONCAT_INNER_(a, b) a##b
#define GEOMX_ESTIMATOR_CONCAT_(a, b) GEOMX_ESTIMATOR_CONCAT_INNER_(a, b)
// In an estimator's .cc: GEOMX_REGISTER_ESTIMATOR(MakeLogRegDef()); where MakeLogRegDef() returns an EstimatorDef.
#define GEOMX_REGISTER_ESTIMATOR(def)                                                       \
  static const bool GEOMX_ESTIMATOR_CONCAT_(geomx_estimator_, __LINE__) [[maybe_unused]] = \
      ::geomx::algorithms::EstimatorRegistry::Add(def)

// Creates the estimator `name` from user-given parameter text. kNotFound with a did-you-mean for an unknown name,
// kInvalidArgument listing every bad parameter.
Result<std::unique_ptr<Estimator>> CreateEstimator(const std::string& name,
                                                   const std::map<std::string, std::string>& params);

// The standard metrics of `task` for predictions on `truth`: classification accuracy; regression rmse, mae, r2;
// ranking ndcg@10, map (per query, averaged over queries); clustering purity and nmi (when truth has labels); control
// return (the mean of the predicted returns: a control model predicts the return of its episode from each row's start
// state).
Metrics EvaluateTask(data::TableTask task, const data::Table& truth, const Prediction& prediction);

// Ranking metrics of one score vector against graded relevance grouped by qids (rows of a query need not be
// contiguous). NDCG@k with gain 2^rel - 1 and log2 discount, queries whose ideal DCG is 0 count as 1 (as LightGBM and
// RankLib do); MAP with relevance > 0 as relevant, queries without relevant rows skipped.
// Row indices grouped by query id, queries in first-appearance order, rows ascending.
std::vector<std::vector<int64_t>> GroupByQuery(const std::vector<int64_t>& qids);
double MeanNdcgAt(const std::vector<float>& scores, const std::vector<float>& relevance,
                  const std::vector<int64_t>& qids, int k);
double MeanAveragePrecision(const std::vector<float>& scores, const std::vector<float>& relevance,
                            const std::vector<int64_t>& qids);
// Clustering: purity (share of rows in their cluster's majority class) and normalised mutual information
// (arithmetic-mean normalisation, as scikit-learn's default).
double ClusterPurity(const std::vector<float>& clusters, const std::vector<int32_t>& labels);
double NormalizedMutualInfo(const std::vector<float>& clusters, const std::vector<int32_t>& labels);

}  // namespace geomx::algorithms
