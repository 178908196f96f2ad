// Kernel support vector machines on the SMO solver (smo.h): `svm` (C-SVC, one-vs-one with voting for several
// classes, as LIBSVM -s 0) and `svr` (epsilon-SVR, LIBSVM -s 3).
//
// The model is the union of the support vectors (dense or CSR, as the training table) plus one "machine" per
// one-vs-one pair (or a single one for regression): the indices of its support vectors, their coefficients y_i a_i,
// and rho; a machine's decision is f(x) = sum coef_i K(sv_i, x) - rho. Prediction computes the kernel block of a few
// dozen query rows against every support vector at once (each kernel value is shared by the K-1 machines of its
// class), then the machines' decisions; classes vote as in LIBSVM (ties to the lower class id).
//
// Distributed form (cascade SVM, Graf et al. 2005, with the hierarchy's levels, plus feedback): each worker trains
// on its shard and sends its support vectors (cascade records, svm_cascade.h) up the tiers through one key
// whose reducer is svm_cascade (svm_cascade.cc): each local server retrains on its data centre's workers' rows and
// forwards only the support vectors of that fit; the global server retrains on the data centres' results and
// answers everyone with that fit's support vectors. Every worker then retrains on those rows (identical input,
// identical model everywhere: the support vectors of the global level reproduce its model). Feedback passes then
// gather the rows that violate that model's optimality conditions and retrain, until there are none (the model is
// then optimal for all the data), they are at most 1% of the union, or after three passes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/kernel_svm_train.h"
#include "algorithms/estimators/svm_cascade.h"
#include "algorithms/estimators/smo.h"
#include "engine/base/check.h"
#include "engine/base/logging.h"

namespace geomx::algorithms {
namespace {

constexpr int64_t kPredictBlock = 64;  // query rows per kernel block (64 x 784 floats stay in L2)
// Distributed form: at most this many feedback passes; they stop early once the rows violating the current model
// are at most this share of the rows it was trained on (retraining would barely move it).
constexpr int kCascadeFeedbackPasses = 3;
constexpr double kCascadeSettledShare = 0.01;

using svm::AppendRows;
using svm::CountClasses;
using svm::CascadeRows;
using svm::DecodeCascadeAnswer;
using svm::EncodeCascade;
using svm::kCascadeReducer;
using svm::SvmConfig;

SvmConfig ReadConfig(const ParamValues& v, bool regression) {
  SvmConfig c;
  GEOMX_CHECK(smo::ParseKernelType(v.Choice("kernel"), &c.kernel.type));
  if (v.IsWord("gamma")) {
    c.gamma_word = v.Text("gamma");
  } else {
    c.kernel.gamma = v.Number("gamma");
  }
  c.kernel.degree = static_cast<int>(v.Int("degree"));
  c.kernel.coef0 = v.Number("coef0");
  c.C = v.Number("C");
  if (regression) c.epsilon = v.Number("epsilon");
  c.solver.tol = v.Number("tol");
  c.solver.shrinking = v.Bool("shrinking");
  c.solver.cache_mb = v.Number("cache_mb");
  c.solver.max_iter = v.Int("max_iter");
  return c;
}

// The trained decision functions. Immutable after Fit/Load; Predict reads it from several threads.
struct KernelModel {
  smo::KernelSpec kernel;
  int64_t cols = 0;
  data::Table svs;                 // support vectors only (no labels)
  std::vector<double> sv_sq;       // their squared norms
  std::vector<int64_t> begin;      // machine m owns entries [begin[m], begin[m+1]) of sv / coef
  std::vector<int64_t> sv;
  std::vector<float> coef;
  std::vector<float> rho;          // per machine
  std::vector<int64_t> pairs;      // classification: classes (a, b) of machine m at 2m, 2m+1; a wins when f > 0
  int num_classes = 0;             // classification; 0 for regression

