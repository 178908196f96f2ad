// The gan estimator (algorithms/estimators/gan.h, gan_estimator.cc; docs/algorithms.md#gan): the classifier score
// and the server-side Adam on hand-built cases, the generator and the discriminator as separate keys of the job, one
// step of 2 data centres x 2 workers (in-process and over the parameter server's tiers) against the single-process
// step on the union of their batches, the image grid and its PNG, and a whole small fit with its run-folder files,
// model file and parameter errors.
#include "algorithms/estimators/gan.h"

#include <gtest/gtest.h>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "algorithms/cluster/worker_session.h"
#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/fit_job.h"
#include "algorithms/estimators/image_grid.h"
#include "algorithms/estimators/model_io.h"
#include "algorithms/estimators/ps_collective.h"
#include "engine/ops.h"
#include "tests/algorithms/two_tier_job.h"
#include "tests/algorithms/estimators/forwarding_collective.h"
#include "tests/testutil.h"

namespace geomx::algorithms {
namespace {

constexpr int kWorkers = 4;
constexpr int64_t kBatch = 3;  // rows per worker and step
const GanShape kSmall{.noise = 8, .width = 16, .image = 256};

// ---- the classifier score ----

TEST(GanScoreTest, HandBuiltProbabilityTables) {
  // Every image surely one class, the two classes equally frequent: KL = log 2 for each, score 2 = the classes.
  EXPECT_NEAR(ClassifierScore(std::vector<float>{1, 0, 0, 1}, 2, 2), 2.0, 1e-12);
  // The same distribution for every image: p(y|x) = p(y), score 1.
  EXPECT_NEAR(ClassifierScore(std::vector<float>{0.2f, 0.8f, 0.2f, 0.8f, 0.2f, 0.8f}, 3, 2), 1.0, 1e-12);
  // p = (0.9, 0.1), (0.5, 0.5): p(y) = (0.7, 0.3); KL_1 = 0.9 ln(9/7) + 0.1 ln(1/3) = 0.1163218,
  // KL_2 = 0.5 ln(5/7) + 0.5 ln(5/3) = 0.0871768; exp of their mean = 1.1071058.
  EXPECT_NEAR(ClassifierScore(std::vector<float>{0.9f, 0.1f, 0.5f, 0.5f}, 2, 2), 1.1071058, 1e-6);
  // Zeros count 0: rows (1,0,0), (0,1,0), (1/2,1/2,0); p(y) = (1/2,1/2,0); KL = ln 2, ln 2, 0; score 2^(2/3).
  EXPECT_NEAR(ClassifierScore(std::vector<float>{1, 0, 0, 0, 1, 0, 0.5f, 0.5f, 0}, 3, 3), std::cbrt(4.0), 1e-6);
}

// ---- the server-side Adam ----

TEST(GanAdamTest, TwoRoundsOfOneRowByHand) {
  nn::OptimizerConfig adam;
  adam.lr = 0.1f;
  adam.beta1 = 0.5f;
  adam.beta2 = 0.9f;
  adam.eps = 1e-8f;
  GanAdamState state;
  // A table of 3 rows of 2; round 1 pushes row 1 with g = (2, -1).
  std::vector<float> values = {2, -1};
  GanAdamRound(adam, 6, 2, {1}, &values, &state);
  // Bias-corrected first step: m_hat = g, v_hat = g^2, delta = -lr g / (|g| + eps).
  EXPECT_NEAR(values[0], -0.1, 1e-7);
  EXPECT_NEAR(values[1], 0.1, 1e-7);
  EXPECT_EQ(state.step, 1);
  // Round 2, row 1 with g = (4, -1): m = 0.25 g1 + 0.5 g2, v = 0.09 g1^2 + 0.1 g2^2, corrections 0.75 and 0.19.
  values = {4, -1};
  GanAdamRound(adam, 6, 2, {1}, &values, &state);
  const double step0 = 0.1 * (2.5 / 0.75) / (std::sqrt(1.96 / 0.19) + 1e-8);
  const double step1 = 0.1 * (-0.75 / 0.75) / (std::sqrt(0.19 / 0.19) + 1e-8);
  EXPECT_NEAR(values[0], -0.1 - step0, 1e-6);
  EXPECT_NEAR(values[1], 0.1 - step1, 1e-6);
  // Rows that were not pushed keep a zero delta.
  EXPECT_EQ(state.delta[0], 0.0f);
  EXPECT_EQ(state.delta[5], 0.0f);
}

// ---- G and D as separate keys ----

TEST(GanTablesTest, GeneratorAndDiscriminatorAreSeparateKeysOfTheJob) {
  const std::vector<RowTableSpec> tables = GanRowTables(GanShape{}, GanAdam{});
  ASSERT_EQ(tables.size(), 2u);
  // G 100-256-512-784: 25,856 + 131,584 + 402,192 = 559,632 floats, 547 rows of 1,024 (padded);
  // D 784-512-256-1: 401,920 + 131,328 + 257 = 533,505 floats, 522 rows.
  EXPECT_EQ(tables[0].name, "gan.generator");
  EXPECT_EQ(tables[0].rows, 547u);
  EXPECT_EQ(tables[1].name, "gan.discriminator");
  EXPECT_EQ(tables[1].rows, 522u);
  for (const RowTableSpec& t : tables) {
    EXPECT_EQ(t.width, 1024u);
    EXPECT_EQ(t.rule, "gan-adam");
    EXPECT_EQ(t.hyper.name, "adam");
    EXPECT_FLOAT_EQ(t.hyper.lr, 2e-4f);
    EXPECT_FLOAT_EQ(t.hyper.beta1, 0.5f);
  }
  GanNetworks nets(GanShape{}, 1);
  EXPECT_EQ(nets.generator().NumParameters(), 559632);
  EXPECT_EQ(nets.discriminator().NumParameters(), 533505);
  Result<ps::JobDescription> job = EstimatorJobDescription(tables);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->rule, "gan-adam");
  const ps::KeyDef* g = nullptr;
  const ps::KeyDef* d = nullptr;
  for (const ps::KeyDef& k : job->schema.keys()) {
    if (k.name == "gan.generator") g = &k;
    if (k.name == "gan.discriminator") d = &k;
  }
  ASSERT_NE(g, nullptr);
  ASSERT_NE(d, nullptr);
  EXPECT_NE(g->key, d->key);
  EXPECT_EQ(g->elems, 547u * 1024u);
  EXPECT_EQ(d->elems, 522u * 1024u);
  EXPECT_EQ(g->layout, ps::KeyLayoutKind::kRowSparse);
  EXPECT_EQ(d->layout, ps::KeyLayoutKind::kRowSparse);
}

// Forwards to another collective and records every row-table round (table, rows pushed).
class RecordingCollective final : public ForwardingCollective {
 public:
  using ForwardingCollective::ForwardingCollective;
  Result<RowUpdate> PushRowGradients(const RowTableSpec& t, std::span<const uint64_t> rows,
                                     std::span<const float> grads) override {
    rounds.emplace_back(t.name, rows.size());
    return ForwardingCollective::PushRowGradients(t, rows, grads);
  }
  std::vector<std::pair<std::string, size_t>> rounds;
};

TEST(GanTrainerTest, EachStepPushesAllOfDThenAllOfG) {
  ThreadCollectiveGroup group(1);
  RecordingCollective recorder(group.Worker(0));
  GanNetworks nets(kSmall, 5);
  const std::vector<float> g0 = FlatParameters(nets.generator());
  GanTrainer trainer(&nets, GanAdam{}, &recorder);
  for (int step = 0; step < 2; ++step) {
    Result<GanStepStats> s = trainer.Step(testing::RandomTensor(Shape{kBatch, 256}, 10 + step),
                                          testing::RandomTensor(Shape{kBatch, 8}, 20 + step));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  const std::vector<RowTableSpec> tables = GanRowTables(kSmall, GanAdam{});
  // G 8-16-32-256: 144 + 544 + 8,448 = 9,136 floats (9 rows); D 256-32-16-1: 8,224 + 528 + 17 = 8,769 (9 rows).
  ASSERT_EQ(tables[0].rows, 9u);
  ASSERT_EQ(tables[1].rows, 9u);
  const std::vector<std::pair<std::string, size_t>> want = {
      {"gan.discriminator", 9}, {"gan.generator", 9}, {"gan.discriminator", 9}, {"gan.generator", 9}};
  EXPECT_EQ(recorder.rounds, want);
  EXPECT_NE(FlatParameters(nets.generator()), g0) << "the G rounds moved G";
}

// ---- one step across workers = the single-process step ----

struct Batches {
  std::vector<Tensor> real, z;  // per worker
  Tensor all_real, all_z;       // their union, in rank order
};

Batches MakeBatches(int step) {
  Batches b;
  for (int r = 0; r < kWorkers; ++r) {
    b.real.push_back(testing::RandomTensor(Shape{kBatch, 256}, 100 * step + r, -1, 1));
    b.z.push_back(testing::RandomTensor(Shape{kBatch, 8}, 100 * step + 50 + r, -2, 2));
  }
  b.all_real = ops::Concat(b.real, 0);
  b.all_z = ops::Concat(b.z, 0);
  return b;
}

struct Weights {
  std::vector<float> g, d;
};

Weights SingleProcess(int steps) {
  GanNetworks nets(kSmall, 7);
  GanTrainer trainer(&nets, GanAdam{}, nullptr);
  for (int s = 0; s < steps; ++s) {
    const Batches b = MakeBatches(s);
    EXPECT_TRUE(trainer.Step(b.all_real, b.all_z).ok());
  }
  return {FlatParameters(nets.generator()), FlatParameters(nets.discriminator())};
}

// Runs `steps` steps as worker `rank` of `collective`.
Status WorkerSteps(Collective* collective, int steps, Weights* out) {
  GanNetworks nets(kSmall, 7);
  GanTrainer trainer(&nets, GanAdam{}, collective);
  for (int s = 0; s < steps; ++s) {
    const Batches b = MakeBatches(s);
    GEOMX_RETURN_IF_ERROR(trainer.Step(b.real[collective->rank()], b.z[collective->rank()]).status());
  }
  *out = {FlatParameters(nets.generator()), FlatParameters(nets.discriminator())};
  return Status::Ok();
}

// Equal up to float rounding: the summed gradient differs from the union's in the order of its additions, and
// Adam's first step, lr g / (|g| + eps), moves each weight by about lr = 2e-4 whatever g's size.
void ExpectSameWeights(const Weights& got, const Weights& want, const std::string& who) {
  for (const auto& [a, b, name] : {std::tuple{&got.g, &want.g, "G"}, std::tuple{&got.d, &want.d, "D"}}) {
    ASSERT_EQ(a->size(), b->size());
    double worst = 0;
    for (size_t i = 0; i < a->size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>((*a)[i]) - (*b)[i]));
    EXPECT_LT(worst, 2e-6) << who << " " << name;
  }
}

TEST(GanDistributedTest, OneStepOfTwoByTwoWorkersEqualsTheSingleProcessStepOnTheUnion) {
  const Weights single1 = SingleProcess(1), single2 = SingleProcess(2);
  // The step moved the networks (Adam's first step: about lr per weight).
  {
    GanNetworks start(kSmall, 7);
    const std::vector<float> d0 = FlatParameters(start.discriminator());
    size_t moved = 0;
    for (size_t i = 0; i < d0.size(); ++i) moved += std::fabs(single1.d[i] - d0[i]) > 1e-4;
    EXPECT_GT(moved, d0.size() / 2);
  }
  // In process: four workers in two data centres of two.
  for (int steps : {1, 2}) {
    ThreadCollectiveGroup group({2, 2});
    std::vector<Weights> got(kWorkers);
    std::vector<Status> status(kWorkers);
    std::vector<std::thread> threads;
    for (int r = 0; r < kWorkers; ++r) {
      threads.emplace_back([&, r] { status[r] = WorkerSteps(group.Worker(r), steps, &got[r]); });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < kWorkers; ++r) {
      ASSERT_TRUE(status[r].ok()) << status[r].ToString();
      const std::string who = "threads, " + std::to_string(steps) + " steps, worker " + std::to_string(r);
      ExpectSameWeights(got[r], steps == 1 ? single1 : single2, who);
    }
  }
  // Over the parameter server: schedulers, local servers and the global server as threads (sync mode fsa).
  Result<ps::JobDescription> job = EstimatorJobDescription(GanRowTables(kSmall, GanAdam{}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::vector<Weights> over_ps(kWorkers);
  auto worker = [&](const cluster::ClusterConfig& c, const std::string& party, int rank,
                    const cluster::RoleEnv& env) -> Status {
    GEOMX_ASSIGN_OR_RETURN(auto session, cluster::WorkerSession::Join(c, party, rank, job->schema, env));
    std::unique_ptr<ps::PsContext> ps = session->MakeContext();
    PsCollective collective(ps.get());
    GEOMX_RETURN_IF_ERROR(WorkerSteps(&collective, 1, &over_ps[collective.rank()]));
    return session->Finish();
  };
  cluster::ClusterConfig config = testing::TwoByTwoConfig(60000);
  ASSERT_EQ(config.sync.mode, "fsa");
  for (const auto& [name, s] : testing::RunTwoTierJob(config, *job, worker)) {
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  }
  for (int r = 0; r < kWorkers; ++r) {
    ExpectSameWeights(over_ps[r], single1, "parameter server, worker " + std::to_string(r));
  }
}

// ---- the picture ----

TEST(ImageGridTest, TilesWithGapsAndEncodesAPngThatInflatesBack) {
  // Two 2x2 images in a row of two, gap 1: a 7 x 4 picture, gray frame; -1 is black, 1 white, 0 -> 128 (rounded).
  const std::vector<float> images = {-1, 1, 0, 5, 1, 1, -1, -1};
  const GrayImage g = TileImages(images, 2, 2, 2, 1);
  ASSERT_EQ(g.width, 7);
  ASSERT_EQ(g.height, 4);
  const std::vector<uint8_t> want = {128, 128, 128, 128, 128, 128, 128,  //
                                     128, 0,   255, 128, 255, 255, 128,  //
                                     128, 128, 255, 128, 0,   0,   128,  //
                                     128, 128, 128, 128, 128, 128, 128};
  EXPECT_EQ(g.pixels, want);
  const std::string png = EncodeGrayPng(g);
  ASSERT_GT(png.size(), 8u + 25u + 12u + 12u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // IHDR: length 13, width 7, height 4, depth 8, gray.
  EXPECT_EQ(png.substr(8, 8), std::string("\0\0\0\x0dIHDR", 8));
  EXPECT_EQ(png.substr(16, 13), std::string("\0\0\0\x07\0\0\0\x04\x08\0\0\0\0", 13));
  // The IEND chunk and its fixed CRC (0xAE426082) close the file.
  EXPECT_EQ(png.substr(png.size() - 12), std::string("\0\0\0\0IEND\xae\x42\x60\x82", 12));
  // IDAT inflates back to the scanlines, each led by filter byte 0.
  const size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  const auto* b = reinterpret_cast<const unsigned char*>(png.data());
  const uint32_t len = (uint32_t{b[idat - 4]} << 24) | (uint32_t{b[idat - 3]} << 16) | (uint32_t{b[idat - 2]} << 8) |
                       uint32_t{b[idat - 1]};
  std::vector<unsigned char> raw(4 * 8);
  uLongf raw_size = raw.size();
  ASSERT_EQ(uncompress(raw.data(), &raw_size, b + idat + 4, len), Z_OK);
  ASSERT_EQ(raw_size, 32u);
  for (int y = 0; y < 4; ++y) {
    EXPECT_EQ(raw[static_cast<size_t>(y * 8)], 0);
    for (int x = 0; x < 7; ++x) {
      EXPECT_EQ(raw[static_cast<size_t>(y * 8 + 1 + x)], want[static_cast<size_t>(y * 7 + x)]);
    }
  }
}

// ---- the estimator ----

class RecordingObserver final : public FitObserver {
 public:
  void OnStep(int64_t step, const Metrics& m) override { steps.emplace_back(step, m); }
  void OnArtefact(const Artefact& a) override { files.push_back(a); }
  std::vector<std::pair<int64_t, Metrics>> steps;
  std::vector<Artefact> files;
};

// The model written to a model file and read back.
Result<FittedModel> SavedAndLoaded(const FittedModel& model) {
  testing::ScratchDir dir;
  const std::string path = (dir.path() / "model.gxm").string();
  GEOMX_RETURN_IF_ERROR(SaveFittedModel(path, model));
  return LoadFittedModel(path);
}

EstimatorJob SmallJob() {
  EstimatorJob job;
  job.algorithm = "gan";
  job.params = {{"noise", "8"}, {"width", "16"}, {"epochs", "2"}, {"batch_size", "32"}, {"eval_every", "8"},
                {"score_samples", "200"}, {"classifier_epochs", "10"}, {"lr", "0.001"}};
  job.data.name = "synthetic";
  job.data.synthetic_shape = {1, 16, 16};
  job.data.synthetic_train = 256;
  job.data.synthetic_test = 128;
  job.data.synthetic_classes = 4;
  job.threads = 1;
  job.seed = 3;
  return job;
}

TEST(GanEstimatorTest, FitWritesGridsAndScoresAndTheModelFileReproducesThem) {
  const EstimatorJob job = SmallJob();
  RecordingObserver observer;
  Result<EstimatorOutcome> o = RunEstimatorJob(job, &observer, nullptr);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  // 256 rows / 32 = 8 steps per epoch, 16 steps: evaluations at 8 and 16.
  ASSERT_EQ(observer.steps.size(), 2u);
  EXPECT_EQ(observer.steps[0].first, 8);
  EXPECT_EQ(observer.steps[1].first, 16);
  ASSERT_EQ(observer.files.size(), 2u);
  EXPECT_EQ(observer.files[0].name, "samples-000008.png");
  EXPECT_EQ(observer.files[1].name, "samples-000016.png");
  for (const Artefact& a : observer.files) EXPECT_EQ(a.contents.substr(1, 3), "PNG");
  for (const char* name : {"d_loss", "g_loss", "d_real", "d_fake", "score", "real_score", "score_ratio"}) {
    EXPECT_GE(MetricValue(observer.steps[1].second, name, -1e9), 0.0) << name;
  }
  // Four Gaussian blobs: the classifier tells them apart; the real images spread over the 4 classes (score near 4).
  EXPECT_GT(MetricValue(o->test, "accuracy"), 0.8);
  const double real = MetricValue(o->test, "real_score"), score = MetricValue(o->test, "score");
  EXPECT_GT(real, 3.0);
  EXPECT_LE(real, 4.0 + 1e-9);
  EXPECT_GE(score, 1.0 - 1e-9);
  EXPECT_NEAR(MetricValue(o->test, "score_ratio"), score / real, 1e-12);
  EXPECT_NEAR(score, MetricValue(observer.steps[1].second, "score"), 1e-12) << "the fixed score noise";
  const std::vector<Artefact> artefacts = o->model.estimator->Artefacts();
  ASSERT_EQ(artefacts.size(), 1u);
  EXPECT_EQ(artefacts[0].name, "samples.png");
  EXPECT_EQ(artefacts[0].contents, observer.files[1].contents);

  // The model file holds G, D, the classifier and the score's seed: eval gives the same figures.
  Result<FittedModel> loaded = SavedAndLoaded(o->model);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Result<PreparedEstimatorJob> prepared = PrepareEstimatorJob(job);
  ASSERT_TRUE(prepared.ok());
  const data::Table& test = prepared->splits.test;
  Result<Prediction> before = o->model.estimator->Predict(test, 1), after = loaded->estimator->Predict(test, 1);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(after->value, before->value);
  EXPECT_EQ(after->proba_columns, 4);
  const Metrics again = loaded->estimator->ModelMetrics(test, *after);
  EXPECT_NEAR(MetricValue(again, "score"), score, 1e-9);
  EXPECT_NEAR(MetricValue(again, "real_score"), real, 1e-9);
}

// G's moving average: two updates by hand (the weight of the average is (1 + t) / (10 + t) while that is under the
// decay), then the decay caps it; Generate() runs a generator holding the average.
TEST(GanAverageTest, FoldsGInByHandAndGeneratesWithTheAverage) {
  GanNetworks nets(kSmall, 1);
  const std::vector<float> w0 = FlatParameters(nets.generator());
  auto shifted = [&](float by) {
    std::vector<float> w = w0;
    for (float& v : w) v += by;
    return w;
  };
  const Tensor z = testing::RandomTensor(Shape{5, kSmall.noise}, 9);
  nets.EnableAverage(0.5f);
  ASSERT_TRUE(SetFlatParameters(nets.generator(), shifted(0.1f)).ok());
  nets.UpdateAverage();  // t = 1: keep 2/11 of the average
  for (size_t i = 0; i < w0.size(); i += 97) {
    ASSERT_NEAR(nets.average()[i], w0[i] + 0.9f / 11.0f, 1e-6f) << i;
  }
  // Generate() is the average's: equal to a generator that holds it, and not G's own output.
  GanNetworks holder(kSmall, 2), plain(kSmall, 1);
  ASSERT_TRUE(SetFlatParameters(holder.generator(), nets.average()).ok());
  ASSERT_TRUE(SetFlatParameters(plain.generator(), shifted(0.1f)).ok());
  EXPECT_TRUE(testing::AllClose(nets.Generate(z), holder.Generate(z), 1e-6f, 1e-6f));
  EXPECT_FALSE(testing::AllClose(nets.Generate(z), plain.Generate(z), 1e-3f, 1e-3f));

  ASSERT_TRUE(SetFlatParameters(nets.generator(), shifted(-0.2f)).ok());
  nets.UpdateAverage();  // t = 2: keep 3/12
  const float second = 0.25f * 0.9f / 11.0f - 0.75f * 0.2f;
  for (size_t i = 0; i < w0.size(); i += 97) ASSERT_NEAR(nets.average()[i], w0[i] + second, 1e-6f) << i;
  // From t = 9 on (10/19 > 0.5) the decay 0.5 is the weight: eight more updates at w0 - 0.2 keep 4/13 ... 9/18,
  // then 0.5 twice, of the distance to w0 - 0.2.
  double gap = second + 0.2;
  for (int t = 3; t <= 10; ++t) {
    nets.UpdateAverage();
    gap *= std::min(0.5, (1.0 + t) / (10.0 + t));
  }
  for (size_t i = 0; i < w0.size(); i += 97) {
    ASSERT_NEAR(nets.average()[i], w0[i] - 0.2f + static_cast<float>(gap), 1e-6f) << i;
  }
  ASSERT_TRUE(SetFlatParameters(holder.generator(), nets.average()).ok());
  EXPECT_TRUE(testing::AllClose(nets.Generate(z), holder.Generate(z), 1e-6f, 1e-6f)) << "refreshed after updates";
  EXPECT_FALSE(nets.SetAverage(std::vector<float>(3, 0.0f)).ok());
}

// With `average` (on by default), the model file keeps the average: the loaded model's score is the fit's.
TEST(GanEstimatorTest, TheAverageIsSavedAndRated) {
  EstimatorJob job = SmallJob();
  job.params["average"] = "0.9";
  Result<EstimatorOutcome> o = RunEstimatorJob(job, nullptr, nullptr);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  Result<FittedModel> loaded = SavedAndLoaded(o->model);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Result<PreparedEstimatorJob> prepared = PrepareEstimatorJob(job);
  ASSERT_TRUE(prepared.ok());
  const Metrics again = loaded->estimator->ModelMetrics(prepared->splits.test, Prediction{});
  EXPECT_NEAR(MetricValue(again, "score"), MetricValue(o->test, "score"), 1e-9);
  // The same job without the average rates G itself: another figure.
  EstimatorJob plain_job = SmallJob();
  plain_job.params["average"] = "0";
  Result<EstimatorOutcome> plain = RunEstimatorJob(plain_job, nullptr, nullptr);
  ASSERT_TRUE(plain.ok());
  EXPECT_NE(MetricValue(plain->test, "score"), MetricValue(o->test, "score"));
}

TEST(GanEstimatorTest, BadParametersAndDataAreRefusedNamingTheKey) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"lr", "0"}, {"beta1", "1"}, {"width", "0"}, {"score_samples", "10"}, {"classifier", "a b"},
           {"classifier", "x;y"}, {"epochs", "many"}}) {
    Result<std::unique_ptr<Estimator>> e = CreateEstimator("gan", {{name, value}});
    ASSERT_FALSE(e.ok()) << name << "=" << value;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find("algorithm." + name + ":"), std::string::npos) << e.status().ToString();
  }
  // A classifier path that does not exist, and rows that are not square images.
  EstimatorJob job = SmallJob();
  job.params["classifier"] = "no/such/run";
  Result<EstimatorOutcome> o = RunEstimatorJob(job, nullptr, nullptr);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.status().message().find("algorithm.classifier: no/such/run does not exist"), std::string::npos)
      << o.status().ToString();
  job = SmallJob();
  job.data.synthetic_shape = {1, 10, 20};
  o = RunEstimatorJob(job, nullptr, nullptr);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("not square"), std::string::npos) << o.status().ToString();
}

}  // namespace
}  // namespace geomx::algorithms
