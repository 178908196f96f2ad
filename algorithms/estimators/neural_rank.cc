// ranknet and listnet (docs/algorithms.md#ranknet, #listnet): an MLP that scores each document, trained by Adam or
// SGD on mini-batches of whole queries with RankNet's pairwise or ListNet's top-one listwise loss (neural_rank.h).
//
// The network is small (a few thousand weights on LETOR-sized rows), so its forward and backward passes are
// written here by hand, row by row, rather than through the engine's tensors: a query of 20 documents is far below
// the size at which a GEMM call pays for itself, and the hand-written pass gives a gradient that does not depend on
// the thread count. The queries of a batch are spread over threads, each writes its own gradient slot, and the
// slots are added in query order.
//
// Distributed (FitContext::collective): queries stay whole on one worker (checked). Every worker starts from the
// same initial weights (drawn from the `seed` parameter or the run's), takes `batch_size` of its own queries per
// step, and the per-step gradients, losses and normalisers are summed over the workers (AllReduceSumCompressible);
// every worker then applies the same update to the same sum, so the workers' models stay identical. A worker with
// fewer queries contributes empty batches at the end of an epoch. With one batch holding every query the distributed
// fit computes the single-process fit (up to the order of float additions).
#include "algorithms/estimators/neural_rank.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <omp.h>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/rank_ensembles.h"
#include "algorithms/estimators/shard_checks.h"
#include "algorithms/estimators/trees/rank_objective.h"
#include "engine/base/check.h"
#include "engine/base/rng.h"
#include "engine/kernels/optimizer_update.h"

namespace geomx::algorithms {

double RankNetQueryLoss(std::span<const double> scores, std::span<const float> relevance,
                        std::span<const float> row_weights, double sigma, std::span<double> grad, double* weight) {
  const size_t m = scores.size();
  GEOMX_CHECK(relevance.size() == m && grad.size() == m && (row_weights.empty() || row_weights.size() == m));
  std::fill(grad.begin(), grad.end(), 0.0);
  double loss = 0, total = 0;
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < m; ++j) {
      if (!(relevance[i] > relevance[j])) continue;
      const double w = row_weights.empty() ? 1.0 : 0.5 * (static_cast<double>(row_weights[i]) + row_weights[j]);
      const double z = sigma * (scores[i] - scores[j]);
      loss += w * Softplus(-z);
      const double g = -w * sigma * Sigmoid(-z);  // d/ds_i; d/ds_j is its negation
      grad[i] += g;
      grad[j] -= g;
      total += w;
    }
  }
  *weight = total;
  return loss;
}

double ListNetQueryLoss(std::span<const double> scores, std::span<const float> relevance, double query_weight,
                        bool gains, std::span<double> grad, double* weight) {
  const size_t m = scores.size();
  GEOMX_CHECK(relevance.size() == m && grad.size() == m);
  std::fill(grad.begin(), grad.end(), 0.0);
  *weight = 0;
  if (m == 0 || std::all_of(relevance.begin(), relevance.end(), [&](float r) { return r == relevance[0]; })) {
    return 0;
  }
  // Softmax of the targets and of the scores, each shifted by its largest value (no overflow). A gain is capped
  // at 2^1000 - 1, beyond which the softmax is one-hot anyway.
  std::vector<double> target(m);
  for (size_t i = 0; i < m; ++i) {
    const double r = relevance[i];
    target[i] = gains ? std::exp2(std::min(r, 1000.0)) - 1.0 : r;
  }
  const double tmax = *std::max_element(target.begin(), target.end());
  const double smax = *std::max_element(scores.begin(), scores.end());
  double tsum = 0, ssum = 0;
  for (size_t i = 0; i < m; ++i) {
    tsum += std::exp(target[i] - tmax);
    ssum += std::exp(scores[i] - smax);
  }
  const double log_ssum = std::log(ssum);
  double loss = 0;
  for (size_t i = 0; i < m; ++i) {
    const double py = std::exp(target[i] - tmax) / tsum;
    const double log_ps = scores[i] - smax - log_ssum;
    loss -= py * log_ps;
    grad[i] = query_weight * (std::exp(log_ps) - py);
  }
  *weight = query_weight;
  return query_weight * loss;
}