  int64_t machines() const { return static_cast<int64_t>(rho.size()); }
};

// What one SMO problem left: coefficients per row of the training table (0 for non-support vectors).
struct Machine {
  std::vector<int64_t> rows;  // training rows of the problem
  std::vector<double> coef;   // per row of `rows`
  double rho = 0;
  int64_t a = 0, b = 0;
};

// Support vectors of all machines as one table, machines re-indexed into it (rows in ascending training order).
KernelModel Assemble(const data::Table& train, const smo::KernelSpec& kernel, std::vector<Machine> machines,
                     int num_classes, std::vector<int64_t>* sv_rows) {
  KernelModel model;
  model.kernel = kernel;
  model.cols = train.cols;
  model.num_classes = num_classes;
  std::vector<int64_t> index(static_cast<size_t>(train.rows), -1);
  for (const Machine& m : machines) {
    for (size_t k = 0; k < m.rows.size(); ++k) {
      if (m.coef[k] != 0) index[m.rows[k]] = 0;
    }
  }
  sv_rows->clear();
  for (int64_t r = 0; r < train.rows; ++r) {
    if (index[r] == 0) {
      index[r] = static_cast<int64_t>(sv_rows->size());
      sv_rows->push_back(r);
    }
  }
  model.svs = train.Select(*sv_rows);
  model.svs.labels.clear();
  model.svs.targets.clear();
  model.svs.weights.clear();
  model.svs.qids.clear();
  model.svs.class_names.clear();
  model.sv_sq = smo::SquaredNorms(model.svs);
  model.begin.push_back(0);
  for (const Machine& m : machines) {
    for (size_t k = 0; k < m.rows.size(); ++k) {
      if (m.coef[k] == 0) continue;
      model.sv.push_back(index[m.rows[k]]);
      model.coef.push_back(static_cast<float>(m.coef[k]));
    }
    model.begin.push_back(static_cast<int64_t>(model.sv.size()));
    model.rho.push_back(static_cast<float>(m.rho));
    if (num_classes > 0) {
      model.pairs.push_back(m.a);
      model.pairs.push_back(m.b);
    }
  }
  return model;
}

// What Fit needs of a table beyond its parameters: labels (svm) or targets (svr) on every row, weights >= 0.
Status CheckTable(const data::Table& t, bool regression) {
  const std::string who = regression ? "svr" : "svm";
  if (regression && static_cast<int64_t>(t.targets.size()) != t.rows) {
    return Status::InvalidArgument(who + ": the training table has no regression targets");
  }
  if (!regression) {
    if (static_cast<int64_t>(t.labels.size()) != t.rows) {
      return Status::InvalidArgument(who + ": the training table has no class labels");
    }
    for (int64_t r = 0; r < t.rows; ++r) {
      if (t.labels[r] < 0) return Status::InvalidArgument(who + ": row " + std::to_string(r) + " has no label");
    }
  }
  for (float w : t.weights) {
    if (!(w >= 0) || !std::isfinite(w)) return Status::InvalidArgument(who + ": row weights must be finite and >= 0");
  }
  return Status::Ok();
}


// The SMO problems of one table: one per pair of classes present (classification) or one (regression); rows of
// weight 0 take no part. Fewer than two classes is kInvalidArgument.
Status BuildProblems(const data::Table& train, bool regression, std::vector<Machine>* machines, int* num_classes) {
  const std::string who = regression ? "svr" : "svm";
  if (regression) {
    Machine m;
    for (int64_t r = 0; r < train.rows; ++r) {
      if (train.weight(r) > 0) m.rows.push_back(r);
    }
    if (m.rows.empty()) return Status::InvalidArgument(who + ": every training row has weight 0");
    machines->push_back(std::move(m));
    *num_classes = 0;
    return Status::Ok();
  }
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(std::max(train.num_classes, 0)));
  for (int64_t r = 0; r < train.rows; ++r) {
    const int32_t label = train.labels[r];
    if (label < 0) return Status::InvalidArgument(who + ": row " + std::to_string(r) + " has no label");
    if (label >= static_cast<int32_t>(by_class.size())) by_class.resize(static_cast<size_t>(label) + 1);
    if (train.weight(r) > 0) by_class[label].push_back(r);
  }
  std::vector<int64_t> present;
  for (size_t c = 0; c < by_class.size(); ++c) {
    if (!by_class[c].empty()) present.push_back(static_cast<int64_t>(c));
  }
  if (present.size() < 2) {
    return Status::InvalidArgument(who + ": the training data has " + std::to_string(present.size()) +
                                   " class(es); a classifier needs at least 2");
  }
  for (size_t x = 0; x < present.size(); ++x) {
    for (size_t z = x + 1; z < present.size(); ++z) {
      Machine m;
      m.a = present[x];
      m.b = present[z];
      m.rows = by_class[m.a];
      m.rows.insert(m.rows.end(), by_class[m.b].begin(), by_class[m.b].end());
      machines->push_back(std::move(m));
    }
  }
  *num_classes = static_cast<int>(by_class.size());
  return Status::Ok();
}

// Solves every problem. Independent problems run concurrently, each with its share of the cache; a single problem
// gets the threads for its kernel rows. Progress: one OnStep per solved problem.
Status SolveProblems(const data::Table& train, const SvmConfig& config, bool regression, const FitContext& context,
                     std::vector<Machine>* machines) {
  const std::string who = regression ? "svr" : "svm";
  const int64_t count = static_cast<int64_t>(machines->size());
  const int threads = std::max(1, context.threads);
  const bool across = threads > 1 && count > 1;
  smo::SolverOptions options = config.solver;
  options.threads = across ? 1 : threads;
  options.cache_mb = across ? config.solver.cache_mb / static_cast<double>(std::min<int64_t>(threads, count))
                            : config.solver.cache_mb;
  options.interrupted = context.interrupted;
  int64_t done = 0, unconverged = 0;
  bool cancelled = false;
#pragma omp parallel for num_threads(threads) if (across) schedule(dynamic, 1)
  for (int64_t k = 0; k < count; ++k) {
    Machine& m = (*machines)[k];
    const data::Table points = train.Select(m.rows);
    const int64_t n = points.rows;
    std::vector<double> upper(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) upper[i] = config.C * points.weight(i);
    smo::SolveResult result;
    if (regression) {
      std::vector<double> z(points.targets.begin(), points.targets.end());
      result = smo::SolveEpsilonSvr(points, z, upper, config.epsilon, config.kernel, options);
    } else {
      std::vector<double> y(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) y[i] = points.labels[i] == m.a ? 1.0 : -1.0;
      result = smo::SolveCsvc(points, y, upper, config.kernel, options);
    }
    m.coef = std::move(result.coef);
    m.rho = result.rho;
    int64_t nsv = 0;
    for (double c : m.coef) nsv += c != 0;
#pragma omp critical(geomx_kernel_svm_progress)
    {
      ++done;
      cancelled = cancelled || result.cancelled;
      unconverged += !result.converged && !result.cancelled;
      if (context.observer != nullptr) {
        context.observer->OnStep(done, {{"objective", result.objective},
                                        {"support_vectors", static_cast<double>(nsv)},
                                        {"iterations", static_cast<double>(result.iterations)}});
      }
    }
  }
  if (cancelled || context.Interrupted()) return Status::Cancelled(who + ": fit interrupted");
  if (unconverged > 0) {
    GEOMX_LOG(kWarning) << who << ": " << unconverged << " of " << count
                        << " problem(s) stopped at max_iter before reaching tol";
  }
  return Status::Ok();
}

// Trains the model of one table (OvO C-SVC, or epsilon-SVR when `regression`); *sv_rows receives the training rows
// that became support vectors.
Result<KernelModel> TrainLocal(const data::Table& train, const SvmConfig& config, bool regression,
                               const FitContext& context, std::vector<int64_t>* sv_rows) {
  std::vector<Machine> machines;
  int num_classes = 0;
  GEOMX_RETURN_IF_ERROR(BuildProblems(train, regression, &machines, &num_classes));
  GEOMX_RETURN_IF_ERROR(SolveProblems(train, config, regression, context, &machines));
  return Assemble(train, config.kernel, std::move(machines), num_classes, sv_rows);
}

}  // namespace

