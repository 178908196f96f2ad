// ranksvm: Joachims' RankSVM (KDD 2002), a linear SVM on the differences x_i - x_j of the pairs of rows of one query
// with relevance_i > relevance_j, trained by the dual coordinate descent of dual_cd.h. The pairs are index pairs:
// the difference rows are never materialised (PairExamples computes w.(x_i - x_j) from the two rows).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_set>
#include <vector>

#include "algorithms/estimators/dual_cd.h"
#include "algorithms/estimators/estimator.h"
#include "engine/base/logging.h"

namespace geomx::algorithms {

std::vector<std::pair<int64_t, int64_t>> RankingPairs(const data::Table& table, int64_t max_pairs_per_query,
                                                      uint64_t seed) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  // Rows grouped by query (rows of a query need not be adjacent), queries in order of first appearance.
  std::vector<int64_t> order(static_cast<size_t>(table.rows));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::vector<int64_t> first_seen(static_cast<size_t>(table.rows));
  {
    std::vector<int64_t> by_qid = order;
    std::stable_sort(by_qid.begin(), by_qid.end(), [&](int64_t a, int64_t b) {
      return table.qids[static_cast<size_t>(a)] < table.qids[static_cast<size_t>(b)];
    });
    for (size_t k = 0; k < by_qid.size(); ++k) {
      const bool starts = k == 0 || table.qids[static_cast<size_t>(by_qid[k])] != table.qids[static_cast<size_t>(by_qid[k - 1])];
      first_seen[static_cast<size_t>(by_qid[k])] = starts ? by_qid[k] : first_seen[static_cast<size_t>(by_qid[k - 1])];
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return first_seen[static_cast<size_t>(a)] < first_seen[static_cast<size_t>(b)];
  });

  Rng rng(seed);
  std::vector<int64_t> rows;
  std::vector<int64_t> lower;  // per position in `rows` (sorted by relevance, descending): rows strictly below it
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin + 1;
    while (end < order.size() && first_seen[static_cast<size_t>(order[end])] == first_seen[static_cast<size_t>(order[begin])]) {
      ++end;
    }
    rows.assign(order.begin() + static_cast<std::ptrdiff_t>(begin), order.begin() + static_cast<std::ptrdiff_t>(end));
    begin = end;
    std::stable_sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) {
      return table.targets[static_cast<size_t>(a)] > table.targets[static_cast<size_t>(b)];
    });
    const size_t m = rows.size();
    lower.assign(m, 0);
    int64_t total = 0;
    for (size_t p = 0; p < m;) {
      size_t tie_end = p + 1;
      while (tie_end < m && table.targets[static_cast<size_t>(rows[tie_end])] == table.targets[static_cast<size_t>(rows[p])]) {
        ++tie_end;
      }
      for (size_t q = p; q < tie_end; ++q) lower[q] = static_cast<int64_t>(m - tie_end);
      total += static_cast<int64_t>(tie_end - p) * static_cast<int64_t>(m - tie_end);
      p = tie_end;
    }
    if (total == 0) continue;
    if (max_pairs_per_query <= 0 || total <= max_pairs_per_query) {
      for (size_t p = 0; p < m; ++p) {
        for (size_t q = m - static_cast<size_t>(lower[p]); q < m; ++q) pairs.emplace_back(rows[p], rows[q]);
      }
      continue;
    }
    // A uniform sample of max_pairs_per_query of the query's `total` pairs without listing them all: Floyd's
    // algorithm picks distinct pair numbers, and pair number r is (position p, the r-th row below p) with p found
    // by binary search over the running pair counts.
    std::unordered_set<int64_t> chosen;
    for (int64_t j = total - max_pairs_per_query; j < total; ++j) {
      const int64_t r = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(j + 1)));
      if (!chosen.insert(r).second) chosen.insert(j);
    }
    std::vector<int64_t> numbers(chosen.begin(), chosen.end());
    std::sort(numbers.begin(), numbers.end());
    std::vector<int64_t> start(m + 1, 0);  // start[p] = number of the first pair of position p
    for (size_t p = 0; p < m; ++p) start[p + 1] = start[p] + lower[p];
    for (int64_t r : numbers) {
      const size_t p = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), r) - start.begin()) - 1;
      const size_t q = m - static_cast<size_t>(lower[p]) + static_cast<size_t>(r - start[p]);
      pairs.emplace_back(rows[p], rows[q]);
    }
  }
  return pairs;
}