namespace {

enum class RankLossKind : uint8_t { kRankNet, kListNet };

struct NeuralRankConfig {
  RankLossKind kind = RankLossKind::kRankNet;
  std::string name;          // "ranknet" | "listnet": error messages and model-file sections
  int64_t hidden = 64;       // units per hidden layer; 0 = a linear scorer
  int64_t layers = 1;        // hidden layers (ignored when hidden is 0)
  bool adam = true;          // false: plain SGD
  double lr = 0.001;
  int64_t epochs = 30;
  int64_t batch_size = 4;    // whole queries per step and worker
  double l2 = 0.01;          // weight decay on the weight matrices (not the biases)
  double sigma = 1;          // ranknet: the slope of the pair's logistic
  bool gains = false;        // listnet: softmax of 2^rel - 1 instead of rel
  uint64_t seed = 0;         // initial weights and shuffles; 0 = FitContext::seed (the run's)
};

// The scorer: `layers` hidden layers of `hidden` relu units (none when hidden is 0), then a linear output without
// bias (a shift of every score changes no ranking, and neither loss has a gradient for it). Flat parameters: per
// hidden layer l, W_l (In(l) x hidden, input-major: W[j * hidden + k]) then b_l (hidden); last the output weights
// (hidden of them, or cols for a linear scorer).
struct MlpShape {
  int64_t cols = 0, hidden = 0, layers = 0;
  int64_t In(int64_t l) const { return l == 0 ? cols : hidden; }
  // Where layer l's W starts; LayerOffset(layers) is where the output weights start.
  int64_t LayerOffset(int64_t l) const {
    return l == 0 ? 0 : cols * hidden + hidden + (l - 1) * (hidden * hidden + hidden);
  }
  int64_t Size() const { return LayerOffset(layers) + (layers == 0 ? cols : hidden); }
};

// Calls f(column, value) for the non-zero, finite inputs of row i (a NaN, a missing value, counts as 0).
template <typename F>
void ForEachInput(const data::Table& t, int64_t i, F&& f) {
  if (t.sparse) {
    for (int64_t p = t.row_ptr[static_cast<size_t>(i)]; p < t.row_ptr[static_cast<size_t>(i) + 1]; ++p) {
      const float v = t.values[static_cast<size_t>(p)];
      if (v != 0 && std::isfinite(v)) f(static_cast<int64_t>(t.col_index[static_cast<size_t>(p)]), v);
    }
    return;
  }
  const float* x = t.Row(i);
  for (int64_t j = 0; j < t.cols; ++j) {
    if (x[j] != 0 && std::isfinite(x[j])) f(j, x[j]);
  }
}

// One thread's buffers for a set of rows.
struct Workspace {
  std::vector<std::vector<float>> acts;  // per hidden layer: rows x hidden, after the relu
  std::vector<float> delta, delta_prev;  // rows x hidden: d loss / d pre-activation
  std::vector<double> scores, dscores;   // per row
  std::vector<float> relevance, weights;
  void Resize(const MlpShape& s, size_t m) {
    acts.resize(static_cast<size_t>(s.layers));
    for (auto& a : acts) a.resize(m * static_cast<size_t>(s.hidden));
    delta.resize(m * static_cast<size_t>(s.hidden));
    delta_prev.resize(m * static_cast<size_t>(s.hidden));
    scores.resize(m);
    dscores.resize(m);
  }
};

// Scores of `rows` of t into ws->scores, keeping the activations for Backward.
void Forward(const MlpShape& s, const float* theta, const data::Table& t, std::span<const int64_t> rows,
             Workspace* ws) {
  const size_t m = rows.size();
  ws->Resize(s, m);
  const int64_t h = s.hidden;
  if (s.layers == 0) {
    for (size_t r = 0; r < m; ++r) {
      double acc = 0;
      ForEachInput(t, rows[r], [&](int64_t j, float v) { acc += static_cast<double>(v) * theta[j]; });
      ws->scores[r] = acc;
    }
    return;
  }
  for (int64_t l = 0; l < s.layers; ++l) {
    const float* w = theta + s.LayerOffset(l);
    const float* b = w + s.In(l) * h;
    float* out = ws->acts[static_cast<size_t>(l)].data();
    for (size_t r = 0; r < m; ++r) {
      float* o = out + r * static_cast<size_t>(h);
      std::copy(b, b + h, o);
      auto add = [&](int64_t j, float v) {
        const float* wj = w + j * h;
        for (int64_t k = 0; k < h; ++k) o[k] += v * wj[k];
      };
      if (l == 0) {
        ForEachInput(t, rows[r], add);
      } else {
        const float* a = ws->acts[static_cast<size_t>(l) - 1].data() + r * static_cast<size_t>(h);
        for (int64_t j = 0; j < h; ++j) {
          if (a[j] > 0) add(j, a[j]);
        }
      }
      for (int64_t k = 0; k < h; ++k) o[k] = std::max(o[k], 0.0f);
    }
  }
  const float* w_out = theta + s.LayerOffset(s.layers);
  const float* last = ws->acts.back().data();
  for (size_t r = 0; r < m; ++r) {
    double acc = 0;
    for (int64_t k = 0; k < h; ++k) acc += static_cast<double>(last[r * static_cast<size_t>(h) + k]) * w_out[k];
    ws->scores[r] = acc;
  }
}

// Adds d loss / d theta to dtheta, given d loss / d score of each row in ws->dscores (after Forward on the rows).
void Backward(const MlpShape& s, const float* theta, const data::Table& t, std::span<const int64_t> rows,
              Workspace* ws, float* dtheta) {
  const size_t m = rows.size();
  const int64_t h = s.hidden;
  if (s.layers == 0) {
    for (size_t r = 0; r < m; ++r) {
      const double g = ws->dscores[r];
      if (g == 0) continue;
      ForEachInput(t, rows[r], [&](int64_t j, float v) { dtheta[j] += static_cast<float>(g * v); });
    }
    return;
  }
  const int64_t out_at = s.LayerOffset(s.layers);
  const float* w_out = theta + out_at;
  float* dw_out = dtheta + out_at;
  const float* last = ws->acts.back().data();
  for (size_t r = 0; r < m; ++r) {
    const float g = static_cast<float>(ws->dscores[r]);
    const float* a = last + r * static_cast<size_t>(h);
    float* d = ws->delta.data() + r * static_cast<size_t>(h);
    for (int64_t k = 0; k < h; ++k) {
      dw_out[k] += g * a[k];
      d[k] = a[k] > 0 ? g * w_out[k] : 0.0f;
    }
  }
  for (int64_t l = s.layers - 1; l >= 0; --l) {
    const float* w = theta + s.LayerOffset(l);
    float* dw = dtheta + s.LayerOffset(l);
    float* db = dw + s.In(l) * h;
    const float* prev = l > 0 ? ws->acts[static_cast<size_t>(l) - 1].data() : nullptr;
    for (size_t r = 0; r < m; ++r) {
      const float* d = ws->delta.data() + r * static_cast<size_t>(h);
      for (int64_t k = 0; k < h; ++k) db[k] += d[k];
      auto add = [&](int64_t j, float v) {
        float* gw = dw + j * h;
        for (int64_t k = 0; k < h; ++k) gw[k] += v * d[k];
      };
      if (l == 0) {
        ForEachInput(t, rows[r], add);
        continue;
      }
      const float* a = prev + r * static_cast<size_t>(h);
      float* dp = ws->delta_prev.data() + r * static_cast<size_t>(h);
      for (int64_t j = 0; j < h; ++j) {
        if (!(a[j] > 0)) {
          dp[j] = 0;
          continue;
        }
        add(j, a[j]);
        const float* wj = w + j * h;
        float acc = 0;
        for (int64_t k = 0; k < h; ++k) acc += d[k] * wj[k];
        dp[j] = acc;
      }
    }
    if (l > 0) std::swap(ws->delta, ws->delta_prev);
  }
}

// One query's loss under the configured objective, d loss / d score into ws->dscores, the normaliser into *weight.
double QueryLoss(const NeuralRankConfig& c, const data::Table& t, std::span<const int64_t> rows, Workspace* ws,
                 double* weight) {
  const size_t m = rows.size();
  ws->relevance.resize(m);
  ws->weights.resize(t.weights.empty() ? 0 : m);
  double query_weight = 0;
  for (size_t r = 0; r < m; ++r) {
    ws->relevance[r] = t.targets[static_cast<size_t>(rows[r])];
    query_weight += t.weight(rows[r]);
    if (!t.weights.empty()) ws->weights[r] = t.weights[static_cast<size_t>(rows[r])];
  }
  if (c.kind == RankLossKind::kRankNet) {
    return RankNetQueryLoss(ws->scores, ws->relevance, ws->weights, c.sigma, ws->dscores, weight);
  }
  return ListNetQueryLoss(ws->scores, ws->relevance, m > 0 ? query_weight / static_cast<double>(m) : 0.0, c.gains,
                          ws->dscores, weight);
}

constexpr int64_t kWorkPerThread = int64_t{1} << 21;

// Per-query gradient slots, each thread's workspace: reused from step to step.
struct Scratch {
  std::vector<Workspace> workspaces;
  std::vector<float> slots;
  std::vector<double> loss, weight;
};

// The summed loss, normaliser and parameter gradient (into *grad, resized to the parameter count) of the queries
// `batch` (indices into groups). Queries run on up to `threads` threads, each into its own slot, and the slots are
// added in the order of `batch`: the sum does not depend on the thread count.
void BatchGradient(const NeuralRankConfig& c, const MlpShape& s, const float* theta, const data::Table& t,
                   const trees::QueryGroups& groups, std::span<const int64_t> batch, int threads, Scratch* scratch,
                   std::vector<double>* grad, double* loss, double* weight) {
  const int64_t p = s.Size();
  grad->assign(static_cast<size_t>(p), 0.0);
  *loss = 0;
  *weight = 0;
  const int64_t nb = static_cast<int64_t>(batch.size());
  // At most 2^22 floats of slots at a time; a bigger batch runs in rounds.
  const int64_t per_round =
      std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(p, 1), 1, std::max<int64_t>(nb, 1));
  // A thread per 2^21 multiply-adds of forward pass at least: a batch of a few LETOR queries is a fraction of a
  // millisecond, less than waking a team costs on a busy machine.
  int64_t batch_rows = 0;
  for (int64_t q : batch) batch_rows += groups.ptr[static_cast<size_t>(q) + 1] - groups.ptr[static_cast<size_t>(q)];
  const int64_t useful = std::max<int64_t>(1, batch_rows * p / kWorkPerThread);
  const int team = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(threads, useful), 1, per_round));
  if (static_cast<int>(scratch->workspaces.size()) < team) scratch->workspaces.resize(static_cast<size_t>(team));
  for (int64_t start = 0; start < nb; start += per_round) {
    const int64_t count = std::min(per_round, nb - start);
    scratch->slots.assign(static_cast<size_t>(count * p), 0.0f);
    scratch->loss.assign(static_cast<size_t>(count), 0.0);
    scratch->weight.assign(static_cast<size_t>(count), 0.0);
#pragma omp parallel for num_threads(team) schedule(static)
    for (int64_t k = 0; k < count; ++k) {
      Workspace* ws = &scratch->workspaces[static_cast<size_t>(omp_get_thread_num())];
      const int64_t q = batch[static_cast<size_t>(start + k)];
      const std::span<const int64_t> rows(groups.rows.data() + groups.ptr[static_cast<size_t>(q)],
                                          static_cast<size_t>(groups.ptr[static_cast<size_t>(q) + 1] -
                                                              groups.ptr[static_cast<size_t>(q)]));
      Forward(s, theta, t, rows, ws);
      double w = 0;
      scratch->loss[static_cast<size_t>(k)] = QueryLoss(c, t, rows, ws, &w);
      scratch->weight[static_cast<size_t>(k)] = w;
      if (w > 0) Backward(s, theta, t, rows, ws, scratch->slots.data() + k * p);
    }
    for (int64_t k = 0; k < count; ++k) {
      *loss += scratch->loss[static_cast<size_t>(k)];
      *weight += scratch->weight[static_cast<size_t>(k)];
      const float* slot = scratch->slots.data() + k * p;
      for (int64_t j = 0; j < p; ++j) (*grad)[static_cast<size_t>(j)] += slot[j];
    }
  }
}