namespace svm {

int CountClasses(const data::Table& t) {
  std::vector<char> seen;
  int count = 0;
  for (int64_t r = 0; r < t.rows; ++r) {
    const int32_t label = t.labels[r];
    if (t.weight(r) <= 0) continue;
    if (label >= static_cast<int32_t>(seen.size())) seen.resize(static_cast<size_t>(label) + 1, 0);
    count += !seen[label];
    seen[label] = 1;
  }
  return count;
}

void AppendRows(const data::Table& more, data::Table* into) {
  if (!more.weights.empty() && into->weights.empty()) into->weights.assign(static_cast<size_t>(into->rows), 1.0f);
  if (!into->weights.empty()) {
    for (int64_t r = 0; r < more.rows; ++r) into->weights.push_back(more.weight(r));
  }
  into->dense.insert(into->dense.end(), more.dense.begin(), more.dense.end());
  into->labels.insert(into->labels.end(), more.labels.begin(), more.labels.end());
  into->targets.insert(into->targets.end(), more.targets.begin(), more.targets.end());
  into->num_classes = std::max(into->num_classes, more.num_classes);
  into->rows += more.rows;
}

Result<std::vector<int64_t>> SupportVectorRows(const data::Table& train, const SvmConfig& config, bool regression,
                                               const FitContext& context) {
  std::vector<int64_t> sv;
  GEOMX_RETURN_IF_ERROR(TrainLocal(train, config, regression, context, &sv).status());
  return sv;
}

}  // namespace svm

