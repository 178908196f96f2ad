// gan: a generative adversarial network on one-channel square images (docs/algorithms.md#gan). The networks, the
// training iteration and its distributed form are in gan.h; this file is the Estimator around them: the data, the
// schedule, the evaluations (a grid of samples and the classifier score) and the model file.
//
// The training rows are image pixels in the table's value range [lo, hi] (the smallest and largest training value
// over every shard: 0 and 1 for data.normalize: false, the normalised black and white otherwise); the networks see
// them mapped to [-1, 1], and generated images are mapped back to [lo, hi] for the classifier, so a classifier
// trained on the same data set (with the same data.normalize) rates both.
//
// The classifier score (gan.h ClassifierScore) needs a classifier of the data set: `classifier: RUN` loads the last
// checkpoint of a `geomx train` run folder (or a checkpoint file) of an image model (geomx-cnn) for these images and
// classes; `classifier: auto` trains a geomx-cnn on the training rows first (classifier_epochs, Adam 0.001, batch 64,
// on the evaluating worker's shard when distributed). Only the evaluating worker (rank 0, or the single process)
// holds a classifier; it scores `score_samples` generated images (a fixed noise stream, so evaluations are
// comparable) and as many real images of the evaluation table, and writes the 8 x 8 sample grid.
//
// Predict() is the classifier's: the class of each row and its class probabilities (the p(y|x) of the score), so
// `accuracy` in the test metrics is the classifier's, saying how far its score can be trusted; the GAN's own figures
// are ModelMetrics: score, real_score and score_ratio.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/gan.h"
#include "algorithms/estimators/image_grid.h"
#include "algorithms/estimators/shard_checks.h"
#include "algorithms/train/trainer.h"
#include "engine/autograd/variable.h"
#include "engine/backend_registry.h"
#include "engine/base/rng.h"
#include "engine/ops.h"
#include "nn/checkpoint.h"
#include "nn/models/models.h"
#include "nn/optim/optimizer.h"
#include "nn/transfer.h"