// The queries of t with at least two relevance levels (the others carry no order to learn), indices into groups.
std::vector<int64_t> InformativeQueries(const data::Table& t, const trees::QueryGroups& groups) {
  std::vector<int64_t> out;
  for (int64_t q = 0; q < groups.size(); ++q) {
    const int64_t b = groups.ptr[static_cast<size_t>(q)], e = groups.ptr[static_cast<size_t>(q) + 1];
    const float first = t.targets[static_cast<size_t>(groups.rows[static_cast<size_t>(b)])];
    for (int64_t k = b + 1; k < e; ++k) {
      if (t.targets[static_cast<size_t>(groups.rows[static_cast<size_t>(k)])] != first) {
        out.push_back(q);
        break;
      }
    }
  }
  return out;
}

class NeuralRanker final : public Estimator {
 public:
  explicit NeuralRanker(NeuralRankConfig c) : config_(std::move(c)) {}

  Status Fit(const data::Table& train, const FitContext& context) override;
  Result<Prediction> Predict(const data::Table& input, int threads) const override;
  void Save(ModelWriter* out) const override;
  Status Load(const ModelReader& in) override;
  Metrics ModelMetrics(const data::Table&, const Prediction&) const override {
    return {{"parameters", static_cast<double>(theta_.size())}};
  }