namespace {

// Resolves gamma = "scale" / "auto" on the data (over all workers' shards when distributed).
Status ResolveGamma(const data::Table& train, Collective* collective, SvmConfig* config) {
  if (config->gamma_word == "auto") {
    config->kernel.gamma = train.cols > 0 ? 1.0 / static_cast<double>(train.cols) : 1.0;
  } else if (config->gamma_word == "scale") {
    double sums[3];
    smo::EntrySums(train, &sums[0], &sums[1], &sums[2]);
    if (collective != nullptr) {
      // Float sums would lose the variance of large data; split each double into a high and a low float.
      float parts[6];
      for (int k = 0; k < 3; ++k) {
        parts[2 * k] = static_cast<float>(sums[k]);
        parts[2 * k + 1] = static_cast<float>(sums[k] - static_cast<double>(parts[2 * k]));
      }
      GEOMX_RETURN_IF_ERROR(collective->AllReduceSum("svm/gamma_scale", parts));
      for (int k = 0; k < 3; ++k) sums[k] = static_cast<double>(parts[2 * k]) + static_cast<double>(parts[2 * k + 1]);
    }
    config->kernel.gamma = smo::ScaleGamma(sums[0], sums[1], sums[2], train.cols);
  }
  return Status::Ok();
}

// Cascade step: rows of every worker ([label or target, weight, features...] per row, after a
// [cols, count, num_classes, failure] header per worker) gathered into one dense table, identical on every worker.
// `failure` is this worker's problem (OK, or why it has nothing to send); any worker's is every worker's error, so
// that all of them stop after the same collective calls.
Result<data::Table> GatherRows(const data::Table& train, const std::vector<int64_t>& sv_rows, bool regression,
                               const Status& failure, const std::string& key, bool allow_empty,
                               Collective* collective) {
  const std::string who = regression ? "svr" : "svm";
  const int64_t d = train.cols;
  std::vector<float> mine = {static_cast<float>(d), static_cast<float>(sv_rows.size()),
                             static_cast<float>(train.num_classes), static_cast<float>(failure.code())};
  mine.reserve(mine.size() + sv_rows.size() * static_cast<size_t>(d + 2));
  if (!failure.ok()) GEOMX_CHECK(sv_rows.empty());
  std::vector<float> row(static_cast<size_t>(d));
  for (int64_t r : sv_rows) {
    mine.push_back(regression ? train.targets[r] : static_cast<float>(train.labels[r]));
    mine.push_back(train.weight(r));
    train.CopyRow(r, row.data());
    mine.insert(mine.end(), row.begin(), row.end());
  }
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> all, collective->AllGather(key, mine));
  data::Table out;
  out.cols = d;
  out.source = train.source;
  out.class_names = train.class_names;
  bool weighted = false;
  size_t pos = 0;
  for (int w = 0; w < collective->world(); ++w) {
    if (pos + 4 > all.size()) return Status::DataLoss(who + ": truncated support-vector gather");
    const int64_t cols = static_cast<int64_t>(all[pos]), count = static_cast<int64_t>(all[pos + 1]);
    out.num_classes = std::max(out.num_classes, static_cast<int>(all[pos + 2]));
    const int code = static_cast<int>(all[pos + 3]);
    pos += 4;
    if (!failure.ok()) return failure;
    if (code != 0) {
      const StatusCode why = static_cast<StatusCode>(code);
      return Status(why, who + ": worker " + std::to_string(w) + " could not fit its shard (" +
                             std::string(StatusCodeName(why)) + ")");
    }
    if (cols != d) {
      return Status::InvalidArgument(who + ": workers disagree on the column count (" + std::to_string(cols) + " vs " +
                                     std::to_string(d) + ")");
    }
    if (count < 0 || pos + static_cast<size_t>(count * (d + 2)) > all.size()) {
      return Status::DataLoss(who + ": truncated support-vector gather");
    }
    for (int64_t k = 0; k < count; ++k) {
      if (regression) {
        out.targets.push_back(all[pos]);
      } else {
        out.labels.push_back(static_cast<int32_t>(all[pos]));
      }
      out.weights.push_back(all[pos + 1]);
      weighted = weighted || all[pos + 1] != 1.0f;
      out.dense.insert(out.dense.end(), all.begin() + static_cast<int64_t>(pos) + 2,
                       all.begin() + static_cast<int64_t>(pos) + 2 + d);
      pos += static_cast<size_t>(d + 2);
      ++out.rows;
    }
  }
  if (!weighted) out.weights.clear();
  if (out.rows == 0 && !allow_empty) return Status::InvalidArgument(who + ": every worker's shard is empty");
  return out;
}