namespace geomx::algorithms {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kGridImages = 64;  // the sample grid: 8 x 8
constexpr int64_t kGridColumns = 8;
constexpr int64_t kEvalBatch = 500;
constexpr int64_t kCancelCheckSteps = 32;
constexpr int64_t kMaxWidth = 2048;
constexpr int64_t kMaxClasses = 1000;
constexpr int64_t kMinSide = 16;  // geomx-cnn's two 5x5 convolutions and 2x2 pools need 16 x 16
constexpr int64_t kClassifierBatch = 64;
// Streams of the seed.
constexpr uint64_t kNetStream = 0x67616e0001, kNoiseStream = 0x67616e0002, kOrderStream = 0x67616e0003,
                   kGridStream = 0x67616e0004, kScoreStream = 0x67616e0005, kClassifierStream = 0x67616e0006;

struct GanConfig {
  GanShape shape;  // image is the data's
  GanAdam adam;
  float real_label = 1.0f;
  float average = 0.999f;  // decay of G's moving average (GanNetworks::EnableAverage); 0: none
  int64_t epochs = 5;
  int64_t batch_size = 64;
  int64_t eval_every = 1000;  // 0: at the end only
  int64_t score_samples = 10000;
  std::string classifier = "auto";
  int64_t classifier_epochs = 2;
  int64_t seed = 0;  // 0: FitContext::seed
};

// Normal noise [n, noise] from `rng`.
Tensor Noise(int64_t n, int64_t noise, Rng& rng) {
  Tensor z = Tensor::Empty(Shape{n, noise});
  float* v = z.data<float>();
  for (int64_t i = 0; i < n * noise; ++i) v[i] = static_cast<float>(rng.Normal());
  return z;
}

// A module's parameters then buffers, flat.
std::vector<float> FlatState(nn::Module& m) {
  std::vector<float> out = FlatParameters(m);
  for (const auto& [name, t] : m.Buffers()) {
    const std::vector<float> v = t->ToFloatVector();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

int64_t StateSize(nn::Module& m) {
  int64_t n = m.NumParameters();
  for (const auto& [name, t] : m.Buffers()) n += t->numel();
  return n;
}

void SetFlatState(nn::Module& m, std::span<const float> values) {
  const auto params = static_cast<size_t>(m.NumParameters());
  Status s = SetFlatParameters(m, values.subspan(0, params));
  GEOMX_CHECK(s.ok()) << s.ToString();
  size_t at = params;
  for (const auto& [name, t] : m.Buffers()) {
    const auto n = static_cast<size_t>(t->numel());
    t->CopyFrom(Tensor::FromVector(std::vector<float>(values.begin() + static_cast<std::ptrdiff_t>(at),
                                                      values.begin() + static_cast<std::ptrdiff_t>(at + n)),
                                   t->shape()));
    at += n;
  }
}

class Gan final : public Estimator {
 public:
  explicit Gan(const GanConfig& config) : config_(config) {}

  Status Fit(const data::Table& train, const FitContext& context) override;
  Result<Prediction> Predict(const data::Table& input, int threads) const override;
  Result<Prediction> PredictAcross(const data::Table& input, int threads, Collective* collective) const override;
  void Save(ModelWriter* out) const override;
  Status Load(const ModelReader& in) override;
  Metrics ModelMetrics(const data::Table& table, const Prediction& prediction) const override;
  std::vector<RowTableSpec> RowTables(int64_t cols, int num_classes) const override;
  std::vector<Artefact> Artefacts() const override;

 private:
  GanShape ShapeFor(int64_t cols) const {
    GanShape s = config_.shape;
    s.image = cols;
    return s;
  }
  Status CheckShard(const data::Table& train) const;
  // The evaluating worker's classifier: loaded (config_.classifier) or trained on `train` (auto).
  Status PrepareClassifier(const data::Table& train, const FitContext& context);
  Status LoadClassifier(const std::string& where);
  Status TrainClassifier(const data::Table& train, const FitContext& context);
  nn::ModelConfig ClassifierConfig(const std::string& name) const;
  // rows x classes_ class probabilities of `n` images in table space (values, n x image).
  std::vector<float> ClassProbabilities(const float* values, int64_t n) const;
  // Generated images in table space: n x image values, from the fixed score stream.
  double GeneratedScore() const;
  // The score of the first min(score_samples, rows) rows of `table`.
  double RealScore(const data::Table& table) const;
  std::string SampleGrid() const;

  GanConfig config_;
  uint64_t seed_ = 0;
  int64_t side_ = 0, classes_ = 0;
  float lo_ = 0, hi_ = 1;
  std::unique_ptr<GanNetworks> nets_;
  std::string classifier_model_;            // empty: this process has no classifier
  std::unique_ptr<nn::Module> classifier_;  // evaluating worker only
  std::string grid_png_;                    // the last evaluation's sample grid
  // The networks' modules are not thread-safe: Predict() and ModelMetrics(), const and callable from several
  // threads by the Estimator contract, take turns.
  mutable std::mutex predict_mu_;
};

Status Gan::CheckShard(const data::Table& train) const {
  if (train.sparse) return Status::InvalidArgument("gan: the training table is sparse; gan needs dense image rows");
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(train.cols))));
  if (train.cols < kMinSide * kMinSide || side * side != train.cols) {
    return Status::InvalidArgument("gan: rows of " + std::to_string(train.cols) + " values are not square one-channel "
                                   "images of at least 16 x 16 (data.name: fashion-mnist or mnist)");
  }
  if (train.num_classes < 1 || train.num_classes > kMaxClasses) {
    return Status::InvalidArgument("gan: the training table has " + std::to_string(train.num_classes) +
                                   " classes; the classifier score needs labelled images of 1 to 1000 classes");
  }
  for (float v : train.dense) {
    if (!std::isfinite(v)) return Status::InvalidArgument("gan: " + train.source + " holds a value that is not finite");
  }
  return Status::Ok();
}

nn::ModelConfig Gan::ClassifierConfig(const std::string& name) const {
  nn::ModelConfig mc;
  mc.name = name;
  mc.in_channels = 1;
  mc.in_height = static_cast<int>(side_);
  mc.in_width = static_cast<int>(side_);
  mc.num_classes = static_cast<int>(classes_);
  return mc;
}