  // The test hook's objective (neural_rank.h): every informative query of `table` as one batch.
  double ObjectiveForTesting(const data::Table& table, const std::vector<float>& theta, std::vector<double>* grad) {
    shape_ = ShapeFor(table.cols);
    GEOMX_CHECK_EQ(static_cast<int64_t>(theta.size()), shape_.Size());
    const trees::QueryGroups groups = trees::GroupQueries(table.qids);
    const std::vector<int64_t> queries = InformativeQueries(table, groups);
    Scratch scratch;
    double loss = 0, weight = 0;
    BatchGradient(config_, shape_, theta.data(), table, groups, queries, 1, &scratch, grad, &loss, &weight);
    GEOMX_CHECK(weight > 0);
    for (double& g : *grad) g /= weight;
    return loss / weight;
  }

 private:
  MlpShape ShapeFor(int64_t cols) const {
    return MlpShape{cols, config_.hidden, config_.hidden > 0 ? config_.layers : 0};
  }
  // He initialisation of the relu layers (N(0, 2 / fan_in)), N(0, 1 / fan_in) for the output, zero biases.
  static std::vector<float> InitialWeights(const MlpShape& s, uint64_t seed);
  void Report(const FitContext& context, int64_t epoch, double loss) const;

  NeuralRankConfig config_;
  MlpShape shape_;
  std::vector<float> theta_;  // shape_.Size() once fitted or loaded
};

