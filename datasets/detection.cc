// Detection canvases and their evaluation (datasets/detection.h).
#include "datasets/detection.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/base/rng.h"

namespace geomx::data {

double BoxIoU(const Box& a, const Box& b) {
  if (a.width() <= 0 || a.height() <= 0 || b.width() <= 0 || b.height() <= 0) return 0.0;
  const double iw = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const double ih = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (iw <= 0 || ih <= 0) return 0.0;
  const double inter = iw * ih;
  const double uni = double{a.width()} * a.height() + double{b.width()} * b.height() - inter;
  return inter / uni;
}

namespace {

// The tight box of the item's pixels >= threshold, in item coordinates; the whole square when none is.
Box TightBox(const uint8_t* item, int h, int w, uint8_t threshold) {
  int x0 = w, y0 = h, x1 = 0, y1 = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      if (item[y * w + x] < threshold) continue;
      x0 = std::min(x0, x);
      y0 = std::min(y0, y);
      x1 = std::max(x1, x + 1);
      y1 = std::max(y1, y + 1);
    }
  }
  if (x1 == 0) return Box{0, 0, static_cast<float>(w), static_cast<float>(h)};
  return Box{static_cast<float>(x0), static_cast<float>(y0), static_cast<float>(x1), static_cast<float>(y1)};
}

bool SquaresOverlap(int ax, int ay, int bx, int by, int h, int w) {
  return ax < bx + w && bx < ax + w && ay < by + h && by < ay + h;
}

}  // namespace

Result<ItemImages> ItemsFromTable(const Table& table, int side) {
  if (table.sparse || !table.has_labels() || table.rows == 0) {
    return Status::InvalidArgument(table.source + ": canvas items must come from a dense, labelled image table");
  }
  if (side <= 0) side = static_cast<int>(std::lround(std::sqrt(static_cast<double>(table.cols))));
  if (side <= 0 || int64_t{side} * side != table.cols) {
    return Status::InvalidArgument(table.source + ": " + std::to_string(table.cols) +
                                   " columns are not the pixels of a square single-channel image");
  }
  const auto [lo, hi] = std::minmax_element(table.dense.begin(), table.dense.end());
  const float low = *lo, range = *hi - *lo;
  ItemImages items;
  items.height = items.width = side;
  items.pixels.resize(table.dense.size());
  for (size_t k = 0; k < table.dense.size(); ++k) {
    const float v = range > 0 ? (table.dense[k] - low) / range * 255.0f : 0.0f;
    items.pixels[k] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
  }
  items.labels = table.labels;
  items.num_classes = table.num_classes;
  items.class_names = table.class_names;
  items.source = table.source;
  return items;
}

Result<DetectionSet> MakeCanvases(const ItemImages& items, const CanvasOptions& options) {
  if (items.size() == 0 || items.height <= 0 || items.width <= 0) {
    return Status::InvalidArgument("no items to paste: " + items.source + " is empty");
  }
  const int h = items.height, w = items.width;
  if (options.canvases < 1 || options.canvases > (int64_t{1} << 24)) {
    return Status::InvalidArgument("canvases must be in [1, 16777216], not " + std::to_string(options.canvases));
  }
  if (options.size < std::max(h, w) || options.size > 4096) {
    return Status::InvalidArgument("canvas " + std::to_string(options.size) + " is smaller than a " +
                                   std::to_string(h) + "x" + std::to_string(w) + " item" +
                                   (options.size > 4096 ? " or larger than 4096" : ""));
  }
  if (options.min_items < 1 || options.max_items < options.min_items || options.max_items > 64) {
    return Status::InvalidArgument("items per canvas must satisfy 1 <= min <= max <= 64, not [" +
                                   std::to_string(options.min_items) + ", " + std::to_string(options.max_items) +
                                   "]");
  }
  const size_t area = static_cast<size_t>(options.size) * static_cast<size_t>(options.size);
  if (static_cast<double>(area) * static_cast<double>(options.canvases) > 4.0e9) {
    return Status::InvalidArgument("canvases x size^2 exceeds 4e9 bytes");
  }
  DetectionSet set;
  set.height = set.width = options.size;
  set.num_classes = items.num_classes;
  set.class_names = items.class_names;
  set.source = "canvases of " + items.source;
  set.pixels.assign(area * static_cast<size_t>(options.canvases), 0);
  set.objects.resize(static_cast<size_t>(options.canvases));
  Rng rng(options.seed);
  const int span = options.size;
  for (int64_t c = 0; c < options.canvases; ++c) {
    uint8_t* canvas = set.pixels.data() + area * static_cast<size_t>(c);
    const int want = options.min_items +
                     static_cast<int>(rng.Below(static_cast<uint64_t>(options.max_items - options.min_items + 1)));
    std::vector<std::pair<int, int>> placed;
    for (int k = 0; k < want; ++k) {
      const int64_t item = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(items.size())));
      int px = -1, py = -1;
      for (int attempt = 0; attempt < 64 && px < 0; ++attempt) {
        const int x = static_cast<int>(rng.Below(static_cast<uint64_t>(span - w + 1)));
        const int y = static_cast<int>(rng.Below(static_cast<uint64_t>(span - h + 1)));
        const bool free = std::none_of(placed.begin(), placed.end(), [&](const std::pair<int, int>& p) {
          return SquaresOverlap(x, y, p.first, p.second, h, w);
        });
        if (free) px = x, py = y;
      }
      if (px < 0) break;
      placed.emplace_back(px, py);
      const uint8_t* src = items.ItemPixels(item);
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          uint8_t& dst = canvas[static_cast<size_t>(py + y) * static_cast<size_t>(span) + static_cast<size_t>(px + x)];
          dst = std::max(dst, src[y * w + x]);
        }
      }
      Box box = TightBox(src, h, w, options.box_threshold);
      box.x0 += static_cast<float>(px);
      box.x1 += static_cast<float>(px);
      box.y0 += static_cast<float>(py);
      box.y1 += static_cast<float>(py);
      set.objects[static_cast<size_t>(c)].push_back({items.labels[static_cast<size_t>(item)], box});
    }
  }
  return set;
}

