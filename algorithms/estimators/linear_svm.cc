// linear-svm and linear-svr: linear support vector machines trained by dual coordinate descent (dual_cd.h), as
// LIBLINEAR -s 1/3 (classification, one-vs-rest) and -s 12/13 (epsilon-insensitive regression).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "algorithms/estimators/dual_cd.h"
#include "algorithms/estimators/estimator.h"
#include "engine/base/logging.h"

namespace geomx::algorithms {
namespace {

// Parameters of the solver shared by both estimators.
void AddSolverParams(std::vector<ParamSpec>* params, double tol) {
  params->push_back(PositiveParam("tol", tol, "stopping tolerance of the dual coordinate descent (LIBLINEAR's -e)"));
  params->push_back(IntParam("max_iter", 1000, 1, 100000000, "most passes over the data (single process)"));
  params->push_back(BoolParam("shrinking", true, "drop bounded dual variables that look settled from the passes"));
  params->push_back(IntParam("outer_rounds", 20, 1, 100000000,
                             "distributed (CoCoA): most rounds of local passes + delta-w averaging"));
  params->push_back(IntParam("local_epochs", 1, 1, 100000, "distributed (CoCoA): local passes per round"));
}

DualCdOptions SolverOptions(const ParamValues& p) {
  DualCdOptions o;
  o.max_iter = p.Int("max_iter");
  o.shrinking = p.Bool("shrinking");
  o.outer_rounds = p.Int("outer_rounds");
  o.local_epochs = p.Int("local_epochs");
  return o;
}

// Each task (and each worker's copy of it) shuffles with its own stream.
uint64_t TaskSeed(const FitContext& context, int64_t task) {
  const int rank = context.collective != nullptr ? context.collective->rank() : 0;
  return Rng(context.seed).Fork(static_cast<uint64_t>(rank) * 1000003u + static_cast<uint64_t>(task)).NextU64();
}

std::string Source(const data::Table& t) { return t.source.empty() ? std::string("the training table") : t.source; }

Status CheckWeights(const std::string& name, const data::Table& train) {
  for (float w : train.weights) {
    if (!(w >= 0) || !std::isfinite(w)) {
      return Status::InvalidArgument(name + ": row weights must be finite and >= 0 (" + Source(train) + ")");
    }
  }
  return Status::Ok();
}

Status CheckColumns(const std::string& name, const data::Table& input, int64_t cols) {
  if (cols < 0) return Status::FailedPrecondition(name + ": the model is not fitted");
  if (input.cols != cols) {
    return Status::InvalidArgument(name + ": the input has " + std::to_string(input.cols) +
                                   " columns, the model was trained on " + std::to_string(cols));
  }
  return Status::Ok();
}

// The problems' weights as rows of cols + 1 floats (features, intercept).
std::vector<float> CollectWeights(const DualCdTask& task, int64_t cols, bool fit_intercept) {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(task.problems() * (cols + 1)));
  for (int64_t p = 0; p < task.problems(); ++p) {
    std::span<const float> w = task.w(p);
    out.insert(out.end(), w.begin(), w.begin() + cols);
    out.push_back(fit_intercept ? w[static_cast<size_t>(cols)] : 0.0f);
  }
  return out;
}

std::vector<ParamSpec> LinearSvmParams() {
  std::vector<ParamSpec> p = {
      PositiveParam("C", 1.0, "inverse regularisation strength: the cost of each unit of hinge loss"),
      ChoiceParam("loss", "squared_hinge", {"hinge", "squared_hinge"},
                  "hinge (L1-loss SVM, LIBLINEAR -s 3) or squared_hinge (L2-loss SVM, LIBLINEAR -s 1)"),
      BoolParam("fit_intercept", true, "learn an intercept as a constant feature of value 1 (regularised, LIBLINEAR -B 1)"),
      ChoiceParam("class_weight", "none", {"none", "balanced"},
                  "balanced: C of class c's positives scaled by rows / (classes * rows of c)"),
  };
  AddSolverParams(&p, 0.1);
  return p;
}

class LinearSvm final : public Estimator {
 public:
  explicit LinearSvm(const ParamValues& p)
      : c_(p.Number("C")),
        loss_(p.Choice("loss") == "hinge" ? SvmLoss::kHinge : SvmLoss::kSquaredHinge),
        fit_intercept_(p.Bool("fit_intercept")),
        balanced_(p.Choice("class_weight") == "balanced"),
        tol_(p.Number("tol")),
        options_(SolverOptions(p)) {}