Status Gan::LoadClassifier(const std::string& where) {
  const std::string at = "algorithm.classifier: " + where;
  std::error_code ec;
  fs::path file = where;
  if (!fs::exists(file, ec)) {
    return Status::InvalidArgument(at + " does not exist (give a run folder of `geomx train` or a checkpoint file)");
  }
  if (fs::is_directory(file, ec)) {  // a run folder: its last checkpoint, as model.init_from finds it
    std::ifstream last(file / "checkpoints" / "LAST");
    std::string name;
    if (!last || !(last >> name) || !fs::exists(file / "checkpoints" / name, ec)) {
      return Status::InvalidArgument(at + " is not a run folder with a checkpoint (checkpoints/LAST)");
    }
    file = file / "checkpoints" / name;
  }
  nn::CheckpointMeta meta;
  Status read = nn::ReadTensorFile(file, nullptr, &meta);
  if (!read.ok()) return Status::InvalidArgument(at + ": " + read.message());
  const std::string model_name = meta.model_name.empty() ? "geomx-cnn" : meta.model_name;
  Rng rng(seed_ ^ kClassifierStream);
  Result<std::unique_ptr<nn::Module>> model = nn::CreateModel(ClassifierConfig(model_name), rng);
  if (!model.ok()) return Status::InvalidArgument(at + ": a " + model_name + ": " + model.status().message());
  Result<nn::InitFromReport> report = nn::InitFromCheckpoint(file, model_name, **model);
  if (!report.ok()) return Status::InvalidArgument(at + ": " + report.status().message());
  if (!report->kept_fresh.empty() || !report->not_in_file.empty()) {
    const std::string first = report->kept_fresh.empty() ? report->not_in_file[0] : report->kept_fresh[0];
    return Status::InvalidArgument(at + ": the " + model_name + " in " + file.string() + " is not one for " +
                                   std::to_string(side_) + " x " + std::to_string(side_) + " images of " +
                                   std::to_string(classes_) + " classes (" + first + " differs)");
  }
  classifier_ = std::move(model).value();
  classifier_model_ = model_name;
  return Status::Ok();
}

Status Gan::TrainClassifier(const data::Table& train, const FitContext& context) {
  Rng rng(seed_ ^ kClassifierStream);
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<nn::Module> model, nn::CreateModel(ClassifierConfig("geomx-cnn"), rng));
  nn::OptimizerConfig oc;  // adam, lr 0.001
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<nn::Optimizer> opt, nn::CreateOptimizer(oc));
  train::LocalUpdate update(opt.get());
  const std::vector<nn::Parameter*> params = model->Parameters();
  model->Train();
  std::vector<int64_t> order(static_cast<size_t>(train.rows));
  for (int64_t i = 0; i < train.rows; ++i) order[static_cast<size_t>(i)] = i;
  const int64_t image = train.cols;
  int64_t round = 0;
  for (int64_t epoch = 0; epoch < config_.classifier_epochs; ++epoch) {
    for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[rng.Below(k)]);
    for (int64_t start = 0; start < train.rows; start += kClassifierBatch) {
      if (context.Interrupted()) return Status::Cancelled("gan: interrupted while training the classifier");
      const int64_t n = std::min(kClassifierBatch, train.rows - start);
      Tensor x = Tensor::Empty(Shape{n, 1, side_, side_});
      std::vector<int64_t> labels(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        const int64_t r = order[static_cast<size_t>(start + j)];
        std::copy(train.Row(r), train.Row(r) + image, x.data<float>() + j * image);
        labels[static_cast<size_t>(j)] = train.labels[static_cast<size_t>(r)];
      }
      const Tensor y = Tensor::FromVectorI64(labels, Shape{n});
      GEOMX_RETURN_IF_ERROR(train::TrainStep(*model, update, params, x, y, round++).status());
    }
  }
  classifier_ = std::move(model);
  classifier_model_ = "geomx-cnn";
  return Status::Ok();
}

Status Gan::PrepareClassifier(const data::Table& train, const FitContext& context) {
  Status s = config_.classifier == "auto" ? TrainClassifier(train, context) : LoadClassifier(config_.classifier);
  if (s.ok()) classifier_->Eval();
  return s;
}

