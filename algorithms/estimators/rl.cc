// rl: REINFORCE with a learned value baseline (Williams 1992; Sutton & Barto 2018, section 13.4) in the built-in
// CartPole-v1 environment (datasets/cartpole.h), trained by Adam on batches of whole episodes
// (docs/algorithms.md#rl; the networks and the gradient are in rl.h).
//
// One update: every worker plays `batch_size` episodes with actions sampled from the policy, computes the
// discounted returns G_t (bootstrapped with the baseline's value of the last state when the time limit truncates an
// episode) and the advantages A_t = G_t - V(s_t) (G_t without a baseline), standardised over every step of the
// update on every worker (`normalize`). The loss is the mean over those steps of -A_t log pi(a_t|s_t) -
// entropy H(pi(.|s_t)) + 1/2 (v(s_t) - G_t / scale)^2; one Adam step (lr for the policy, value_lr for the baseline)
// follows. `updates` updates, or fewer when `target_return` is reached by an update's mean episode return.
//
// Episodes: episode g of update u (g counted over the job: worker r plays g = r * batch_size .. + batch_size - 1)
// draws its start state and its actions from its own stream, Rng(seed ^ 0x726c).Fork(u * 2^24 + g). So the
// episodes of W workers with batch_size B are the episodes one process plays with batch_size W x B.
//
// Distributed (FitContext::collective): the workers are the actors. Every worker starts from the same weights
// (drawn from the seed); per update one exact sum gathers the advantage statistics, the step and episode counts,
// the summed returns and the interrupt flag, and one sum (AllReduceSumCompressible: gradients tolerate fp16)
// gathers the gradients of the mean loss. Every worker applies the same Adam step to the same sums, so all hold the
// same weights, and 2 workers of batch B compute what one process of batch 2B computes, up to the order of float
// additions.
#include "algorithms/estimators/rl.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "datasets/cartpole.h"
#include "engine/base/check.h"
#include "engine/base/rng.h"
#include "engine/kernels/optimizer_update.h"

namespace geomx::algorithms {

namespace {

constexpr int64_t kObs = RlShape::kObservations;
constexpr int64_t kMaxHidden = 1024;
constexpr int64_t kMaxBatch = 4096;
constexpr uint64_t kEpisodeStreams = uint64_t{1} << 24;  // episodes per update over the whole job, at most

// Offsets of the blocks of the flat parameter vector (rl.h).
struct Layout {
  int64_t w1, b1, w2, b2, v1, c1, v2, c2;
  explicit Layout(const RlShape& s) {
    const int64_t h = s.hidden;
    w1 = 0;
    b1 = w1 + h * kObs;
    w2 = b1 + h;
    b2 = w2 + RlShape::kActions * h;
    v1 = b2 + RlShape::kActions;
    c1 = v1 + h * kObs;
    v2 = c1 + h;
    c2 = v2 + h;
  }
};

// tanh(W x + b) of one hidden layer into `out` (hidden values).
void Hidden(const float* w, const float* b, int64_t hidden, std::span<const float> x, double* out) {
  for (int64_t j = 0; j < hidden; ++j) {
    double a = b[j];
    for (int64_t i = 0; i < kObs; ++i) a += static_cast<double>(w[j * kObs + i]) * x[static_cast<size_t>(i)];
    out[j] = std::tanh(a);
  }
}

// Logits and probabilities of the policy; `h` receives the hidden layer.
void PolicyForward(const RlShape& s, const float* theta, std::span<const float> obs, double* h, double logits[2],
                   double probs[2]) {
  const Layout l(s);
  Hidden(theta + l.w1, theta + l.b1, s.hidden, obs, h);
  for (int64_t a = 0; a < RlShape::kActions; ++a) {
    double z = theta[l.b2 + a];
    for (int64_t j = 0; j < s.hidden; ++j) z += static_cast<double>(theta[l.w2 + a * s.hidden + j]) * h[j];
    logits[a] = z;
  }
  const double m = std::max(logits[0], logits[1]);
  const double e0 = std::exp(logits[0] - m), e1 = std::exp(logits[1] - m);
  probs[0] = e0 / (e0 + e1);
  probs[1] = e1 / (e0 + e1);
}

// The value network's output (not scaled); `g` receives the hidden layer.
double ValueForward(const RlShape& s, const float* theta, std::span<const float> obs, double* g) {
  const Layout l(s);
  Hidden(theta + l.v1, theta + l.c1, s.hidden, obs, g);
  double v = theta[l.c2];
  for (int64_t j = 0; j < s.hidden; ++j) v += static_cast<double>(theta[l.v2 + j]) * g[j];
  return v;
}

struct RlConfig {
  int64_t hidden = 32;
  double gamma = 0.99;
  double lr = 0.01;
  double value_lr = 0.01;
  int64_t batch_size = 8;
  int64_t updates = 150;
  double entropy = 0.0;
  bool baseline = true;
  bool normalize = true;
  double target_return = 0;
  int64_t seed = 0;  // 0: FitContext::seed
};

// One played episode.
struct Episode {
  std::vector<RlStep> steps;
  std::vector<double> returns, advantages;
  double total_reward = 0;
};

class ReinforcementLearner final : public Estimator {
 public:
  explicit ReinforcementLearner(const RlConfig& config) : config_(config) {}

