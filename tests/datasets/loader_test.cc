#include "datasets/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <vector>

namespace geomx::data {
namespace {

// Example i is {i, i + 0.5} (shape {2}) plus, when an Rng is given, a random offset (to see augmentation).
class Counting final : public Dataset {
 public:
  explicit Counting(int64_t n) : n_(n) {
    info_.example_shape = {2};
    info_.num_classes = 5;
  }
  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return n_; }
  int64_t Label(int64_t i) const override { return i % 5; }
  void Get(int64_t i, float* out, Rng* rng) const override {
    const float noise = rng ? rng->UniformF() : 0.0f;
    out[0] = static_cast<float>(i) + noise;
    out[1] = static_cast<float>(i) + 0.5f + noise;
  }

 private:
  DatasetInfo info_;
  int64_t n_;
};

struct Epoch {
  std::vector<std::vector<float>> x;
  std::vector<std::vector<int64_t>> y;
};

Epoch Drain(DataLoader& loader) {
  Epoch e;
  Batch b;
  while (loader.Next(&b)) {
    EXPECT_EQ(b.x.dtype(), DType::kF32);
    EXPECT_EQ(b.y.dtype(), DType::kI64);
    EXPECT_EQ(b.x.dim(0), b.y.dim(0));
    e.x.push_back(b.x.ToFloatVector());
    e.y.push_back(b.y.ToI64Vector());
  }
  return e;
}

LoaderOptions Options(int batch, int prefetch, uint64_t seed = 1) {
  LoaderOptions o;
  o.batch_size = batch;
  o.prefetch = prefetch;
  o.seed = seed;
  return o;
}

TEST(LoaderTest, BatchCountShapesAndLabels) {
  auto d = std::make_shared<Counting>(103);
  DataLoader loader(d, Options(10, 2));
  EXPECT_EQ(loader.num_examples(), 103);
  EXPECT_EQ(loader.batches_per_epoch(), 11);
  loader.StartEpoch(0);
  Batch b;
  int batches = 0;
  std::multiset<int64_t> seen;
  while (loader.Next(&b)) {
    ++batches;
    EXPECT_EQ(b.x.shape(), Shape({batches == 11 ? 3 : 10, 2}));
    const auto x = b.x.ToFloatVector();
    const auto y = b.y.ToI64Vector();
    for (size_t j = 0; j < y.size(); ++j) {
      const auto i = static_cast<int64_t>(x[2 * j]);
      EXPECT_EQ(y[j], i % 5);
      EXPECT_FLOAT_EQ(x[2 * j + 1], static_cast<float>(i) + 0.5f);
      seen.insert(i);
    }
  }
  EXPECT_EQ(batches, 11);
  EXPECT_EQ(seen.size(), 103u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 103u);
  EXPECT_FALSE(loader.Next(&b));  // stays at the end
}

TEST(LoaderTest, DropLastAndUnshuffledOrder) {
  auto d = std::make_shared<Counting>(25);
  LoaderOptions o = Options(10, 0);
  o.drop_last = true;
  o.shuffle = false;
  DataLoader loader(d, o);
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  const Epoch e = Drain(loader);  // Next() before StartEpoch() starts epoch 0
  ASSERT_EQ(e.y.size(), 2u);
  EXPECT_EQ(e.y[0].size(), 10u);
}

TEST(LoaderTest, DeterministicPerSeedAndEpoch) {
  auto d = std::make_shared<Counting>(64);
  DataLoader a(d, Options(8, 2, 7)), b(d, Options(8, 0, 7)), c(d, Options(8, 2, 8));
  a.StartEpoch(3);
  b.StartEpoch(3);
  c.StartEpoch(3);
  const Epoch ea = Drain(a), eb = Drain(b), ec = Drain(c);
  EXPECT_EQ(ea.x, eb.x);
  EXPECT_EQ(ea.y, eb.y);
  EXPECT_NE(ea.x, ec.x);
  a.StartEpoch(4);
  EXPECT_NE(Drain(a).x, ea.x) << "each epoch reshuffles";
  a.StartEpoch(3);
  EXPECT_EQ(Drain(a).x, ea.x) << "the same epoch repeats";
}

TEST(LoaderTest, PrefetchOnAndOffGiveIdenticalBatchesWithAugmentation) {
  auto d = std::make_shared<Counting>(50);
  for (int prefetch : {1, 2, 5}) {
    LoaderOptions on = Options(7, prefetch), off = Options(7, 0);
    on.augment = off.augment = true;
    DataLoader a(d, on), b(d, off);
    a.StartEpoch(2);
    b.StartEpoch(2);
    const Epoch ea = Drain(a), eb = Drain(b);
    EXPECT_EQ(ea.x, eb.x) << prefetch;
    EXPECT_EQ(ea.y, eb.y) << prefetch;
    EXPECT_NE(ea.x[0][0], std::floor(ea.x[0][0])) << "augmentation reached the dataset";
  }
}

TEST(LoaderTest, SkipBatchesResumesAtTheTailOfTheEpoch) {
  auto d = std::make_shared<Counting>(77);
  for (int prefetch : {0, 3}) {
    LoaderOptions o = Options(6, prefetch, 99);
    o.augment = true;
    DataLoader full(d, o), resumed(d, o);
    full.StartEpoch(5);
    const Epoch ef = Drain(full);
    resumed.StartEpoch(5, /*skip_batches=*/4);
    EXPECT_EQ(resumed.next_batch(), 4);
    const Epoch er = Drain(resumed);
    ASSERT_EQ(er.x.size(), ef.x.size() - 4);
    for (size_t k = 0; k < er.x.size(); ++k) {
      EXPECT_EQ(er.x[k], ef.x[k + 4]);
      EXPECT_EQ(er.y[k], ef.y[k + 4]);
    }
    resumed.StartEpoch(5, 1000);
    Batch b;
    EXPECT_FALSE(resumed.Next(&b));
  }
}

TEST(LoaderTest, RanksAreDisjointAndCoverTheDataset) {
  auto d = std::make_shared<Counting>(101);
  std::multiset<int64_t> all;
  for (int rank = 0; rank < 3; ++rank) {
    LoaderOptions o = Options(16, 2, 5);
    o.rank = rank;
    o.world = 3;
    DataLoader loader(d, o);
    loader.StartEpoch(0);
    for (const auto& x : Drain(loader).x) {
      for (size_t j = 0; j < x.size(); j += 2) all.insert(static_cast<int64_t>(x[j]));
    }
  }
  EXPECT_EQ(all.size(), 101u);
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 101u);
}