// Every machine's decision f(x) = sum coef_i K(sv_i, x) - rho for every row of `input` (rows x machines): the
// kernel block of 64 rows against all support vectors at once, then the machines' sums over their entries.
std::vector<double> DecisionValues(const KernelModel& m, const data::Table& input, int threads) {
  const int64_t nsv = m.svs.rows, machines = m.machines();
  const int64_t blocks = (input.rows + kPredictBlock - 1) / kPredictBlock;
  std::vector<double> out(static_cast<size_t>(input.rows * machines));
#pragma omp parallel num_threads(std::max(1, threads))
  {
    std::vector<float> k(static_cast<size_t>(kPredictBlock * nsv));
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t begin = b * kPredictBlock, end = std::min(input.rows, begin + kPredictBlock);
      smo::KernelBlock(input, begin, end, m.svs, m.sv_sq, m.kernel, k.data());
      for (int64_t r = begin; r < end; ++r) {
        const float* kr = k.data() + (r - begin) * nsv;
        for (int64_t q = 0; q < machines; ++q) {
          double f = 0;
          for (int64_t e = m.begin[q]; e < m.begin[q + 1]; ++e) f += static_cast<double>(m.coef[e]) * kr[m.sv[e]];
          out[r * machines + q] = f - m.rho[q];
        }
      }
    }
  }
  return out;
}

// One vote per machine; the class with most votes, the lower id on a tie (LIBSVM's rule).
float Vote(const KernelModel& m, const double* decision, std::vector<int>* votes) {
  std::fill(votes->begin(), votes->end(), 0);
  for (int64_t q = 0; q < m.machines(); ++q) ++(*votes)[decision[q] > 0 ? m.pairs[2 * q] : m.pairs[2 * q + 1]];
  return static_cast<float>(std::max_element(votes->begin(), votes->end()) - votes->begin());
}

// The rows of `train` not yet sent (`sent`) that break the optimality conditions of `m` by more than 2 tol: margin
// y f < 1 - 2 tol in a pair of their class, or |z - f| > epsilon + 2 tol for regression.
std::vector<int64_t> KktViolators(const KernelModel& m, const data::Table& train, const SvmConfig& config,
                                  bool regression, const std::vector<char>& sent, int threads) {
  std::vector<int64_t> candidates;
  for (int64_t r = 0; r < train.rows; ++r) {
    if (!sent[r] && train.weight(r) > 0) candidates.push_back(r);
  }
  const data::Table rows = train.Select(candidates);
  const std::vector<double> f = DecisionValues(m, rows, threads);
  const double slack = 2 * config.solver.tol;
  const int64_t machines = m.machines();
  std::vector<int64_t> out;
  for (size_t k = 0; k < candidates.size(); ++k) {
    bool violates = false;
    if (regression) {
      violates = std::fabs(rows.targets[k] - f[k]) > config.epsilon + slack;
    } else {
      const int64_t label = rows.labels[k];
      for (int64_t q = 0; q < machines && !violates; ++q) {
        if (label != m.pairs[2 * q] && label != m.pairs[2 * q + 1]) continue;
        const double y = label == m.pairs[2 * q] ? 1.0 : -1.0;
        violates = y * f[k * machines + q] < 1 - slack;
      }
    }
    if (violates) out.push_back(candidates[k]);
  }
  return out;
}


class KernelSvm : public Estimator {
 public:
  KernelSvm(const ParamValues& values, bool regression)
      : config_(ReadConfig(values, regression)), regression_(regression) {}