namespace {

std::string Source(const data::Table& t) { return t.source.empty() ? std::string("the training table") : t.source; }

class RankSvm final : public Estimator {
 public:
  explicit RankSvm(const ParamValues& p)
      : c_(p.Number("C")),
        loss_(p.Choice("loss") == "hinge" ? SvmLoss::kHinge : SvmLoss::kSquaredHinge),
        tol_(p.Number("tol")),
        max_pairs_per_query_(p.Int("max_pairs_per_query")) {
    options_.max_iter = p.Int("max_iter");
    options_.shrinking = p.Bool("shrinking");
    options_.outer_rounds = p.Int("outer_rounds");
    options_.local_epochs = p.Int("local_epochs");
  }

  Status Fit(const data::Table& train, const FitContext& context) override {
    if (train.rows > 0 && (!train.has_targets() || train.qids.empty())) {
      return Status::InvalidArgument("ranksvm needs relevance labels and query ids (qid:); " + Source(train) +
                                     " lacks them");
    }
    if (train.rows > 0 && (static_cast<int64_t>(train.targets.size()) != train.rows ||
                           static_cast<int64_t>(train.qids.size()) != train.rows)) {
      return Status::InvalidArgument("ranksvm: " + Source(train) + " has " + std::to_string(train.targets.size()) +
                                     " relevance labels and " + std::to_string(train.qids.size()) + " qids for " +
                                     std::to_string(train.rows) + " rows");
    }
    for (float y : train.targets) {
      if (!std::isfinite(y)) return Status::InvalidArgument("ranksvm: a relevance label in " + Source(train) + " is not finite");
    }
    for (float w : train.weights) {
      if (!(w >= 0) || !std::isfinite(w)) {
        return Status::InvalidArgument("ranksvm: row weights must be finite and >= 0 (" + Source(train) + ")");
      }
    }
    const int rank = context.collective != nullptr ? context.collective->rank() : 0;
    std::vector<std::pair<int64_t, int64_t>> pairs =
        RankingPairs(train, max_pairs_per_query_, Rng(context.seed).Fork(1000 + static_cast<uint64_t>(rank)).NextU64());
    // Decided on job-wide counts so that every worker agrees.
    std::vector<float> counts = {static_cast<float>(train.rows), static_cast<float>(pairs.size())};
    if (context.collective != nullptr) GEOMX_RETURN_IF_ERROR(context.collective->AllReduceSum("ranksvm/counts", counts));
    if (counts[0] == 0) return Status::InvalidArgument("ranksvm: " + Source(train) + " is empty");
    if (counts[1] == 0) {
      return Status::InvalidArgument("ranksvm: " + Source(train) +
                                     " has no pair to learn from (no query holds two different relevance levels)");
    }

    cols_ = train.cols;
    num_pairs_ = static_cast<int64_t>(counts[1]);
    std::vector<float> cost(pairs.size());
    // A pair costs C times the mean weight of its rows (with per-query weights: the query's weight).
    for (size_t k = 0; k < pairs.size(); ++k) {
      cost[k] = static_cast<float>(c_ * 0.5 * (train.weight(pairs[k].first) + train.weight(pairs[k].second)));
    }
    PairExamples examples(train, std::move(pairs), context.threads);
    std::vector<std::vector<float>> y = {std::vector<float>(static_cast<size_t>(examples.size()), 1.0f)};
    std::vector<std::vector<float>> costs = {std::move(cost)};
    const uint64_t seed = Rng(context.seed).Fork(static_cast<uint64_t>(rank)).NextU64();
    std::unique_ptr<DualCdTask> task = MakeSvcTask(examples, std::move(y), std::move(costs), loss_, tol_, seed);

    std::function<Metrics()> eval;
    const data::Table* held_out = context.eval;
    if (held_out != nullptr && held_out->has_targets() && !held_out->qids.empty() && held_out->cols == cols_) {
      eval = [&]() {
        RankSvm probe(*this);
        probe.weights_.assign(task->w(0).begin(), task->w(0).end());
        probe.weights_.push_back(0.0f);
        Result<Prediction> p = probe.Predict(*held_out, context.threads);
        if (!p.ok()) return Metrics{};
        return EvaluateTask(data::TableTask::kRanking, *held_out, *p);
      };
    }
    GEOMX_ASSIGN_OR_RETURN(DualCdReport report, RunDualCd(task.get(), options_, context, "ranksvm", eval));
    if (!report.converged && context.collective == nullptr) {
      GEOMX_LOG(kWarning) << "ranksvm: reached max_iter (" << options_.max_iter << ") passes before tol";
    }
    weights_.assign(task->w(0).begin(), task->w(0).end());
    weights_.push_back(0.0f);  // no intercept: it cancels in every difference
    return Status::Ok();
  }