std::vector<float> Gan::ClassProbabilities(const float* values, int64_t n) const {
  autograd::NoGradGuard no_grad;
  const int64_t image = side_ * side_;
  std::vector<float> out;
  out.reserve(static_cast<size_t>(n * classes_));
  for (int64_t start = 0; start < n; start += kEvalBatch) {
    const int64_t m = std::min(kEvalBatch, n - start);
    Tensor x = Tensor::Empty(Shape{m, 1, side_, side_});
    std::copy(values + start * image, values + (start + m) * image, x.data<float>());
    const Tensor p = ops::Softmax(classifier_->Forward(autograd::Variable(x)).data());
    const std::vector<float> v = p.ToFloatVector();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

double Gan::GeneratedScore() const {
  const int64_t n = config_.score_samples, image = side_ * side_;
  Rng rng(seed_ ^ kScoreStream);
  std::vector<float> images(static_cast<size_t>(n * image));
  for (int64_t start = 0; start < n; start += kEvalBatch) {
    const int64_t m = std::min(kEvalBatch, n - start);
    const std::vector<float> t = nets_->Generate(Noise(m, config_.shape.noise, rng)).ToFloatVector();
    for (size_t i = 0; i < t.size(); ++i) {
      images[static_cast<size_t>(start * image) + i] = lo_ + (t[i] + 1.0f) * 0.5f * (hi_ - lo_);
    }
  }
  return ClassifierScore(ClassProbabilities(images.data(), n), n, classes_);
}

double Gan::RealScore(const data::Table& table) const {
  const int64_t n = std::min(config_.score_samples, table.rows);
  if (n == 0 || table.sparse || table.cols != side_ * side_) return -1;
  return ClassifierScore(ClassProbabilities(table.dense.data(), n), n, classes_);
}

std::string Gan::SampleGrid() const {
  Rng rng(seed_ ^ kGridStream);
  const std::vector<float> t = nets_->Generate(Noise(kGridImages, config_.shape.noise, rng)).ToFloatVector();
  return EncodeGrayPng(TileImages(t, kGridImages, side_, kGridColumns, 2));
}

Status Gan::Fit(const data::Table& train, const FitContext& context) {
  Collective* collective = context.collective;
  const int rank = collective != nullptr ? collective->rank() : 0;
  const bool evaluator = rank == 0;
  seed_ = config_.seed != 0 ? static_cast<uint64_t>(config_.seed) : context.seed;
  BackendFor(DeviceKind::kCpu).SetNumThreads(std::max(1, context.threads));
  Status local = CheckShard(train);
  if (local.ok()) {
    side_ = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(train.cols))));
    classes_ = train.num_classes;
    if (evaluator) local = PrepareClassifier(train, context);
  }
  GEOMX_ASSIGN_OR_RETURN(const std::vector<int64_t> rows_per_worker, ExchangeVerdicts("gan", train, local, collective));
  int64_t steps_per_epoch = 0;
  for (int64_t r : rows_per_worker) {
    steps_per_epoch = std::max(steps_per_epoch, (r + config_.batch_size - 1) / config_.batch_size);
  }
  if (steps_per_epoch == 0) return Status::InvalidArgument("gan: the training table is empty");

  // The value range of the images over every shard (an empty shard contributes nothing).
  float lo = INFINITY, hi = -INFINITY;
  for (float v : train.dense) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (collective != nullptr) {
    GEOMX_ASSIGN_OR_RETURN(const std::vector<float> all,
                           collective->AllGather("gan.range", std::vector<float>{lo, hi}));
    for (size_t i = 0; i + 1 < all.size(); i += 2) {
      lo = std::min(lo, all[i]);
      hi = std::max(hi, all[i + 1]);
    }
  }
  if (!(hi > lo)) return Status::InvalidArgument("gan: every training value is " + std::to_string(lo));
  lo_ = lo;
  hi_ = hi;

  const GanShape shape = ShapeFor(train.cols);
  nets_ = std::make_unique<GanNetworks>(shape, seed_ ^ kNetStream);
  if (config_.average > 0) nets_->EnableAverage(config_.average);
  GanTrainer trainer(nets_.get(), config_.adam, collective, config_.real_label);
  double real_score = -1;
  if (evaluator && context.observer != nullptr && context.eval != nullptr) real_score = RealScore(*context.eval);

  const int64_t batch = config_.batch_size, total = config_.epochs * steps_per_epoch;
  const float to_unit = 2.0f / (hi_ - lo_);
  Rng noise(seed_ ^ kNoiseStream ^ (static_cast<uint64_t>(rank) << 40));
  std::vector<int64_t> order(static_cast<size_t>(train.rows));
  double window[5] = {0, 0, 0, 0, 0};  // d_loss, g_loss, d_real, d_fake, steps
  for (int64_t step = 0; step < total; ++step) {
    const int64_t epoch = step / steps_per_epoch, within = step % steps_per_epoch;
    if (within == 0 && train.rows > 0) {
      for (int64_t i = 0; i < train.rows; ++i) order[static_cast<size_t>(i)] = i;
      Rng shuffle(seed_ ^ kOrderStream ^ (static_cast<uint64_t>(epoch) * 0x9e3779b97f4a7c15ULL) ^
                  (static_cast<uint64_t>(rank) << 40));
      for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[shuffle.Below(k)]);
    }
    if (collective != nullptr && step % kCancelCheckSteps == kCancelCheckSteps - 1) {
      float cancel = context.Interrupted() ? 1.0f : 0.0f;
      GEOMX_RETURN_IF_ERROR(collective->AllReduceSum("gan.cancel", std::span<float>(&cancel, 1)));
      if (cancel > 0) return Status::Cancelled("gan: interrupted");
    } else if (collective == nullptr && context.Interrupted()) {
      return Status::Cancelled("gan: interrupted");
    }
    // This worker's batch: the next rows of its shuffled shard, wrapping around (a shard smaller than the others,
    // or than the batch, repeats rows so that every worker takes part in every step).
    Tensor real = Tensor::Empty(Shape{batch, train.cols});
    float* x = real.data<float>();
    for (int64_t j = 0; j < batch && train.rows > 0; ++j) {
      const float* row = train.Row(order[static_cast<size_t>((within * batch + j) % train.rows)]);
      for (int64_t c = 0; c < train.cols; ++c) x[j * train.cols + c] = (row[c] - lo_) * to_unit - 1.0f;
    }
    if (train.rows == 0) std::fill(x, x + batch * train.cols, 0.0f);
    GEOMX_ASSIGN_OR_RETURN(const GanStepStats stats, trainer.Step(real, Noise(batch, shape.noise, noise)));
    window[0] += stats.d_loss;
    window[1] += stats.g_loss;
    window[2] += stats.d_real;
    window[3] += stats.d_fake;
    window[4] += 1;
    const bool last = step + 1 == total;
    if (!last && (config_.eval_every == 0 || (step + 1) % config_.eval_every != 0)) continue;
    // An evaluation: the training figures of the window over every worker, then the evaluating worker's grid and
    // score.
    if (collective != nullptr) {
      float sums[5];
      for (int k = 0; k < 5; ++k) sums[k] = static_cast<float>(window[k]);
      GEOMX_RETURN_IF_ERROR(collective->AllReduceSum("gan.progress", sums));
      for (int k = 0; k < 5; ++k) window[k] = sums[k];
    }
    if (evaluator) grid_png_ = SampleGrid();
    if (evaluator && context.observer != nullptr) {
      char name[48];
      std::snprintf(name, sizeof(name), "samples-%06lld.png", static_cast<long long>(step + 1));
      context.observer->OnArtefact(Artefact{name, grid_png_});
      const double n = std::max(1.0, window[4]);
      Metrics metrics = {{"d_loss", window[0] / n}, {"g_loss", window[1] / n}, {"d_real", window[2] / n},
                         {"d_fake", window[3] / n}};
      const double score = GeneratedScore();
      metrics.push_back({"score", score});
      if (real_score > 0) {
        metrics.push_back({"real_score", real_score});
        metrics.push_back({"score_ratio", score / real_score});
      }
      context.observer->OnStep(step + 1, metrics);
    }
    std::fill(window, window + 5, 0.0);
  }
  return Status::Ok();
}

