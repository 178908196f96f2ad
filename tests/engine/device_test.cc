// Device selection on any machine (with or without a GPU, with or without CUDA compiled in): `device: cuda` without
// a visible GPU is a clear kFailedPrecondition naming the runtime's reason, `auto` falls back to the CPU, and
// AvailableDevices() agrees with DeviceAvailable(). CudaSmokeTest runs a short training-like sequence on cuda:0
// against the CPU; without a GPU it skips and says why (visible in ctest's output as "Skipped").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/backend_registry.h"
#include "engine/ops.h"
#include "tests/testutil.h"

namespace geomx {
namespace {

using ::geomx::testing::AllClose;
using ::geomx::testing::RandomTensor;

bool CudaVisible() { return DeviceAvailable(Device::Cuda(0)); }

TEST(DeviceSelectionTest, AvailableDevicesAgreeWithDeviceAvailable) {
  const std::vector<Device> devices = AvailableDevices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices[0], Device::Cpu());
  EXPECT_EQ(devices.size(), CudaVisible() ? 2u : 1u);  // one GPU per process (cuda:0)
  for (const Device& d : devices) EXPECT_TRUE(DeviceAvailable(d)) << d.ToString();
  EXPECT_FALSE(DeviceAvailable(Device::Cuda(1)));
  EXPECT_FALSE(DeviceAvailable(Device::Cuda(-1)));
}

TEST(DeviceSelectionTest, AutoPicksTheGpuOnlyWhenOneIsVisible) {
  auto dev = ResolveDevice("auto");
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(*dev, CudaVisible() ? Device::Cuda(0) : Device::Cpu());
}

TEST(DeviceSelectionTest, CudaWithoutVisibleGpuIsFailedPrecondition) {
  if (CudaVisible()) GTEST_SKIP() << "a CUDA device is visible: device: cuda resolves";
  for (const std::string spec : {"cuda", "cuda:0", "cuda:2"}) {
    auto r = ResolveDevice(spec);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << spec;
    const std::string& msg = r.status().message();
    EXPECT_EQ(msg.rfind("device: " + spec + " requested but ", 0), 0u) << msg;
#if GEOMX_WITH_CUDA
    // The runtime's own explanation travels with it (no driver: cudaErrorInsufficientDriver, no GPU:
    // cudaErrorNoDevice or a zero count).
    EXPECT_NE(msg.find("no CUDA device is visible (cudaGetDeviceCount"), std::string::npos) << msg;
#else
    EXPECT_NE(msg.find("-DGEOMX_WITH_CUDA=ON"), std::string::npos) << msg;
#endif
  }
}

TEST(DeviceSelectionTest, CudaIndexBeyondTheProcessGpuIsFailedPrecondition) {
  if (!CudaVisible()) GTEST_SKIP() << "no CUDA device visible: covered by CudaWithoutVisibleGpuIsFailedPrecondition";
  auto zero = ResolveDevice("cuda:0");
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  EXPECT_EQ(*zero, Device::Cuda(0));
  auto one = ResolveDevice("cuda:1");
  EXPECT_EQ(one.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(one.status().message().find("CUDA_VISIBLE_DEVICES=1"), std::string::npos) << one.status().message();
}

TEST(DeviceSelectionTest, MalformedCudaSpecsAreInvalidArgument) {
  for (const char* spec : {"cuda:", "cuda:x", "cuda:-1", "cuda:1234567"}) {
    EXPECT_EQ(ResolveDevice(spec).status().code(), StatusCode::kInvalidArgument) << spec;
  }
}

// GPU cases: a forward/backward slice of a small CNN, element for element against the CPU backend.
class CudaSmokeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaVisible()) {
      GTEST_SKIP() << "no CUDA device visible (" << ResolveDevice("cuda").status().message() << ")";
    }
  }
  static constexpr Device kGpu = Device::Cuda(0);
};