  Status Fit(const data::Table& train, const FitContext& context) override {
    const std::string who = regression_ ? "svr" : "svm";
    Status valid = CheckTable(train, regression_);
    if (context.collective != nullptr) return FitCascade(train, context, std::move(valid));
    GEOMX_RETURN_IF_ERROR(valid);
    if (train.rows == 0) return Status::InvalidArgument(who + ": the training table is empty");
    GEOMX_RETURN_IF_ERROR(ResolveGamma(train, nullptr, &config_));
    std::vector<int64_t> sv_rows;
    GEOMX_ASSIGN_OR_RETURN(model_, TrainLocal(train, config_, regression_, context, &sv_rows));
    return Status::Ok();
  }

  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    const KernelModel& m = model_;
    if (input.cols != m.cols) {
      return Status::InvalidArgument(std::string(regression_ ? "svr" : "svm") + ": the input has " +
                                     std::to_string(input.cols) + " columns but the model was trained on " +
                                     std::to_string(m.cols));
    }
    Prediction out;
    out.value.resize(static_cast<size_t>(input.rows));
    const std::vector<double> decision = DecisionValues(m, input, threads);
    const int64_t machines = m.machines();
    std::vector<int> votes(static_cast<size_t>(std::max(m.num_classes, 1)));
    for (int64_t r = 0; r < input.rows; ++r) {
      const double* f = decision.data() + r * machines;
      out.value[r] = regression_ ? static_cast<float>(f[0]) : Vote(m, f, &votes);
    }
    return out;
  }

  void Save(ModelWriter* out) const override {
    const KernelModel& m = model_;
    out->PutNumber("svm.kernel", static_cast<double>(m.kernel.type));
    out->PutNumber("svm.gamma", m.kernel.gamma);
    out->PutNumber("svm.degree", m.kernel.degree);
    out->PutNumber("svm.coef0", m.kernel.coef0);
    out->PutNumber("svm.num_classes", m.num_classes);
    const std::vector<int64_t> shape = {m.svs.rows, m.cols, m.svs.sparse ? 1 : 0};
    out->PutInts("svm.sv_shape", shape);
    if (m.svs.sparse) {
      out->PutInts("svm.sv_row_ptr", m.svs.row_ptr);
      const std::vector<int64_t> cols(m.svs.col_index.begin(), m.svs.col_index.end());
      out->PutInts("svm.sv_col_index", cols);
      out->PutFloats("svm.sv_values", m.svs.values);
    } else {
      out->PutFloats("svm.sv_dense", m.svs.dense);
    }
    out->PutInts("svm.machine_begin", m.begin);
    out->PutInts("svm.machine_sv", m.sv);
    out->PutFloats("svm.machine_coef", m.coef);
    out->PutFloats("svm.rho", m.rho);
    out->PutInts("svm.pairs", m.pairs);
  }

  Status Load(const ModelReader& in) override {
    KernelModel m;
    double kind = 0, degree = 0, classes = 0;
    GEOMX_RETURN_IF_ERROR(in.GetNumber("svm.kernel", &kind));
    GEOMX_RETURN_IF_ERROR(in.GetNumber("svm.gamma", &m.kernel.gamma));
    GEOMX_RETURN_IF_ERROR(in.GetNumber("svm.degree", &degree));
    GEOMX_RETURN_IF_ERROR(in.GetNumber("svm.coef0", &m.kernel.coef0));
    GEOMX_RETURN_IF_ERROR(in.GetNumber("svm.num_classes", &classes));
    auto bad = [&in](const std::string& what) { return Status::DataLoss(in.source() + ": svm model: " + what); };
    if (kind < 0 || kind > 3 || kind != std::floor(kind)) return bad("unknown kernel type");
    if (!(degree >= 0 && degree <= 1000) || !(classes >= 0 && classes <= 1e6)) return bad("bad degree or class count");
    m.kernel.type = static_cast<smo::KernelType>(static_cast<int>(kind));
    m.kernel.degree = static_cast<int>(degree);
    m.num_classes = static_cast<int>(classes);
    if ((m.num_classes == 0) != regression_) return bad("classifier/regressor mismatch");
    std::vector<int64_t> shape;
    GEOMX_RETURN_IF_ERROR(in.GetInts("svm.sv_shape", &shape, 3));
    if (shape[0] < 0 || shape[1] < 0 || shape[2] < 0 || shape[2] > 1) return bad("bad support-vector shape");
    m.svs.rows = shape[0];
    m.svs.cols = m.cols = shape[1];
    m.svs.sparse = shape[2] == 1;
    if (m.svs.sparse) {
      std::vector<int64_t> cols;
      GEOMX_RETURN_IF_ERROR(in.GetInts("svm.sv_row_ptr", &m.svs.row_ptr, m.svs.rows + 1));
      const int64_t nnz = m.svs.row_ptr.back();
      if (nnz < 0) return bad("bad CSR layout");
      GEOMX_RETURN_IF_ERROR(in.GetInts("svm.sv_col_index", &cols, nnz));
      GEOMX_RETURN_IF_ERROR(in.GetFloats("svm.sv_values", &m.svs.values, nnz));
      for (int64_t c : cols) {
        if (c < 0 || c >= m.cols) return bad("column index out of range");
      }
      m.svs.col_index.assign(cols.begin(), cols.end());
    } else {
      if (m.svs.rows > 0 && m.cols > (int64_t{1} << 40) / m.svs.rows) return bad("support-vector block too large");
      GEOMX_RETURN_IF_ERROR(in.GetFloats("svm.sv_dense", &m.svs.dense, m.svs.rows * m.cols));
    }
    if (Status s = m.svs.Validate(); !s.ok()) return bad(s.message());
    GEOMX_RETURN_IF_ERROR(in.GetFloats("svm.rho", &m.rho));
    const int64_t machines = static_cast<int64_t>(m.rho.size());
    GEOMX_RETURN_IF_ERROR(in.GetInts("svm.machine_begin", &m.begin, machines + 1));
    const int64_t entries = m.begin.back();
    if (m.begin[0] != 0 || !std::is_sorted(m.begin.begin(), m.begin.end())) return bad("bad machine offsets");
    GEOMX_RETURN_IF_ERROR(in.GetInts("svm.machine_sv", &m.sv, entries));
    GEOMX_RETURN_IF_ERROR(in.GetFloats("svm.machine_coef", &m.coef, entries));
    for (int64_t s : m.sv) {
      if (s < 0 || s >= m.svs.rows) return bad("support-vector index out of range");
    }
    GEOMX_RETURN_IF_ERROR(in.GetInts("svm.pairs", &m.pairs, regression_ ? 0 : 2 * machines));
    for (int64_t c : m.pairs) {
      if (c < 0 || c >= m.num_classes) return bad("class id out of range");
    }
    if (machines == 0 || (regression_ && machines != 1)) return bad("wrong number of machines");
    m.sv_sq = smo::SquaredNorms(m.svs);
    model_ = std::move(m);
    return Status::Ok();
  }

  Metrics ModelMetrics(const data::Table&, const Prediction&) const override {
    return {{"support_vectors", static_cast<double>(model_.svs.rows)}};
  }

 private:
  // Cascade: local support vectors (a shard with fewer than two classes sends all its rows: none of them can be
  // ruled out without the other classes) and one retraining on their union; then feedback passes: every worker
  // sends its rows that violate the optimality conditions of the union's model and all retrain, until no worker
  // has one (the union's model is then optimal for all the data, up to 2 tol), they are at most 1% of the union,
  // or kCascadeFeedbackPasses passed.
  // Every worker makes the same collective calls whatever its shard holds (empty, invalid, interrupted); problems
  // surface after each gather, on every worker.
  Status FitCascade(const data::Table& train, const FitContext& context, Status local) {
    GEOMX_RETURN_IF_ERROR(ResolveGamma(train, context.collective, &config_));
    std::vector<int64_t> send;
    if (local.ok() && train.rows > 0) {
      if (regression_ || CountClasses(train) >= 2) {
        Result<KernelModel> model = TrainLocal(train, config_, regression_, context, &send);
        if (!model.ok()) local = model.status();
      } else {
        for (int64_t r = 0; r < train.rows; ++r) {
          if (train.weight(r) > 0) send.push_back(r);
        }
      }
    }
    if (!local.ok()) send.clear();
    // The cascade's levels through the tiers (the svm_cascade reducer): each local server retrains on its data
    // centre's support vectors, the global server on the data centres' results; everyone gets the global set.
    const Bytes mine = EncodeCascade(config_, regression_, train, send, local, context.collective->rank());
    GEOMX_ASSIGN_OR_RETURN(Bytes reduced, context.collective->ReduceThroughTiers(kCascadeReducer, mine));
    GEOMX_ASSIGN_OR_RETURN(CascadeRows top, DecodeCascadeAnswer(reduced));
    if (top.failure != 0) {
      const StatusCode why = static_cast<StatusCode>(top.failure);
      return Status(why, std::string(regression_ ? "svr" : "svm") + ": worker " + std::to_string(top.failed_rank) +
                             " could not fit its shard, or a server its rows (" + std::string(StatusCodeName(why)) +
                             ")");
    }
    if (top.table.rows == 0) {
      return Status::InvalidArgument(std::string(regression_ ? "svr" : "svm") + ": every worker's shard is empty");
    }
    data::Table merged = std::move(top.table);
    merged.source = train.source;
    merged.class_names = train.class_names;
    std::vector<char> sent(static_cast<size_t>(train.rows), 0);
    send.clear();  // this shard's rows in the union: not sent again as violators
    for (size_t k = 0; k < top.origin_rank.size(); ++k) {
      if (static_cast<int>(top.origin_rank[k]) == context.collective->rank() && top.origin_row[k] < train.rows) {
        send.push_back(top.origin_row[k]);
      }
    }
    for (int pass = 0;; ++pass) {
      for (int64_t r : send) sent[r] = 1;
      std::vector<int64_t> sv_rows;
      Result<KernelModel> model = TrainLocal(merged, config_, regression_, context, &sv_rows);
      if (pass == kCascadeFeedbackPasses) {
        if (!model.ok()) return model.status();
        model_ = std::move(*model);
        return Status::Ok();
      }
      send.clear();
      if (model.ok()) send = KktViolators(*model, train, config_, regression_, sent, context.threads);
      GEOMX_ASSIGN_OR_RETURN(data::Table extra,
                             GatherRows(train, send, regression_, model.status(),
                                        "svm/cascade_feedback_" + std::to_string(pass), true, context.collective));
      GEOMX_LOG(kDebug) << (regression_ ? "svr" : "svm") << " cascade pass " << pass << ": " << merged.rows
                        << " rows trained, " << extra.rows << " violators gathered";
      if (static_cast<double>(extra.rows) <= kCascadeSettledShare * static_cast<double>(merged.rows)) {
        model_ = std::move(*model);
        return Status::Ok();
      }
      AppendRows(extra, &merged);
    }
  }

  SvmConfig config_;
  bool regression_;
  KernelModel model_;
};