  Status Fit(const data::Table& train, const FitContext& context) override {
    if (train.rows > 0 && !train.has_labels()) {
      return Status::InvalidArgument("linear-svm needs class labels; " + Source(train) + " has none");
    }
    if (train.has_labels() && static_cast<int64_t>(train.labels.size()) != train.rows) {
      return Status::InvalidArgument("linear-svm: " + Source(train) + " has " + std::to_string(train.labels.size()) +
                                     " labels for " + std::to_string(train.rows) + " rows");
    }
    GEOMX_RETURN_IF_ERROR(CheckWeights("linear-svm", train));
    const int num_classes = train.num_classes;
    if (num_classes < 1) return Status::InvalidArgument("linear-svm: " + Source(train) + " declares no classes");
    // Class counts (and the row count) over the whole job, so that every worker takes the same decisions below.
    std::vector<float> counts(static_cast<size_t>(num_classes) + 1, 0.0f);
    for (int32_t label : train.labels) {
      if (label < 0 || label >= num_classes) {
        return Status::InvalidArgument("linear-svm: label " + std::to_string(label) + " outside [0, " +
                                       std::to_string(num_classes) + ") in " + Source(train));
      }
      counts[static_cast<size_t>(label)] += 1;
    }
    counts.back() = static_cast<float>(train.rows);
    if (context.collective != nullptr) {
      GEOMX_RETURN_IF_ERROR(context.collective->AllReduceSum("linear-svm/counts", counts));
    }
    if (counts.back() == 0) return Status::InvalidArgument("linear-svm: " + Source(train) + " is empty");
    const int present = static_cast<int>(std::count_if(counts.begin(), counts.end() - 1, [](float c) { return c > 0; }));
    if (present < 2) {
      return Status::InvalidArgument("linear-svm needs at least two classes; " + Source(train) + " has " +
                                     std::to_string(present));
    }

    // Per-class factors of C: LIBLINEAR's one-vs-rest gives class c's weight to the positives of classifier c and
    // plain C to the rest; a binary problem weights each side with its own class.
    std::vector<double> class_factor(static_cast<size_t>(num_classes), 1.0);
    if (balanced_) {
      for (int c = 0; c < num_classes; ++c) {
        const double n_c = counts[static_cast<size_t>(c)];
        if (n_c > 0) class_factor[static_cast<size_t>(c)] = counts.back() / (present * n_c);
      }
    }

    const int64_t num_vectors = num_classes == 2 ? 1 : num_classes;
    cols_ = train.cols;
    RowExamples examples(train, fit_intercept_ ? 1.0f : 0.0f, context.threads);
    std::vector<std::vector<float>> y(static_cast<size_t>(num_vectors));
    std::vector<std::vector<float>> cost(static_cast<size_t>(num_vectors));
    for (int64_t v = 0; v < num_vectors; ++v) {
      // Binary: class 1 is the positive side.
      const int32_t positive = num_vectors == 1 ? 1 : static_cast<int32_t>(v);
      std::vector<float>& yv = y[static_cast<size_t>(v)];
      std::vector<float>& cv = cost[static_cast<size_t>(v)];
      yv.resize(static_cast<size_t>(train.rows));
      cv.resize(static_cast<size_t>(train.rows));
      for (int64_t i = 0; i < train.rows; ++i) {
        const int32_t label = train.labels[static_cast<size_t>(i)];
        const bool is_positive = label == positive;
        double factor = 1.0;
        if (num_vectors == 1 || is_positive) factor = class_factor[static_cast<size_t>(label)];
        yv[static_cast<size_t>(i)] = is_positive ? 1.0f : -1.0f;
        cv[static_cast<size_t>(i)] = static_cast<float>(c_ * factor * train.weight(i));
      }
    }
    std::unique_ptr<DualCdTask> task =
        MakeSvcTask(examples, std::move(y), std::move(cost), loss_, tol_, TaskSeed(context, 0));

    std::function<Metrics()> eval;
    if (context.eval != nullptr && context.eval->has_labels() && context.eval->cols == cols_) {
      eval = [&]() {
        LinearSvm probe(*this);
        probe.weights_ = CollectWeights(*task, cols_, fit_intercept_);
        probe.num_vectors_ = num_vectors;
        Result<Prediction> p = probe.Predict(*context.eval, context.threads);
        if (!p.ok()) return Metrics{};
        return EvaluateTask(data::TableTask::kClassification, *context.eval, *p);
      };
    }
    GEOMX_ASSIGN_OR_RETURN(DualCdReport report, RunDualCd(task.get(), options_, context, "linear-svm", eval));
    if (!report.converged && context.collective == nullptr) {
      GEOMX_LOG(kWarning) << "linear-svm: reached max_iter (" << options_.max_iter
                          << ") passes before tol; consider standardising the features or a smaller C";
    }
    weights_ = CollectWeights(*task, cols_, fit_intercept_);
    num_vectors_ = num_vectors;

    std::vector<float> support(1, 0.0f);
    for (int64_t p = 0; p < task->problems(); ++p) {
      for (double a : task->coefficients(p)) support[0] += a > 0 ? 1.0f : 0.0f;
    }
    if (context.collective != nullptr) {
      GEOMX_RETURN_IF_ERROR(context.collective->AllReduceSum("linear-svm/support", support));
    }
    support_vectors_ = support[0];
    return Status::Ok();
  }

  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    GEOMX_RETURN_IF_ERROR(CheckColumns("linear-svm", input, weights_.empty() ? -1 : cols_));
    const std::vector<float> scores = LinearDecisionValues(input, weights_, num_vectors_, threads);
    Prediction out;
    out.value.resize(static_cast<size_t>(input.rows));
    for (int64_t i = 0; i < input.rows; ++i) {
      const float* s = scores.data() + i * num_vectors_;
      if (num_vectors_ == 1) {
        out.value[static_cast<size_t>(i)] = s[0] > 0 ? 1.0f : 0.0f;
      } else {
        out.value[static_cast<size_t>(i)] = static_cast<float>(std::max_element(s, s + num_vectors_) - s);
      }
    }
    return out;
  }

