// `geomx bench kernels`'s data (bench/kernels_data.h): the example order against values from an independent
// implementation of xoshiro256** and Fisher-Yates, the batch windows on a hand-built order, batch assembly on
// hand-written IDX files, the data directory's errors, and that the PyTorch peer (bench/peers/torch_cnn.py, its
// numpy-only --checksum mode) sees exactly the batches geomx builds: the same labels in the same order, the same
// pixel sums and bit-identical first values, on the hand-written files (with wrapping) and on the installed
// Fashion-MNIST. Then the command end to end on the hand-written files, and the DDP peer (bench/peers/ddp_train.py)
// training one rank on them. Nothing here depends on timing.
#include "bench/kernels_data.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "cli/free_ports.h"
#include "tests/testutil.h"

namespace geomx::bench {
namespace {

namespace fs = std::filesystem;

// ---- the example order and the batch windows ----

// Expected values from a separate Python implementation of xoshiro256** (seeded by splitmix64, checked against
// splitmix64's published vector for seed 1234567), rejection-sampled Below(n) and the Fisher-Yates loop.
TEST(KernelsExampleOrder, MatchesAnIndependentImplementation) {
  EXPECT_EQ(KernelsExampleOrder(10, 1), (std::vector<int64_t>{3, 8, 0, 9, 2, 5, 6, 4, 1, 7}));
  EXPECT_EQ(KernelsExampleOrder(10, 2), (std::vector<int64_t>{8, 3, 6, 7, 2, 0, 1, 9, 4, 5}));
  EXPECT_EQ(KernelsExampleOrder(1, 1), (std::vector<int64_t>{0}));
  EXPECT_TRUE(KernelsExampleOrder(0, 1).empty());
}

TEST(KernelsExampleOrder, IsADeterministicPermutationThatDependsOnTheSeed) {
  const std::vector<int64_t> a = KernelsExampleOrder(60000, kKernelsOrderSeed);
  EXPECT_EQ(a, KernelsExampleOrder(60000, kKernelsOrderSeed));
  EXPECT_NE(a, KernelsExampleOrder(60000, kKernelsOrderSeed + 1));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(60000);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);
}

std::vector<int64_t> Window(const std::vector<int64_t>& order, int64_t b, int batch) {
  std::vector<int64_t> out;
  for (int j = 0; j < batch; ++j) out.push_back(KernelsBatchExample(order, b, batch, j));
  return out;
}

TEST(KernelsBatchExample, ConsecutiveWindowsThatWrapToTheStart) {
  const std::vector<int64_t> order = {4, 2, 0, 3, 1};
  EXPECT_EQ(Window(order, 0, 2), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(Window(order, 1, 2), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(Window(order, 2, 2), (std::vector<int64_t>{1, 4}));  // positions 4, 5 -> 4, 0
  EXPECT_EQ(Window(order, 3, 2), (std::vector<int64_t>{2, 0}));  // positions 6, 7 -> 1, 2
  EXPECT_EQ(Window(order, 0, 7), (std::vector<int64_t>{4, 2, 0, 3, 1, 4, 2}));  // a batch larger than the set
  EXPECT_EQ(Window(order, 1, 7), (std::vector<int64_t>{0, 3, 1, 4, 2, 0, 3}));
}

// ---- hand-written IDX files ----

void WriteIdx(const fs::path& path, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string bytes = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int k = 3; k >= 0; --k) bytes.push_back(static_cast<char>((d >> (8 * k)) & 0xff));
  }
  bytes.append(data.begin(), data.end());
  testing::WriteFile(path, bytes);
}

uint8_t FixturePixel(int64_t image, int64_t p) { return static_cast<uint8_t>((image * 37 + p * 11) % 256); }
int64_t FixtureLabel(int64_t image) { return (image * 3) % 10; }

// A Fashion-MNIST-like directory (raw IDX): `n` train images of side x side pixels FixturePixel and labels
// FixtureLabel, and 2 test images.
void WriteFixture(const fs::path& dir, int64_t n, uint32_t side = 28) {
  fs::create_directories(dir);
  const int64_t plane = side * side;
  auto write_split = [&](const std::string& prefix, int64_t count) {
    std::vector<uint8_t> pixels, labels;
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t p = 0; p < plane; ++p) pixels.push_back(FixturePixel(i, p));
      labels.push_back(static_cast<uint8_t>(FixtureLabel(i)));
    }
    WriteIdx(dir / (prefix + "-images-idx3-ubyte"), {static_cast<uint32_t>(count), side, side}, pixels);
    WriteIdx(dir / (prefix + "-labels-idx1-ubyte"), {static_cast<uint32_t>(count)}, labels);
  };
  write_split("train", n);
  write_split("t10k", 2);
}

