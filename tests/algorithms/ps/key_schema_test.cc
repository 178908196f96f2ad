// Key schemas and job descriptions (algorithms/ps/key_schema.h, job.h): built from a model, checked, carried as
// text through the control channel and read back exactly; malformed or hostile input is refused with the reason.
#include "algorithms/ps/key_schema.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/ps/job.h"
#include "engine/base/rng.h"
#include "nn/models/models.h"
#include "nn/transfer.h"

namespace geomx::ps {
namespace {

KeySchema Mixed() {
  return KeySchema({{.key = 0, .name = "conv1.weight", .elems = 150},
                    {.key = 7, .name = "hist", .elems = 512, .role = KeyRole::kAggregate, .init = KeyInit::kNone},
                    {.key = 8, .name = "knn", .elems = 30, .reducer = "topk_merge", .role = KeyRole::kAggregate,
                     .init = KeyInit::kNone},
                    {.key = 9, .name = "split", .elems = 4, .role = KeyRole::kDecision, .init = KeyInit::kNone},
                    {.key = 10, .name = "emb", .elems = 40, .reducer = "row_sparse",
                     .layout = KeyLayoutKind::kRowSparse, .row_width = 8, .role = KeyRole::kAggregate,
                     .init = KeyInit::kZeros}});
}

TEST(KeySchemaTest, FromAModuleEveryParameterIsAKeyInOrder) {
  nn::ModelConfig mc;
  mc.name = "mlp";
  mc.hidden = {5};
  mc.in_height = 1;
  mc.in_width = 3;
  mc.num_classes = 2;
  Rng rng(1);
  auto model = nn::CreateModel(mc, rng);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const KeySchema s = KeySchemaFromModule(**model);
  ASSERT_EQ(s.keys().size(), 4u);  // fc1.weight 5x3, fc1.bias 5, fc2.weight 2x5, fc2.bias 2
  const std::vector<uint64_t> elems = {15, 5, 10, 2};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s.keys()[i].key, i);
    EXPECT_EQ(s.keys()[i].elems, elems[i]);
    EXPECT_EQ(s.keys()[i].role, KeyRole::kParameter);
    EXPECT_EQ(s.keys()[i].init, KeyInit::kFromMaster);
    EXPECT_TRUE(s.keys()[i].splittable());
  }
  EXPECT_EQ(s.keys()[0].name, (*model)->Parameters()[0]->key());
  EXPECT_TRUE(s.Validate().ok());
}

TEST(KeySchemaTest, FrozenParametersAreNoKeys) {
  nn::ModelConfig mc;
  mc.name = "mlp";
  mc.hidden = {5};
  mc.in_height = 1;
  mc.in_width = 3;
  mc.num_classes = 2;
  Rng rng(1);
  auto model = nn::CreateModel(mc, rng);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(nn::FreezeLayers(**model, 1).ok());  // fc1 frozen
  const KeySchema s = KeySchemaFromModule(**model);
  ASSERT_EQ(s.keys().size(), 2u);  // fc2.weight 2x5 as key 0, fc2.bias 2 as key 1
  EXPECT_EQ(s.keys()[0].key, 0u);
  EXPECT_EQ(s.keys()[0].name, "fc2.weight");
  EXPECT_EQ(s.keys()[0].elems, 10u);
  EXPECT_EQ(s.keys()[1].key, 1u);
  EXPECT_EQ(s.keys()[1].name, "fc2.bias");
  EXPECT_EQ(s.keys()[1].elems, 2u);
}

