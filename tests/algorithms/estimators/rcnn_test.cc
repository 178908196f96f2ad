// rcnn (algorithms/estimators/rcnn.h): proposals, box coding and NMS on hand-worked cases; the distributed first
// gradient against one process on the union of the canvases; a short fit on two easy shapes that finds them
// (mAP@0.5), a save/load round trip, and the canvas-size error with its key path.
#include "algorithms/estimators/rcnn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "engine/base/rng.h"

namespace geomx::algorithms {
namespace {

using data::Box;

bool Same(const Box& a, const Box& b) { return a.x0 == b.x0 && a.y0 == b.y0 && a.x1 == b.x1 && a.y1 == b.y1; }

TEST(RcnnProposals, GroupingThenWindowsOnAHandDrawnCanvas) {
  std::vector<uint8_t> c(16 * 16, 0);
  auto lit = [&](int x0, int x1, int y0, int y1) {  // inclusive ranges
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) c[static_cast<size_t>(y * 16 + x)] = 200;
    }
  };
  lit(2, 4, 2, 3);      // A: box {2, 2, 5, 4}
  lit(7, 8, 2, 3);      // B: {7, 2, 9, 4}, 2 pixels right of A: merged with it
  lit(12, 13, 12, 14);  // C: {12, 12, 14, 15}, 8 pixels below the merged group: left alone
  c[0] = 31;            // below the threshold: no component
  ProposalOptions o;
  o.window_sizes = {8};
  o.stride = 4;
  o.min_area = 0;
  const std::vector<Box> got = ProposeRegions(c.data(), 16, 16, o);
  std::vector<Box> want = {{2, 2, 5, 4}, {7, 2, 9, 4}, {12, 12, 14, 15}, {2, 2, 9, 4}};
  for (float y : {0.0f, 4.0f, 8.0f}) {
    for (float x : {0.0f, 4.0f, 8.0f}) want.push_back({x, y, x + 8, y + 8});
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(Same(got[i], want[i])) << i;

  // A stride that does not reach the edge adds the flush window; small boxes go.
  o.stride = 5;
  o.min_area = 7;  // drops A (6), B (4) and C (6); keeps the merged group (14)
  const std::vector<Box> fewer = ProposeRegions(c.data(), 16, 16, o);
  ASSERT_EQ(fewer.size(), 1u + 3u * 3u);  // starts 0, 5 and the flush 8
  EXPECT_TRUE(Same(fewer[0], Box{2, 2, 9, 4}));
  EXPECT_TRUE(Same(fewer.back(), Box{8, 8, 16, 16}));
  // A window equal to a group's box appears once.
  std::vector<uint8_t> square(16 * 16, 0);
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 8; ++x) square[static_cast<size_t>(y * 16 + x)] = 255;
  }
  o.stride = 4;
  o.min_area = 0;
  EXPECT_EQ(ProposeRegions(square.data(), 16, 16, o).size(), 9u);
}

TEST(RcnnBoxes, EncodeDecodeAndCropRegionByHand) {
  const Box p{0, 0, 10, 20}, t{5, 5, 15, 15};
  // Centres (5, 10) and (10, 10); sizes 10x20 and 10x10.
  const std::array<float, 4> d = EncodeBox(p, t);
  EXPECT_FLOAT_EQ(d[0], 0.5f);
  EXPECT_FLOAT_EQ(d[1], 0.0f);
  EXPECT_FLOAT_EQ(d[2], 0.0f);
  EXPECT_FLOAT_EQ(d[3], std::log(0.5f));
  const Box back = DecodeBox(p, d);
  EXPECT_NEAR(back.x0, 5, 1e-5);
  EXPECT_NEAR(back.y0, 5, 1e-5);
  EXPECT_NEAR(back.x1, 15, 1e-5);
  EXPECT_NEAR(back.y1, 15, 1e-5);
  const Box r = CropRegion(Box{10, 10, 20, 30}, 1.0f);  // side 20 around (15, 20)
  EXPECT_TRUE(Same(r, Box{5, 10, 25, 30}));
  const Box wide = CropRegion(Box{10, 10, 20, 30}, 1.5f);
  EXPECT_TRUE(Same(wide, Box{0, 5, 30, 35}));
}