float Normalised(uint8_t v) { return (static_cast<float>(v) / 255.0f - 0.2860f) / 0.3530f; }

TEST(AssembleKernelsBatch, GathersNormalisedImagesAndLabelsInWindowOrder) {
  testing::ScratchDir dir;
  WriteFixture(dir.path(), 5);
  std::string resolved;
  auto train = OpenKernelsTrainingSet(dir.path().string(), &resolved);
  ASSERT_TRUE(train.ok()) << train.status().message();
  EXPECT_EQ(fs::path(resolved), dir.path());
  ASSERT_EQ((*train)->size(), 5);
  const std::vector<int64_t> order = {4, 2, 0, 3, 1};
  const data::Batch b = AssembleKernelsBatch(**train, order, 1, 3);  // positions 3, 4, 5 -> examples 3, 1, 4
  ASSERT_EQ(b.x.shape(), Shape({3, 1, 28, 28}));
  ASSERT_EQ(b.y.shape(), Shape({3}));
  const std::array<int64_t, 3> want = {3, 1, 4};
  const float* x = b.x.data<float>();
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(b.y.data<int64_t>()[j], FixtureLabel(want[static_cast<size_t>(j)]));
    for (int64_t p = 0; p < 784; ++p) {
      ASSERT_EQ(x[j * 784 + p], Normalised(FixturePixel(want[static_cast<size_t>(j)], p))) << j << " " << p;
    }
  }
}

TEST(OpenKernelsTrainingSet, MissingDirectoryIsNotFoundNamingIt) {
  auto r = OpenKernelsTrainingSet("/nonexistent/kernels-data", nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("--data /nonexistent/kernels-data"), std::string::npos)
      << r.status().message();
}

TEST(OpenKernelsTrainingSet, ImagesOtherThan28x28AreRefused) {
  testing::ScratchDir dir;
  WriteFixture(dir.path(), 3, 8);
  auto r = OpenKernelsTrainingSet(dir.path().string(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("28x28"), std::string::npos) << r.status().message();
}

// ---- the peer sees the same batches ----

using testing::RunShell;

bool PythonHas(const std::string& modules) {
  return fs::exists("/usr/bin/python3") &&
         std::system(("/usr/bin/python3 -c 'import " + modules + "' >/dev/null 2>&1").c_str()) == 0;
}

// The number after "key": in `json`, or NaN.
double NumberAfter(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return std::nan("");
  char* end = nullptr;
  const char* begin = json.c_str() + at + key.size() + 4;
  const double v = std::strtod(begin, &end);
  return end == begin ? std::nan("") : v;
}

// The numbers of the list after "key": in `json` ([a, b, ...]).
std::vector<double> ListAfter(const std::string& json, const std::string& key) {
  std::vector<double> out;
  size_t at = json.find("\"" + key + "\": [");
  if (at == std::string::npos) return out;
  const char* p = json.c_str() + at + key.size() + 5;
  while (*p != ']' && *p != '\0') {
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end == p) break;
    out.push_back(v);
    p = end;
    while (*p == ',' || *p == ' ') ++p;
  }
  return out;
}

