#include "algorithms/estimators/trees/booster.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "algorithms/estimators/shard_checks.h"
#include "algorithms/estimators/trees/rank_objective.h"
#include "engine/base/rng.h"

namespace geomx::algorithms::trees {
namespace {

constexpr float kMinHessian = 1e-16f;
// Per-row loops over fewer rows than this run on one thread (a parallel region costs more than they do).
constexpr int64_t kParallelRows = 16384;

uint64_t Mix(uint64_t a, uint64_t b) {  // splitmix64 of a combined key
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// In place: margins -> probabilities of one row (K >= 2).
void Softmax(float* p, int k) {
  float mx = p[0];
  for (int j = 1; j < k; ++j) mx = std::max(mx, p[j]);
  double s = 0;
  for (int j = 0; j < k; ++j) {
    p[j] = std::exp(p[j] - mx);
    s += p[j];
  }
  for (int j = 0; j < k; ++j) p[j] = static_cast<float>(p[j] / s);
}

bool IsClassification(Objective o) { return o == Objective::kLogistic || o == Objective::kSoftmax; }

RankGradientOptions RankOptionsOf(const BoosterOptions& o) {
  RankGradientOptions r;
  r.loss = o.objective == Objective::kRankPairwise ? RankLoss::kPairwise : RankLoss::kNdcg;
  r.ndcg_truncation = o.ndcg_truncation;
  return r;
}

// The metric ranking reports and early-stops on (eval NDCG@10; higher is better).
constexpr int kRankEvalAt = 10;

float LabelOf(const data::Table& t, int64_t i, Objective o) {
  return IsClassification(o) ? static_cast<float>(t.labels[static_cast<size_t>(i)]) : t.targets[static_cast<size_t>(i)];
}

// Whether `t` can be scored under objective `o` with `groups` outputs and `cols` columns.
bool Scorable(const data::Table* t, Objective o, int classes, int64_t cols) {
  if (t == nullptr || t->rows == 0 || t->cols != cols) return false;
  if (IsRankingObjective(o)) {
    return static_cast<int64_t>(t->targets.size()) == t->rows && static_cast<int64_t>(t->qids.size()) == t->rows;
  }
  if (!IsClassification(o)) return static_cast<int64_t>(t->targets.size()) == t->rows;
  if (static_cast<int64_t>(t->labels.size()) != t->rows) return false;
  return std::all_of(t->labels.begin(), t->labels.end(), [&](int32_t y) { return y >= 0 && y < classes; });
}

}  // namespace

bool IsRankingObjective(Objective objective) {
  return objective == Objective::kRankPairwise || objective == Objective::kRankNdcg;
}

double RowLoss(Objective objective, const float* margin, int groups, float label) {
  switch (objective) {
    case Objective::kSquaredError:
      return 0.5 * (static_cast<double>(margin[0]) - label) * (static_cast<double>(margin[0]) - label);
    case Objective::kLogistic:
      return Softplus(margin[0]) - static_cast<double>(label) * margin[0];
    case Objective::kSoftmax: {
      double mx = margin[0];
      for (int k = 1; k < groups; ++k) mx = std::max(mx, static_cast<double>(margin[k]));
      double s = 0;
      for (int k = 0; k < groups; ++k) s += std::exp(margin[k] - mx);
      return mx + std::log(s) - margin[static_cast<int>(label)];
    }
    case Objective::kRankPairwise:
    case Objective::kRankNdcg:
      return 0;
  }
  return 0;
}

Status Booster::Check(const data::Table& train, Collective* collective, int* classes) const {
  const std::string& name = o_.name;
  const bool cls = IsClassification(o_.objective);
  const bool ranking = IsRankingObjective(o_.objective);
  const RowLabels labels = cls ? RowLabels::kClasses : ranking ? RowLabels::kNone : RowLabels::kTargets;
  Status local = CheckShardRows(name, train, labels);
  if (local.ok() && ranking) local = CheckRankingTable(name, train, RankOptionsOf(o_).loss);
  GEOMX_ASSIGN_OR_RETURN(std::vector<int64_t> shards, ExchangeVerdicts(name, train, local, collective));
  int64_t rows = 0;
  for (int64_t n : shards) rows += n;
  if (rows == 0) return Status::InvalidArgument(name + ": the training table is empty");
  if (IsRankingObjective(o_.objective) && collective != nullptr) {
    GEOMX_RETURN_IF_ERROR(CheckWholeQueries(name, train, collective));
  }
  *classes = 1;
  if (cls) {
    GEOMX_RETURN_IF_ERROR(CheckClassesAcrossShards(name, train, collective));
    *classes = train.num_classes;
    if (o_.objective == Objective::kLogistic && train.num_classes != 2) {
      return Status::InvalidArgument(name + ": objective binary:logistic needs 2 classes, the table has " +
                                     std::to_string(train.num_classes) + " (use a softmax objective)");
    }
  }
  return Status::Ok();
}

Status Booster::BaseMargins(const data::Table& train, Collective* collective, int classes) {
  const int groups = o_.objective == Objective::kSoftmax ? classes : 1;
  ensemble_.groups = groups;
  ensemble_.base_margin.assign(static_cast<size_t>(groups), 0.0f);
  if (IsRankingObjective(o_.objective)) {  // scores are only compared within a query: the base cancels
    if (!o_.base_score_auto) ensemble_.base_margin[0] = static_cast<float>(o_.base_score);
    return Status::Ok();
  }
  if (!o_.base_score_auto) {
    if (o_.objective == Objective::kLogistic) {
      if (!(o_.base_score > 0 && o_.base_score < 1)) {
        return Status::InvalidArgument(o_.name + ": base_score must lie in (0, 1) for binary:logistic, got " +
                                       std::to_string(o_.base_score));
      }
      ensemble_.base_margin[0] = static_cast<float>(std::log(o_.base_score / (1 - o_.base_score)));
    } else {
      std::fill(ensemble_.base_margin.begin(), ensemble_.base_margin.end(), static_cast<float>(o_.base_score));
    }
    return Status::Ok();
  }
  // [per class (or target) weighted sum][total weight]
  std::vector<float> sums(static_cast<size_t>(std::max(groups, 1) + 1), 0.0f);
  std::vector<double> acc(sums.size(), 0.0);
  for (int64_t i = 0; i < train.rows; ++i) {
    const double w = train.weight(i);
    if (o_.objective == Objective::kSquaredError)
      acc[0] += w * train.targets[static_cast<size_t>(i)];
    else if (o_.objective == Objective::kLogistic)
      acc[0] += w * (train.labels[static_cast<size_t>(i)] == 1 ? 1 : 0);
    else
      acc[static_cast<size_t>(train.labels[static_cast<size_t>(i)])] += w;
    acc.back() += w;
  }
  for (size_t j = 0; j < acc.size(); ++j) sums[j] = static_cast<float>(acc[j]);
  if (collective != nullptr) GEOMX_RETURN_IF_ERROR(collective->AllReduceSum(o_.name + ".base", sums));
  summed_floats_ += collective != nullptr ? static_cast<int64_t>(sums.size()) : 0;
  const double total = sums.back();
  if (!(total > 0)) return Status::InvalidArgument(o_.name + ": the row weights sum to " + std::to_string(total));
  if (o_.objective == Objective::kSquaredError) {
    ensemble_.base_margin[0] = static_cast<float>(sums[0] / total);
  } else if (o_.objective == Objective::kLogistic) {
    const double p = std::clamp(sums[0] / total, 1e-6, 1 - 1e-6);
    ensemble_.base_margin[0] = static_cast<float>(std::log(p / (1 - p)));
  } else {
    for (int k = 0; k < groups; ++k) {
      ensemble_.base_margin[static_cast<size_t>(k)] =
          static_cast<float>(std::log(std::max(static_cast<double>(sums[static_cast<size_t>(k)]) / total, 1e-6)));
    }
  }
  return Status::Ok();
}

Status Booster::Fit(const data::Table& train, const FitContext& context) {
  Collective* coll = context.collective != nullptr && context.collective->world() > 1 ? context.collective : nullptr;
  const int threads = std::max(1, context.threads);
  int classes = 1;
  GEOMX_RETURN_IF_ERROR(Check(train, coll, &classes));
  summed_floats_ = 0;
  ensemble_ = Ensemble{};
  ensemble_.features = train.cols;
  GEOMX_RETURN_IF_ERROR(BaseMargins(train, coll, classes));
  const int groups = ensemble_.groups;
  const Objective obj = o_.objective;

  SketchOptions sketch;
  sketch.max_bin = o_.max_bin;
  GEOMX_ASSIGN_OR_RETURN(const BinCuts cuts, ComputeCuts(train, {}, sketch, coll, threads));
  const BinMatrix bins = BinTable(train, cuts, threads);
  TreeGrower grower(&bins, &cuts, o_.grower, coll, threads);

  const int64_t n = train.rows;
  std::vector<float> margins(static_cast<size_t>(n * groups));
  for (int64_t i = 0; i < n; ++i) {
    std::copy(ensemble_.base_margin.begin(), ensemble_.base_margin.end(), margins.begin() + i * groups);
  }
  const data::Table* eval = Scorable(context.eval, obj, classes, train.cols) ? context.eval : nullptr;
  std::vector<float> eval_margins;
  if (eval != nullptr) eval_margins = ensemble_.PredictMargins(*eval, threads);
  const bool ranking = IsRankingObjective(obj);
  QueryGroups queries;
  if (ranking) queries = GroupQueries(train.qids);
  std::vector<float> rank_g, rank_h;

  std::vector<float> prob(static_cast<size_t>(n * groups));
  std::vector<GradPair> gpair(static_cast<size_t>(n));
  std::vector<float> true_h(o_.second_order ? 0 : static_cast<size_t>(n));
  std::vector<uint8_t> sampled(static_cast<size_t>(n), 1);
  std::vector<int32_t> leaf_of_row;
  const int rank = coll != nullptr ? coll->rank() : 0;
  double best_loss = std::numeric_limits<double>::infinity();
  best_round_ = -1;
  int64_t summed_before = 0;  // floats summed over the job before this round (this worker's part)
  for (int64_t round = 0; round < o_.rounds; ++round) {
    if (o_.subsample < 1) {
      Rng rng = Rng(Mix(context.seed, static_cast<uint64_t>(round))).Fork(static_cast<uint64_t>(rank) + 1);
      for (int64_t i = 0; i < n; ++i) sampled[static_cast<size_t>(i)] = rng.Uniform() < o_.subsample ? 1 : 0;
    }
    // Probabilities under the margins at the start of the round (all groups' trees of a round use them).
#pragma omp parallel for num_threads(threads) schedule(static) if (n >= kParallelRows)
    for (int64_t i = 0; i < n; ++i) {
      float* p = prob.data() + i * groups;
      std::copy(margins.begin() + i * groups, margins.begin() + (i + 1) * groups, p);
      if (obj == Objective::kLogistic) p[0] = static_cast<float>(Sigmoid(p[0]));
      if (obj == Objective::kSoftmax) Softmax(p, groups);
    }
    for (int k = 0; k < groups; ++k) {
      if (ranking) RankGradients(RankOptionsOf(o_), train, queries, margins.data(), threads, &rank_g, &rank_h);
#pragma omp parallel for num_threads(threads) schedule(static) if (n >= kParallelRows)
      for (int64_t i = 0; i < n; ++i) {
        const size_t s = static_cast<size_t>(i);
        if (ranking) {  // the row weights are in the pairs' gradients already
          const float keep = sampled[s] ? 1.0f : 0.0f;
          gpair[s] = o_.second_order ? GradPair{keep * rank_g[s], keep * rank_h[s]}
                                     : GradPair{keep * rank_g[s], keep * train.weight(i)};
          if (!o_.second_order) true_h[s] = keep * rank_h[s];
          continue;
        }
        const float w = sampled[s] ? train.weight(i) : 0.0f;
        const float p = prob[static_cast<size_t>(i * groups + k)];
        float g = 0, h = 0;
        if (obj == Objective::kSquaredError) {
          g = p - train.targets[s];
          h = 1;
        } else if (obj == Objective::kLogistic) {
          g = p - (train.labels[s] == 1 ? 1.0f : 0.0f);
          h = std::max(p * (1 - p), kMinHessian);
        } else {
          g = p - (train.labels[s] == k ? 1.0f : 0.0f);
          h = std::max((o_.second_order ? 2.0f : 1.0f) * p * (1 - p), kMinHessian);
        }
        gpair[s] = o_.second_order ? GradPair{w * g, w * h} : GradPair{w * g, w};
        if (!o_.second_order) true_h[s] = w * h;
      }
      Tree tree;
      tree.group = k;
      GEOMX_RETURN_IF_ERROR(
          grower.Grow(gpair, Mix(context.seed, static_cast<uint64_t>(round * groups + k)), &tree, &leaf_of_row));
      if (!o_.second_order) {
        // Newton leaf values on the true hessians, summed over the workers.
        std::vector<double> acc(2 * tree.nodes.size(), 0.0);
        for (int64_t i = 0; i < n; ++i) {
          const size_t leaf = static_cast<size_t>(leaf_of_row[static_cast<size_t>(i)]);
          acc[2 * leaf] += gpair[static_cast<size_t>(i)].g;
          acc[2 * leaf + 1] += true_h[static_cast<size_t>(i)];
        }
        if (coll != nullptr) {
          std::vector<float> f(acc.begin(), acc.end());
          GEOMX_RETURN_IF_ERROR(coll->AllReduceSum(o_.name + ".leaves", f));
          summed_floats_ += static_cast<int64_t>(f.size());
          std::copy(f.begin(), f.end(), acc.begin());
        }
        const double scale = obj == Objective::kSoftmax ? static_cast<double>(groups - 1) / groups : 1.0;
        const double lambda = o_.grower.split.lambda, cap = o_.grower.split.max_delta_step;
        for (size_t id = 0; id < tree.nodes.size(); ++id) {
          if (!tree.nodes[id].is_leaf()) continue;
          const double denom = acc[2 * id + 1] + lambda;
          double v = denom > 1e-12 ? -scale * acc[2 * id] / denom : 0.0;
          if (cap > 0) v = std::clamp(v, -cap, cap);
          tree.nodes[id].value = static_cast<float>(v);
        }
      }
      for (TreeNode& node : tree.nodes) node.value = static_cast<float>(node.value * o_.eta);
#pragma omp parallel for num_threads(threads) schedule(static) if (n >= kParallelRows)
      for (int64_t i = 0; i < n; ++i) {
        margins[static_cast<size_t>(i * groups + k)] +=
            tree.nodes[static_cast<size_t>(leaf_of_row[static_cast<size_t>(i)])].value;
      }
      if (eval != nullptr) ensemble_.AddTree(*eval, tree, threads, &eval_margins);
      ensemble_.trees.push_back(std::move(tree));
    }
    // [train loss, train weight, eval loss, eval weight, interrupted], summed over the workers; ranking: the
    // pairwise loss and weight, the eval NDCG@10 (one per worker, as every worker scores the whole eval table) and
    // then [train NDCG@10 sum, train queries].
    std::vector<double> acc(ranking ? 7 : 5, 0.0);
    int64_t eval_correct = 0;
    if (ranking) {
      PairwiseLogLoss(train, queries, margins.data(), &acc[0], &acc[1]);
      acc[5] = SumNdcgAt(train, queries, margins, kRankEvalAt);
      acc[6] = static_cast<double>(queries.size());
      if (eval != nullptr) {
        acc[2] = MeanNdcgAt(eval_margins, eval->targets, eval->qids, kRankEvalAt);
        acc[3] = 1;
      }
    }
    for (int64_t i = 0; i < n && !ranking; ++i) {
      acc[0] += train.weight(i) * RowLoss(obj, margins.data() + i * groups, groups, LabelOf(train, i, obj));
      acc[1] += train.weight(i);
    }
    if (eval != nullptr && !ranking) {
      for (int64_t i = 0; i < eval->rows; ++i) {
        const float* m = eval_margins.data() + i * groups;
        acc[2] += eval->weight(i) * RowLoss(obj, m, groups, LabelOf(*eval, i, obj));
        acc[3] += eval->weight(i);
        if (obj == Objective::kLogistic) eval_correct += (m[0] >= 0 ? 1 : 0) == eval->labels[static_cast<size_t>(i)];
        if (obj == Objective::kSoftmax) {
          eval_correct += (std::max_element(m, m + groups) - m) == eval->labels[static_cast<size_t>(i)];
        }
      }
    }
    acc[4] = context.Interrupted() ? 1 : 0;
    std::vector<float> sums(acc.begin(), acc.end());
    if (coll != nullptr) {
      GEOMX_RETURN_IF_ERROR(coll->AllReduceSum(o_.name + ".round", sums));
      summed_floats_ += static_cast<int64_t>(sums.size());
    }
    if (sums[4] > 0) return Status::Cancelled(o_.name + ": interrupted");
    const double train_loss = sums[1] > 0 ? sums[0] / sums[1] : 0;
    const double eval_loss = sums[3] > 0 ? sums[2] / sums[3] : std::numeric_limits<double>::quiet_NaN();
    if (context.observer != nullptr) {
      Metrics m = {{"loss", train_loss}, {"trees", static_cast<double>(ensemble_.trees.size())}};
      if (coll != nullptr) {  // what this worker put into job-wide sums this round (the WAN carries it per DC)
        const int64_t now = summed_floats_ + grower.summed_floats();
        m.push_back({"summed_mb", static_cast<double>(now - summed_before) * sizeof(float) / 1e6});
        summed_before = now;
      }
      if (ranking) {
        m.push_back({"train_ndcg@10", sums[6] > 0 ? sums[5] / sums[6] : 0.0});
        if (eval != nullptr) m.push_back({"ndcg@10", eval_loss});
      } else if (eval != nullptr) {
        m.push_back({"eval_loss", eval_loss});
        if (IsClassification(obj))
          m.push_back({"accuracy", static_cast<double>(eval_correct) / eval->rows});
        else
          m.push_back({"rmse", std::sqrt(2 * acc[2] / std::max(acc[3], 1e-300))});
      }
      context.observer->OnStep(round + 1, m);
    }
    if (o_.early_stopping_rounds > 0 && sums[3] > 0) {
      const double score = ranking ? -eval_loss : eval_loss;  // lower is better
      if (score < best_loss) {
        best_loss = score;
        best_round_ = round;
      } else if (round - best_round_ >= o_.early_stopping_rounds) {
        ensemble_.trees.resize(static_cast<size_t>((best_round_ + 1) * groups));
        break;
      }
    }
  }
  summed_floats_ += grower.summed_floats();
  return Status::Ok();
}

Result<std::vector<float>> Booster::Margins(const data::Table& input, int threads) const {
  if (ensemble_.features == 0) return Status::FailedPrecondition(o_.name + ": the model is neither fitted nor loaded");
  if (input.cols != ensemble_.features) {
    return Status::InvalidArgument(o_.name + ": the input has " + std::to_string(input.cols) +
                                   " columns, the model was trained on " + std::to_string(ensemble_.features));
  }
  return ensemble_.PredictMargins(input, threads);
}

Result<Prediction> Booster::Predict(const data::Table& input, int threads) const {
  GEOMX_ASSIGN_OR_RETURN(std::vector<float> m, Margins(input, threads));
  Prediction out;
  out.value.resize(static_cast<size_t>(input.rows));
  const int groups = ensemble_.groups;
  if (o_.objective == Objective::kSquaredError || IsRankingObjective(o_.objective)) {
    out.value = std::move(m);
  } else if (o_.objective == Objective::kLogistic) {
    out.proba_columns = 2;
    out.proba.resize(static_cast<size_t>(2 * input.rows));
    for (int64_t i = 0; i < input.rows; ++i) {
      const float p = static_cast<float>(Sigmoid(m[static_cast<size_t>(i)]));
      out.proba[static_cast<size_t>(2 * i)] = 1 - p;
      out.proba[static_cast<size_t>(2 * i + 1)] = p;
      out.value[static_cast<size_t>(i)] = p >= 0.5f ? 1.0f : 0.0f;
    }
  } else {
    for (int64_t i = 0; i < input.rows; ++i) {
      float* p = m.data() + i * groups;
      Softmax(p, groups);
      out.value[static_cast<size_t>(i)] = static_cast<float>(std::max_element(p, p + groups) - p);
    }
    out.proba_columns = groups;
    out.proba = std::move(m);
  }
  return out;
}

void Booster::Save(ModelWriter* out) const {
  const std::vector<int64_t> head = {static_cast<int64_t>(o_.objective), ensemble_.groups, best_round_};
  out->PutInts(o_.name + ".objective", head);
  ensemble_.Save(o_.name, out);
}

Status Booster::Load(const ModelReader& in) {
  std::vector<int64_t> head;
  GEOMX_RETURN_IF_ERROR(in.GetInts(o_.name + ".objective", &head, 3));
  if (head[0] < 0 || head[0] > static_cast<int64_t>(Objective::kRankNdcg)) {
    return Status::DataLoss(in.source() + ": section '" + o_.name + ".objective' holds an unknown objective");
  }
  Ensemble e;
  GEOMX_RETURN_IF_ERROR(e.Load(o_.name, in));
  const Objective obj = static_cast<Objective>(head[0]);
  if ((obj == Objective::kSoftmax) != (e.groups > 1) || IsClassification(obj) != IsClassification(o_.objective) ||
      IsRankingObjective(obj) != IsRankingObjective(o_.objective)) {
    return Status::DataLoss(in.source() + ": section '" + o_.name + ".objective' does not match the trees");
  }
  o_.objective = obj;
  best_round_ = head[2];
  ensemble_ = std::move(e);
  return Status::Ok();
}

}  // namespace geomx::algorithms::trees
