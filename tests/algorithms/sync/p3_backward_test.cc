// P3 during the backward pass (algorithms/train/trainer.cc TrainStep, sync/param_exchange.h SendEarly): with a
// P3 link and an update that wants gradients early, each parameter's slices leave as soon as backward has
// finished that parameter, last layers first. The test holds the backward pass at the first layer's gradient (the
// last one backward finishes) until the server has received the last layer's slices: had they waited for Apply,
// they would never arrive and the test would fail. After the step every key was pushed exactly once and the
// answers (the server echoes what it got) are the gradients computed by a plain backward pass.
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/sync/param_exchange.h"
#include "algorithms/train/trainer.h"
#include "comm/kv_link.h"
#include "comm/kv_server.h"
#include "engine/autograd/functions.h"
#include "engine/base/rng.h"
#include "nn/models/models.h"
#include "tests/comm/ps_test_util.h"

namespace geomx::sync {
namespace {

// An MLP on inputs of `in` features with `classes` outputs, weights from `seed`.
std::unique_ptr<nn::Module> Mlp(std::vector<int> hidden, int in, int classes, uint64_t seed) {
  nn::ModelConfig mc;
  mc.name = "mlp";
  mc.hidden = std::move(hidden);
  mc.in_channels = 1;
  mc.in_height = 1;
  mc.in_width = in;
  mc.num_classes = classes;
  Rng rng(seed);
  return nn::CreateModel(mc, rng).value();
}

Tensor RandomInput(const Shape& shape, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return Tensor::FromVector(v, shape);
}

// Answers every pushpull with the values pushed, counting the pushes of each key.
class EchoServer : public comm::ServerHandler {
 public:
  void Handle(const comm::KvRequest& req, comm::KvServer& server) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (uint64_t wk : req.meta.keys) ++pushes_[comm::KeyOfWireKey(wk)];
      cv_.notify_all();
    }
    server.Respond(req, req.data);
  }
  // Waits up to 30 s until `key` was pushed at least once.
  bool WaitFor(uint64_t key) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return pushes_.count(key) > 0; });
  }
  std::map<uint64_t, int> pushes() {
    std::lock_guard<std::mutex> lock(mu_);
    return pushes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, int> pushes_;  // key -> slices pushed
};

// The update a P3 worker with the optimizer at the servers is: early gradients, weights back.
class EarlyUpdate : public train::ParameterUpdate {
 public:
  EarlyUpdate(ParamExchange* exchange, EchoServer* server, uint64_t last_key)
      : exchange_(exchange), server_(server), last_key_(last_key) {}
  bool WantsGradientsEarly() const override { return true; }
  Status GradientReady(const std::vector<nn::Parameter*>& params, size_t index, int64_t round) override {
    order.push_back(index);
    GEOMX_RETURN_IF_ERROR(exchange_->SendEarly(params, index, round));
    // The last gradient backward finishes (the first layer's): hold backward here until the last layer's slices
    // are at the server.
    if (order.size() == params.size()) last_arrived_during_backward = server_->WaitFor(last_key_);
    return Status::Ok();
  }
  Status Apply(const std::vector<nn::Parameter*>& params, int64_t round) override {
    applied = true;
    return exchange_->Exchange(params, HostGradients(params), round, ParamExchange::Answer::kWeights);
  }
  std::vector<size_t> order;
  bool last_arrived_during_backward = false;
  bool applied = false;

 private:
  ParamExchange* exchange_;
  EchoServer* server_;
  const uint64_t last_key_;
};