// Runs the peer's --checksum mode on `data_dir` with the order geomx computes, and compares it with the same
// figures computed from AssembleKernelsBatch.
void ExpectPeerSeesTheSameBatches(const std::string& data_dir, int batch, int batches) {
  std::string resolved;
  auto train = OpenKernelsTrainingSet(data_dir, &resolved);
  ASSERT_TRUE(train.ok()) << train.status().message();
  const std::vector<int64_t> order = KernelsExampleOrder((*train)->size(), kKernelsOrderSeed);
  testing::ScratchDir scratch;
  const std::string order_file = (scratch / "order.i64").string();
  ASSERT_TRUE(WriteKernelsOrder(order, order_file).ok());
  EXPECT_EQ(fs::file_size(order_file), order.size() * 8);

  std::vector<double> labels;
  std::vector<float> first;
  double sum = 0, weighted = 0;
  for (int b = 0; b < batches; ++b) {
    const data::Batch bt = AssembleKernelsBatch(**train, order, b, batch);
    const float* x = bt.x.data<float>();
    for (int64_t e = 0; e < bt.x.numel(); ++e) {
      sum += x[e];
      weighted += static_cast<double>(e + 1) * x[e];
    }
    for (int j = 0; j < batch; ++j) labels.push_back(static_cast<double>(bt.y.data<int64_t>()[j]));
    if (b == 0) first.assign(x, x + 16);
  }

  const testing::CommandResult r =
      RunShell("/usr/bin/python3 '" + (testing::SourceDir() / "bench/peers/torch_cnn.py").string() + "' --data '" +
               resolved + "' --order '" + order_file + "' --batch-sizes " + std::to_string(batch) + " --checksum " +
               std::to_string(batches));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ListAfter(r.output, "labels"), labels) << r.output;
  const std::vector<double> peer_first = ListAfter(r.output, "first");
  ASSERT_EQ(peer_first.size(), first.size()) << r.output;
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(peer_first[i], static_cast<double>(first[i])) << i;
  EXPECT_NE(r.output.find("\"dtypes\": \"float32 int64 [" + std::to_string(batch) + ", 1, 28, 28]\""),
            std::string::npos)
      << r.output;
  EXPECT_NEAR(NumberAfter(r.output, "sum"), sum, 1e-9 * std::max(1.0, std::abs(sum))) << r.output;
  EXPECT_NEAR(NumberAfter(r.output, "weighted_sum"), weighted, 1e-9 * std::max(1.0, std::abs(weighted)))
      << r.output;
}

TEST(KernelsPeerData, SameBatchesOnHandWrittenFilesWithWrapping) {
  if (!PythonHas("numpy")) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian python3-numpy)";
  testing::ScratchDir dir;
  WriteFixture(dir.path(), 7);
  ExpectPeerSeesTheSameBatches(dir.path().string(), 3, 6);  // 18 examples of 7: wraps twice, mid-batch
}

TEST(KernelsPeerData, SameBatchesOnTheInstalledFashionMnist) {
  if (!PythonHas("numpy")) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian python3-numpy)";
  if (!OpenKernelsTrainingSet("auto", nullptr).ok()) GTEST_SKIP() << "Fashion-MNIST is not installed";
  ExpectPeerSeesTheSameBatches("auto", 64, 20);
}

TEST(KernelsPeerData, AnOrderOfTheWrongLengthIsRefused) {
  if (!PythonHas("numpy")) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian python3-numpy)";
  testing::ScratchDir dir;
  WriteFixture(dir.path(), 7);
  ASSERT_TRUE(WriteKernelsOrder({0, 1, 2}, (dir / "order.i64").string()).ok());
  const testing::CommandResult r =
      RunShell("/usr/bin/python3 '" + (testing::SourceDir() / "bench/peers/torch_cnn.py").string() + "' --data '" +
               dir.path().string() + "' --order '" + (dir / "order.i64").string() + "' --checksum 1");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("permutation of the 7 training examples"), std::string::npos) << r.output;
}

// ---- the command ----

TEST(BenchKernelsCommand, MissingDataExits2NamingTheDirectory) {
  const testing::CommandResult r =
      testing::RunGeomx("bench kernels --data /nonexistent/kernels-data --no-torch --iterations 1 --warmup 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/kernels-data"), std::string::npos) << r.output;
}