std::vector<float> NeuralRanker::InitialWeights(const MlpShape& s, uint64_t seed) {
  Rng rng = Rng(seed).Fork(4000);
  std::vector<float> theta(static_cast<size_t>(s.Size()), 0.0f);
  for (int64_t l = 0; l < s.layers; ++l) {
    const double scale = std::sqrt(2.0 / static_cast<double>(s.In(l)));
    float* w = theta.data() + s.LayerOffset(l);
    for (int64_t j = 0; j < s.In(l) * s.hidden; ++j) w[j] = static_cast<float>(scale * rng.Normal());
  }
  const int64_t fan_in = s.layers == 0 ? s.cols : s.hidden;
  float* w_out = theta.data() + s.LayerOffset(s.layers);
  for (int64_t j = 0; j < fan_in; ++j) {
    w_out[j] = static_cast<float>(rng.Normal() / std::sqrt(static_cast<double>(fan_in)));
  }
  return theta;
}

void NeuralRanker::Report(const FitContext& context, int64_t epoch, double loss) const {
  if (context.observer == nullptr) return;
  Metrics metrics = {{"loss", loss}};
  const data::Table* eval = context.eval;
  if (eval != nullptr && eval->has_targets() && !eval->qids.empty() && eval->cols == shape_.cols) {
    Result<Prediction> p = Predict(*eval, context.threads);
    if (p.ok()) {
      Metrics m = EvaluateTask(data::TableTask::kRanking, *eval, *p);
      metrics.insert(metrics.end(), m.begin(), m.end());
    }
  }
  context.observer->OnStep(epoch, metrics);
}

