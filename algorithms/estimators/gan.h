// The GAN of the `gan` estimator (docs/algorithms.md#gan; Goodfellow et al. 2014, "Generative adversarial nets"):
// two multi-layer perceptrons built from the engine's layers (nn::Linear on oneDNN, autograd), the training
// iteration that alternates their updates, its distributed form over the parameter server, and the classifier
// score that rates the samples. The estimator (gan_estimator.cc), `geomx bench kernels --model gan` and the tests use
// this header; the estimator itself registers by name and has no other interface.
//
// One iteration (GanTrainer::Step) on a batch of B real images x in [-1, 1] and B noise vectors z ~ N(0, I):
//   fake = G(z)
//   D step: L_D = BCE(D(x), 1) + BCE(D(fake), 0) (each the mean over its B rows; fake detached), Adam on D
//   G step: L_G = BCE(D'(fake), 1) with the updated D' (the non-saturating loss), Adam on G; D gets no gradient
// BCE is the engine's BinaryCrossEntropyWithLogits (D outputs a logit). This is PyTorch's DCGAN example loop.
//
// Across data centres G and D are two separate keys of the job, the row tables "gan.generator" and
// "gan.discriminator" (each the network's parameters flattened in Module::Parameters() order, padded with zeros to
// rows of kGanTableWidth): in the D step every worker pushes its D gradient divided by the number of workers, the
// servers sum them (local server over its data centre, global server over the data centres) and the global server's
// rule "gan-adam" runs Adam on the sum, then every worker pulls the new D; the G step does the same on the G key.
// The tables hold the change of the weights since the start (w - w0, so they start at zero as row tables do);
// every worker draws the same w0 from the seed. So the workers' networks stay identical, and a step of W workers
// on batches of B computes the single-process step on their union of W x B rows (the mean gradient) up to the
// order of float additions.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "engine/base/status.h"
#include "engine/tensor.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"
#include "nn/optim/optimizer_config.h"

namespace geomx::algorithms {

// The two networks. G: noise - width - 2 width - image (ReLU, ReLU, tanh); D: image - 2 width - width - 1 (leaky
// ReLU of slope 0.2 twice, then a logit). The defaults are the classic MLP GAN: G 100-256-512-784, D 784-512-256-1.
struct GanShape {
  int64_t noise = 100;  // values of z
  int64_t width = 256;  // the narrower hidden layer of each network
  int64_t image = 784;  // values per image (side x side, one channel)
  float d_dropout = 0;  // dropout after each of D's hidden layers (Goodfellow et al. 2014), in [0, 1)
};

// Adam of both networks, with the usual GAN settings (Radford et al. 2016: lr 2e-4, beta1 0.5).
struct GanAdam {
  float lr = 2e-4f;
  float beta1 = 0.5f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
};

inline constexpr char kGanGeneratorTable[] = "gan.generator";
inline constexpr char kGanDiscriminatorTable[] = "gan.discriminator";
inline constexpr uint64_t kGanTableWidth = 1024;  // floats per row of the two tables
inline constexpr char kGanAdamRule[] = "gan-adam";  // the global rule of the two tables
inline constexpr float kGanLeakySlope = 0.2f;       // D's leaky ReLU: max(x, 0.2 x)

// The job's keys for G and D: {generator table, discriminator table}, rule "gan-adam" with Adam's settings.
std::vector<RowTableSpec> GanRowTables(const GanShape& shape, const GanAdam& adam);

// G and D with weights drawn from Rng(seed) (Xavier-uniform weights, zero biases): the same seed gives the same
// networks. Parameter keys fc1.weight, fc1.bias, ..., fc3.bias in each. Owns both; not thread-safe.
class GanNetworks {
 public:
  GanNetworks(const GanShape& shape, uint64_t seed);
  ~GanNetworks();
  GanNetworks(const GanNetworks&) = delete;
  GanNetworks& operator=(const GanNetworks&) = delete;

  nn::Module& generator() { return *generator_; }
  nn::Module& discriminator() { return *discriminator_; }
  const GanShape& shape() const { return shape_; }
  // G(z) without recording gradients: z [N, noise] -> images [N, image] in (-1, 1). With the average enabled
  // (below), the averaged generator's.
  Tensor Generate(const Tensor& z);