Result<Prediction> Gan::Predict(const data::Table& input, int) const {
  if (classifier_ == nullptr) {
    return Status::FailedPrecondition("gan: this process holds no classifier (the evaluating worker has it)");
  }
  if (input.sparse || input.cols != side_ * side_) {
    return Status::InvalidArgument("gan: " + input.source + " has rows of " + std::to_string(input.cols) +
                                   " values; the model rates dense images of " + std::to_string(side_ * side_));
  }
  std::lock_guard<std::mutex> lock(predict_mu_);
  Prediction out;
  out.proba = ClassProbabilities(input.dense.data(), input.rows);
  out.proba_columns = classes_;
  out.value.resize(static_cast<size_t>(input.rows));
  for (int64_t i = 0; i < input.rows; ++i) {
    const float* p = out.proba.data() + i * classes_;
    out.value[static_cast<size_t>(i)] = static_cast<float>(std::max_element(p, p + classes_) - p);
  }
  return out;
}

Result<Prediction> Gan::PredictAcross(const data::Table& input, int threads, Collective* collective) const {
  // Only the evaluating worker holds the classifier; the others report nothing.
  if (classifier_ == nullptr && collective != nullptr && collective->rank() != 0) return Prediction{};
  return Predict(input, threads);
}

Metrics Gan::ModelMetrics(const data::Table& table, const Prediction&) const {
  if (classifier_ == nullptr || nets_ == nullptr) return {};
  std::lock_guard<std::mutex> lock(predict_mu_);
  const double score = GeneratedScore(), real = RealScore(table);
  Metrics out = {{"score", score}};
  if (real > 0) {
    out.push_back({"real_score", real});
    out.push_back({"score_ratio", score / real});
  }
  return out;
}