  Status Fit(const data::Table& train, const FitContext& context) override;
  Result<Prediction> Predict(const data::Table& input, int threads) const override;
  Metrics ModelMetrics(const data::Table& table, const Prediction& prediction) const override;
  void Save(ModelWriter* out) const override;
  Status Load(const ModelReader& in) override;

 private:
  // Plays episode `g` of update `u` with sampled actions, and its returns and (unnormalised) advantages.
  Episode Play(uint64_t base_seed, int64_t u, int64_t g) const;
  // The return of the greedy policy's episode from `start`.
  double GreedyReturn(const data::CartPoleState& start) const;

  RlConfig config_;
  RlShape shape_;
  std::vector<float> theta_;
};

Episode ReinforcementLearner::Play(uint64_t base_seed, int64_t u, int64_t g) const {
  Rng rng = Rng(base_seed ^ 0x726c).Fork(static_cast<uint64_t>(u) * kEpisodeStreams + static_cast<uint64_t>(g));
  data::CartPole env;
  env.Reset(&rng);
  Episode ep;
  std::vector<double> rewards, h(static_cast<size_t>(shape_.hidden));
  double logits[2], probs[2];
  data::CartPoleStep result;
  while (!env.done()) {
    RlStep step;
    step.observation = env.Observation();
    PolicyForward(shape_, theta_.data(), step.observation, h.data(), logits, probs);
    step.action = rng.Uniform() < probs[0] ? 0 : 1;
    result = env.Step(step.action);
    ep.steps.push_back(step);
    rewards.push_back(result.reward);
    ep.total_reward += result.reward;
  }
  const double scale = RlValueScale(config_.gamma);
  double bootstrap = 0;
  if (result.truncated && config_.baseline) {
    const auto last = env.Observation();
    bootstrap = RlValue(shape_, theta_, last, scale);
  }
  ep.returns = RlDiscountedReturns(rewards, config_.gamma, bootstrap);
  ep.advantages = ep.returns;
  if (config_.baseline) {
    for (size_t t = 0; t < ep.steps.size(); ++t) {
      ep.advantages[t] -= RlValue(shape_, theta_, ep.steps[t].observation, scale);
    }
  }
  return ep;
}

double ReinforcementLearner::GreedyReturn(const data::CartPoleState& start) const {
  data::CartPole env;
  env.Reset(start);
  std::vector<double> h(static_cast<size_t>(shape_.hidden));
  double logits[2], probs[2], total = 0;
  while (!env.done()) {
    const auto obs = env.Observation();
    PolicyForward(shape_, theta_.data(), obs, h.data(), logits, probs);
    total += env.Step(logits[1] > logits[0] ? 1 : 0).reward;
  }
  return total;
}

Status ReinforcementLearner::Fit(const data::Table& train, const FitContext& context) {
  Collective* coll = context.collective;
  // Every worker reaches the same verdict on the table: they all hold shards of the same generated one.
  if (train.cols != kObs) {
    return Status::InvalidArgument("rl: the training table has " + std::to_string(train.cols) +
                                   " columns; rl acts in the environment cartpole (data.name: cartpole), whose "
                                   "states have 4");
  }
  const int rank = coll != nullptr ? coll->rank() : 0;
  const int world = coll != nullptr ? coll->world() : 1;
  const int64_t batch = config_.batch_size;
  if (static_cast<uint64_t>(world) * static_cast<uint64_t>(batch) > kEpisodeStreams) {
    return Status::InvalidArgument("rl: " + std::to_string(world) + " workers x batch_size " + std::to_string(batch) +
                                   " episodes per update exceed 2^24");
  }
  shape_.hidden = config_.hidden;
  const uint64_t seed = config_.seed != 0 ? static_cast<uint64_t>(config_.seed) : context.seed;
  const Layout lay(shape_);
  const int64_t P = shape_.Size(), np = shape_.PolicySize();
  // Initial weights, the same on every worker: hidden layers N(0, 1/fan_in), the policy's output layer 100 times
  // smaller (a near-uniform first policy), the value output N(0, 1/hidden); biases 0.
  theta_.assign(static_cast<size_t>(P), 0.0f);
  {
    Rng init(seed ^ 0x524c);
    const auto fill = [&](int64_t at, int64_t n, double sd) {
      for (int64_t k = 0; k < n; ++k) theta_[static_cast<size_t>(at + k)] = static_cast<float>(sd * init.Normal());
    };
    const double h = static_cast<double>(shape_.hidden);
    fill(lay.w1, shape_.hidden * kObs, 1.0 / std::sqrt(static_cast<double>(kObs)));
    fill(lay.w2, RlShape::kActions * shape_.hidden, 0.01 / std::sqrt(h));
    fill(lay.v1, shape_.hidden * kObs, 1.0 / std::sqrt(static_cast<double>(kObs)));
    fill(lay.v2, shape_.hidden, 1.0 / std::sqrt(h));
  }
  const double value_scale = RlValueScale(config_.gamma);
  const int team = std::clamp<int>(context.threads, 1, static_cast<int>(batch));
  std::vector<Episode> episodes(static_cast<size_t>(batch));
  std::vector<std::vector<double>> slots(static_cast<size_t>(batch));
  std::vector<float> buffer(static_cast<size_t>(P));
  std::vector<float> m1(static_cast<size_t>(P), 0.0f), m2(static_cast<size_t>(P), 0.0f);
  for (int64_t u = 1; u <= config_.updates; ++u) {
#pragma omp parallel for num_threads(team) schedule(dynamic)
    for (int64_t k = 0; k < batch; ++k) episodes[static_cast<size_t>(k)] = Play(seed, u, rank * batch + k);
    // stats: sum A, sum A^2, steps, sum of episode returns, episodes, interrupt flag.
    float stats[6] = {0, 0, 0, 0, 0, context.Interrupted() ? 1.0f : 0.0f};
    {
      double sa = 0, sa2 = 0, steps = 0, ret = 0;
      for (const Episode& ep : episodes) {
        for (double a : ep.advantages) {
          sa += a;
          sa2 += a * a;
        }
        steps += static_cast<double>(ep.steps.size());
        ret += ep.total_reward;
      }
      stats[0] = static_cast<float>(sa);
      stats[1] = static_cast<float>(sa2);
      stats[2] = static_cast<float>(steps);
      stats[3] = static_cast<float>(ret);
      stats[4] = static_cast<float>(batch);
    }
    if (coll != nullptr) GEOMX_RETURN_IF_ERROR(coll->AllReduceSum("rl/stats", stats));
    if (stats[5] > 0) return Status::Cancelled("rl: interrupted");
    const double steps = stats[2];
    const double mean = stats[0] / steps;
    const double var = std::max(0.0, static_cast<double>(stats[1]) / steps - mean * mean);
    const double sd = std::sqrt(var);
    const double mean_return = static_cast<double>(stats[3]) / stats[4];
    // The gradient of the mean loss, episode by episode into slots added in episode order (the same sum for any
    // thread count).
#pragma omp parallel for num_threads(team) schedule(dynamic)
    for (int64_t k = 0; k < batch; ++k) {
      Episode& ep = episodes[static_cast<size_t>(k)];
      if (config_.normalize) {
        for (double& a : ep.advantages) a = (a - mean) / (sd + 1e-8);
      }
      std::vector<double>& g = slots[static_cast<size_t>(k)];
      g.assign(static_cast<size_t>(P), 0.0);
      RlAccumulateGradient(shape_, theta_, ep.steps, ep.advantages, ep.returns, config_.entropy, value_scale,
                           1.0 / steps, g);
    }
    for (int64_t j = 0; j < P; ++j) {
      double s = 0;
      for (const auto& g : slots) s += g[static_cast<size_t>(j)];
      buffer[static_cast<size_t>(j)] = static_cast<float>(s);
    }
    if (coll != nullptr) GEOMX_RETURN_IF_ERROR(coll->AllReduceSumCompressible("rl/grad", buffer, 0));
    UpdateHyper hp;
    hp.step = u;
    hp.lr = static_cast<float>(config_.lr);
    const kernels::AdamUpdate policy_rule = kernels::AdamUpdate::Make(hp);
    hp.lr = static_cast<float>(config_.value_lr);
    const kernels::AdamUpdate value_rule = kernels::AdamUpdate::Make(hp);
    for (int64_t j = 0; j < P; ++j) {
      const size_t i = static_cast<size_t>(j);
      (j < np ? policy_rule : value_rule)(theta_[i], buffer[i], m1[i], m2[i]);
    }
    if (context.observer != nullptr) {
      context.observer->OnStep(u, {{"return", mean_return}, {"steps", steps}});
    }
    if (config_.target_return > 0 && mean_return >= config_.target_return) break;
  }
  for (float v : theta_) {
    if (!std::isfinite(v)) {
      return Status::InvalidArgument("rl: the weights diverged (not finite); lower lr (" + std::to_string(config_.lr) +
                                     ")");
    }
  }
  return Status::Ok();
}

Result<Prediction> ReinforcementLearner::Predict(const data::Table& input, int threads) const {
  if (theta_.empty()) return Status::FailedPrecondition("rl: the model is not fitted");
  if (input.cols != kObs) {
    return Status::InvalidArgument("rl: " + input.source + " has " + std::to_string(input.cols) +
                                   " columns; rl predicts the return from cartpole start states (4 columns: x, "
                                   "x_dot, theta, theta_dot)");
  }
  Prediction out;
  out.value.resize(static_cast<size_t>(input.rows));
  const data::Table dense = input.ToDense();
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(dynamic)
  for (int64_t r = 0; r < input.rows; ++r) {
    const float* x = dense.Row(r);
    out.value[static_cast<size_t>(r)] = static_cast<float>(GreedyReturn({x[0], x[1], x[2], x[3]}));
  }
  return out;
}

Metrics ReinforcementLearner::ModelMetrics(const data::Table&, const Prediction& prediction) const {
  if (prediction.value.empty()) return {};
  return {{"return_min", *std::min_element(prediction.value.begin(), prediction.value.end())}};
}

void ReinforcementLearner::Save(ModelWriter* out) const {
  out->PutInts("rl.shape", std::vector<int64_t>{shape_.hidden, RlShape::kObservations, RlShape::kActions});
  out->PutFloats("rl.params", theta_);
}

Status ReinforcementLearner::Load(const ModelReader& in) {
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts("rl.shape", &shape, 3));
  if (shape[0] < 1 || shape[0] > kMaxHidden || shape[1] != RlShape::kObservations || shape[2] != RlShape::kActions) {
    return Status::DataLoss(in.source() + ": section 'rl.shape' holds an impossible shape");
  }
  RlShape s;
  s.hidden = shape[0];
  std::vector<float> theta;
  GEOMX_RETURN_IF_ERROR(in.GetFloats("rl.params", &theta, s.Size()));
  for (float v : theta) {
    if (!std::isfinite(v)) return Status::DataLoss(in.source() + ": section 'rl.params' holds a non-finite weight");
  }
  shape_ = s;
  theta_ = std::move(theta);
  return Status::Ok();
}

EstimatorDef MakeRlDef() {
  EstimatorDef def;
  def.name = "rl";
  def.title = "Reinforcement Learning (policy gradient)";
  def.task = data::TableTask::kControl;
  def.help =
      "REINFORCE with a learned value baseline in the built-in CartPole-v1 environment (data.name: cartpole): a "
      "policy MLP 4 -> hidden (tanh) -> 2 actions (softmax) and a value MLP 4 -> hidden -> 1, trained by Adam on "
      "batches of whole episodes with discounted returns (gamma) and standardised advantages. Reports the mean "
      "return of the greedy policy over the test split's start states (the evaluation episodes, 500 at most).";
  def.distributed =
      "every worker is an actor playing its own seeded episodes; per update one exact sum of the advantage "
      "statistics and one sum of the policy and value gradients, so every worker applies the same Adam step";
  def.params = {
      IntParam("hidden", 32, 1, kMaxHidden, "units of the hidden layer of the policy and of the value network"),
      RangeParam("gamma", 0.99, 0, true, 1, false, "discount factor of the returns"),
      PositiveParam("lr", 0.01, "Adam learning rate of the policy"),
      PositiveParam("value_lr", 0.01, "Adam learning rate of the value baseline"),
      IntParam("batch_size", 8, 1, kMaxBatch, "episodes per update and worker"),
      IntParam("updates", 150, 1, 1000000, "policy updates (at most; see target_return)"),
      NonNegativeParam("entropy", 0.0, "weight of the entropy bonus of the policy"),
      BoolParam("baseline", true, "subtract the value baseline from the returns (false: plain REINFORCE)"),
      BoolParam("normalize", true, "standardise the advantages over every step of an update (all workers)"),
      NonNegativeParam("target_return", 0.0,
                       "stop after the first update whose episodes' mean return reaches this (0: run every update)"),
      IntParam("seed", 0, 0, int64_t{1} << 62, "initial weights and episodes (0: the run's seed)"),
  };
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> {
    RlConfig c;
    c.hidden = v.Int("hidden");
    c.gamma = v.Number("gamma");
    c.lr = v.Number("lr");
    c.value_lr = v.Number("value_lr");
    c.batch_size = v.Int("batch_size");
    c.updates = v.Int("updates");
    c.entropy = v.Number("entropy");
    c.baseline = v.Bool("baseline");
    c.normalize = v.Bool("normalize");
    c.target_return = v.Number("target_return");
    c.seed = v.Int("seed");
    return std::make_unique<ReinforcementLearner>(c);
  };
  return def;
}

}  // namespace

