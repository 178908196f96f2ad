#include "engine/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/backend_registry.h"
#include "engine/cpu/cpu_allocator.h"
#include "engine/ops.h"
#include "tests/testutil.h"

namespace geomx {
namespace {

TEST(ShapeTest, Basics) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.numel_from(1), 12);
  EXPECT_EQ(s.numel_from(3), 1);
  EXPECT_EQ(s.dim(-1), 4);
  EXPECT_EQ(s[0], 2);
  EXPECT_EQ(s.ToString(), "[2, 3, 4]");
  EXPECT_EQ(Shape().numel(), 1);
  EXPECT_EQ(Shape().ToString(), "[]");
  EXPECT_EQ((Shape{0, 5}).numel(), 0);
  EXPECT_NE(s, (Shape{2, 3}));
}

TEST(ShapeDeathTest, DimOutOfRangeAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH((void)(Shape{2, 3}).dim(2), "out of range");
}

TEST(DTypeTest, NamesRoundTrip) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8}) {
    DType parsed;
    ASSERT_TRUE(ParseDType(DTypeName(t), &parsed)) << DTypeName(t);
    EXPECT_EQ(parsed, t);
  }
  DType unused;
  EXPECT_FALSE(ParseDType("f64", &unused));
  EXPECT_EQ(SizeOf(DType::kBF16), 2u);
  EXPECT_EQ(SizeOf(DType::kI64), 8u);
}

TEST(DeviceTest, ToStringAndResolve) {
  EXPECT_EQ(Device::Cpu().ToString(), "cpu");
  EXPECT_EQ(Device::Cuda(1).ToString(), "cuda:1");
  auto cpu = ResolveDevice("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(*cpu, Device::Cpu());
  auto bogus = ResolveDevice("tpu");
  EXPECT_EQ(bogus.status().code(), StatusCode::kInvalidArgument);
  const std::vector<Device> devices = AvailableDevices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices[0], Device::Cpu());
  EXPECT_TRUE(DeviceAvailable(Device::Cpu()));
#if !GEOMX_WITH_CUDA
  auto auto_dev = ResolveDevice("auto");
  ASSERT_TRUE(auto_dev.ok());
  EXPECT_EQ(*auto_dev, Device::Cpu());
  for (const char* spec : {"cuda", "cuda:0", "cuda:3"}) {
    auto r = ResolveDevice(spec);
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << spec;
    EXPECT_NE(r.status().message().find("GEOMX_WITH_CUDA=ON"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(DeviceAvailable(Device::Cuda(0)));
#endif
  EXPECT_EQ(ResolveDevice("cuda:x").status().code(), StatusCode::kInvalidArgument);
}

TEST(OpParamsTest, ActivationNamesAndStateCounts) {
  for (ActivationKind k :
       {ActivationKind::kRelu, ActivationKind::kTanh, ActivationKind::kSigmoid, ActivationKind::kGelu}) {
    ActivationKind parsed;
    ASSERT_TRUE(ParseActivation(ActivationName(k), &parsed));
    EXPECT_EQ(parsed, k);
  }
  ActivationKind unused;
  EXPECT_FALSE(ParseActivation("swish", &unused));
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kSgd), 0);
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kMomentum), 1);
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kNesterov), 1);
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kAdaGrad), 1);
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kRmsProp), 1);
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kAdaDelta), 2);
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kAdam), 2);
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kAdamW), 2);
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kFtrl), 2);
  EXPECT_EQ(UpdateRuleStateCount(UpdateRule::kFtml), 3);
}

TEST(CpuAllocatorTest, AlignedAndCounted) {
  CpuAllocator alloc;
  for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000}, size_t{1} << 20}) {
    auto p = alloc.Allocate(n);
    ASSERT_TRUE(p.ok());
    ASSERT_NE(*p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % 64, 0u) << n;
    EXPECT_EQ(alloc.bytes_in_use(), n);
    alloc.Free(*p, n);
    EXPECT_EQ(alloc.bytes_in_use(), 0u);
  }
}