TEST(KeySchemaTest, TextRoundTripKeepsEveryField) {
  const KeySchema s = Mixed().WithBarrier();
  ASSERT_TRUE(s.Validate().ok()) << s.Validate().ToString();
  Result<KeySchema> back = KeySchema::Decode(s.Encode());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->keys().size(), s.keys().size());
  for (size_t i = 0; i < s.keys().size(); ++i) {
    const KeyDef &a = s.keys()[i], &b = back->keys()[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.elems, b.elems);
    EXPECT_EQ(a.reducer, b.reducer);
    EXPECT_EQ(a.layout, b.layout);
    EXPECT_EQ(a.row_width, b.row_width);
    EXPECT_EQ(a.role, b.role);
    EXPECT_EQ(a.init, b.init);
  }
  EXPECT_EQ(back->Find(10)->rows(), 5u);
  EXPECT_EQ(back->Find(kBarrierKey)->elems, 1u);
  // Only parameters are split over servers.
  Result<comm::KeyLayout> layout = s.Layout(2, 64);
  ASSERT_TRUE(layout.ok());
  EXPECT_GT(layout->slices(0).size(), 1u);
  EXPECT_EQ(layout->slices(7).size(), 1u);
}

TEST(KeySchemaTest, BadSchemasAreRefusedNamingTheKey) {
  auto error = [](std::vector<KeyDef> keys) { return KeySchema(std::move(keys)).Validate(); };
  EXPECT_NE(error({{.key = 1, .name = "a", .elems = 1}, {.key = 1, .name = "b", .elems = 1}}).message().find("key 1"),
            std::string::npos);
  EXPECT_FALSE(error({{.key = 1, .name = "a", .elems = 1}, {.key = 2, .name = "a", .elems = 1}}).ok());
  EXPECT_FALSE(error({{.key = 1, .name = "has space", .elems = 1}}).ok());
  EXPECT_FALSE(error({{.key = 1, .name = "a", .elems = 0}}).ok());
  EXPECT_FALSE(error({{.key = 1, .name = "a", .elems = uint64_t{1} << 41}}).ok());
  EXPECT_FALSE(error({{.key = 1, .name = "a", .elems = 1, .reducer = "nope"}}).ok());
  EXPECT_FALSE(error({{.key = 1, .name = "a", .elems = 1, .dtype = DType::kF16}}).ok());
  EXPECT_FALSE(error({{.key = 1, .name = "a", .elems = 10, .reducer = "row_sparse",
                       .layout = KeyLayoutKind::kRowSparse, .row_width = 3, .role = KeyRole::kAggregate}})
                   .ok());  // 3 does not divide 10
  EXPECT_FALSE(error({{.key = 1, .name = "a", .elems = 4, .reducer = "concat", .role = KeyRole::kParameter}}).ok());
  EXPECT_FALSE(error({{.key = 1, .name = "a", .elems = 4, .reducer = "concat", .role = KeyRole::kDecision}}).ok());
  EXPECT_FALSE(error({{.key = comm::kMaxKey + 1, .name = "a", .elems = 1}}).ok());
}

TEST(KeySchemaTest, MalformedTextIsDataLoss) {
  const std::string good = Mixed().Encode();
  for (const std::string& bad : {std::string(""), std::string("geomx-keys 2\n"), good.substr(0, good.size() - 1),
                                 std::string("geomx-keys 1\n0 a 5 f32 sum dense 0 parameter\n"),
                                 std::string("geomx-keys 1\n0 a -5 f32 sum dense 0 parameter master\n"),
                                 std::string("geomx-keys 1\n0 a 5 f99 sum dense 0 parameter master\n"),
                                 std::string("geomx-keys 1\n0 a 5 f32 sum dense 0 boss master\n"),
                                 std::string("geomx-keys 1\n0 a 5 f32 sum dense 0 parameter master\n"
                                             "0 b 5 f32 sum dense 0 parameter master\n")}) {
    Result<KeySchema> s = KeySchema::Decode(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), StatusCode::kDataLoss) << bad;
  }
}