std::array<double, RlShape::kActions> RlPolicyProbabilities(const RlShape& shape, std::span<const float> theta,
                                                            std::span<const float> observation) {
  GEOMX_CHECK(static_cast<int64_t>(theta.size()) >= shape.PolicySize() && observation.size() == kObs);
  std::vector<double> h(static_cast<size_t>(shape.hidden));
  double logits[2], probs[2];
  PolicyForward(shape, theta.data(), observation, h.data(), logits, probs);
  return {probs[0], probs[1]};
}

double RlValue(const RlShape& shape, std::span<const float> theta, std::span<const float> observation,
               double value_scale) {
  GEOMX_CHECK(static_cast<int64_t>(theta.size()) == shape.Size() && observation.size() == kObs);
  std::vector<double> g(static_cast<size_t>(shape.hidden));
  return value_scale * ValueForward(shape, theta.data(), observation, g.data());
}

double RlValueScale(double gamma) { return gamma < 1 ? std::min(1.0 / (1.0 - gamma), 500.0) : 500.0; }

std::vector<double> RlDiscountedReturns(std::span<const double> rewards, double gamma, double bootstrap) {
  std::vector<double> out(rewards.size());
  double g = bootstrap;
  for (size_t t = rewards.size(); t-- > 0;) {
    g = rewards[t] + gamma * g;
    out[t] = g;
  }
  return out;
}