TEST_F(CudaSmokeTest, ConvPoolLinearLossStepMatchesCpu) {
  const Tensor x = RandomTensor({4, 3, 12, 12}, 1), w = RandomTensor({8, 3, 3, 3}, 2), b = RandomTensor({8}, 3);
  // tanh, not relu, before the max pool: no ties in a window, so both backends route dy to the same element.
  const Tensor fc = RandomTensor({10, 8 * 6 * 6}, 4), labels = Tensor::FromVectorI64({1, 9, 0, 4}, {4});
  const Conv2dParams conv{1, 1, 1, 1, 1, 1};
  const Pool2dParams pool{PoolKind::kMax, 2, 2, 2, 2, 0, 0};
  auto step = [&](Device d) {
    const Tensor h = ops::Activation(ActivationKind::kTanh, ops::Conv2d(x.To(d), w.To(d), b.To(d), conv));
    const ops::PoolResult p = ops::Pool2d(h, pool);
    const Tensor logits = ops::Linear(p.y.Reshape({4, -1}), fc.To(d), Tensor());
    const ops::CrossEntropyResult ce = ops::SoftmaxCrossEntropy(logits, labels.To(d));
    const Tensor dlogits = ops::SoftmaxCrossEntropyBackward(ce.probs, labels.To(d), 0.25f);
    const Tensor dfeat = ops::MatMul(dlogits, fc.To(d)).Reshape(p.y.shape());
    const Tensor dh = ops::Pool2dBackward(h, dfeat, p.workspace, pool);
    return std::vector<Tensor>{logits, ce.loss, ops::ArgMax(logits), dh};
  };
  const std::vector<Tensor> cpu = step(Device::Cpu()), gpu = step(kGpu);
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(gpu[i].device(), kGpu);
    EXPECT_TRUE(AllClose(gpu[i].To(Device::Cpu()).ToFloatVector(), cpu[i].ToFloatVector(), 1e-4f, 1e-5f))
        << "output " << i;
  }
}

TEST_F(CudaSmokeTest, OptimizerUpdateMatchesCpu) {
  const Tensor grad = RandomTensor({1000}, 5), w0 = RandomTensor({1000}, 6);
  UpdateHyper h;
  h.lr = 0.01f;
  h.weight_decay = 1e-4f;
  h.step = 3;
  auto run = [&](Device d) {
    Tensor w = w0.To(d).Clone(), m = Tensor::Zeros({1000}, DType::kF32, d), v = Tensor::Zeros({1000}, DType::kF32, d);
    for (int i = 0; i < 3; ++i) ops::ApplyUpdate(UpdateRule::kAdamW, h, grad.To(d), &w, {&m, &v});
    return w.ToFloatVector();
  };
  EXPECT_TRUE(AllClose(run(kGpu), run(Device::Cpu()), 1e-5f, 1e-7f));
}

TEST_F(CudaSmokeTest, LabelOutOfRangeIsInvalidArgument) {
  const Tensor logits = RandomTensor({3, 4}, 7, -1, 1, kGpu);
  const Tensor labels = Tensor::FromVectorI64({0, 4, 1}, {3}, kGpu);
  Tensor loss = Tensor::Empty({3}, DType::kF32, kGpu), probs = Tensor::Empty({3, 4}, DType::kF32, kGpu);
  const Status s = BackendFor(kGpu).SoftmaxCrossEntropyForward(logits, labels, &loss, &probs);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("label 4 at row 1"), std::string::npos) << s.message();
}

TEST_F(CudaSmokeTest, OutOfMemoryIsResourceExhaustedNotAnAbort) {
  Allocator& a = BackendFor(kGpu).allocator();
  auto r = a.Allocate(size_t{1} << 50);  // 1 PiB
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  auto small = a.Allocate(4096);  // and the device still works afterwards
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  a.Free(*small, 4096);
}

}  // namespace
}  // namespace geomx