TEST(RcnnNms, KeepsTheBestOfEachCluster) {
  const std::vector<Box> boxes = {{0, 0, 10, 10}, {1, 1, 11, 11}, {20, 20, 30, 30}, {0, 0, 10, 10}};
  const std::vector<float> scores = {0.9f, 0.8f, 0.7f, 0.95f};
  // IoU(box 1, box 3) = 81 / 119 = 0.68.
  EXPECT_EQ(NonMaxSuppression(boxes, scores, 0.5), (std::vector<size_t>{3, 2}));
  EXPECT_EQ(NonMaxSuppression(boxes, scores, 0.7), (std::vector<size_t>{3, 1, 2}));
  EXPECT_TRUE(NonMaxSuppression({}, {}, 0.5).empty());
}

// 28x28 items of two easy shapes: class 0 a filled 16x16 square, class 1 a 20x8 bar, with a little texture.
data::ItemImages EasyItems(int count, uint64_t seed) {
  data::ItemImages items;
  items.height = items.width = 28;
  items.num_classes = 2;
  items.source = "easy";
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    const int cls = i % 2;
    std::vector<uint8_t> px(28 * 28, 0);
    const int w = cls == 0 ? 16 : 20, h = cls == 0 ? 16 : 8;
    for (int y = (28 - h) / 2; y < (28 + h) / 2; ++y) {
      for (int x = (28 - w) / 2; x < (28 + w) / 2; ++x) {
        px[static_cast<size_t>(y * 28 + x)] = static_cast<uint8_t>(150 + rng.Below(100));
      }
    }
    items.pixels.insert(items.pixels.end(), px.begin(), px.end());
    items.labels.push_back(cls);
  }
  return items;
}

data::DetectionSet Canvases(int64_t n, uint64_t seed) {
  data::CanvasOptions o;
  o.canvases = n;
  o.size = 64;
  o.seed = seed;
  auto set = data::MakeCanvases(EasyItems(20, seed), o);
  EXPECT_TRUE(set.ok());
  return *set;
}

data::DetectionSet Part(const data::DetectionSet& s, int64_t from, int64_t to) {
  data::DetectionSet p = s;
  const size_t plane = static_cast<size_t>(s.height * s.width);
  p.pixels.assign(s.pixels.begin() + static_cast<std::ptrdiff_t>(plane * static_cast<size_t>(from)),
                  s.pixels.begin() + static_cast<std::ptrdiff_t>(plane * static_cast<size_t>(to)));
  p.objects.assign(s.objects.begin() + from, s.objects.begin() + to);
  return p;
}

TEST(RcnnDistributed, FirstGradientOfTwoWorkersEqualsOneProcessOnTheUnion) {
  const data::DetectionSet all = Canvases(6, 3);
  const std::map<std::string, std::string> params = {{"seed", "5"}};
  std::vector<float> one;
  ASSERT_TRUE(RcnnFirstGradientForTesting(params, all, 0, nullptr, &one).ok());
  double norm = 0;
  for (float v : one) norm += double{v} * v;
  ASSERT_GT(norm, 0.0);

  ThreadCollectiveGroup group(2);
  std::vector<float> got[2];
  Status st[2];
  std::thread t0([&] { st[0] = RcnnFirstGradientForTesting(params, Part(all, 0, 2), 0, group.Worker(0), &got[0]); });
  std::thread t1([&] { st[1] = RcnnFirstGradientForTesting(params, Part(all, 2, 6), 2, group.Worker(1), &got[1]); });
  t0.join();
  t1.join();
  ASSERT_TRUE(st[0].ok()) << st[0].ToString();
  ASSERT_TRUE(st[1].ok()) << st[1].ToString();
  ASSERT_EQ(got[0].size(), one.size());
  EXPECT_EQ(got[0], got[1]);  // every worker applies the same update
  for (size_t i = 0; i < one.size(); ++i) {
    ASSERT_NEAR(got[0][i], one[i], 1e-5 + 1e-4 * std::fabs(one[i])) << "parameter value " << i;
  }
  // The union matters: one worker's half alone gives another gradient.
  std::vector<float> half;
  ASSERT_TRUE(RcnnFirstGradientForTesting(params, Part(all, 0, 2), 0, nullptr, &half).ok());
  double diff = 0;
  for (size_t i = 0; i < one.size(); ++i) diff += std::fabs(half[i] - one[i]);
  EXPECT_GT(diff, 1e-3);
}