Status NeuralRanker::Fit(const data::Table& train, const FitContext& context) {
  const std::string& name = config_.name;
  Collective* coll = context.collective;
  // Every worker learns every verdict, so a bad shard stops the whole job instead of leaving the others waiting.
  GEOMX_RETURN_IF_ERROR(ExchangeVerdicts(name, train, CheckRankingTable(name, train), coll).status());
  if (coll != nullptr) GEOMX_RETURN_IF_ERROR(trees::CheckWholeQueries(name, train, coll));
  const trees::QueryGroups groups = trees::GroupQueries(train.qids);
  std::vector<int64_t> order = InformativeQueries(train, groups);
  GEOMX_RETURN_IF_ERROR(ExchangeRankJobShape(name, train, static_cast<int64_t>(order.size()),
                                             "no query with two different relevance levels to learn from", coll)
                            .status());
  // Every worker needs the column count (one without rows too) and the most queries a worker holds: the steps of
  // an epoch.
  int64_t cols = train.cols, most = static_cast<int64_t>(order.size());
  if (coll != nullptr && coll->world() > 1) {
    const std::vector<float> mine = {static_cast<float>(order.size()), static_cast<float>(train.rows > 0 ? cols : 0)};
    GEOMX_ASSIGN_OR_RETURN(const std::vector<float> all, coll->AllGather(name + "/queries", mine));
    if (all.size() != 2 * static_cast<size_t>(coll->world())) {
      return Status::Internal(name + ": malformed query-count exchange (" + std::to_string(all.size()) + " values)");
    }
    for (size_t w = 0; w < all.size(); w += 2) {
      most = std::max(most, static_cast<int64_t>(all[w]));
      if (all[w + 1] > 0) cols = static_cast<int64_t>(all[w + 1]);
    }
  }
  shape_ = ShapeFor(cols);
  const uint64_t seed = config_.seed != 0 ? config_.seed : context.seed;
  theta_ = InitialWeights(shape_, seed);  // the same on every worker
  const int64_t p = shape_.Size();
  const int64_t batch = config_.batch_size;
  const int64_t steps = (most + batch - 1) / batch;
  const int64_t n = static_cast<int64_t>(order.size());
  const int rank = coll != nullptr ? coll->rank() : 0;
  Rng rng = Rng(seed).Fork(3000 + static_cast<uint64_t>(rank));

  // The bias vectors take no weight decay.
  std::vector<uint8_t> is_bias(static_cast<size_t>(p), 0);
  for (int64_t l = 0; l < shape_.layers; ++l) {
    const int64_t at = shape_.LayerOffset(l) + shape_.In(l) * shape_.hidden;
    std::fill(is_bias.begin() + at, is_bias.begin() + at + shape_.hidden, 1);
  }
  std::vector<float> buffer(static_cast<size_t>(p) + 3);  // gradient sum, then (loss, weight, interrupt flag)
  std::vector<float> m1(static_cast<size_t>(p), 0.0f), m2(static_cast<size_t>(p), 0.0f);
  std::vector<double> grad;
  Scratch scratch;
  const float lr = static_cast<float>(config_.lr), wd = static_cast<float>(config_.l2);
  int64_t t = 0;
  for (int64_t epoch = 1; epoch <= config_.epochs; ++epoch) {
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(order[static_cast<size_t>(i)], order[rng.Below(static_cast<uint64_t>(i + 1))]);
    }
    double epoch_loss = 0, epoch_weight = 0;
    for (int64_t step = 0; step < steps; ++step) {
      const int64_t k0 = std::min(n, step * batch);
      const int64_t nb = std::min(n, k0 + batch) - k0;
      double loss = 0, weight = 0;
      BatchGradient(config_, shape_, theta_.data(), train, groups,
                    std::span<const int64_t>(order.data() + k0, static_cast<size_t>(nb)), context.threads, &scratch,
                    &grad, &loss, &weight);
      for (int64_t j = 0; j < p; ++j) buffer[static_cast<size_t>(j)] = static_cast<float>(grad[static_cast<size_t>(j)]);
      float* tail = buffer.data() + p;
      tail[0] = static_cast<float>(loss);
      tail[1] = static_cast<float>(weight);
      tail[2] = context.Interrupted() ? 1.0f : 0.0f;
      if (coll != nullptr) GEOMX_RETURN_IF_ERROR(coll->AllReduceSumCompressible(name + "/step", buffer, 3));
      if (tail[2] > 0) return Status::Cancelled(name + ": interrupted");
      if (!(tail[1] > 0)) continue;
      epoch_loss += tail[0];
      epoch_weight += tail[1];
      const float inv = 1.0f / tail[1];
      ++t;
      if (config_.adam) {
        UpdateHyper h;
        h.lr = lr;
        h.step = t;
        h.weight_decay = wd;
        const kernels::AdamUpdate rule = kernels::AdamUpdate::Make(h);
        h.weight_decay = 0.0f;
        const kernels::AdamUpdate bias_rule = kernels::AdamUpdate::Make(h);
        for (size_t j = 0; j < static_cast<size_t>(p); ++j) {
          (is_bias[j] ? bias_rule : rule)(theta_[j], buffer[j] * inv, m1[j], m2[j]);
        }
      } else {
        const kernels::SgdUpdate rule{lr, wd}, bias_rule{lr, 0.0f};
        for (size_t j = 0; j < static_cast<size_t>(p); ++j) (is_bias[j] ? bias_rule : rule)(theta_[j], buffer[j] * inv);
      }
    }
    Report(context, epoch, epoch_weight > 0 ? epoch_loss / epoch_weight : 0.0);
  }
  for (float v : theta_) {
    if (!std::isfinite(v)) {
      return Status::InvalidArgument(name + ": the weights diverged (not finite); lower lr (" +
                                     std::to_string(config_.lr) + ")");
    }
  }
  return Status::Ok();
}