TEST(JobDescriptionTest, RoundTripAndRefusals) {
  JobDescription job;
  job.schema = Mixed();
  job.plan = {.iterations_per_epoch = 234, .epochs = 3, .max_iterations = 500, .start_round = 499};
  job.optimizer.name = "momentum";
  job.optimizer.lr = 0.125f;
  job.optimizer.momentum = 0.8f;
  job.optimizer.l1 = 0.25f;        // FTRL's settings travel too (a server-side ftrl ran with the defaults before)
  job.optimizer.ftrl_beta = 2.5f;
  job.schedule.name = "cosine";
  job.schedule.warmup_iterations = 17;
  job.rule = "some-rule";
  Result<JobDescription> back = DecodeJob(EncodeJob(job));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->schema.Encode(), job.schema.Encode());
  EXPECT_EQ(back->plan.iterations_per_epoch, 234);
  EXPECT_EQ(back->plan.epochs, 3);
  EXPECT_EQ(back->plan.total_rounds(), 500);      // capped by max_iterations
  EXPECT_EQ(back->plan.scheduled_rounds(), 702);  // what the schedule plans over
  EXPECT_EQ(back->plan.start_round, 499);
  EXPECT_EQ(back->optimizer.name, "momentum");
  EXPECT_FLOAT_EQ(back->optimizer.lr, 0.125f);
  EXPECT_FLOAT_EQ(back->optimizer.momentum, 0.8f);
  EXPECT_FLOAT_EQ(back->optimizer.l1, 0.25f);
  EXPECT_FLOAT_EQ(back->optimizer.ftrl_beta, 2.5f);
  EXPECT_EQ(back->schedule.name, "cosine");
  EXPECT_EQ(back->schedule.warmup_iterations, 17);
  EXPECT_EQ(back->rule, "some-rule");

  EXPECT_EQ(DecodeJob("not msgpack").status().code(), StatusCode::kDataLoss);
  JobDescription bad = job;
  bad.plan.iterations_per_epoch = 0;
  EXPECT_FALSE(DecodeJob(EncodeJob(bad)).ok());
  bad = job;
  bad.optimizer.lr = -1;
  Result<JobDescription> refused = DecodeJob(EncodeJob(bad));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("optimizer.lr"), std::string::npos) << refused.status().message();
  bad = job;
  bad.plan.start_round = 500;  // a resumed job must start before its end
  refused = DecodeJob(EncodeJob(bad));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("start_round 500"), std::string::npos) << refused.status().message();
}

// The initial values' digest: a 64-bit FNV-1a over each key's number and length (little-endian u64) and its
// floats' bytes, keys ascending; the expected text was computed separately (Python's struct and the FNV
// constants). It travels in the job; a job without one decodes to "", a malformed one is refused.
TEST(JobDescriptionTest, InitialValuesDigest) {
  const std::map<uint64_t, std::vector<float>> initial = {{3, {0.5f}}, {0, {1.0f, -2.0f}}};
  EXPECT_EQ(InitialValuesDigest(initial), "c377755f47ff9399");
  std::map<uint64_t, std::vector<float>> changed = initial;
  changed[0][1] = -2.0000002f;  // one bit of one value
  EXPECT_NE(InitialValuesDigest(changed), InitialValuesDigest(initial));
  std::map<uint64_t, std::vector<float>> moved = {{1, {1.0f, -2.0f}}, {3, {0.5f}}};  // the same floats, another key
  EXPECT_NE(InitialValuesDigest(moved), InitialValuesDigest(initial));

  JobDescription job;
  job.schema = Mixed();
  EXPECT_EQ(DecodeJob(EncodeJob(job))->init_digest, "");
  job.init_digest = InitialValuesDigest(initial);
  EXPECT_EQ(DecodeJob(EncodeJob(job))->init_digest, "c377755f47ff9399");
  for (const std::string bad : {"c377755f", "C377755F47FF9399", "c377755f47ff939z"}) {
    job.init_digest = bad;
    Result<JobDescription> refused = DecodeJob(EncodeJob(job));
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("init_digest"), std::string::npos) << refused.status().message();
  }
}

}  // namespace
}  // namespace geomx::ps
