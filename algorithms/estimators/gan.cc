#include "algorithms/estimators/gan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "algorithms/ps/global_rule.h"
#include "engine/autograd/functions.h"
#include "engine/base/check.h"
#include "engine/base/rng.h"
#include "engine/kernels/optimizer_update.h"
#include "engine/ops.h"
#include "nn/init.h"
#include "nn/layers/activation.h"
#include "nn/layers/dropout.h"
#include "nn/layers/linear.h"
#include "nn/layers/sequential.h"

namespace geomx::algorithms {
namespace {

using autograd::Variable;

// max(x, slope x) for 0 < slope < 1, as slope x + (1 - slope) relu(x): the engine has no leaky ReLU op, and these
// elementwise passes over [2B, 512] cost little next to the layers' GEMMs.
class LeakyRelu final : public nn::Module {
 public:
  explicit LeakyRelu(float slope) : slope_(slope) {}
  Variable Forward(const Variable& x) override {
    return autograd::Add(autograd::MulScalar(autograd::Activation(ActivationKind::kRelu, x), 1.0f - slope_),
                         autograd::MulScalar(x, slope_));
  }
  std::string TypeName() const override { return "LeakyReLU"; }

 private:
  float slope_;
};

std::unique_ptr<nn::Module> MakeGenerator(const GanShape& s, Rng& rng) {
  const nn::LinearOptions o{.init = nn::InitKind::kXavierUniform};
  auto g = std::make_unique<nn::Sequential>();
  g->Add("fc1", std::make_unique<nn::Linear>(s.noise, s.width, rng, o));
  g->Add("act1", std::make_unique<nn::Activation>(ActivationKind::kRelu));
  g->Add("fc2", std::make_unique<nn::Linear>(s.width, 2 * s.width, rng, o));
  g->Add("act2", std::make_unique<nn::Activation>(ActivationKind::kRelu));
  g->Add("fc3", std::make_unique<nn::Linear>(2 * s.width, s.image, rng, o));
  g->Add("act3", std::make_unique<nn::Activation>(ActivationKind::kTanh));
  return g;
}

std::unique_ptr<nn::Module> MakeDiscriminator(const GanShape& s, Rng& rng) {
  const nn::LinearOptions o{.init = nn::InitKind::kXavierUniform};
  auto d = std::make_unique<nn::Sequential>();
  d->Add("fc1", std::make_unique<nn::Linear>(s.image, 2 * s.width, rng, o));
  d->Add("act1", std::make_unique<LeakyRelu>(kGanLeakySlope));
  if (s.d_dropout > 0) d->Add("dropout1", std::make_unique<nn::Dropout>(s.d_dropout, rng.NextU64()));
  d->Add("fc2", std::make_unique<nn::Linear>(2 * s.width, s.width, rng, o));
  d->Add("act2", std::make_unique<LeakyRelu>(kGanLeakySlope));
  if (s.d_dropout > 0) d->Add("dropout2", std::make_unique<nn::Dropout>(s.d_dropout, rng.NextU64()));
  d->Add("fc3", std::make_unique<nn::Linear>(s.width, 1, rng, o));
  return d;
}

int64_t CountParameters(const GanShape& s, bool generator) {
  const int64_t w = s.width;
  return generator ? s.noise * w + w + w * 2 * w + 2 * w + 2 * w * s.image + s.image
                   : s.image * 2 * w + 2 * w + 2 * w * w + w + w + 1;
}

nn::OptimizerConfig AdamConfig(const GanAdam& a) {
  nn::OptimizerConfig c;
  c.name = "adam";
  c.lr = a.lr;
  c.beta1 = a.beta1;
  c.beta2 = a.beta2;
  c.eps = a.eps;
  c.weight_decay = 0.0f;  // the tables hold w - w0: a decay of w would need w0 on the servers
  return c;
}

// The rule "gan-adam": per row table of the job, GanAdamState and one GanAdamRound per completed round.
class GanAdamRule final : public ps::GlobalRule {
 public:
  explicit GanAdamRule(const nn::OptimizerConfig& c) : config_(c) {}

  Status OnRows(const ps::KeyDef& key, int64_t, const std::vector<uint64_t>& rows, std::vector<float>* values, int,
                ps::DecisionBoard&) override {
    std::lock_guard<std::mutex> lock(mu_);
    GanAdamRound(config_, key.elems, key.row_width, rows, values, &states_[key.key]);
    return Status::Ok();
  }
  bool RowsAreValues(const ps::KeyDef&) const override { return true; }