  Result<Prediction> Predict(const data::Table& input, int threads) const override {
    if (weights_.empty()) return Status::FailedPrecondition("ranksvm: the model is not fitted");
    if (input.cols != cols_) {
      return Status::InvalidArgument("ranksvm: the input has " + std::to_string(input.cols) +
                                     " columns, the model was trained on " + std::to_string(cols_));
    }
    Prediction out;
    out.value = LinearDecisionValues(input, weights_, 1, threads);
    return out;
  }

  void Save(ModelWriter* out) const override {
    SaveLinearWeights(out, weights_, 1, cols_);
    out->PutNumber("ranksvm.pairs", static_cast<double>(num_pairs_));
  }

  Status Load(const ModelReader& in) override {
    int64_t num_vectors = 0;
    GEOMX_RETURN_IF_ERROR(LoadLinearWeights(in, &weights_, &num_vectors, &cols_));
    if (num_vectors != 1) {
      return Status::DataLoss(in.source() + ": ranksvm with " + std::to_string(num_vectors) + " weight vectors");
    }
    double pairs = 0;
    if (in.Has("ranksvm.pairs")) GEOMX_RETURN_IF_ERROR(in.GetNumber("ranksvm.pairs", &pairs));
    num_pairs_ = static_cast<int64_t>(pairs);
    return Status::Ok();
  }

  Metrics ModelMetrics(const data::Table&, const Prediction&) const override {
    return {{"training_pairs", static_cast<double>(num_pairs_)}};
  }

 private:
  double c_;
  SvmLoss loss_;
  double tol_;
  int64_t max_pairs_per_query_;
  DualCdOptions options_;
  std::vector<float> weights_;  // cols_ + 1 (the last, the intercept, is 0)
  int64_t cols_ = -1;
  int64_t num_pairs_ = 0;
};

EstimatorDef MakeRankSvmDef() {
  EstimatorDef def;
  def.name = "ranksvm";
  def.title = "RankSVM";
  def.task = data::TableTask::kRanking;
  def.help =
      "Joachims' RankSVM: a linear SVM without intercept on the differences x_i - x_j of every pair of rows of one "
      "query with relevance_i > relevance_j (optionally a uniform sample of max_pairs_per_query per query), solved "
      "by dual coordinate descent like linear-svm (the pairs are never materialised); scores rows by w.x.";
  def.distributed =
      "queries stay whole on one worker; CoCoA with averaging over each worker's pairs: push delta-w (features "
      "floats) per round, w += sum / workers";
  def.params = {
      PositiveParam("C", 1.0, "inverse regularisation strength: the cost of each unit of pairwise hinge loss"),
      ChoiceParam("loss", "squared_hinge", {"hinge", "squared_hinge"}, "loss on the pairwise margins"),
      PositiveParam("tol", 0.1, "stopping tolerance of the dual coordinate descent (max - min projected gradient)"),
      IntParam("max_iter", 1000, 1, 100000000, "most passes over the pairs (single process)"),
      BoolParam("shrinking", true, "drop bounded dual variables that look settled from the passes"),
      IntParam("max_pairs_per_query", 0, 0, int64_t{1} << 40,
               "at most this many pairs per query, sampled uniformly (0 = every pair)"),
      IntParam("outer_rounds", 20, 1, 100000000, "distributed (CoCoA): most rounds of local passes + delta-w averaging"),
      IntParam("local_epochs", 1, 1, 100000, "distributed (CoCoA): local passes per round"),
  };
  def.create = [](const ParamValues& p) { return std::make_unique<RankSvm>(p); };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeRankSvmDef());

}  // namespace geomx::algorithms