  void Save(ModelWriter* out) const override {
    SaveLinearWeights(out, weights_, num_vectors_, cols_);
    out->PutNumber("linear.support_vectors", support_vectors_);
  }

  Status Load(const ModelReader& in) override {
    GEOMX_RETURN_IF_ERROR(LoadLinearWeights(in, &weights_, &num_vectors_, &cols_));
    if (num_vectors_ == 2) return Status::DataLoss(in.source() + ": linear-svm with 2 weight vectors");
    if (in.Has("linear.support_vectors")) GEOMX_RETURN_IF_ERROR(in.GetNumber("linear.support_vectors", &support_vectors_));
    return Status::Ok();
  }

  Metrics ModelMetrics(const data::Table&, const Prediction&) const override {
    return {{"support_vectors", support_vectors_}};
  }

 private:
  double c_;
  SvmLoss loss_;
  bool fit_intercept_;
  bool balanced_;
  double tol_;
  DualCdOptions options_;
  std::vector<float> weights_;  // num_vectors_ x (cols_ + 1): features, intercept
  int64_t num_vectors_ = 0;
  int64_t cols_ = -1;
  double support_vectors_ = 0;  // dual variables > 0, over every one-vs-rest problem
};

EstimatorDef MakeLinearSvmDef() {
  EstimatorDef def;
  def.name = "linear-svm";
  def.title = "Linear SVM";
  def.task = data::TableTask::kClassification;
  def.help =
      "Linear support vector machine (LIBLINEAR -s 1 / -s 3): L2-regularised squared-hinge or hinge loss solved by "
      "dual coordinate descent with random permutations and shrinking (Hsieh et al. 2008); one-vs-rest for more "
      "than two classes, the classifiers trained in parallel; predicts the class of the largest decision value.";
  def.distributed =
      "CoCoA with averaging: each round every worker runs local_epochs dual CD passes on its shard from the shared w; "
      "push delta-w (classes x (features + 1) floats), w += sum / workers";
  def.params = LinearSvmParams();
  def.create = [](const ParamValues& p) { return std::make_unique<LinearSvm>(p); };
  return def;
}

std::vector<ParamSpec> LinearSvrParams() {
  std::vector<ParamSpec> p = {
      PositiveParam("C", 1.0, "inverse regularisation strength: the cost of each unit of loss beyond epsilon"),
      ChoiceParam("loss", "epsilon_insensitive", {"epsilon_insensitive", "squared_epsilon_insensitive"},
                  "epsilon_insensitive (L1-loss SVR, LIBLINEAR -s 13) or squared_epsilon_insensitive (L2-loss, -s 12)"),
      NonNegativeParam("epsilon", 0.1, "half-width of the tube within which errors cost nothing (LIBLINEAR's -p)"),
      BoolParam("fit_intercept", true, "learn an intercept as a constant feature of value 1 (regularised, LIBLINEAR -B 1)"),
  };
  AddSolverParams(&p, 0.1);
  return p;
}

class LinearSvr final : public Estimator {
 public:
  explicit LinearSvr(const ParamValues& p)
      : c_(p.Number("C")),
        loss_(p.Choice("loss") == "epsilon_insensitive" ? SvmLoss::kHinge : SvmLoss::kSquaredHinge),
        epsilon_(p.Number("epsilon")),
        fit_intercept_(p.Bool("fit_intercept")),
        tol_(p.Number("tol")),
        options_(SolverOptions(p)) {}