double RlAccumulateGradient(const RlShape& shape, std::span<const float> theta, std::span<const RlStep> steps,
                            std::span<const double> advantages, std::span<const double> returns, double entropy,
                            double value_scale, double scale, std::span<double> grad) {
  const int64_t H = shape.hidden;
  GEOMX_CHECK(static_cast<int64_t>(theta.size()) == shape.Size() && static_cast<int64_t>(grad.size()) == shape.Size());
  GEOMX_CHECK(advantages.size() == steps.size() && returns.size() == steps.size());
  const Layout l(shape);
  const float* w = theta.data();
  double* d = grad.data();
  std::vector<double> h(static_cast<size_t>(H)), dh(static_cast<size_t>(H));
  double loss = 0;
  for (size_t t = 0; t < steps.size(); ++t) {
    const RlStep& st = steps[t];
    const std::span<const float> obs(st.observation);
    // Policy: d/dz_b of -A log p_a - beta H(p) is -A (1[a = b] - p_b) + beta p_b (log p_b + H).
    double logits[2], p[2];
    PolicyForward(shape, w, obs, h.data(), logits, p);
    const double m = std::max(logits[0], logits[1]);
    const double lse = m + std::log(std::exp(logits[0] - m) + std::exp(logits[1] - m));
    const double logp[2] = {logits[0] - lse, logits[1] - lse};
    const double ent = -(p[0] * logp[0] + p[1] * logp[1]);
    const double adv = advantages[t];
    loss += -adv * logp[st.action] - entropy * ent;
    double dz[2];
    for (int b = 0; b < 2; ++b) {
      dz[b] = -adv * ((b == st.action ? 1.0 : 0.0) - p[b]) + entropy * p[b] * (logp[b] + ent);
      dz[b] *= scale;
      d[l.b2 + b] += dz[b];
    }
    for (int64_t j = 0; j < H; ++j) {
      d[l.w2 + j] += dz[0] * h[j];
      d[l.w2 + H + j] += dz[1] * h[j];
      dh[j] = (dz[0] * w[l.w2 + j] + dz[1] * w[l.w2 + H + j]) * (1.0 - h[j] * h[j]);
      d[l.b1 + j] += dh[j];
      for (int64_t i = 0; i < kObs; ++i) d[l.w1 + j * kObs + i] += dh[j] * obs[static_cast<size_t>(i)];
    }
    // Value: 1/2 (v - G / scale)^2.
    const double v = ValueForward(shape, w, obs, h.data());
    const double e = v - returns[t] / value_scale;
    loss += 0.5 * e * e;
    const double dv = e * scale;
    d[l.c2] += dv;
    for (int64_t j = 0; j < H; ++j) {
      d[l.v2 + j] += dv * h[j];
      const double dg = dv * w[l.v2 + j] * (1.0 - h[j] * h[j]);
      d[l.c1 + j] += dg;
      for (int64_t i = 0; i < kObs; ++i) d[l.v1 + j * kObs + i] += dg * obs[static_cast<size_t>(i)];
    }
  }
  return loss;
}

GEOMX_REGISTER_ESTIMATOR(MakeRlDef());

}  // namespace geomx::algorithms