Result<Prediction> NeuralRanker::Predict(const data::Table& input, int threads) const {
  if (theta_.empty()) return Status::FailedPrecondition(config_.name + ": the model is not fitted");
  if (input.cols != shape_.cols) {
    return Status::InvalidArgument(config_.name + ": the input has " + std::to_string(input.cols) +
                                   " columns, the model was trained on " + std::to_string(shape_.cols));
  }
  constexpr int64_t kBlock = 256;
  Prediction out;
  out.value.resize(static_cast<size_t>(input.rows));
  const int64_t blocks = (input.rows + kBlock - 1) / kBlock;
  const int64_t useful = std::max<int64_t>(1, input.rows * shape_.Size() / kWorkPerThread);
  const int team =
      static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(threads, useful), 1, std::max<int64_t>(blocks, 1)));
#pragma omp parallel num_threads(team)
  {
    Workspace ws;
    std::vector<int64_t> rows;
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t r0 = blk * kBlock, nr = std::min(kBlock, input.rows - r0);
      rows.resize(static_cast<size_t>(nr));
      for (int64_t r = 0; r < nr; ++r) rows[static_cast<size_t>(r)] = r0 + r;
      Forward(shape_, theta_.data(), input, rows, &ws);
      for (int64_t r = 0; r < nr; ++r) {
        out.value[static_cast<size_t>(r0 + r)] = static_cast<float>(ws.scores[static_cast<size_t>(r)]);
      }
    }
  }
  return out;
}

void NeuralRanker::Save(ModelWriter* out) const {
  const std::vector<int64_t> shape = {shape_.cols, shape_.hidden, shape_.layers};
  out->PutInts(config_.name + ".shape", shape);
  out->PutFloats(config_.name + ".params", theta_);
}

Status NeuralRanker::Load(const ModelReader& in) {
  const std::string& name = config_.name;
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts(name + ".shape", &shape, 3));
  const int64_t cols = shape[0], hidden = shape[1], layers = shape[2];
  const bool linear = hidden == 0 && layers == 0;
  const bool mlp = hidden >= 1 && hidden <= 4096 && layers >= 1 && layers <= 8;
  if (cols < 1 || cols > (int64_t{1} << 31) || !(linear || mlp)) {
    return Status::DataLoss(in.source() + ": section '" + name + ".shape' holds an impossible shape (" +
                            std::to_string(cols) + ", " + std::to_string(hidden) + ", " + std::to_string(layers) + ")");
  }
  const MlpShape s{cols, hidden, layers};
  std::vector<float> theta;
  GEOMX_RETURN_IF_ERROR(in.GetFloats(name + ".params", &theta, s.Size()));
  for (float v : theta) {
    if (!std::isfinite(v)) {
      return Status::DataLoss(in.source() + ": section '" + name + ".params' holds a non-finite weight");
    }
  }
  shape_ = s;
  theta_ = std::move(theta);
  return Status::Ok();
}