 private:
  const nn::OptimizerConfig config_;
  std::mutex mu_;
  std::map<uint64_t, GanAdamState> states_;  // GUARDED_BY(mu_), by key
};

}  // namespace

std::vector<RowTableSpec> GanRowTables(const GanShape& shape, const GanAdam& adam) {
  std::vector<RowTableSpec> out;
  for (bool generator : {true, false}) {
    RowTableSpec t;
    t.name = generator ? kGanGeneratorTable : kGanDiscriminatorTable;
    t.width = kGanTableWidth;
    t.rows = static_cast<uint64_t>((CountParameters(shape, generator) + static_cast<int64_t>(kGanTableWidth) - 1) /
                                   static_cast<int64_t>(kGanTableWidth));
    t.rule = kGanAdamRule;
    t.hyper = AdamConfig(adam);
    out.push_back(std::move(t));
  }
  return out;
}

GanNetworks::GanNetworks(const GanShape& shape, uint64_t seed) : shape_(shape) {
  GEOMX_CHECK(shape.noise >= 1 && shape.width >= 1 && shape.image >= 1 && shape.d_dropout >= 0 &&
              shape.d_dropout < 1)
      << "GanNetworks: shape";
  Rng rng(seed);
  generator_ = MakeGenerator(shape, rng);
  discriminator_ = MakeDiscriminator(shape, rng);
  GEOMX_CHECK_EQ(generator_->NumParameters(), CountParameters(shape, true));
  GEOMX_CHECK_EQ(discriminator_->NumParameters(), CountParameters(shape, false));
}

GanNetworks::~GanNetworks() = default;

Tensor GanNetworks::Generate(const Tensor& z) {
  autograd::NoGradGuard no_grad;
  if (!averaging()) return generator_->Forward(Variable(z)).data();
  if (averaged_ == nullptr) {
    Rng unused(0);
    averaged_ = MakeGenerator(shape_, unused);
  }
  if (averaged_stale_) {
    GEOMX_CHECK_OK(SetFlatParameters(*averaged_, average_));
    averaged_stale_ = false;
  }
  return averaged_->Forward(Variable(z)).data();
}

void GanNetworks::EnableAverage(float decay) {
  GEOMX_CHECK(decay > 0 && decay < 1) << "GanNetworks::EnableAverage: decay " << decay;
  decay_ = decay;
  average_updates_ = 0;
  average_ = FlatParameters(*generator_);
  averaged_stale_ = true;
}

void GanNetworks::UpdateAverage() {
  GEOMX_CHECK(averaging()) << "GanNetworks::UpdateAverage: not enabled";
  ++average_updates_;
  const auto t = static_cast<float>(average_updates_);
  const float keep = std::min(decay_, (1.0f + t) / (10.0f + t));
  size_t at = 0;
  for (nn::Parameter* p : generator_->Parameters()) {
    const Tensor w = p->data().To(Device::Cpu());
    const float* v = w.data<float>();
    for (int64_t i = 0; i < w.numel(); ++i, ++at) average_[at] = keep * average_[at] + (1.0f - keep) * v[i];
  }
  averaged_stale_ = true;
}

Status GanNetworks::SetAverage(std::span<const float> values) {
  if (static_cast<int64_t>(values.size()) != generator_->NumParameters()) {
    return Status::InvalidArgument("the generator has " + std::to_string(generator_->NumParameters()) +
                                   " parameters, got an average of " + std::to_string(values.size()) + " values");
  }
  if (!averaging()) decay_ = 0.999f;  // only marks it enabled: a loaded model is not trained further
  average_.assign(values.begin(), values.end());
  averaged_stale_ = true;
  return Status::Ok();
}

std::vector<float> FlatParameters(nn::Module& net) {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(net.NumParameters()));
  for (nn::Parameter* p : net.Parameters()) {
    const Tensor t = p->data().To(Device::Cpu());
    const float* v = t.data<float>();
    out.insert(out.end(), v, v + t.numel());
  }
  return out;
}

Status SetFlatParameters(nn::Module& net, std::span<const float> values) {
  if (static_cast<int64_t>(values.size()) != net.NumParameters()) {
    return Status::InvalidArgument("the network has " + std::to_string(net.NumParameters()) + " parameters, got " +
                                   std::to_string(values.size()) + " values");
  }
  size_t at = 0;
  for (nn::Parameter* p : net.Parameters()) {
    const auto n = static_cast<size_t>(p->numel());
    p->var().set_data(Tensor::FromVector(std::vector<float>(values.begin() + static_cast<std::ptrdiff_t>(at),
                                                            values.begin() + static_cast<std::ptrdiff_t>(at + n)),
                                         p->data().shape(), p->data().device()));
    at += n;
  }
  return Status::Ok();
}