std::vector<ParamSpec> CommonParams() {
  ParamSpec gamma = PositiveParam("gamma", 1.0,
                                  "kernel coefficient of rbf/poly/sigmoid; scale = 1/(n_features * X.var()), "
                                  "auto = 1/n_features");
  gamma.default_value = "scale";
  gamma.choices = {"scale", "auto"};
  return {
      PositiveParam("C", 1.0, "penalty of the slack (inverse regularisation)"),
      ChoiceParam("kernel", "rbf", {"linear", "poly", "rbf", "sigmoid"},
                  "kernel: linear x.z, poly (gamma x.z + coef0)^degree, rbf exp(-gamma |x-z|^2), "
                  "sigmoid tanh(gamma x.z + coef0)"),
      gamma,
      IntParam("degree", 3, 0, 100, "degree of the poly kernel"),
      NumberParam("coef0", 0.0, "independent term of the poly and sigmoid kernels"),
      PositiveParam("tol", 0.001, "stopping tolerance on the maximal KKT violation (LIBSVM -e)"),
      BoolParam("shrinking", true, "shrinking heuristic (LIBSVM -h)"),
      RangeParam("cache_mb", 200, 0, true, 1 << 20, false, "kernel-row cache in MB (LIBSVM -m)"),
      IntParam("max_iter", 0, 0, int64_t{1} << 50, "cap on SMO iterations per problem; 0 = no cap"),
  };
}