std::vector<ParamSpec> CommonParams(int64_t epochs, double lr) {
  return {
      IntParam("hidden", 64, 0, 4096, "units of each hidden layer (relu); 0 = a linear scorer w.x"),
      IntParam("layers", 1, 1, 8, "hidden layers of `hidden` units (ignored when hidden is 0)"),
      ChoiceParam("solver", "adam", {"adam", "sgd"}, "the update rule of every step"),
      PositiveParam("lr", lr, "learning rate (constant)"),
      IntParam("epochs", epochs, 1, 1000000, "passes over the training queries"),
      IntParam("batch_size", 4, 1, 1 << 24, "whole queries per mini-batch and worker"),
      NonNegativeParam("l2", 0.01, "weight decay on the weight matrices (not the biases)"),
      IntParam("seed", 0, 0, int64_t{1} << 62, "initial weights and query shuffles (0: the run's seed)"),
  };
}

NeuralRankConfig ConfigFrom(const ParamValues& v, RankLossKind kind, const std::string& name) {
  NeuralRankConfig c;
  c.kind = kind;
  c.name = name;
  c.hidden = v.Int("hidden");
  c.layers = v.Int("layers");
  c.adam = v.Choice("solver") == "adam";
  c.lr = v.Number("lr");
  c.epochs = v.Int("epochs");
  c.batch_size = v.Int("batch_size");
  c.l2 = v.Number("l2");
  c.seed = static_cast<uint64_t>(v.Int("seed"));
  return c;
}

EstimatorDef MakeRankNetDef() {
  EstimatorDef def;
  def.name = "ranknet";
  def.title = "RankNet";
  def.task = data::TableTask::kRanking;
  def.help =
      "Burges et al.'s RankNet (ICML 2005): an MLP (relu hidden layers, linear output) scores each document, "
      "trained on the weighted mean over the pairs (i, j) of one query with relevance_i > relevance_j of "
      "log(1 + exp(-sigma (s_i - s_j))), by Adam or SGD on mini-batches of whole queries.";
  def.distributed =
      "queries stay whole on one worker; per step push the gradient of the worker's batch of queries "
      "(parameters + 3 floats), every worker applies the same update to the sum";
  def.params = CommonParams(30, 0.001);
  def.params.push_back(PositiveParam("sigma", 1.0, "slope of the pair's logistic: the loss is log(1 + exp(-sigma d))"));
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> {
    NeuralRankConfig c = ConfigFrom(v, RankLossKind::kRankNet, "ranknet");
    c.sigma = v.Number("sigma");
    return std::make_unique<NeuralRanker>(std::move(c));
  };
  return def;
}

EstimatorDef MakeListNetDef() {
  EstimatorDef def;
  def.name = "listnet";
  def.title = "ListNet";
  def.task = data::TableTask::kRanking;
  def.help =
      "Cao et al.'s ListNet (ICML 2007): an MLP (relu hidden layers, linear output) scores each document, trained "
      "on the weighted mean over the queries of the cross-entropy between the top-one probabilities of the targets "
      "(softmax of the relevance, or of the gains 2^rel - 1) and of the scores, by Adam or SGD on mini-batches of "
      "whole queries.";
  def.distributed =
      "queries stay whole on one worker; per step push the gradient of the worker's batch of queries "
      "(parameters + 3 floats), every worker applies the same update to the sum";
  def.params = CommonParams(30, 0.001);
  def.params.push_back(ChoiceParam("target", "relevance", {"relevance", "gain"},
                                   "top-one probabilities of the targets: softmax(rel) or softmax(2^rel - 1)"));
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> {
    NeuralRankConfig c = ConfigFrom(v, RankLossKind::kListNet, "listnet");
    c.gains = v.Choice("target") == "gain";
    return std::make_unique<NeuralRanker>(std::move(c));
  };
  return def;
}

}  // namespace

double NeuralRankObjectiveForTesting(const std::string& name, const std::map<std::string, std::string>& params,
                                     const data::Table& table, const std::vector<float>& theta,
                                     std::vector<double>* grad) {
  const EstimatorDef* def = EstimatorRegistry::Find(name);
  GEOMX_CHECK(def != nullptr && (name == "ranknet" || name == "listnet"));
  std::vector<ParamProblem> problems;
  ParamValues values = ResolveParams(def->params, params, &problems);
  GEOMX_CHECK(problems.empty());
  std::unique_ptr<Estimator> e = def->create(values);
  return static_cast<NeuralRanker*>(e.get())->ObjectiveForTesting(table, theta, grad);
}

GEOMX_REGISTER_ESTIMATOR(MakeRankNetDef());
GEOMX_REGISTER_ESTIMATOR(MakeListNetDef());

}  // namespace geomx::algorithms