// One network's side of the iteration: its parameters, and either its optimizer (one process) or its row table.
struct GanTrainer::Side {
  nn::Module* net = nullptr;
  std::vector<nn::Parameter*> params;
  std::unique_ptr<nn::Optimizer> optimizer;  // one process
  RowTableSpec table;                        // across workers
  std::vector<float> w0;                     // the weights the table's deltas are added to
  std::vector<uint64_t> rows;                // every row of the table
  std::vector<float> flat;                   // the pushed gradients, rows x width
};

GanTrainer::GanTrainer(GanNetworks* nets, const GanAdam& adam, Collective* collective, float real_label)
    : nets_(nets), collective_(collective), real_label_(real_label) {
  GEOMX_CHECK(real_label > 0 && real_label <= 1) << "GanTrainer: real_label " << real_label;
  const std::vector<RowTableSpec> tables = GanRowTables(nets->shape(), adam);
  for (bool generator : {true, false}) {
    auto side = std::make_unique<Side>();
    side->net = generator ? &nets->generator() : &nets->discriminator();
    side->params = side->net->Parameters();
    if (collective == nullptr) {
      Result<std::unique_ptr<nn::Optimizer>> opt = nn::CreateOptimizer(AdamConfig(adam));
      GEOMX_CHECK(opt.ok()) << opt.status().ToString();
      side->optimizer = std::move(opt).value();
    } else {
      side->table = tables[generator ? 0 : 1];
      side->w0 = FlatParameters(*side->net);
      for (uint64_t r = 0; r < side->table.rows; ++r) side->rows.push_back(r);
      side->flat.assign(side->table.rows * side->table.width, 0.0f);
    }
    (generator ? g_ : d_) = std::move(side);
  }
}

GanTrainer::~GanTrainer() = default;

Status GanTrainer::Update(Side* side) {
  if (collective_ == nullptr) {
    side->optimizer->Step(side->params);
    return Status::Ok();
  }
  // The mean gradient over the workers is the sum of each one's gradient / world (exact for a power of two).
  const float scale = 1.0f / static_cast<float>(collective_->world());
  size_t at = 0;
  for (nn::Parameter* p : side->params) {
    const auto n = static_cast<size_t>(p->numel());
    if (p->grad().defined()) {
      const Tensor g = p->grad().To(Device::Cpu());
      const float* v = g.data<float>();
      for (size_t i = 0; i < n; ++i) side->flat[at + i] = v[i] * scale;
    } else {
      std::fill(side->flat.begin() + static_cast<std::ptrdiff_t>(at),
                side->flat.begin() + static_cast<std::ptrdiff_t>(at + n), 0.0f);
    }
    at += n;
  }
  GEOMX_ASSIGN_OR_RETURN(RowUpdate update, collective_->PushRowGradients(side->table, side->rows, side->flat));
  if (update.rows.size() != side->rows.size() || update.values.size() != side->flat.size()) {
    return Status::Internal("gan: the servers answered " + std::to_string(update.rows.size()) + " of the " +
                            std::to_string(side->rows.size()) + " rows of " + side->table.name);
  }
  at = 0;
  for (nn::Parameter* p : side->params) {
    const auto n = static_cast<size_t>(p->numel());
    Tensor w = Tensor::Empty(p->data().shape());
    float* out = w.data<float>();
    for (size_t i = 0; i < n; ++i) out[i] = side->w0[at + i] + update.values[at + i];
    p->var().set_data(w.To(p->data().device()));
    at += n;
  }
  return Status::Ok();
}