std::vector<RowTableSpec> Gan::RowTables(int64_t cols, int) const {
  return GanRowTables(ShapeFor(std::max<int64_t>(1, cols)), config_.adam);
}

std::vector<Artefact> Gan::Artefacts() const {
  if (grid_png_.empty()) return {};
  return {Artefact{"samples.png", grid_png_}};
}

void Gan::Save(ModelWriter* out) const {
  if (nets_ == nullptr) return;  // not fitted: Load will report the missing sections
  const GanShape& s = nets_->shape();
  // The seed (its bits as an int64) fixes the score's noise, so `geomx eval` reproduces the run's score.
  out->PutInts("gan.shape", std::vector<int64_t>{s.noise, s.width, side_, classes_, static_cast<int64_t>(seed_)});
  out->PutFloats("gan.range", std::vector<float>{lo_, hi_});
  out->PutFloats("gan.generator", FlatParameters(nets_->generator()));
  out->PutFloats("gan.discriminator", FlatParameters(nets_->discriminator()));
  if (nets_->averaging()) out->PutFloats("gan.generator_average", nets_->average());
  out->PutString("gan.classifier_model", classifier_model_);
  if (classifier_ != nullptr) out->PutFloats("gan.classifier", FlatState(*classifier_));
}

Status Gan::Load(const ModelReader& in) {
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts("gan.shape", &shape, 5));
  const int64_t noise = shape[0], width = shape[1], side = shape[2], classes = shape[3];
  if (noise < 1 || noise > 4096 || width < 1 || width > kMaxWidth || side < kMinSide || side > 4096 || classes < 1 ||
      classes > kMaxClasses) {
    return Status::DataLoss(in.source() + ": section 'gan.shape' holds an impossible shape");
  }
  std::vector<float> range, g, d;
  GEOMX_RETURN_IF_ERROR(in.GetFloats("gan.range", &range, 2));
  if (!(range[1] > range[0])) return Status::DataLoss(in.source() + ": section 'gan.range' is empty");
  auto nets = std::make_unique<GanNetworks>(GanShape{.noise = noise, .width = width, .image = side * side}, 0);
  GEOMX_RETURN_IF_ERROR(in.GetFloats("gan.generator", &g, nets->generator().NumParameters()));
  GEOMX_RETURN_IF_ERROR(in.GetFloats("gan.discriminator", &d, nets->discriminator().NumParameters()));
  GEOMX_RETURN_IF_ERROR(SetFlatParameters(nets->generator(), g));
  GEOMX_RETURN_IF_ERROR(SetFlatParameters(nets->discriminator(), d));
  if (in.Has("gan.generator_average")) {
    std::vector<float> average;
    GEOMX_RETURN_IF_ERROR(in.GetFloats("gan.generator_average", &average, nets->generator().NumParameters()));
    GEOMX_RETURN_IF_ERROR(nets->SetAverage(average));
  }
  side_ = side;
  classes_ = classes;
  std::string model_name;
  GEOMX_RETURN_IF_ERROR(in.GetString("gan.classifier_model", &model_name));
  std::unique_ptr<nn::Module> classifier;
  if (!model_name.empty()) {
    Rng rng(0);
    Result<std::unique_ptr<nn::Module>> m = nn::CreateModel(ClassifierConfig(model_name), rng);
    if (!m.ok()) {
      return Status::DataLoss(in.source() + ": the classifier '" + model_name + "': " + m.status().message());
    }
    std::vector<float> state;
    GEOMX_RETURN_IF_ERROR(in.GetFloats("gan.classifier", &state, StateSize(**m)));
    SetFlatState(**m, state);
    classifier = std::move(m).value();
    classifier->Eval();
  }
  config_.shape.noise = noise;
  config_.shape.width = width;
  seed_ = static_cast<uint64_t>(shape[4]);
  lo_ = range[0];
  hi_ = range[1];
  nets_ = std::move(nets);
  classifier_ = std::move(classifier);
  classifier_model_ = model_name;
  return Status::Ok();
}