  Status Fit(const data::Table& train, const FitContext& context) override {
    if (train.rows > 0 && !train.has_targets()) {
      return Status::InvalidArgument("linear-svr needs regression targets; " + Source(train) + " has none");
    }
    if (train.has_targets() && static_cast<int64_t>(train.targets.size()) != train.rows) {
      return Status::InvalidArgument("linear-svr: " + Source(train) + " has " + std::to_string(train.targets.size()) +
                                     " targets for " + std::to_string(train.rows) + " rows");
    }
    for (float y : train.targets) {
      if (!std::isfinite(y)) return Status::InvalidArgument("linear-svr: a target in " + Source(train) + " is not finite");
    }
    GEOMX_RETURN_IF_ERROR(CheckWeights("linear-svr", train));
    std::vector<float> rows = {static_cast<float>(train.rows)};
    if (context.collective != nullptr) GEOMX_RETURN_IF_ERROR(context.collective->AllReduceSum("linear-svr/rows", rows));
    if (rows[0] == 0) return Status::InvalidArgument("linear-svr: " + Source(train) + " is empty");

    cols_ = train.cols;
    RowExamples examples(train, fit_intercept_ ? 1.0f : 0.0f, context.threads);
    std::vector<float> cost(static_cast<size_t>(train.rows));
    for (int64_t i = 0; i < train.rows; ++i) cost[static_cast<size_t>(i)] = static_cast<float>(c_ * train.weight(i));
    std::unique_ptr<DualCdTask> task =
        MakeSvrTask(examples, train.targets, std::move(cost), loss_, epsilon_, tol_, TaskSeed(context, 0));

    std::function<Metrics()> eval;
    if (context.eval != nullptr && context.eval->has_targets() && context.eval->cols == cols_) {
      eval = [&]() {
        LinearSvr probe(*this);
        probe.weights_ = CollectWeights(*task, cols_, fit_intercept_);
        Result<Prediction> p = probe.Predict(*context.eval, context.threads);
        if (!p.ok()) return Metrics{};
        return EvaluateTask(data::TableTask::kRegression, *context.eval, *p);
      };
    }
    GEOMX_ASSIGN_OR_RETURN(DualCdReport report, RunDualCd(task.get(), options_, context, "linear-svr", eval));
    if (!report.converged && context.collective == nullptr) {
      GEOMX_LOG(kWarning) << "linear-svr: reached max_iter (" << options_.max_iter
                          << ") passes before tol; consider standardising the features or a smaller C";
    }
    weights_ = CollectWeights(*task, cols_, fit_intercept_);
    return Status::Ok();
  }

  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    GEOMX_RETURN_IF_ERROR(CheckColumns("linear-svr", input, weights_.empty() ? -1 : cols_));
    Prediction out;
    out.value = LinearDecisionValues(input, weights_, 1, threads);
    return out;
  }

  void Save(ModelWriter* out) const override { SaveLinearWeights(out, weights_, 1, cols_); }

  Status Load(const ModelReader& in) override {
    int64_t num_vectors = 0;
    GEOMX_RETURN_IF_ERROR(LoadLinearWeights(in, &weights_, &num_vectors, &cols_));
    if (num_vectors != 1) {
      return Status::DataLoss(in.source() + ": linear-svr with " + std::to_string(num_vectors) + " weight vectors");
    }
    return Status::Ok();
  }

 private:
  double c_;
  SvmLoss loss_;
  double epsilon_;
  bool fit_intercept_;
  double tol_;
  DualCdOptions options_;
  std::vector<float> weights_;  // cols_ + 1: features, intercept
  int64_t cols_ = -1;
};

EstimatorDef MakeLinearSvrDef() {
  EstimatorDef def;
  def.name = "linear-svr";
  def.title = "Linear SVR";
  def.task = data::TableTask::kRegression;
  def.help =
      "Linear epsilon-insensitive support vector regression (LIBLINEAR -s 13 / -s 12): L2-regularised L1- or L2-loss "
      "SVR solved by dual coordinate descent with shrinking (Ho & Lin 2012); predicts w.x + b.";
  def.distributed =
      "CoCoA with averaging: each round every worker runs local_epochs dual CD passes on its shard from the shared w; "
      "push delta-w (features + 1 floats), w += sum / workers";
  def.params = LinearSvrParams();
  def.create = [](const ParamValues& p) { return std::make_unique<LinearSvr>(p); };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeLinearSvmDef());
GEOMX_REGISTER_ESTIMATOR(MakeLinearSvrDef());

}  // namespace geomx::algorithms
