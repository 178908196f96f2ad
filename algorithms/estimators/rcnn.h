// rcnn: a small R-CNN (Girshick et al., CVPR 2014) on canvases of pasted items (datasets/detection.h,
// docs/algorithms.md#rcnn). Class-agnostic region proposals (a bottom-up grouping, as selective search does, plus
// sliding windows), each proposal's square surroundings cropped from the canvas and resized to the item size by the
// engine's RoI crop-and-resize, one shared CNN over the crops, a classification head (the item classes plus
// background) and a class-agnostic box-regression head, per-class non-maximum suppression, mAP@0.5.
//
// This header holds the pure steps (the test seams of tests/algorithms/estimators/rcnn_test.cc) and the
// distributed-gradient hook; the estimator registers itself (GEOMX_REGISTER_ESTIMATOR) and has no other interface.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "algorithms/estimators/collective.h"
#include "datasets/detection.h"
#include "engine/base/status.h"

namespace geomx::algorithms {

struct ProposalOptions {
  std::vector<int> window_sizes = {20, 28};  // square sliding windows, each side >= 1
  int stride = 6;                            // >= 1
  uint8_t threshold = 32;                    // bottom-up grouping: the pixels >= threshold
  int merge_gap = 3;                         // groups whose boxes are at most this many pixels apart merge
  float min_area = 16;                       // smaller boxes are dropped
};

// Class-agnostic proposals on one u8 canvas [height, width] (row-major):
//  (a) bottom-up grouping: the 8-connected components of the pixels >= threshold, then repeatedly the two groups
//      whose boxes are nearest (the larger of the horizontal and vertical gaps; ties: the first pair in order)
//      merged while that gap is <= merge_gap; every group's box along the way is a proposal;
//  (b) for each window size no larger than the canvas, the windows at x, y in {0, stride, 2 stride, ...} and flush
//      with the right and bottom edges.
// Boxes of area < min_area are dropped; each distinct box appears once, grouping boxes first.
std::vector<data::Box> ProposeRegions(const uint8_t* canvas, int height, int width, const ProposalOptions& options);

// R-CNN's box-regression target of `truth` relative to `proposal` (both non-empty): with centres (x, y), widths w
// and heights h, ((x_t - x_p) / w_p, (y_t - y_p) / h_p, log(w_t / w_p), log(h_t / h_p)). DecodeBox inverts it.
std::array<float, 4> EncodeBox(const data::Box& proposal, const data::Box& truth);
data::Box DecodeBox(const data::Box& proposal, const std::array<float, 4>& delta);

// Greedy non-maximum suppression: the indices of the kept boxes, highest score first (ties: lower index first);
// a box is suppressed when its IoU with an already kept box exceeds `iou`.
std::vector<size_t> NonMaxSuppression(const std::vector<data::Box>& boxes, const std::vector<float>& scores,
                                      double iou);

// The square region a proposal is cropped from: the same centre, side = max(width, height) * context.
data::Box CropRegion(const data::Box& proposal, float context);

// Test hook: the gradient rank 0 applies in the first step of Fit() for `params` (the estimator's parameter texts)
// when this worker holds `canvases` (their global ids start at `first_id`: each canvas's RoI sample is seeded by
// its id) and `collective` (may be null) joins the other workers: the sum over the workers of their losses'
// gradients divided by the total number of RoIs, flattened parameter by parameter in registration order.
Status RcnnFirstGradientForTesting(const std::map<std::string, std::string>& params,
                                   const data::DetectionSet& canvases, int64_t first_id, Collective* collective,
                                   std::vector<float>* gradient);

}  // namespace geomx::algorithms