Result<GanStepStats> GanTrainer::Step(const Tensor& real, const Tensor& z) {
  const GanShape& s = nets_->shape();
  GEOMX_CHECK(real.shape().rank() == 2 && real.dim(1) == s.image && real.dim(0) >= 1)
      << "GanTrainer::Step: real " << real.shape().ToString();
  GEOMX_CHECK(z.shape().rank() == 2 && z.dim(1) == s.noise && z.dim(0) == real.dim(0))
      << "GanTrainer::Step: z " << z.shape().ToString();
  const int64_t b = real.dim(0);
  if (!g_targets_.defined() || g_targets_.dim(0) != b) {
    std::vector<float> t(static_cast<size_t>(2 * b), 0.0f);
    std::fill(t.begin(), t.begin() + b, real_label_);
    d_targets_ = Tensor::FromVector(t, Shape{2 * b, 1}, real.device());
    g_targets_ = Tensor::Full(Shape{b, 1}, 1.0f, DType::kF32, real.device());
  }
  nn::Module& g = nets_->generator();
  nn::Module& d = nets_->discriminator();
  GanStepStats stats;

  // D step on the real rows and the (detached) fakes, as one batch of 2B: mean BCE over 2B, times 2, is the sum of
  // the two means.
  g.ZeroGrad();
  d.ZeroGrad();
  const Variable fake = g.Forward(Variable(z));
  const Variable d_logits = d.Forward(Variable(ops::Concat({real, fake.data()}, 0)));
  Variable d_loss = autograd::MulScalar(autograd::BinaryCrossEntropyWithLogits(d_logits, d_targets_), 2.0f);
  d_loss.Backward();
  stats.d_loss = d_loss.data().item();
  {
    const std::vector<float> logits = d_logits.data().ToFloatVector();
    double real_sum = 0, fake_sum = 0;
    for (int64_t i = 0; i < b; ++i) {
      real_sum += 1.0 / (1.0 + std::exp(-static_cast<double>(logits[static_cast<size_t>(i)])));
      fake_sum += 1.0 / (1.0 + std::exp(-static_cast<double>(logits[static_cast<size_t>(b + i)])));
    }
    stats.d_real = real_sum / static_cast<double>(b);
    stats.d_fake = fake_sum / static_cast<double>(b);
  }
  GEOMX_RETURN_IF_ERROR(Update(d_.get()));

  // G step through the updated D, whose own weights get no gradient (their backward GEMMs are skipped).
  for (nn::Parameter* p : d_->params) p->set_trainable(false);
  Variable g_loss = autograd::BinaryCrossEntropyWithLogits(d.Forward(fake), g_targets_);
  g_loss.Backward();
  for (nn::Parameter* p : d_->params) p->set_trainable(true);
  stats.g_loss = g_loss.data().item();
  GEOMX_RETURN_IF_ERROR(Update(g_.get()));
  if (nets_->averaging()) nets_->UpdateAverage();
  return stats;
}

void GanAdamRound(const nn::OptimizerConfig& adam, uint64_t elems, uint64_t width, const std::vector<uint64_t>& rows,
                  std::vector<float>* values, GanAdamState* state) {
  GEOMX_CHECK(width > 0 && values->size() == rows.size() * width) << "GanAdamRound: values";
  if (state->delta.size() != elems) {
    state->delta.assign(elems, 0.0f);
    state->m.assign(elems, 0.0f);
    state->v.assign(elems, 0.0f);
    state->step = 0;
  }
  UpdateHyper h;
  h.lr = adam.lr;
  h.weight_decay = 0.0f;
  h.beta1 = adam.beta1;
  h.beta2 = adam.beta2;
  h.eps = adam.eps;
  h.step = ++state->step;
  const kernels::AdamUpdate update = kernels::AdamUpdate::Make(h);
  for (size_t r = 0; r < rows.size(); ++r) {
    GEOMX_CHECK((rows[r] + 1) * width <= elems) << "GanAdamRound: row " << rows[r];
    float* g = values->data() + r * width;
    const uint64_t base = rows[r] * width;
    for (uint64_t j = 0; j < width; ++j) {
      update(state->delta[base + j], g[j], state->m[base + j], state->v[base + j]);
      g[j] = state->delta[base + j];
    }
  }
}

double ClassifierScore(std::span<const float> probs, int64_t rows, int64_t classes) {
  GEOMX_CHECK(rows >= 1 && classes >= 1 && static_cast<int64_t>(probs.size()) == rows * classes)
      << "ClassifierScore: " << probs.size() << " values for " << rows << " x " << classes;
  std::vector<double> marginal(static_cast<size_t>(classes), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < classes; ++c) {
      marginal[static_cast<size_t>(c)] += probs[static_cast<size_t>(i * classes + c)];
    }
  }
  for (double& p : marginal) p /= static_cast<double>(rows);
  double kl_sum = 0;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < classes; ++c) {
      const double p = probs[static_cast<size_t>(i * classes + c)];
      if (p > 0) kl_sum += p * (std::log(p) - std::log(marginal[static_cast<size_t>(c)]));
    }
  }
  return std::exp(kl_sum / static_cast<double>(rows));
}

GEOMX_REGISTER(ps::GlobalRuleRegistry, "gan-adam",
               [](const ps::JobDescription& job) -> Result<std::unique_ptr<ps::GlobalRule>> {
                 if (job.optimizer.name != "adam") {
                   return Status::InvalidArgument("rule gan-adam: the job's optimizer is '" + job.optimizer.name +
                                                  "', expected adam");
                 }
                 return std::unique_ptr<ps::GlobalRule>(std::make_unique<GanAdamRule>(job.optimizer));
               },
               "server-side Adam on the gan estimator's generator and discriminator tables (w - w0)");

}  // namespace geomx::algorithms