  // The exponential moving average of G's weights (Yazici et al. 2019, "The unusual effectiveness of averaging in
  // GAN training"), which Generate() then uses: G itself keeps training, the average is what gets rated and
  // saved. EnableAverage(decay), decay in (0, 1), starts it at G's current weights; UpdateAverage(), after each G
  // update, folds G in with the weight min(decay, (1 + t) / (10 + t)) of the average at its t-th call (t from 1;
  // TensorFlow's ExponentialMovingAverage with num_updates), so the first updates are not dominated by the random
  // start. SetAverage replaces it (a loaded model; enables it, kInvalidArgument for another length).
  void EnableAverage(float decay);
  void UpdateAverage();
  bool averaging() const { return decay_ > 0; }
  const std::vector<float>& average() const { return average_; }
  Status SetAverage(std::span<const float> values);

 private:
  GanShape shape_;
  std::unique_ptr<nn::Module> generator_, discriminator_;
  float decay_ = 0;                       // 0: no average
  int64_t average_updates_ = 0;
  std::vector<float> average_;            // flat, FlatParameters order
  std::unique_ptr<nn::Module> averaged_;  // a generator holding `average_` when Generate() last ran
  bool averaged_stale_ = true;
};

// A network's parameters as one vector, in Parameters() order; and back (kInvalidArgument for another length).
std::vector<float> FlatParameters(nn::Module& net);
Status SetFlatParameters(nn::Module& net, std::span<const float> values);

struct GanStepStats {
  double d_loss = 0;  // L_D of the D step (this worker's batch)
  double g_loss = 0;  // L_G of the G step
  double d_real = 0;  // mean D(x) (a probability) on the real rows, before the D step
  double d_fake = 0;  // mean D(G(z)) on the fake rows, before the D step
};

// Trains a GanNetworks one iteration at a time. `collective` null: one process, Adam runs here (nn::Optimizer);
// otherwise every worker of the job calls Step the same number of times and the updates go through the two row
// tables (above). `real_label` in (0, 1] is the target of the real rows in the D step (1; 0.9 is one-sided label
// smoothing, Salimans et al. 2016). Borrows `nets` and `collective`, which must outlive it. Not thread-safe.
class GanTrainer {
 public:
  GanTrainer(GanNetworks* nets, const GanAdam& adam, Collective* collective, float real_label = 1.0f);
  ~GanTrainer();
  GanTrainer(const GanTrainer&) = delete;
  GanTrainer& operator=(const GanTrainer&) = delete;

  // One iteration (header comment) on real [B, image] (values in [-1, 1]) and z [B, noise], B >= 1, f32 CPU
  // tensors (other shapes abort: programmer errors). Errors: the collective's (a peer or a link that failed).
  Result<GanStepStats> Step(const Tensor& real, const Tensor& z);

 private:
  struct Side;
  Status Update(Side* side);

  GanNetworks* nets_;
  Collective* collective_;
  float real_label_;
  std::unique_ptr<Side> g_, d_;
  Tensor d_targets_, g_targets_;  // [2B, 1] (B ones, B zeros) and [B, 1] ones, for the last B
};

// The state the rule "gan-adam" keeps per row table: the table (deltas w - w0), Adam's moments and its step.
struct GanAdamState {
  std::vector<float> delta, m, v;
  int64_t step = 0;
};

// One round of Adam on a row table of `elems` floats in rows of `width`: `values` (rows.size() x width) hold the
// summed gradients of `rows`; on return they hold those rows' new deltas (state->delta). The step count advances once
// per round; the rows must be distinct and inside the table (the servers check, ps::ApplyRowRound).
void GanAdamRound(const nn::OptimizerConfig& adam, uint64_t elems, uint64_t width, const std::vector<uint64_t>& rows,
                  std::vector<float>* values, GanAdamState* state);

// The classifier score of a set of images (an Inception-Score-like figure, Salimans et al. 2016, with a classifier
// of the data set instead of Inception): exp(E_x KL(p(y|x) || p(y))), p(y) the mean of the rows' p(y|x).
// `probs` holds rows x classes probabilities (row-major; each row sums to 1). It is 1 when every image gets the same
// class distribution and `classes` at most, when each image is one class for certain and the classes are equally
// frequent. Terms with p(y|x) = 0 count 0. Requires rows, classes >= 1 and probs.size() == rows x classes.
double ClassifierScore(std::span<const float> probs, int64_t rows, int64_t classes);

}  // namespace geomx::algorithms
