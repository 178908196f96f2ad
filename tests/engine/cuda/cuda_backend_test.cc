// engine/cuda pieces that can be checked on any machine: the device probe and backend start-up fail softly (a
// Status, never an abort) without a driver or GPU, and the caching allocator's size classes. With a GPU the
// allocator's block reuse runs too. Built only with GEOMX_WITH_CUDA=ON (tests/engine/CMakeLists.txt). The op
// semantics themselves are covered for every device by backend_conformance_test.cc, elementwise_test.cc and
// autograd_test.cc, which include cuda:0 through AvailableDevices() when a GPU is visible.
#include "engine/cuda/cuda_backend.h"

#include <gtest/gtest.h>

#include <string>

namespace geomx {
namespace {

bool GpuVisible() { return CudaDeviceCount(nullptr) > 0; }

TEST(CudaBackendTest, ProbeExplainsMissingDevices) {
  std::string why;
  const int count = CudaDeviceCount(&why);
  EXPECT_GE(count, 0);
  if (count == 0) {
    EXPECT_EQ(why.rfind("cudaGetDeviceCount: ", 0), 0u) << why;
  }
}

TEST(CudaBackendTest, StartWithoutDeviceIsFailedPreconditionNotAnAbort) {
  if (GpuVisible()) GTEST_SKIP() << "a CUDA device is visible: start-up succeeds (CudaSmokeTest covers it)";
  auto backend = CudaBackend::Create();
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), StatusCode::kFailedPrecondition) << backend.status().ToString();
}

TEST(CudaAllocatorTest, SizeClasses) {
  const CudaAllocator a(Device::Cuda(0));
  EXPECT_EQ(a.RoundedSize(0), 512u);  // a unique non-null block even for 0 bytes
  EXPECT_EQ(a.RoundedSize(1), 512u);
  EXPECT_EQ(a.RoundedSize(512), 512u);
  EXPECT_EQ(a.RoundedSize(513), 1024u);
  const size_t mib = size_t{1} << 20;
  EXPECT_EQ(a.RoundedSize(mib - 1), mib);
  EXPECT_EQ(a.RoundedSize(mib), mib);
  EXPECT_EQ(a.RoundedSize(mib + 1), mib + mib / 8);  // eighths of the power of two above 1 MiB
  EXPECT_EQ(a.RoundedSize(3 * mib + 1), 3 * mib + 2 * mib / 8);
  for (size_t n : {size_t{100}, mib + 12345, 700 * mib + 1}) {
    EXPECT_GE(a.RoundedSize(n), n);
    EXPECT_LE(a.RoundedSize(n), n + n / 8 + 512) << n;  // bounded waste
  }
}

TEST(CudaAllocatorTest, AllocateWithoutDeviceIsAStatus) {
  if (GpuVisible()) GTEST_SKIP() << "a CUDA device is visible";
  CudaAllocator a(Device::Cuda(0));
  auto r = a.Allocate(4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_EQ(a.bytes_in_use(), 0u);
}

TEST(CudaAllocatorTest, ReusesFreedBlocksOfTheSameSizeClass) {
  if (!GpuVisible()) GTEST_SKIP() << "no CUDA device visible";
  CudaAllocator a(Device::Cuda(0));
  auto first = a.Allocate(3000);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(a.bytes_in_use(), 3000u);
  a.Free(*first, 3000);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.bytes_cached(), 3072u);
  auto second = a.Allocate(3070);  // same 512-byte class
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *first);
  a.Free(*second, 3070);
  a.ReleaseCached();
  EXPECT_EQ(a.bytes_cached(), 0u);
}

}  // namespace
}  // namespace geomx