TEST(CpuAllocatorTest, CachesLargeBlocksForReuse) {
  CpuAllocatorOptions opts;
  opts.min_cached_bytes = 1 << 16;
  opts.max_cached_bytes = 1 << 20;
  CpuAllocator alloc(opts);
  auto a = alloc.Allocate(300000);
  ASSERT_TRUE(a.ok());
  alloc.Free(*a, 300000);
  EXPECT_EQ(alloc.bytes_in_use(), 0u);
  EXPECT_EQ(alloc.bytes_cached(), 303104u);  // page-rounded
  auto b = alloc.Allocate(300001);           // same page-rounded size: the cached block comes back
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, *a);
  EXPECT_EQ(alloc.bytes_cached(), 0u);
  EXPECT_EQ(alloc.bytes_in_use(), 300001u);
  alloc.Free(*b, 300001);
  // Small blocks are not cached; blocks past the cap are returned to the system.
  auto small = alloc.Allocate(1000);
  ASSERT_TRUE(small.ok());
  alloc.Free(*small, 1000);
  EXPECT_EQ(alloc.bytes_cached(), 303104u);
  auto big = alloc.Allocate(900000);
  ASSERT_TRUE(big.ok());
  alloc.Free(*big, 900000);
  EXPECT_EQ(alloc.bytes_cached(), 303104u);
  alloc.ReleaseCached();
  EXPECT_EQ(alloc.bytes_cached(), 0u);
}

TEST(StorageTest, FreesThroughItsAllocator) {
  CpuAllocator alloc;
  {
    auto s = Storage::Create(alloc, 128);
    EXPECT_EQ(s->nbytes(), 128u);
    EXPECT_EQ(alloc.bytes_in_use(), 128u);
    EXPECT_EQ(s->device(), Device::Cpu());
  }
  EXPECT_EQ(alloc.bytes_in_use(), 0u);
}

TEST(TensorTest, UndefinedByDefault) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.ToString(), "Tensor(undefined)");
}

TEST(TensorTest, CreationHelpers) {
  Tensor z = Tensor::Zeros({2, 3});
  EXPECT_TRUE(z.defined());
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(z.nbytes(), 24u);
  EXPECT_EQ(z.ToFloatVector(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(z.raw_data()) % 64, 0u);
  Tensor f = Tensor::Full({4}, 2.5f);
  EXPECT_EQ(f.ToFloatVector(), std::vector<float>(4, 2.5f));
  Tensor v = Tensor::FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(v.data<float>()[4], 5.0f);
  EXPECT_EQ(v.ToString(), "Tensor(f32, [2, 3], cpu)");
  Tensor l = Tensor::FromVectorI64({7, -1, 3}, {3});
  EXPECT_EQ(l.dtype(), DType::kI64);
  EXPECT_EQ(l.ToI64Vector(), (std::vector<int64_t>{7, -1, 3}));
  EXPECT_EQ(l.ToFloatVector(), (std::vector<float>{7, -1, 3}));
  EXPECT_EQ(Tensor::Full({}, 3.0f).item(), 3.0f);
  EXPECT_EQ(Tensor::Empty({0, 4}).numel(), 0);
  EXPECT_TRUE(Tensor::Empty({0, 4}).ToFloatVector().empty());
}

TEST(TensorTest, FullForEveryDType) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8}) {
    Tensor x = Tensor::Full({3}, 5.0f, t);
    EXPECT_EQ(x.dtype(), t);
    EXPECT_EQ(x.ToFloatVector(), std::vector<float>(3, 5.0f)) << DTypeName(t);
  }
  EXPECT_EQ(Tensor::Full({2}, -0.0f).ToFloatVector()[0], 0.0f);
  EXPECT_TRUE(std::signbit(Tensor::Full({2}, -0.0f).ToFloatVector()[1]));
}

TEST(TensorTest, ReshapeIsAView) {
  Tensor a = Tensor::FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = a.Reshape({3, -1});
  EXPECT_EQ(b.shape(), (Shape{3, 2}));
  EXPECT_TRUE(b.SharesStorageWith(a));
  b.data<float>()[0] = 42;
  EXPECT_EQ(a.data<float>()[0], 42);
  EXPECT_EQ(a.Reshape({-1}).shape(), (Shape{6}));
  EXPECT_EQ(a.Reshape({6, 1, 1}).numel(), 6);
}

TEST(TensorDeathTest, BadReshapeAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Tensor a = Tensor::Zeros({2, 3});
  EXPECT_DEATH((void)a.Reshape({4, 2}), "Reshape");
  EXPECT_DEATH((void)a.Reshape({-1, -1}), "more than one -1");
  EXPECT_DEATH((void)a.data<int64_t>(), "dtype is f32");
}