EstimatorDef MakeGanDef() {
  EstimatorDef def;
  def.name = "gan";
  def.title = "Generative Adversarial Network";
  def.task = data::TableTask::kClassification;  // labelled images: the classifier of the score learns from them
  def.help =
      "A GAN of two multi-layer perceptrons on one-channel square images (fashion-mnist, mnist): G noise-width-"
      "2width-image (ReLU, tanh), D image-2width-width-1 (leaky ReLU 0.2), trained alternately with Adam on binary "
      "cross-entropy (D on real and generated images, then G with the non-saturating loss). Each evaluation writes "
      "an 8 x 8 grid of samples (samples-<step>.png) and reports the classifier score exp(E KL(p(y|x) || p(y))) of "
      "generated and of real test images, from a classifier of the data set (classifier: a run folder, or auto). "
      "Test metrics: score, real_score, score_ratio, and accuracy (the classifier's).";
  def.distributed =
      "G and D are two separate row-table keys; per step each worker pushes its D gradient, the global server "
      "runs Adam on the sum and every worker pulls the new D, then the same for G";
  def.params = {
      IntParam("noise", 100, 1, 4096, "values of the noise vector z ~ N(0, I) that G turns into an image"),
      IntParam("width", 256, 1, kMaxWidth, "hidden width: G noise-width-2width-image, D image-2width-width-1"),
      IntParam("epochs", 5, 1, 100000, "passes over the training images (steps per epoch: the largest shard's rows / "
               "batch_size)"),
      IntParam("batch_size", 64, 1, 65536, "real images per step and worker (and as many generated ones)"),
      PositiveParam("lr", 0.0002, "Adam learning rate of both networks"),
      RangeParam("beta1", 0.5, 0, false, 1, true, "Adam's first-moment decay"),
      RangeParam("beta2", 0.999, 0, false, 1, true, "Adam's second-moment decay"),
      RangeParam("real_label", 1, 0.5, false, 1, false, "D's target for real images (0.9: one-sided label "
                 "smoothing, Salimans et al. 2016)"),
      RangeParam("d_dropout", 0, 0, false, 1, true, "dropout after each of D's hidden layers"),
      RangeParam("average", 0.999, 0, false, 1, true, "decay of an exponential moving average of G's weights, "
                 "which is what the samples, the score and the model file show (Yazici et al. 2019); 0: G itself"),
      IntParam("eval_every", 1000, 0, int64_t{1} << 40, "steps between evaluations (a samples-<step>.png grid and the "
               "score in metrics.jsonl); 0: at the end only"),
      IntParam("score_samples", 10000, 100, 1000000, "generated images (and real test images, at most this many) "
               "the classifier score is computed on"),
      TextParam("classifier", "auto", "run folder (its last checkpoint) or checkpoint file of an image classifier "
                "(geomx-cnn) of this data set, trained with the same data.normalize; auto: train a geomx-cnn on the "
                "training images first"),
      IntParam("classifier_epochs", 2, 1, 1000, "classifier auto: its training epochs (Adam 0.001, batch 64)"),
      IntParam("seed", 0, 0, int64_t{1} << 62, "initial weights, noise and shuffles (0: the run's seed)"),
  };
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> {
    GanConfig c;
    c.shape.noise = v.Int("noise");
    c.shape.width = v.Int("width");
    c.epochs = v.Int("epochs");
    c.batch_size = v.Int("batch_size");
    c.adam.lr = static_cast<float>(v.Number("lr"));
    c.adam.beta1 = static_cast<float>(v.Number("beta1"));
    c.adam.beta2 = static_cast<float>(v.Number("beta2"));
    c.real_label = static_cast<float>(v.Number("real_label"));
    c.shape.d_dropout = static_cast<float>(v.Number("d_dropout"));
    c.average = static_cast<float>(v.Number("average"));
    c.eval_every = v.Int("eval_every");
    c.score_samples = v.Int("score_samples");
    c.classifier = v.TextValue("classifier");
    c.classifier_epochs = v.Int("classifier_epochs");
    c.seed = v.Int("seed");
    return std::make_unique<Gan>(c);
  };
  return def;
}

}  // namespace

GEOMX_REGISTER_ESTIMATOR(MakeGanDef());

}  // namespace geomx::algorithms