// The items as a table (their pixels scaled to [0, 1]), the way an image data set reaches an estimator.
data::Table ItemTable(const data::ItemImages& items) {
  data::Table t;
  t.rows = items.size();
  t.cols = items.height * items.width;
  for (uint8_t b : items.pixels) t.dense.push_back(static_cast<float>(b) / 255.0f);
  t.labels = items.labels;
  t.num_classes = items.num_classes;
  t.source = items.source;
  return t;
}

TEST(Rcnn, FindsTwoEasyShapesAndRoundTrips) {
  data::ItemImages items = EasyItems(60, 11);
  items.pixels[0] = 255;  // the table's white, so the table maps back to the same bytes
  const data::Table train = ItemTable(items), test = ItemTable(EasyItems(20, 12));
  const std::map<std::string, std::string> params = {
      {"canvases", "64"}, {"epochs", "2"}, {"test_canvases", "16"}, {"seed", "3"}};
  auto e = CreateEstimator("rcnn", params);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_TRUE((*e)->Fit(train, FitContext{}).ok());
  auto p = (*e)->Predict(test, 1);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  int right = 0;
  for (int64_t i = 0; i < test.rows; ++i) right += p->value[static_cast<size_t>(i)] == test.labels[static_cast<size_t>(i)];
  EXPECT_EQ(right, test.rows);
  const Metrics m = (*e)->ModelMetrics(test, *p);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].name, "map@0.5");
  EXPECT_GT(m[0].value, 0.8) << "mAP@0.5";
  std::printf("mAP@0.5 on the easy shapes: %.4f\n", m[0].value);

  ModelWriter w;
  (*e)->Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "model");
  ASSERT_TRUE(r.ok());
  auto loaded = CreateEstimator("rcnn", params);  // the caller restores the parameters (model_io.h)
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE((*loaded)->Load(*r).ok());
  const Metrics again = (*loaded)->ModelMetrics(test, *p);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_DOUBLE_EQ(again[0].value, m[0].value);
  // A model file of another width is refused.
  auto other = CreateEstimator("rcnn", {{"hidden", "64"}});
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE((*other)->Load(*r).ok());
}

TEST(Rcnn, CanvasSmallerThanAnItemNamesTheKey) {
  const data::Table train = ItemTable(EasyItems(10, 1));
  auto e = CreateEstimator("rcnn", {{"canvas", "20"}});
  ASSERT_TRUE(e.ok());
  const Status st = (*e)->Fit(train, FitContext{});
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("algorithm.canvas: 20 is smaller than a 28x28 item"), std::string::npos)
      << st.message();
  auto swapped = CreateEstimator("rcnn", {{"min_items", "3"}, {"max_items", "2"}});
  ASSERT_TRUE(swapped.ok());
  const Status st2 = (*swapped)->Fit(train, FitContext{});
  ASSERT_EQ(st2.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st2.message().find("algorithm.min_items: 3 is above algorithm.max_items (2)"), std::string::npos)
      << st2.message();
}

}  // namespace
}  // namespace geomx::algorithms