TEST(P3BackwardTest, TheLastLayersSlicesLeaveWhileBackwardStillRuns) {
  std::unique_ptr<nn::Module> model = Mlp({24, 16}, 12, 5, 7);
  const std::vector<nn::Parameter*> params = model->Parameters();
  ASSERT_EQ(params.size(), 6u);  // 3 x (weight, bias), forward order
  std::vector<comm::KeySpec> specs;
  for (size_t i = 0; i < params.size(); ++i) specs.push_back({i, static_cast<uint64_t>(params[i]->numel()), true});
  const comm::KeyLayout layout = comm::KeyLayout::Build(specs, 1, 4 * 40).value();  // slices of 40 floats

  auto transport = comm::testing::MakeTransport("loopback");
  comm::testing::TestTier tier(*transport, comm::testing::MakeSpec(*transport, "dc", 1, 1));
  EchoServer echo;
  comm::KvServer server(&tier.server(0), 0, &echo);
  comm::KvWorker kv(&tier.worker(0), 0, layout);
  auto link = comm::KvLink::Create(&kv, comm::TierCodec{}, {.p3 = true, .max_in_flight_bytes = 2 * 160}).value();
  ASSERT_TRUE(tier.Start().ok());
  {
    ParamExchange exchange(link.get(), model.get());
    ASSERT_TRUE(exchange.lazy());
    EarlyUpdate update(&exchange, &echo, /*last_key=*/4);  // the output layer's weight

    Rng data_rng(3);
    Tensor x = RandomInput(Shape({8, 1, 1, 12}), data_rng);
    Tensor y = Tensor::FromVectorI64({0, 1, 2, 3, 4, 0, 1, 2}, Shape({8}));
    // The reference gradients: a plain backward pass on the same weights.
    model->ZeroGrad();
    autograd::SoftmaxCrossEntropy(model->Forward(autograd::Variable(x)), y).Backward();
    const std::vector<Tensor> expected = HostGradients(params);

    ASSERT_TRUE(train::TrainStep(*model, update, params, x, y, /*round=*/0, /*clip_norm=*/0).ok());
    EXPECT_TRUE(update.last_arrived_during_backward);
    ASSERT_EQ(update.order.size(), 6u);
    EXPECT_LE(update.order.back(), 1u);     // the first layer last
    EXPECT_TRUE(update.order[0] == 4 || update.order[0] == 5) << update.order[0];  // the output layer first
    EXPECT_TRUE(update.applied);
    ASSERT_TRUE(exchange.Flush().ok());
    // Every slice of every key was pushed once; the answers are the gradients.
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_EQ(echo.pushes()[i], static_cast<int>(layout.slices(i).size())) << "key " << i;
      const std::vector<float> got = params[i]->data().ToFloatVector();
      const std::vector<float> want = expected[i].ToFloatVector();
      ASSERT_EQ(got.size(), want.size());
      for (size_t j = 0; j < got.size(); ++j) EXPECT_FLOAT_EQ(got[j], want[j]) << "key " << i << " element " << j;
    }
  }
  link.reset();
  EXPECT_TRUE(tier.Finalize().ok());
}

// With gradient clipping the trainer needs every gradient before any leaves: no early sends.
TEST(P3BackwardTest, ClippingKeepsEveryGradientForApply) {
  struct Recorder : train::ParameterUpdate {
    bool WantsGradientsEarly() const override { return true; }
    Status GradientReady(const std::vector<nn::Parameter*>&, size_t, int64_t) override {
      ++early;
      return Status::Ok();
    }
    Status Apply(const std::vector<nn::Parameter*>&, int64_t) override { return Status::Ok(); }
    int early = 0;
  } update;
  std::unique_ptr<nn::Module> model = Mlp({4}, 3, 2, 1);
  Rng rng(1);
  Tensor x = RandomInput(Shape({2, 1, 1, 3}), rng);
  Tensor y = Tensor::FromVectorI64({0, 1}, Shape({2}));
  ASSERT_TRUE(train::TrainStep(*model, update, model->Parameters(), x, y, 0, /*clip_norm=*/1.0f).ok());
  EXPECT_EQ(update.early, 0);
  ASSERT_TRUE(train::TrainStep(*model, update, model->Parameters(), x, y, 1, /*clip_norm=*/0).ok());
  EXPECT_EQ(update.early, 4);
}

}  // namespace
}  // namespace geomx::sync