// Both sides on the hand-written files: rows for every configuration, with the peer's when torch is installed.
TEST(BenchKernelsCommand, RunsBothSidesOnTheGivenData) {
  testing::ScratchDir dir;
  WriteFixture(dir / "data", 7);
  const bool torch = PythonHas("numpy, torch");
  const testing::CommandResult r = testing::RunGeomx(
      "bench kernels --data " + (dir / "data").string() + " --batch-sizes 4 --threads 1,2 --iterations 2 --warmup 1" +
      (torch ? "" : " --no-torch") + " --json " + (dir / "k.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string json = testing::ReadFile(dir / "k.json");
  EXPECT_NE(json.find("\"data\": \"" + (dir / "data").string() + "\""), std::string::npos) << json;
  EXPECT_EQ(NumberAfter(json, "batch"), 4) << json;
  EXPECT_GT(NumberAfter(json, "geomx_samples_per_second"), 0) << json;
  EXPECT_TRUE(std::isfinite(NumberAfter(json, "geomx_mean_loss"))) << json;
  if (!torch) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian python3-torch): geomx side only";
  EXPECT_GT(NumberAfter(json, "torch_samples_per_second"), 0) << json << r.output;
  EXPECT_TRUE(std::isfinite(NumberAfter(json, "torch_mean_loss"))) << json;
  // One thread: the one layout; two: the faster of the two, named in the row and under the table.
  EXPECT_NE(json.find("\"threads\": 1, \"geomx_samples_per_second\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"torch_layout\": \"shared\""), std::string::npos) << json;
  const size_t two = json.find("\"threads\": 2");
  ASSERT_NE(two, std::string::npos) << json;
  const std::string second_row = json.substr(two);
  EXPECT_TRUE(second_row.find("\"torch_layout\": \"shared\"") != std::string::npos ||
              second_row.find("\"torch_layout\": \"blas\"") != std::string::npos)
      << json;
  EXPECT_NE(r.output.find("the faster of its thread layouts"), std::string::npos) << r.output;
}

// --model lstm / gru trains the rnn model on the same batches (the peer gets the same --model); an unknown model
// is a usage error.
TEST(BenchKernelsCommand, RecurrentModelsRunAndUnknownOnesExit2) {
  testing::ScratchDir dir;
  WriteFixture(dir / "data", 7);
  const bool torch = PythonHas("numpy, torch");
  for (const char* model : {"lstm", "gru"}) {
    const std::string json_path = (dir / (std::string(model) + ".json")).string();
    const testing::CommandResult r = testing::RunGeomx(
        "bench kernels --model " + std::string(model) + " --data " + (dir / "data").string() +
        " --batch-sizes 3 --threads 1 --iterations 2 --warmup 1" + (torch ? "" : " --no-torch") + " --json " +
        json_path);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(std::string("rnn (") + model + ", 128 units)"), std::string::npos) << r.output;
    const std::string json = testing::ReadFile(json_path);
    EXPECT_NE(json.find(std::string("\"model\": \"") + model + "\""), std::string::npos) << json;
    EXPECT_GT(NumberAfter(json, "geomx_samples_per_second"), 0) << json;
    // A mean cross-entropy over 10 classes near ln(10) at the start, finite either way.
    EXPECT_TRUE(std::isfinite(NumberAfter(json, "geomx_mean_loss"))) << json;
    if (torch) {
      EXPECT_GT(NumberAfter(json, "torch_samples_per_second"), 0) << json << r.output;
    }
  }
  const testing::CommandResult bad = testing::RunGeomx("bench kernels --model transformer --no-torch");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--model"), std::string::npos) << bad.output;
}

// ---- the DDP peer of `geomx bench RECIPE --configs ddp` (bench/peers/ddp_train.py) ----

// One rank (world 1, gloo on loopback) trains one epoch of the hand-written files and reports the end. A regression
// test: the peer once called torch_cnn.geomx_cnn() without its `nn` argument and died before training, and the
// bench only showed "ddp: failed".
TEST(DdpPeer, OneRankTrainsAnEpochOnHandWrittenFilesAndReportsTheEnd) {
  if (!PythonHas("numpy, torch")) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy and torch (--bench packages)";
  testing::ScratchDir dir;
  WriteFixture(dir.path(), 8);
  auto port = cli::PickFreePorts("127.0.0.1", 1);
  ASSERT_TRUE(port.ok()) << port.status().message();
  const testing::CommandResult r = RunShell(
      "env GLOO_SOCKET_IFNAME=lo /usr/bin/python3 '" + (testing::SourceDir() / "bench/peers/ddp_train.py").string() +
      "' --rank 0 --world 1 --master-addr 127.0.0.1 --master-port " + std::to_string(port->front()) + " --data '" +
      dir.path().string() + "' --batch-size 2 --epochs 1 --lr 0.05");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"event\": \"done\""), std::string::npos) << r.output;
  EXPECT_EQ(NumberAfter(r.output, "iterations"), 4) << r.output;  // 8 examples of one rank in batches of 2
  EXPECT_EQ(NumberAfter(r.output, "world"), 1) << r.output;
  const double acc = NumberAfter(r.output, "final_accuracy");  // on the 2 test images: 0, 0.5 or 1
  EXPECT_TRUE(acc == 0 || acc == 0.5 || acc == 1) << r.output;
}

}  // namespace
}  // namespace geomx::bench