TEST(LoaderTest, DestructorJoinsMidEpochAndRestartsCleanly) {
  auto d = std::make_shared<Counting>(10000);
  for (int round = 0; round < 20; ++round) {
    DataLoader loader(d, Options(4, 3, static_cast<uint64_t>(round)));
    loader.StartEpoch(0);
    Batch b;
    for (int k = 0; k < round % 4; ++k) ASSERT_TRUE(loader.Next(&b));
    loader.StartEpoch(1, 2);  // abandons epoch 0 mid-way
    ASSERT_TRUE(loader.Next(&b));
  }  // each loader is destroyed with its worker blocked on a full queue
  SUCCEED();
}

TEST(LoaderTest, TrainLoaderOptionsCopiesTheConfig) {
  DataConfig c;
  c.batch_size = 17;
  c.prefetch = 0;
  c.augment = true;
  c.partition = PartitionKind::kDirichlet;
  c.dirichlet_alpha = 0.3f;
  const LoaderOptions o = TrainLoaderOptions(c, 2, 4, 9);
  EXPECT_EQ(o.batch_size, 17);
  EXPECT_EQ(o.prefetch, 0);
  EXPECT_TRUE(o.augment);
  EXPECT_EQ(o.rank, 2);
  EXPECT_EQ(o.world, 4);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.partition, PartitionKind::kDirichlet);
  EXPECT_FLOAT_EQ(o.dirichlet_alpha, 0.3f);
}

TEST(LoaderTest, InstalledFashionMnistEpoch) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed";
  }
  auto splits = OpenDataset(DataConfig{});
  ASSERT_TRUE(splits.ok()) << splits.status().ToString();
  LoaderOptions o = Options(64, 2, 3);
  o.world = 2;
  o.rank = 1;
  o.augment = true;
  DataLoader loader(splits->train, o);
  EXPECT_EQ(loader.num_examples(), 30000);
  EXPECT_EQ(loader.batches_per_epoch(), 469);
  const auto t0 = std::chrono::steady_clock::now();
  loader.StartEpoch(0);
  Batch b;
  int64_t examples = 0;
  while (loader.Next(&b)) {
    ASSERT_EQ(b.x.shape().dims().size(), 4u);
    EXPECT_EQ(b.x.dim(1), 1);
    EXPECT_EQ(b.x.dim(3), 28);
    examples += b.x.dim(0);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(examples, 30000);
  std::printf("Fashion-MNIST: half an epoch (30000 examples, augmented) in %.3f s, %.0f examples/s\n", s, examples / s);
}

}  // namespace
}  // namespace geomx::data
