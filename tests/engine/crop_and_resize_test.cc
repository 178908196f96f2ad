// RoI crop-and-resize (ops.h CropAndResize, autograd::CropAndResize) on every available device: hand-computed
// samples of TF's crop_and_resize semantics, the gradient's bilinear scatter, bad boxes as kInvalidArgument. The
// forward against a naive reference and the backward against finite differences are conformance rows
// (backend_conformance_test.cc).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/autograd/functions.h"
#include "engine/autograd/grad_check.h"
#include "engine/backend_registry.h"
#include "engine/ops.h"
#include "tests/testutil.h"

namespace geomx {
namespace {

using Vec = std::vector<float>;

class CropAndResizeTest : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Tensor T(const Vec& v, const Shape& s) const { return Tensor::FromVector(v, s, dev()); }
  Tensor Boxes(const Vec& v) const { return T(v, {static_cast<int64_t>(v.size() / 4), 4}); }
  Tensor Images(const std::vector<int64_t>& v) const {
    return Tensor::FromVectorI64(v, {static_cast<int64_t>(v.size())}, dev());
  }
  // One 3x3 image, values 0..8 row-major.
  Tensor Image3x3() const { return T({0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 3, 3}); }

  Vec Crop(const Tensor& x, const Vec& boxes, const std::vector<int64_t>& images, CropAndResizeParams p) const {
    Result<Tensor> y = ops::CropAndResize(x, Boxes(boxes), Images(images), p);
    EXPECT_TRUE(y.ok()) << y.status().ToString();
    return y.ok() ? y->ToFloatVector() : Vec();
  }
};

TEST_P(CropAndResizeTest, SamplesFollowTensorFlowsConvention) {
  // The whole image at its own size: every sample lands on a pixel centre.
  EXPECT_EQ(Crop(Image3x3(), {0, 0, 1, 1}, {0}, {3, 3, 0}), (Vec{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  // A 1x1 crop samples the box centre: (0.25, 0.25) -> pixel (0.5, 0.5), the mean of pixels 0, 1, 3, 4.
  EXPECT_EQ(Crop(Image3x3(), {0, 0, 0.5f, 0.5f}, {0}, {1, 1, 0}), (Vec{2}));
  // Flipped box: y from 1 to 0, x from 0 to 1, 2x3 -> the last row, then the first.
  EXPECT_EQ(Crop(Image3x3(), {1, 0, 0, 1}, {0}, {2, 3, 0}), (Vec{6, 7, 8, 0, 1, 2}));
  // Half-pixel steps: x at 0, 0.5, 1, ... 2 on row 1 (y = 0.5 -> pixel row 1).
  EXPECT_EQ(Crop(Image3x3(), {0.5f, 0, 0.5f, 1}, {0}, {1, 5, 0}), (Vec{3, 3.5f, 4, 4.5f, 5}));
}

TEST_P(CropAndResizeTest, SamplesOutsideTheImageTakeTheExtrapolationValue) {
  // y from -0.5 to 1.5 in 3 steps: pixel rows -1 (outside), 1, 3 (outside); x covers the image.
  EXPECT_EQ(Crop(Image3x3(), {-0.5f, 0, 1.5f, 1}, {0}, {3, 3, -7}), (Vec{-7, -7, -7, 3, 4, 5, -7, -7, -7}));
}

TEST_P(CropAndResizeTest, PicksEachBoxsImageAndEveryChannel) {
  // Two images of two channels; image 1 channel c holds 100 * (c + 1) + pixel.
  Vec x(2 * 2 * 2 * 2);
  for (int64_t i = 0; i < 8; ++i) x[8 + i] = static_cast<float>(100 * (i / 4 + 1) + i % 4);
  const Tensor xt = T(x, {2, 2, 2, 2});
  // Box 0 on image 1, point (0, 1) -> pixel (0, 1); box 1 on image 0 (zeros).
  EXPECT_EQ(Crop(xt, {0, 1, 0, 1, 0, 0, 1, 1}, {1, 0}, {1, 1, 0}), (Vec{101, 201, 0, 0}));
}

TEST_P(CropAndResizeTest, BackwardScattersTheBilinearWeights) {
  // The centre sample of {0, 0, 0.5, 0.5} reads pixels 0, 1, 3, 4 a quarter each.
  const Tensor dy = T({8}, {1, 1, 1, 1});
  Result<Tensor> dx = ops::CropAndResizeBackward(dy, Boxes({0, 0, 0.5f, 0.5f}), Images({0}), {1, 1, 3, 3}, {1, 1, 0});
  ASSERT_TRUE(dx.ok()) << dx.status().ToString();
  EXPECT_EQ(dx->ToFloatVector(), (Vec{2, 2, 0, 2, 2, 0, 0, 0, 0}));
  // Overlapping boxes on one image add up; extrapolated samples pass nothing back.
  const Tensor boxes = Boxes({0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2});
  Result<Tensor> both =
      ops::CropAndResizeBackward(T({1, 10, 100}, {3, 1, 1, 1}), boxes, Images({0, 0, 0}), {1, 1, 3, 3}, {1, 1, 0});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->ToFloatVector(), (Vec{11, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST_P(CropAndResizeTest, NoBoxesGiveAnEmptyOutputAndAZeroGradient) {
  Result<Tensor> y = ops::CropAndResize(Image3x3(), Boxes({}), Images({}), {2, 2, 0});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->shape(), (Shape{0, 1, 2, 2}));
  Result<Tensor> dx = ops::CropAndResizeBackward(*y, Boxes({}), Images({}), {1, 1, 3, 3}, {2, 2, 0});
  ASSERT_TRUE(dx.ok());
  EXPECT_EQ(dx->ToFloatVector(), Vec(9, 0.0f));
}

TEST_P(CropAndResizeTest, BadBoxesAreInvalidArgumentNamingTheBox) {
  const CropAndResizeParams p{2, 2, 0};
  Result<Tensor> far = ops::CropAndResize(Image3x3(), Boxes({0, 0, 1, 1, 0, 0, 1, 1}), Images({0, 1}), p);
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(far.status().message().find("box 1 has image index 1, outside [0, 1)"), std::string::npos)
      << far.status().ToString();
  EXPECT_FALSE(ops::CropAndResize(Image3x3(), Boxes({0, 0, 1, 1}), Images({-1}), p).ok());
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    Result<Tensor> y = ops::CropAndResize(Image3x3(), Boxes({0, 0, 1, bad}), Images({0}), p);
    ASSERT_FALSE(y.ok());
    EXPECT_NE(y.status().message().find("box 0 has a coordinate that is not finite"), std::string::npos)
        << y.status().ToString();
    EXPECT_FALSE(ops::CropAndResizeBackward(T(Vec(4, 1.0f), {1, 1, 2, 2}), Boxes({0, 0, 1, bad}), Images({0}),
                                            {1, 1, 3, 3}, p)
                     .ok());
  }
  Result<autograd::Variable> v =
      autograd::CropAndResize(autograd::Variable(Image3x3(), true), Boxes({0, 0, 1, 1}), Images({3}), p);
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
}

TEST_P(CropAndResizeTest, AutogradGradientMatchesFiniteDifferences) {
  const Tensor boxes = Boxes({0.1f, 0.2f, 0.9f, 0.7f, -0.2f, 0.0f, 0.6f, 1.3f, 0.8f, 0.9f, 0.3f, 0.05f});
  const Tensor images = Images({1, 0, 1});
  const Tensor w = testing::RandomTensor({3, 2, 3, 4}, 9, -1, 1, dev());
  const autograd::GradCheckResult r = autograd::CheckGradients(
      [&](const std::vector<autograd::Variable>& in) {
        Result<autograd::Variable> y = autograd::CropAndResize(in[0], boxes, images, {3, 4, 0.5f});
        GEOMX_CHECK(y.ok()) << y.status().ToString();
        return autograd::Sum(autograd::Mul(*y, autograd::Variable(w)));
      },
      {testing::RandomTensor({2, 2, 4, 5}, 8, -1, 1, dev())});
  EXPECT_LT(r.max_rel_error, 1e-2) << r.message;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, CropAndResizeTest, ::testing::ValuesIn(AvailableDevices()),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return info.param.is_cpu() ? std::string("cpu")
                                                      : "cuda" + std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace geomx
