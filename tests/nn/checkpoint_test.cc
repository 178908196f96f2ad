#include "nn/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "nn/loss.h"
#include "nn/models/models.h"
#include "tests/testutil.h"

namespace geomx::nn {
namespace {

using autograd::Variable;

std::unique_ptr<Module> Make(const std::string& name, uint64_t seed, std::vector<int> hidden = {16}) {
  ModelConfig c;
  c.name = name;
  c.in_channels = 1;
  c.in_height = c.in_width = name == "resnet20" ? 8 : 16;
  c.hidden = std::move(hidden);
  Rng rng(seed);
  return std::move(CreateModel(c, rng)).value();
}

std::unique_ptr<Optimizer> Adam() {
  OptimizerConfig oc;
  return std::move(CreateOptimizer(oc)).value();
}

// One training step so parameters, running statistics and optimizer state are all non-trivial.
void TrainOnce(Module& m, Optimizer& opt, int h) {
  m.ZeroGrad();
  Variable x(testing::RandomTensor(Shape{4, 1, h, h}, 3));
  CrossEntropyLoss(m.Forward(x), Tensor::FromVectorI64({0, 1, 2, 3}, Shape{4})).Backward();
  opt.Step(m.Parameters());
}

std::vector<std::string> DirEntries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

std::string Bytes(const std::filesystem::path& p) { return testing::ReadFile(p); }

class CheckpointTest : public ::testing::Test {
 protected:
  testing::ScratchDir dir_;
};

TEST_F(CheckpointTest, RoundTripIsBitExact) {
  auto src = Make("resnet20", 1);
  auto src_opt = Adam();
  TrainOnce(*src, *src_opt, 8);
  CheckpointMeta meta;
  meta.iteration = 17;
  meta.epoch = 2;
  meta.model_name = "resnet20";
  meta.extra_json = R"({"rng":[1,2,3,4]})";
  const auto path = dir_ / "model.ckpt";
  ASSERT_TRUE(SaveCheckpoint(path, *src, src_opt.get(), meta).ok());
  EXPECT_EQ(DirEntries(dir_.path()), std::vector<std::string>{"model.ckpt"});  // no .tmp left behind

  auto dst = Make("resnet20", 2);
  auto dst_opt = Adam();
  CheckpointMeta loaded;
  Status st = LoadCheckpoint(path, *dst, dst_opt.get(), &loaded);
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto ps = src->Parameters(), pd = dst->Parameters();
  for (size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(std::memcmp(ps[i]->data().raw_data(), pd[i]->data().raw_data(), ps[i]->data().nbytes()), 0)
        << ps[i]->key();
  }
  auto bs = src->Buffers(), bd = dst->Buffers();
  for (size_t i = 0; i < bs.size(); ++i) EXPECT_EQ(bs[i].second->ToFloatVector(), bd[i].second->ToFloatVector());
  EXPECT_EQ(loaded.iteration, 17);
  EXPECT_EQ(loaded.epoch, 2);
  EXPECT_EQ(loaded.optimizer_step, 1);
  EXPECT_EQ(loaded.model_name, "resnet20");
  EXPECT_EQ(loaded.extra_json, meta.extra_json);
  EXPECT_EQ(dst_opt->step(), 1);
  const auto s_state = src_opt->StateDict(), d_state = dst_opt->StateDict();
  ASSERT_EQ(s_state.size(), d_state.size());
  for (const auto& [k, t] : s_state) EXPECT_EQ(t.ToFloatVector(), d_state.at(k).ToFloatVector()) << k;
  // Training continues identically from the restored state.
  TrainOnce(*src, *src_opt, 8);
  TrainOnce(*dst, *dst_opt, 8);
  EXPECT_TRUE(testing::AllClose(dst->Parameters()[0]->data(), src->Parameters()[0]->data(), 0.0f, 0.0f));
}

TEST_F(CheckpointTest, TensorFileKeepsDtypesAndShapes) {
  std::map<std::string, Tensor> in = {{"scalar", Tensor::Full(Shape{}, 2.5f)},
                                      {"labels", Tensor::FromVectorI64({1, -2, 3}, Shape{3})},
                                      {"empty", Tensor::Zeros(Shape{0, 4})},
                                      {"m", testing::RandomTensor(Shape{2, 3, 4}, 1)}};
  const auto path = dir_ / "t.bin";
  ASSERT_TRUE(WriteTensorFile(path, in, CheckpointMeta{}).ok());
  std::map<std::string, Tensor> out;
  ASSERT_TRUE(ReadTensorFile(path, &out, nullptr).ok());
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [k, t] : in) {
    EXPECT_EQ(out[k].shape(), t.shape()) << k;
    EXPECT_EQ(out[k].dtype(), t.dtype()) << k;
  }
  EXPECT_EQ(out["labels"].ToI64Vector(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(out["m"].ToFloatVector(), in["m"].ToFloatVector());
  EXPECT_EQ(out["scalar"].item(), 2.5f);
  // The header is exactly as documented in docs/checkpoint_format.md.
  const std::string bytes = Bytes(path);
  EXPECT_EQ(bytes.substr(0, 8), "GEOMXCKP");
  EXPECT_EQ(bytes[8], 1);
}

TEST_F(CheckpointTest, TruncatedFileIsDataLossWithOffset) {
  auto m = Make("mlp", 1);
  const auto path = dir_ / "m.ckpt";
  ASSERT_TRUE(SaveCheckpoint(path, *m, nullptr, CheckpointMeta{}).ok());
  const std::string bytes = Bytes(path);
  for (size_t keep : {size_t{0}, size_t{10}, size_t{30}, bytes.size() / 2, bytes.size() - 1}) {
    testing::WriteFile(path, bytes.substr(0, keep));
    Status st = LoadCheckpoint(path, *m, nullptr, nullptr);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << keep << ": " << st.ToString();
    EXPECT_NE(st.message().find("offset"), std::string::npos) << st.ToString();
  }
}

TEST_F(CheckpointTest, FlippedByteFailsTheChecksum) {
  auto m = Make("mlp", 1);
  const auto path = dir_ / "m.ckpt";
  ASSERT_TRUE(SaveCheckpoint(path, *m, nullptr, CheckpointMeta{}).ok());
  std::string bytes = Bytes(path);
  bytes[bytes.size() / 2] ^= 0x01;
  testing::WriteFile(path, bytes);
  auto other = Make("mlp", 5);
  const std::vector<float> before = other->Parameters()[0]->data().ToFloatVector();
  Status st = LoadCheckpoint(path, *other, nullptr, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("checksum"), std::string::npos) << st.ToString();
  EXPECT_EQ(other->Parameters()[0]->data().ToFloatVector(), before);  // untouched
}

TEST_F(CheckpointTest, HeaderDamageIsReported) {
  auto m = Make("mlp", 1);
  const auto path = dir_ / "m.ckpt";
  ASSERT_TRUE(SaveCheckpoint(path, *m, nullptr, CheckpointMeta{}).ok());
  const std::string good = Bytes(path);
  std::string bad = good;
  bad[0] = 'X';
  testing::WriteFile(path, bad);
  EXPECT_EQ(LoadCheckpoint(path, *m, nullptr, nullptr).code(), StatusCode::kDataLoss);
  bad = good;
  bad[8] = 2;  // version 2
  testing::WriteFile(path, bad);
  EXPECT_EQ(LoadCheckpoint(path, *m, nullptr, nullptr).code(), StatusCode::kUnimplemented);
  testing::WriteFile(path, good + "junk");
  EXPECT_EQ(LoadCheckpoint(path, *m, nullptr, nullptr).code(), StatusCode::kDataLoss);
  EXPECT_EQ(LoadCheckpoint(dir_ / "missing.ckpt", *m, nullptr, nullptr).code(), StatusCode::kNotFound);
}

TEST_F(CheckpointTest, WrongModelIsInvalidArgumentNamingTheTensor) {
  auto mlp = Make("mlp", 1);
  CheckpointMeta meta;
  meta.model_name = "mlp";
  const auto path = dir_ / "mlp.ckpt";
  ASSERT_TRUE(SaveCheckpoint(path, *mlp, nullptr, meta).ok());

  auto cnn = Make("geomx-cnn", 1);
  Status st = LoadCheckpoint(path, *cnn, nullptr, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'conv1.weight'"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("model 'mlp'"), std::string::npos) << st.ToString();

  auto wider = Make("mlp", 1, {32});
  const std::vector<float> before = wider->Parameters()[0]->data().ToFloatVector();
  st = LoadCheckpoint(path, *wider, nullptr, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'fc1.weight'"), std::string::npos) << st.ToString();
  EXPECT_EQ(wider->Parameters()[0]->data().ToFloatVector(), before);

  auto deeper = Make("mlp", 1, {16, 8});
  st = LoadCheckpoint(path, *deeper, nullptr, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'fc2.weight' is f32[10, 16], the model has f32[8, 16]"), std::string::npos)
      << st.ToString();
}

TEST_F(CheckpointTest, OptimizerMismatchIsInvalidArgument) {
  auto m = Make("mlp", 1);
  auto adam = Adam();
  TrainOnce(*m, *adam, 16);
  const auto path = dir_ / "m.ckpt";
  ASSERT_TRUE(SaveCheckpoint(path, *m, adam.get(), CheckpointMeta{}).ok());
  OptimizerConfig sgd_config;
  sgd_config.name = "sgd";
  auto sgd = std::move(CreateOptimizer(sgd_config)).value();
  Status st = LoadCheckpoint(path, *m, sgd.get(), nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not a slot of sgd"), std::string::npos) << st.ToString();
  // Without an optimizer the optimizer entries are ignored.
  EXPECT_TRUE(LoadCheckpoint(path, *m, nullptr, nullptr).ok());
}

TEST_F(CheckpointTest, UnwritableDirectoryFailsCleanly) {
  auto m = Make("mlp", 1);
  Status st = SaveCheckpoint(dir_ / "no_such_dir" / "m.ckpt", *m, nullptr, CheckpointMeta{});
  EXPECT_EQ(st.code(), StatusCode::kInternal);  // a write failure is a runtime failure (exit 1), not bad input
  EXPECT_FALSE(st.IsUserError());
  EXPECT_NE(st.message().find("m.ckpt"), std::string::npos) << st.ToString();
  EXPECT_TRUE(DirEntries(dir_.path()).empty());
}

TEST_F(CheckpointTest, OverwriteReplacesAtomically) {
  auto a = Make("mlp", 1), b = Make("mlp", 2);
  const auto path = dir_ / "m.ckpt";
  ASSERT_TRUE(SaveCheckpoint(path, *a, nullptr, CheckpointMeta{}).ok());
  ASSERT_TRUE(SaveCheckpoint(path, *b, nullptr, CheckpointMeta{}).ok());
  auto c = Make("mlp", 3);
  ASSERT_TRUE(LoadCheckpoint(path, *c, nullptr, nullptr).ok());
  EXPECT_EQ(c->Parameters()[0]->data().ToFloatVector(), b->Parameters()[0]->data().ToFloatVector());
  EXPECT_EQ(DirEntries(dir_.path()), std::vector<std::string>{"m.ckpt"});
}

}  // namespace
}  // namespace geomx::nn
