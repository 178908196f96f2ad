// Object detection data: canvases with labelled boxes, the deterministic "fashion-canvas" generator (Fashion-MNIST
// or MNIST items pasted on larger black canvases, the data of the rcnn algorithm, docs/algorithms.md#rcnn) and the
// PASCAL VOC evaluation of detections (IoU, average precision, mAP).
//
// Coordinates are in pixels of the canvas, x to the right and y down, boxes half-open: a box {x0, y0, x1, y1} covers
// the pixels x0 <= x < x1, y0 <= y < y1 (an item pasted at column c with width w spans [c, c + w)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::data {

struct Box {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  float width() const { return x1 - x0; }
  float height() const { return y1 - y0; }
};

// Intersection over union of two boxes; 0 when either is empty (zero or negative width or height).
double BoxIoU(const Box& a, const Box& b);

struct LabelledBox {
  int32_t label = 0;  // class id in [0, num_classes)
  Box box;
};

// Single-channel canvases (u8, row-major, canvas-major) and the objects on each.
struct DetectionSet {
  int height = 0, width = 0;
  std::vector<uint8_t> pixels;                    // size() * height * width
  std::vector<std::vector<LabelledBox>> objects;  // per canvas
  int num_classes = 0;
  std::vector<std::string> class_names;  // may be empty
  std::string source;

  int64_t size() const { return static_cast<int64_t>(objects.size()); }
  const uint8_t* CanvasPixels(int64_t i) const {
    return pixels.data() + static_cast<size_t>(i) * static_cast<size_t>(height) * static_cast<size_t>(width);
  }
};

struct CanvasOptions {
  int64_t canvases = 1000;  // >= 1
  int size = 64;            // square canvas side; at least an item's side
  int min_items = 1;        // items per canvas, uniform in [min_items, max_items], 1 <= min_items <= max_items
  int max_items = 3;
  uint64_t seed = 1;
  // An item's box is the tight box of its pixels >= this value (the pasted square where none is: an empty item).
  uint8_t box_threshold = 32;
};

// Single-channel u8 item images with their class labels: what canvases are made of.
struct ItemImages {
  int height = 0, width = 0;
  std::vector<uint8_t> pixels;  // size() * height * width, item-major, row-major
  std::vector<int32_t> labels;  // class id per item, in [0, num_classes)
  int num_classes = 0;
  std::vector<std::string> class_names;  // may be empty
  std::string source;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  const uint8_t* ItemPixels(int64_t i) const {
    return pixels.data() + static_cast<size_t>(i) * static_cast<size_t>(height) * static_cast<size_t>(width);
  }
};

// The rows of a dense, labelled classification table of side x side pixel columns (an image data set opened as a
// table: datasets/table.h OpenTable, its pixels normalised by any increasing affine map) as u8 items: the
// table's smallest value becomes 0 and its largest 255, linearly (for Fashion-MNIST and MNIST, whose images hold
// both black and white pixels, that gives back the file's bytes). kInvalidArgument naming `table.source` for a
// sparse or unlabelled table or one whose columns are not side^2 for side = `side` (0: the square root of cols).
Result<ItemImages> ItemsFromTable(const Table& table, int side = 0);

// Builds canvases from `items` (e.g. Fashion-MNIST's 28x28 images): each canvas gets a uniform number of items in
// [min_items, max_items], each a uniformly chosen item pasted whole (its native size, pixel-wise maximum with the canvas) at a uniform position where its square does not overlap
// another item's square; when 64 tries find no free place the canvas keeps fewer items (never none). The label
// of an object is the item's label. Same items and options => the same canvases on every platform.
// kInvalidArgument for no items, a canvas smaller than an item ("canvas 20 is smaller than a 28x28 item"), or
// options outside their ranges; the message names the option, so that the caller can prefix its key path.
Result<DetectionSet> MakeCanvases(const ItemImages& items, const CanvasOptions& options);

struct Detection {
  int64_t canvas = 0;  // index into the DetectionSet
  int32_t label = 0;
  float score = 0;
  Box box;
};

// PASCAL VOC average precision of each class (VOC 2010 and later: the area under the precision-recall curve with
// precision made monotone, all points): detections of a class in descending score order (ties keep input order),
// each a true positive when its best-IoU ground-truth box of the same class and canvas has IoU >= iou_threshold
// and is not yet matched, else a false positive. Returns per class the AP, or -1 for a class without ground truth.
std::vector<double> AveragePrecisions(const std::vector<Detection>& detections,
                                      const std::vector<std::vector<LabelledBox>>& truth, int num_classes,
                                      double iou_threshold = 0.5);

// The mean of AveragePrecisions() over the classes with ground truth (0 when there are none): mAP@iou_threshold.
double MeanAveragePrecision(const std::vector<Detection>& detections,
                            const std::vector<std::vector<LabelledBox>>& truth, int num_classes,
                            double iou_threshold = 0.5);

}  // namespace geomx::data