TEST(TensorTest, Slice0IsAViewWithOffset) {
  Tensor a = Tensor::FromVector({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  Tensor s = a.Slice0(1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.ToFloatVector(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_TRUE(s.SharesStorageWith(a));
  s.data<float>()[0] = -1;
  EXPECT_EQ(a.data<float>()[2], -1);
  // A slice of a slice keeps accumulating the offset.
  EXPECT_EQ(s.Slice0(1, 2).ToFloatVector(), (std::vector<float>{4, 5}));
  EXPECT_EQ(a.Slice0(4, 4).numel(), 0);
  // Clone of a slice copies only the slice.
  Tensor c = s.Clone();
  EXPECT_FALSE(c.SharesStorageWith(a));
  EXPECT_EQ(c.ToFloatVector(), (std::vector<float>{-1, 3, 4, 5}));
}

TEST(TensorTest, CloneAndToAndCopyFrom) {
  Tensor a = Tensor::FromVector({1, 2, 3}, {3});
  Tensor same = a.To(Device::Cpu());
  EXPECT_TRUE(same.SharesStorageWith(a));
  Tensor c = a.Clone();
  EXPECT_FALSE(c.SharesStorageWith(a));
  c.data<float>()[0] = 9;
  EXPECT_EQ(a.data<float>()[0], 1);
  Tensor d = Tensor::Zeros({3});
  d.CopyFrom(c);
  EXPECT_EQ(d.ToFloatVector(), (std::vector<float>{9, 2, 3}));
  for (Device dev : AvailableDevices()) {
    Tensor on = a.To(dev);
    EXPECT_EQ(on.device(), dev);
    EXPECT_EQ(on.To(Device::Cpu()).ToFloatVector(), a.ToFloatVector());
  }
}

TEST(TensorTest, CastBetweenDTypes) {
  Tensor a = Tensor::FromVector({-2.5f, 0.0f, 1.0f, 3.75f}, {4});
  Tensor h = ops::Cast(a, DType::kF16);
  EXPECT_EQ(h.dtype(), DType::kF16);
  EXPECT_EQ(h.data<Half>()[3].bits, 0x4380);  // 3.75 = 1.875 * 2^1
  EXPECT_EQ(h.ToFloatVector(), a.ToFloatVector());
  EXPECT_EQ(ops::Cast(a, DType::kBF16).ToFloatVector(), a.ToFloatVector());
  EXPECT_EQ(ops::Cast(a, DType::kI64).ToI64Vector(), (std::vector<int64_t>{-2, 0, 1, 3}));  // truncation
  EXPECT_EQ(ops::Cast(Tensor::FromVector({1, 255, 7}, {3}), DType::kU8).ToFloatVector(),
            (std::vector<float>{1, 255, 7}));
  Tensor i = Tensor::FromVectorI64({1, -5, 1 << 20}, {3});
  EXPECT_EQ(ops::Cast(i, DType::kI32).ToFloatVector(), (std::vector<float>{1, -5, 1 << 20}));
  EXPECT_EQ(ops::Cast(ops::Cast(i, DType::kI32), DType::kI64).ToI64Vector(), i.ToI64Vector());
  // f16 -> bf16 goes through float exactly for representable values.
  EXPECT_EQ(ops::Cast(h, DType::kBF16).ToFloatVector(), a.ToFloatVector());
  // A long cast exercises the vectorised f16 path plus its scalar tail.
  std::vector<float> many(37);
  for (size_t k = 0; k < many.size(); ++k) many[k] = static_cast<float>(k) * 0.25f - 4.0f;
  Tensor m = Tensor::FromVector(many, {37});
  EXPECT_EQ(ops::Cast(m, DType::kF16).ToFloatVector(), many);
}

TEST(TensorTest, BackendMemoryOpsRejectSizeMismatch) {
  Backend& cpu = BackendFor(Device::Cpu());
  Tensor t = Tensor::Zeros({4});
  float buf[3] = {1, 2, 3};
  EXPECT_EQ(cpu.CopyFromHost(buf, sizeof(buf), &t).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu.CopyToHost(t, buf, sizeof(buf)).code(), StatusCode::kInvalidArgument);
  Tensor other = Tensor::Zeros({5});
  EXPECT_EQ(cpu.Cast(other, &t).code(), StatusCode::kInvalidArgument);
}

TEST(TensorTest, TensorsFreeTheirMemory) {
  Allocator& alloc = BackendFor(Device::Cpu()).allocator();
  const size_t before = alloc.bytes_in_use();
  {
    Tensor a = Tensor::Zeros({1000});
    Tensor view = a.Reshape({10, 100});
    EXPECT_EQ(alloc.bytes_in_use(), before + 4000);
  }
  EXPECT_EQ(alloc.bytes_in_use(), before);
}

}  // namespace
}  // namespace geomx