std::vector<double> AveragePrecisions(const std::vector<Detection>& detections,
                                      const std::vector<std::vector<LabelledBox>>& truth, int num_classes,
                                      double iou_threshold) {
  std::vector<double> ap(static_cast<size_t>(std::max(num_classes, 0)), -1.0);
  for (int cls = 0; cls < num_classes; ++cls) {
    int64_t positives = 0;
    std::vector<std::vector<bool>> matched(truth.size());
    for (size_t c = 0; c < truth.size(); ++c) {
      matched[c].assign(truth[c].size(), false);
      for (const LabelledBox& t : truth[c]) positives += t.label == cls ? 1 : 0;
    }
    if (positives == 0) continue;
    std::vector<size_t> order;
    for (size_t i = 0; i < detections.size(); ++i) {
      if (detections[i].label == cls) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return detections[a].score > detections[b].score; });
    std::vector<double> precision, recall;
    int64_t tp = 0, fp = 0;
    for (size_t i : order) {
      const Detection& d = detections[i];
      const bool known = d.canvas >= 0 && static_cast<size_t>(d.canvas) < truth.size();
      double best = -1;
      size_t best_k = 0;
      if (known) {
        const std::vector<LabelledBox>& objects = truth[static_cast<size_t>(d.canvas)];
        for (size_t k = 0; k < objects.size(); ++k) {
          if (objects[k].label != cls) continue;
          const double iou = BoxIoU(d.box, objects[k].box);
          if (iou > best) best = iou, best_k = k;
        }
      }
      if (best >= iou_threshold && !matched[static_cast<size_t>(d.canvas)][best_k]) {
        matched[static_cast<size_t>(d.canvas)][best_k] = true;
        ++tp;
      } else {
        ++fp;
      }
      precision.push_back(static_cast<double>(tp) / static_cast<double>(tp + fp));
      recall.push_back(static_cast<double>(tp) / static_cast<double>(positives));
    }
    // Monotone precision envelope from the right, then the area over the recall steps.
    for (size_t i = precision.size(); i-- > 1;) precision[i - 1] = std::max(precision[i - 1], precision[i]);
    double area = 0, previous_recall = 0;
    for (size_t i = 0; i < precision.size(); ++i) {
      area += (recall[i] - previous_recall) * precision[i];
      previous_recall = recall[i];
    }
    ap[static_cast<size_t>(cls)] = area;
  }
  return ap;
}

double MeanAveragePrecision(const std::vector<Detection>& detections,
                            const std::vector<std::vector<LabelledBox>>& truth, int num_classes,
                            double iou_threshold) {
  const std::vector<double> ap = AveragePrecisions(detections, truth, num_classes, iou_threshold);
  double sum = 0;
  int n = 0;
  for (double a : ap) {
    if (a < 0) continue;
    sum += a;
    ++n;
  }
  return n == 0 ? 0.0 : sum / n;
}

}  // namespace geomx::data