EstimatorDef MakeSvmDef() {
  EstimatorDef def;
  def.name = "svm";
  def.title = "Support Vector Machine (kernel C-SVC)";
  def.task = data::TableTask::kClassification;
  def.help =
      "C-SVC with a kernel, solved by SMO with second-order working-set selection, shrinking and an LRU kernel "
      "cache (LIBSVM's method); several classes by one-vs-one with voting.";
  def.distributed =
      "cascade SVM: each worker trains on its shard and pushes its support vectors (rows + labels); each local "
      "server retrains on its data centre's rows and sends only that fit's support vectors over the WAN, the global "
      "server retrains on the data centres' and answers its support vectors; every worker retrains on them, then up "
      "to 3 feedback passes push the "
      "rows that violate the union model's KKT conditions";
  def.params = CommonParams();
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> { return std::make_unique<KernelSvm>(v, false); };
  return def;
}

EstimatorDef MakeSvrDef() {
  EstimatorDef def;
  def.name = "svr";
  def.title = "Support Vector Regression (kernel epsilon-SVR)";
  def.task = data::TableTask::kRegression;
  def.help = "epsilon-SVR with a kernel, solved by the same SMO solver as svm (LIBSVM -s 3).";
  def.distributed =
      "cascade SVR: each worker trains on its shard and pushes its support vectors (rows + targets); each local "
      "server retrains on its data centre's rows and sends only that fit's support vectors over the WAN, the global "
      "server retrains on the data centres' and answers its support vectors; every worker retrains on them, then up "
      "to 3 feedback passes push the "
      "rows outside the union model's tube";
  def.params = CommonParams();
  def.params.push_back(NonNegativeParam("epsilon", 0.1, "half-width of the insensitive tube"));
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> { return std::make_unique<KernelSvm>(v, true); };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeSvmDef());
GEOMX_REGISTER_ESTIMATOR(MakeSvrDef());

}  // namespace geomx::algorithms
