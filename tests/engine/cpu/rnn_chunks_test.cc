// The CPU recurrent kernels cut a batch into chunks of rows that run side by side, one thread each
// (engine/cpu/onednn_rnn.cc). The one-chunk path is checked against the equations and finite differences in
// backend_conformance_test.cc; here the chunked runs must give the same outputs and gradients as it, with the
// chunk count the file comment documents at the head of the workspace.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend_registry.h"
#include "engine/ops.h"
#include "tests/testutil.h"

namespace geomx {
namespace {

int64_t ChunkCount(const Tensor& workspace) {
  int64_t count = 0;
  std::memcpy(&count, workspace.raw_data(), sizeof(count));
  return count;
}

struct Result {
  ops::RnnResult fwd;
  ops::RnnGrads grads;
};

class RnnChunksTest : public ::testing::TestWithParam<std::tuple<RnnCell, bool>> {
 protected:
  void TearDown() override { BackendFor(DeviceKind::kCpu).SetNumThreads(0); }

  void Make(int64_t n) {
    const int64_t g = RnnGates(cell()), t = 5, i = 6, h = 8;
    p_.cell = cell();
    p_.sequences = std::get<1>(GetParam());
    x_ = testing::RandomTensor(Shape{n, t, i}, 1);
    w_ih_ = testing::RandomTensor(Shape{g * h, i}, 2, -0.6f, 0.6f);
    w_hh_ = testing::RandomTensor(Shape{g * h, h}, 3, -0.6f, 0.6f);
    b_ = testing::RandomTensor(Shape{RnnBiasBlocks(cell()) * h}, 4, -0.5f, 0.5f);
    dy_ = testing::RandomTensor(p_.sequences ? Shape{n, t, h} : Shape{n, h}, 5);
  }
  RnnCell cell() const { return std::get<0>(GetParam()); }

  // Forward with `fwd_threads`, backward with `bwd_threads`.
  Result Go(int fwd_threads, int bwd_threads) {
    Backend& cpu = BackendFor(DeviceKind::kCpu);
    cpu.SetNumThreads(fwd_threads);
    Result r;
    r.fwd = ops::Rnn(x_, w_ih_, w_hh_, b_, p_, /*training=*/true);
    cpu.SetNumThreads(bwd_threads);
    r.grads = ops::RnnBackward(x_, w_ih_, w_hh_, b_, dy_, r.fwd.workspace, p_);
    return r;
  }

  static void ExpectSame(const Result& got, const Result& want) {
    EXPECT_TRUE(testing::AllClose(got.fwd.y, want.fwd.y, 1e-5f, 1e-6f)) << "y";
    EXPECT_TRUE(testing::AllClose(got.grads.dx, want.grads.dx, 1e-5f, 1e-6f)) << "dx";
    EXPECT_TRUE(testing::AllClose(got.grads.dw_ih, want.grads.dw_ih, 1e-4f, 1e-5f)) << "dw_ih";
    EXPECT_TRUE(testing::AllClose(got.grads.dw_hh, want.grads.dw_hh, 1e-4f, 1e-5f)) << "dw_hh";
    EXPECT_TRUE(testing::AllClose(got.grads.db, want.grads.db, 1e-4f, 1e-5f)) << "db";
  }

  RnnParams p_;
  Tensor x_, w_ih_, w_hh_, b_, dy_;
};

TEST_P(RnnChunksTest, ChunkedBatchesMatchOneChunk) {
  Make(37);
  const Result one = Go(1, 1);
  ASSERT_EQ(ChunkCount(one.fwd.workspace), 1);
  // 3 threads, 37 rows: two chunks (18 and 19 rows; a chunk has at least 16).
  const Result two = Go(3, 3);
  ASSERT_EQ(ChunkCount(two.fwd.workspace), 2);
  ExpectSame(two, one);
  // The backward cuts the batch as the forward did, whatever the thread count is by then.
  ExpectSame(Go(1, 3), one);
  ExpectSame(Go(3, 1), one);
}

TEST_P(RnnChunksTest, FourUnevenChunks) {
  Make(70);  // 17, 18, 17, 18 rows
  const Result one = Go(1, 1);
  const Result four = Go(4, 4);
  ASSERT_EQ(ChunkCount(four.fwd.workspace), 4);
  ExpectSame(four, one);
}

TEST_P(RnnChunksTest, SmallBatchesStayWhole) {
  Make(31);  // under two chunks of 16 rows
  EXPECT_EQ(ChunkCount(Go(8, 8).fwd.workspace), 1);
}

INSTANTIATE_TEST_SUITE_P(Cells, RnnChunksTest,
                         ::testing::Combine(::testing::Values(RnnCell::kLstm, RnnCell::kGru), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == RnnCell::kLstm ? "Lstm" : "Gru") +
                                  (std::get<1>(info.param) ? "Sequences" : "LastStep");
                         });

}  // namespace
}  // namespace geomx
