// datasets/detection.h: IoU, VOC average precision on hand-worked cases, and the canvas generator's invariants
// (items inside the canvas, not overlapping, pixels and tight boxes where the item was pasted, determinism, errors).
#include "datasets/detection.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>


namespace geomx::data {
namespace {

TEST(DetectionTest, BoxIoUOnHandWorkedBoxes) {
  EXPECT_DOUBLE_EQ(BoxIoU({0, 0, 2, 2}, {1, 1, 3, 3}), 1.0 / 7.0);  // overlap 1, union 4 + 4 - 1
  EXPECT_DOUBLE_EQ(BoxIoU({0, 0, 4, 2}, {0, 0, 4, 2}), 1.0);
  EXPECT_DOUBLE_EQ(BoxIoU({0, 0, 4, 4}, {1, 1, 3, 3}), 4.0 / 16.0);
  EXPECT_DOUBLE_EQ(BoxIoU({0, 0, 2, 2}, {2, 0, 4, 2}), 0.0);  // touching edges: half-open boxes do not overlap
  EXPECT_DOUBLE_EQ(BoxIoU({0, 0, 0, 5}, {0, 0, 0, 5}), 0.0);  // empty
}

TEST(DetectionTest, AveragePrecisionOfAHandWorkedRanking) {
  // Two objects of class 0 on canvas 0. Ranked detections: hit A, miss, hit B.
  // precision 1, 1/2, 2/3 at recall 1/2, 1/2, 1; envelope 1, 2/3, 2/3; AP = 1/2 * 1 + 1/2 * 2/3 = 5/6.
  const std::vector<std::vector<LabelledBox>> truth = {{{0, {0, 0, 10, 10}}, {0, {20, 20, 30, 30}}}};
  const std::vector<Detection> dets = {
      {0, 0, 0.9f, {1, 0, 10, 10}}, {0, 0, 0.8f, {50, 50, 60, 60}}, {0, 0, 0.7f, {20, 21, 30, 30}}};
  const std::vector<double> ap = AveragePrecisions(dets, truth, 2);
  ASSERT_EQ(ap.size(), 2u);
  EXPECT_NEAR(ap[0], 5.0 / 6.0, 1e-12);
  EXPECT_EQ(ap[1], -1.0);  // no ground truth of class 1
  EXPECT_NEAR(MeanAveragePrecision(dets, truth, 2), 5.0 / 6.0, 1e-12);
}

TEST(DetectionTest, DuplicatesWrongClassesAndLowOverlapAreFalsePositives) {
  const std::vector<std::vector<LabelledBox>> truth = {{{0, {0, 0, 10, 10}}}, {{1, {0, 0, 10, 10}}}};
  std::vector<Detection> dets = {
      {0, 0, 0.9f, {0, 0, 10, 10}},  // hit
      {0, 0, 0.8f, {0, 0, 10, 10}},  // the same object again: false positive
      {1, 0, 0.95f, {0, 0, 10, 10}}, // canvas 1 has no class-0 object: false positive ranked first
      {1, 1, 0.5f, {0, 0, 10, 4}},   // IoU 0.4 < 0.5: false positive
  };
  const std::vector<double> ap = AveragePrecisions(dets, truth, 2);
  // Class 0 ranking: FP (0.95), TP (0.9), FP (0.8): precision 0, 1/2, 1/3 at recall 0, 1, 1 -> AP 1/2.
  EXPECT_NEAR(ap[0], 0.5, 1e-12);
  EXPECT_NEAR(ap[1], 0.0, 1e-12);
  EXPECT_NEAR(MeanAveragePrecision(dets, truth, 2), 0.25, 1e-12);
  // At IoU 0.3 the class-1 box counts.
  EXPECT_NEAR(AveragePrecisions(dets, truth, 2, 0.3)[1], 1.0, 1e-12);
  // A detection naming a canvas that does not exist is a false positive, not a crash.
  dets.push_back({7, 1, 0.99f, {0, 0, 10, 10}});
  EXPECT_NEAR(AveragePrecisions(dets, truth, 2, 0.3)[1], 0.5, 1e-12);
}

// Two 4x4 items: 0 a full square of 200 (class 0), 1 with pixels only in rows 1-2, columns 1-3 (class 1).
ItemImages Items() {
  ItemImages items;
  items.height = items.width = 4;
  items.pixels.assign(32, 0);
  for (int i = 0; i < 16; ++i) items.pixels[static_cast<size_t>(i)] = 200;
  for (int y = 1; y <= 2; ++y) {
    for (int x = 1; x <= 3; ++x) {
      items.pixels[static_cast<size_t>(16 + y * 4 + x)] = static_cast<uint8_t>(100 + 10 * y + x);
    }
  }
  items.labels = {0, 1};
  items.num_classes = 2;
  items.source = "test-items";
  return items;
}

TEST(DetectionTest, ItemsFromANormalisedTableGetTheirBytesBack) {
  // Pixels 0, 255, 51, 102 of two 2x2 items, normalised as (x/255 - 0.3) / 0.5.
  const std::vector<int> bytes = {0, 255, 51, 102, 255, 0, 0, 7};
  Table t;
  t.rows = 2;
  t.cols = 4;
  for (int b : bytes) t.dense.push_back((static_cast<float>(b) / 255.0f - 0.3f) / 0.5f);
  t.labels = {1, 0};
  t.num_classes = 2;
  t.source = "tiny";
  Result<ItemImages> items = ItemsFromTable(t);
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  EXPECT_EQ(items->height, 2);
  EXPECT_EQ(items->width, 2);
  EXPECT_EQ(items->labels, t.labels);
  for (size_t k = 0; k < bytes.size(); ++k) EXPECT_EQ(items->pixels[k], bytes[k]) << k;
  t.cols = 2;  // not square: 2 columns
  t.dense.resize(4);
  EXPECT_FALSE(ItemsFromTable(t).ok());
}

TEST(DetectionTest, CanvasesHoldTheItemsWhereTheirBoxesSay) {
  const ItemImages items = Items();
  CanvasOptions o;
  o.canvases = 200;
  o.size = 12;
  o.min_items = 1;
  o.max_items = 4;
  o.seed = 7;
  Result<DetectionSet> set = MakeCanvases(items, o);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ(set->size(), 200);
  EXPECT_EQ(set->height, 12);
  int64_t counts[5] = {0, 0, 0, 0, 0};
  for (int64_t c = 0; c < set->size(); ++c) {
    const auto& objects = set->objects[static_cast<size_t>(c)];
    ASSERT_GE(objects.size(), 1u);
    ASSERT_LE(objects.size(), 4u);
    ++counts[objects.size()];
    int64_t expected_sum = 0;
    for (const LabelledBox& o2 : objects) {
      const Box& b = o2.box;
      ASSERT_GE(b.x0, 0);
      ASSERT_LE(b.x1, 12);
      ASSERT_GE(b.y0, 0);
      ASSERT_LE(b.y1, 12);
      // The tight box: the whole 4x4 for class 0, 3x2 for class 1 (one pixel in from the square's corner).
      EXPECT_EQ(b.width(), o2.label == 0 ? 4 : 3);
      EXPECT_EQ(b.height(), o2.label == 0 ? 4 : 2);
      expected_sum += o2.label == 0 ? 16 * 200 : (111 + 112 + 113 + 121 + 122 + 123);
      // The top-left pixel of the box holds the item's first lit pixel.
      const uint8_t* canvas = set->CanvasPixels(c);
      const uint8_t top_left = canvas[static_cast<size_t>(b.y0) * 12 + static_cast<size_t>(b.x0)];
      EXPECT_EQ(top_left, o2.label == 0 ? 200 : 111);
    }
    // Squares never overlap, so the canvas is exactly the sum of its items.
    int64_t sum = 0;
    for (int i = 0; i < 144; ++i) sum += set->CanvasPixels(c)[i];
    EXPECT_EQ(sum, expected_sum) << "canvas " << c;
    for (size_t a = 0; a < objects.size(); ++a) {
      for (size_t b = a + 1; b < objects.size(); ++b) EXPECT_EQ(BoxIoU(objects[a].box, objects[b].box), 0.0);
    }
  }
  // Every count of items occurs (four 4x4 squares fit in 12x12, though not every placement leaves room).
  EXPECT_GT(counts[1], 0);
  EXPECT_GT(counts[2], 0);
  EXPECT_GT(counts[3], 0);

  Result<DetectionSet> again = MakeCanvases(items, o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->pixels, set->pixels);
  o.seed = 8;
  Result<DetectionSet> other = MakeCanvases(items, o);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->pixels, set->pixels);
}

TEST(DetectionTest, ImpossibleCanvasesAreRefusedWithTheOptionNamed) {
  const ItemImages items = Items();
  CanvasOptions o;
  o.size = 3;
  Result<DetectionSet> small = MakeCanvases(items, o);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("canvas 3 is smaller than a 4x4 item"), std::string::npos);
  o.size = 8;
  o.min_items = 3;
  o.max_items = 2;
  EXPECT_FALSE(MakeCanvases(items, o).ok());
  o.min_items = 1;
  o.canvases = 0;
  EXPECT_FALSE(MakeCanvases(items, o).ok());
}

}  // namespace
}  // namespace geomx::data
