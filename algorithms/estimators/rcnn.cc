// rcnn (algorithms/estimators/rcnn.h; docs/algorithms.md#rcnn).
//
// Training: every worker pastes its shard's items on its own canvases (an equal number per worker, seeded by its
// rank), proposes regions on each once, and per step samples up to `rois` proposals per canvas of its batch (at most
// `positives` with IoU >= 0.5 to an object, labelled with its class and a box target; the rest background), plus
// the objects' boxes and jittered copies among the candidates. The crops go through the shared CNN; the loss is the
// sum of the RoIs' cross-entropies and box_weight times the positives' smooth-L1 box errors, divided by the number of
// RoIs of the whole step (every worker's). Across data centres each step pushes the worker's gradient sum (and its
// loss and RoI count), and every worker applies the same Adam update to the total.
//
// Evaluation: every proposal of a canvas is scored; for each class, the proposals whose probability of it is at
// least score_min become detections at their regressed boxes, then per-class NMS; mAP@0.5 against the objects.
#include "algorithms/estimators/rcnn.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/shard_checks.h"
#include "engine/autograd/functions.h"
#include "engine/base/check.h"
#include "engine/base/rng.h"
#include "engine/ops.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/linear.h"
#include "nn/optim/optimizer.h"

namespace geomx::algorithms {

using data::Box;

// ---- the pure steps ----

namespace {

bool SameBox(const Box& a, const Box& b) { return a.x0 == b.x0 && a.y0 == b.y0 && a.x1 == b.x1 && a.y1 == b.y1; }

Box Union(const Box& a, const Box& b) {
  return Box{std::min(a.x0, b.x0), std::min(a.y0, b.y0), std::max(a.x1, b.x1), std::max(a.y1, b.y1)};
}

// The larger of the horizontal and vertical gaps between two boxes (0 when they overlap or touch on both axes).
float Gap(const Box& a, const Box& b) {
  const float gx = std::max(0.0f, std::max(a.x0, b.x0) - std::min(a.x1, b.x1));
  const float gy = std::max(0.0f, std::max(a.y0, b.y0) - std::min(a.y1, b.y1));
  return std::max(gx, gy);
}

// Boxes of the 8-connected components of the pixels >= threshold, in raster order of their first pixel.
std::vector<Box> Components(const uint8_t* canvas, int height, int width, uint8_t threshold) {
  std::vector<uint8_t> seen(static_cast<size_t>(height) * static_cast<size_t>(width), 0);
  std::vector<Box> boxes;
  std::vector<std::pair<int, int>> stack;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const size_t at = static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x);
      if (seen[at] || canvas[at] < threshold) continue;
      int x0 = x, y0 = y, x1 = x + 1, y1 = y + 1;
      seen[at] = 1;
      stack.assign(1, {x, y});
      while (!stack.empty()) {
        const auto [cx, cy] = stack.back();
        stack.pop_back();
        x0 = std::min(x0, cx), y0 = std::min(y0, cy), x1 = std::max(x1, cx + 1), y1 = std::max(y1, cy + 1);
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) {
            const int nx = cx + dx, ny = cy + dy;
            if (nx < 0 || ny < 0 || nx >= width || ny >= height) continue;
            const size_t n = static_cast<size_t>(ny) * static_cast<size_t>(width) + static_cast<size_t>(nx);
            if (seen[n] || canvas[n] < threshold) continue;
            seen[n] = 1;
            stack.emplace_back(nx, ny);
          }
        }
      }
      boxes.push_back(Box{static_cast<float>(x0), static_cast<float>(y0), static_cast<float>(x1),
                          static_cast<float>(y1)});
    }
  }
  return boxes;
}

// 0, stride, 2 stride, ... up to limit - size, and limit - size itself.
std::vector<int> WindowStarts(int limit, int size, int stride) {
  std::vector<int> starts;
  for (int s = 0; s + size <= limit; s += stride) starts.push_back(s);
  if (starts.empty() || starts.back() != limit - size) starts.push_back(limit - size);
  return starts;
}

}  // namespace

std::vector<Box> ProposeRegions(const uint8_t* canvas, int height, int width, const ProposalOptions& options) {
  std::vector<Box> out;
  auto add = [&](const Box& b) {
    if (b.width() * b.height() < options.min_area) return;
    for (const Box& o : out) {
      if (SameBox(o, b)) return;
    }
    out.push_back(b);
  };
  std::vector<Box> groups = Components(canvas, height, width, options.threshold);
  for (const Box& g : groups) add(g);
  while (groups.size() > 1) {
    size_t bi = 0, bj = 1;
    float best = Gap(groups[0], groups[1]);
    for (size_t i = 0; i < groups.size(); ++i) {
      for (size_t j = i + 1; j < groups.size(); ++j) {
        const float g = Gap(groups[i], groups[j]);
        if (g < best) best = g, bi = i, bj = j;
      }
    }
    if (best > static_cast<float>(options.merge_gap)) break;
    groups[bi] = Union(groups[bi], groups[bj]);
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(bj));
    add(groups[bi]);
  }
  for (int size : options.window_sizes) {
    if (size < 1 || size > width || size > height) continue;
    for (int y : WindowStarts(height, size, options.stride)) {
      for (int x : WindowStarts(width, size, options.stride)) {
        add(Box{static_cast<float>(x), static_cast<float>(y), static_cast<float>(x + size),
                static_cast<float>(y + size)});
      }
    }
  }
  return out;
}

std::array<float, 4> EncodeBox(const Box& p, const Box& t) {
  const float pw = p.width(), ph = p.height(), tw = t.width(), th = t.height();
  const float px = p.x0 + 0.5f * pw, py = p.y0 + 0.5f * ph, tx = t.x0 + 0.5f * tw, ty = t.y0 + 0.5f * th;
  return {(tx - px) / pw, (ty - py) / ph, std::log(tw / pw), std::log(th / ph)};
}

Box DecodeBox(const Box& p, const std::array<float, 4>& d) {
  const float pw = p.width(), ph = p.height();
  const float x = p.x0 + 0.5f * pw + d[0] * pw, y = p.y0 + 0.5f * ph + d[1] * ph;
  // exp of a clamped log-scale: a wild regression cannot overflow.
  const float w = pw * std::exp(std::min(d[2], 4.0f)), h = ph * std::exp(std::min(d[3], 4.0f));
  return Box{x - 0.5f * w, y - 0.5f * h, x + 0.5f * w, y + 0.5f * h};
}

std::vector<size_t> NonMaxSuppression(const std::vector<Box>& boxes, const std::vector<float>& scores, double iou) {
  GEOMX_CHECK_EQ(boxes.size(), scores.size());
  std::vector<size_t> order(boxes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::vector<size_t> kept;
  for (size_t i : order) {
    const bool clear = std::none_of(kept.begin(), kept.end(), [&](size_t k) {
      return data::BoxIoU(boxes[i], boxes[k]) > iou;
    });
    if (clear) kept.push_back(i);
  }
  return kept;
}

Box CropRegion(const Box& p, float context) {
  const float side = std::max(p.width(), p.height()) * context;
  const float x = p.x0 + 0.5f * p.width(), y = p.y0 + 0.5f * p.height();
  return Box{x - 0.5f * side, y - 0.5f * side, x + 0.5f * side, y + 0.5f * side};
}

// ---- the estimator ----

namespace {

// Box targets are divided by these (Fast R-CNN's normalisation), so that the four errors weigh alike.
constexpr float kBoxScale[4] = {0.1f, 0.1f, 0.2f, 0.2f};

struct RcnnConfig {
  int canvas = 64, min_items = 1, max_items = 3;
  int64_t canvases = 3000, test_canvases = 500;
  int64_t epochs = 4, batch = 8, rois = 32, positives = 8;
  int channels1 = 16, channels2 = 32, hidden = 128;
  int stride = 8;
  double lr = 0.001, box_weight = 1.0, context = 1.0, nms = 0.3, score_min = 0.05;
  uint64_t seed = 0;
};

// conv 3x3 (c1) - relu - max-pool 2 - conv 3x3 (c2) - relu - max-pool 2 - fc (hidden) - relu, then the class head
// (classes + background) and the box head (4).
class RcnnNet final : public nn::Module {
 public:
  RcnnNet(int side, int classes, const RcnnConfig& c, Rng& rng) : side_(side), classes_(classes) {
    nn::Conv2dOptions same;
    same.padding = 1;
    conv1_ = RegisterModule("conv1", std::make_unique<nn::Conv2d>(1, c.channels1, 3, rng, same));
    conv2_ = RegisterModule("conv2", std::make_unique<nn::Conv2d>(c.channels1, c.channels2, 3, rng, same));
    const int64_t pooled = (side / 2) / 2;
    fc_ = RegisterModule("fc", std::make_unique<nn::Linear>(c.channels2 * pooled * pooled, c.hidden, rng));
    cls_ = RegisterModule("cls", std::make_unique<nn::Linear>(c.hidden, classes + 1, rng));
    box_ = RegisterModule("box", std::make_unique<nn::Linear>(c.hidden, 4, rng));
  }
  autograd::Variable Features(const autograd::Variable& x) {
    Pool2dParams pool;
    autograd::Variable h = autograd::Pool2d(autograd::Activation(ActivationKind::kRelu, conv1_->Forward(x)), pool);
    h = autograd::Pool2d(autograd::Activation(ActivationKind::kRelu, conv2_->Forward(h)), pool);
    return autograd::Activation(ActivationKind::kRelu, fc_->Forward(autograd::Flatten(h)));
  }
  autograd::Variable Forward(const autograd::Variable& x) override { return cls_->Forward(Features(x)); }
  autograd::Variable Boxes(const autograd::Variable& features) { return box_->Forward(features); }
  autograd::Variable Classes(const autograd::Variable& features) { return cls_->Forward(features); }
  std::string TypeName() const override { return "RcnnNet"; }
  int side() const { return side_; }
  int classes() const { return classes_; }

 private:
  int side_, classes_;
  nn::Conv2d* conv1_;
  nn::Conv2d* conv2_;
  nn::Linear* fc_;
  nn::Linear* cls_;
  nn::Linear* box_;
};

// One region to crop: a canvas of the batch and the proposal (its crop region is CropRegion(box, context)).
struct Roi {
  int64_t slot = 0;  // index into the batch's canvases
  Box box;
};

// The batch's canvases as [B, 1, H, W] floats in [0, 1] and the crops of `rois` resized to side x side by the
// engine's crop-and-resize (samples beyond the canvas are black, as the canvas's background).
Result<Tensor> Crops(const data::DetectionSet& set, const std::vector<int64_t>& canvases, const std::vector<Roi>& rois,
                     int side, float context) {
  const int64_t h = set.height, w = set.width, plane = h * w;
  Tensor images = Tensor::Empty(Shape{static_cast<int64_t>(canvases.size()), 1, h, w});
  float* px = images.data<float>();
  for (size_t b = 0; b < canvases.size(); ++b) {
    const uint8_t* src = set.CanvasPixels(canvases[b]);
    for (int64_t k = 0; k < plane; ++k) px[static_cast<int64_t>(b) * plane + k] = static_cast<float>(src[k]) / 255.0f;
  }
  std::vector<float> boxes;
  std::vector<int64_t> index;
  boxes.reserve(rois.size() * 4);
  const float s = static_cast<float>(side);
  for (const Roi& r : rois) {
    const Box c = CropRegion(r.box, context);
    // Samples at the centres of a side x side grid over the region, in pixel-index coordinates over H-1 and W-1.
    const float ya = c.y0 + 0.5f * c.height() / s - 0.5f, yb = c.y0 + (s - 0.5f) * c.height() / s - 0.5f;
    const float xa = c.x0 + 0.5f * c.width() / s - 0.5f, xb = c.x0 + (s - 0.5f) * c.width() / s - 0.5f;
    const float hn = static_cast<float>(std::max<int64_t>(h - 1, 1));
    const float wn = static_cast<float>(std::max<int64_t>(w - 1, 1));
    boxes.insert(boxes.end(), {ya / hn, xa / wn, yb / hn, xb / wn});
    index.push_back(r.slot);
  }
  const int64_t k = static_cast<int64_t>(rois.size());
  CropAndResizeParams p;
  p.crop_h = p.crop_w = side;
  return ops::CropAndResize(images, Tensor::FromVector(boxes, Shape{k, 4}), Tensor::FromVectorI64(index, Shape{k}), p);
}

// One canvas's training RoIs: candidates (its proposals, its objects' boxes and two jittered copies of each),
// labelled by their best-IoU object; up to `positives` with IoU >= 0.5 and the rest of `rois` from the others.
void SampleRois(const data::DetectionSet& set, int64_t canvas, const std::vector<Box>& proposals,
                const RcnnConfig& c, Rng& rng, std::vector<std::pair<Box, int>>* pos, std::vector<Box>* neg) {
  const std::vector<data::LabelledBox>& objects = set.objects[static_cast<size_t>(canvas)];
  std::vector<Box> candidates = proposals;
  for (const data::LabelledBox& o : objects) {
    candidates.push_back(o.box);
    for (int j = 0; j < 2; ++j) {
      const float dx = o.box.width() * 0.1f, dy = o.box.height() * 0.1f;
      auto jitter = [&](float v, float d) { return v + d * (2.0f * rng.UniformF() - 1.0f); };
      Box b{jitter(o.box.x0, dx), jitter(o.box.y0, dy), jitter(o.box.x1, dx), jitter(o.box.y1, dy)};
      if (b.width() > 1 && b.height() > 1) candidates.push_back(b);
    }
  }
  std::vector<std::pair<Box, int>> p;
  std::vector<Box> n;
  for (const Box& b : candidates) {
    double best = 0;
    int which = -1;
    for (size_t k = 0; k < objects.size(); ++k) {
      const double iou = data::BoxIoU(b, objects[k].box);
      if (iou > best) best = iou, which = static_cast<int>(k);
    }
    if (best >= 0.5) {
      p.emplace_back(b, which);
    } else {
      n.push_back(b);
    }
  }
  auto shuffle = [&](auto& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Below(i)]);
  };
  shuffle(p);
  shuffle(n);
  const size_t np = std::min(p.size(), static_cast<size_t>(c.positives));
  const size_t nn = std::min(n.size(), static_cast<size_t>(c.rois) - np);
  pos->insert(pos->end(), p.begin(), p.begin() + static_cast<std::ptrdiff_t>(np));
  neg->insert(neg->end(), n.begin(), n.begin() + static_cast<std::ptrdiff_t>(nn));
}

uint64_t RoiSeed(uint64_t seed, int64_t epoch, int64_t id) {
  return seed * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(epoch) << 40) ^ static_cast<uint64_t>(id);
}

}  // namespace

namespace {

// The loss of a batch of the worker's canvases summed over its RoIs, and its gradient flattened parameter by
// parameter (registration order; zeros for a parameter the loss did not reach) into grad[0 .. P).
Status BatchGradient(RcnnNet& net, const data::DetectionSet& set, const std::vector<std::vector<Box>>& proposals,
                     const std::vector<int64_t>& batch, int64_t first_id, int64_t epoch, const RcnnConfig& c,
                     uint64_t seed, std::vector<float>* grad, double* loss, int64_t* count) {
  const int k = net.classes();
  std::vector<Roi> rois, negatives;
  std::vector<int64_t> labels;
  std::vector<float> targets;
  for (size_t b = 0; b < batch.size(); ++b) {
    const int64_t canvas = batch[b];
    Rng rng(RoiSeed(seed, epoch, first_id + canvas));
    std::vector<std::pair<Box, int>> pos;
    std::vector<Box> neg;
    SampleRois(set, canvas, proposals[static_cast<size_t>(canvas)], c, rng, &pos, &neg);
    const std::vector<data::LabelledBox>& objects = set.objects[static_cast<size_t>(canvas)];
    for (const auto& [box, which] : pos) {
      const data::LabelledBox& o = objects[static_cast<size_t>(which)];
      rois.push_back({static_cast<int64_t>(b), box});
      labels.push_back(o.label);
      const std::array<float, 4> t = EncodeBox(box, o.box);
      for (int j = 0; j < 4; ++j) targets.push_back(t[static_cast<size_t>(j)] / kBoxScale[j]);
    }
    for (const Box& box : neg) negatives.push_back({static_cast<int64_t>(b), box});
  }
  const int64_t positives = static_cast<int64_t>(rois.size());
  rois.insert(rois.end(), negatives.begin(), negatives.end());
  labels.resize(rois.size(), k);  // background
  const int64_t r = static_cast<int64_t>(rois.size());
  std::vector<nn::Parameter*> params = net.TrainableParameters();
  grad->clear();
  *loss = 0;
  *count = r;
  if (r > 0) {
    GEOMX_ASSIGN_OR_RETURN(Tensor crops, Crops(set, batch, rois, net.side(), static_cast<float>(c.context)));
    net.Train();
    net.ZeroGrad();
    const autograd::Variable f = net.Features(autograd::Variable(crops, false));
    autograd::Variable l = autograd::MulScalar(
        autograd::SoftmaxCrossEntropy(net.Classes(f), Tensor::FromVectorI64(labels, Shape{r})), static_cast<float>(r));
    if (positives > 0) {
      const autograd::Variable box = autograd::Slice(net.Boxes(f), 0, 0, positives);
      const autograd::Variable err = autograd::SmoothL1Loss(box, Tensor::FromVector(targets, Shape{positives, 4}));
      l = autograd::Add(l, autograd::MulScalar(err, static_cast<float>(c.box_weight * 4.0 * positives)));
    }
    *loss = l.data().data<float>()[0];
    l.Backward();
  }
  for (nn::Parameter* p : params) {
    const Tensor& g = p->grad();
    if (g.defined()) {
      const float* v = g.data<float>();
      grad->insert(grad->end(), v, v + g.numel());
    } else {
      grad->resize(grad->size() + static_cast<size_t>(p->numel()), 0.0f);
    }
  }
  return Status::Ok();
}

class Rcnn final : public Estimator {
 public:
  explicit Rcnn(RcnnConfig c) : c_(std::move(c)) {}
  Status Fit(const data::Table& train, const FitContext& context) override;
  Result<Prediction> Predict(const data::Table& input, int threads) const override;
  void Save(ModelWriter* out) const override;
  Status Load(const ModelReader& in) override;
  Metrics ModelMetrics(const data::Table& table, const Prediction& prediction) const override;

  // The first step's averaged gradient for the test hook.
  Status FirstGradient(const data::DetectionSet& set, int64_t first_id, Collective* coll, std::vector<float>* out);

 private:
  uint64_t Seed(uint64_t job_seed) const { return c_.seed != 0 ? c_.seed : job_seed; }
  ProposalOptions Proposals() const {
    ProposalOptions o;
    o.stride = c_.stride;
    return o;
  }
  std::vector<std::vector<Box>> ProposalsOf(const data::DetectionSet& set) const;
  // Sums `buffer` (gradient, then loss, RoI count, interrupt flag) over the workers.
  static Status Reduce(Collective* coll, std::vector<float>* buffer);
  // Every detection of the model on `set` (score >= score_min, after per-class NMS).
  Result<std::vector<data::Detection>> Detect(const data::DetectionSet& set) const;
  Result<double> MapOn(const data::Table& table, int64_t canvases) const;

  RcnnConfig c_;
  mutable std::unique_ptr<RcnnNet> net_;  // Predict reads it (forward passes do not change it)
};

std::vector<std::vector<Box>> Rcnn::ProposalsOf(const data::DetectionSet& set) const {
  std::vector<std::vector<Box>> out(static_cast<size_t>(set.size()));
  const ProposalOptions o = Proposals();
  for (int64_t i = 0; i < set.size(); ++i) {
    out[static_cast<size_t>(i)] = ProposeRegions(set.CanvasPixels(i), set.height, set.width, o);
  }
  return out;
}

Status Rcnn::Reduce(Collective* coll, std::vector<float>* buffer) {
  if (coll == nullptr) return Status::Ok();
  return coll->AllReduceSumCompressible("rcnn/step", *buffer, 3);
}

Status Rcnn::FirstGradient(const data::DetectionSet& set, int64_t first_id, Collective* coll,
                           std::vector<float>* out) {
  const uint64_t seed = Seed(42);
  Rng init(seed);
  net_ = std::make_unique<RcnnNet>(28, set.num_classes, c_, init);
  std::vector<int64_t> batch(static_cast<size_t>(set.size()));
  std::iota(batch.begin(), batch.end(), int64_t{0});
  double loss = 0;
  int64_t count = 0;
  GEOMX_RETURN_IF_ERROR(BatchGradient(*net_, set, ProposalsOf(set), batch, first_id, 1, c_, seed, out, &loss, &count));
  out->insert(out->end(), {static_cast<float>(loss), static_cast<float>(count), 0.0f});
  GEOMX_RETURN_IF_ERROR(Reduce(coll, out));
  const float total = (*out)[out->size() - 2];
  out->resize(out->size() - 3);
  for (float& v : *out) v /= total;
  return Status::Ok();
}

Status Rcnn::Fit(const data::Table& train, const FitContext& context) {
  Collective* coll = context.collective;
  const int rank = coll != nullptr ? coll->rank() : 0, world = coll != nullptr ? coll->world() : 1;
  const int64_t per_worker = (c_.canvases + world - 1) / world;
  // Each worker's canvases from its own items; every worker hears every verdict before it goes on.
  data::CanvasOptions options;
  options.canvases = per_worker;
  options.size = c_.canvas;
  options.min_items = c_.min_items;
  options.max_items = c_.max_items;
  const uint64_t seed = Seed(context.seed);
  options.seed = seed * 1000003 + static_cast<uint64_t>(rank) + 1;
  Result<data::DetectionSet> set = Status::InvalidArgument("rcnn: this worker holds no items");
  if (train.rows > 0) {
    Result<data::ItemImages> items = data::ItemsFromTable(train);
    if (!items.ok()) {
      set = items.status();
    } else if (c_.canvas < std::max(items->height, items->width)) {
      set = Status::InvalidArgument("rcnn: algorithm.canvas: " + std::to_string(c_.canvas) + " is smaller than a " +
                                    std::to_string(items->height) + "x" + std::to_string(items->width) + " item");
    } else if (c_.min_items > c_.max_items) {
      set = Status::InvalidArgument("rcnn: algorithm.min_items: " + std::to_string(c_.min_items) +
                                    " is above algorithm.max_items (" + std::to_string(c_.max_items) + ")");
    } else {
      set = data::MakeCanvases(*items, options);
      if (!set.ok()) set = Status::InvalidArgument("rcnn: algorithm: " + set.status().message());
    }
  }
  GEOMX_RETURN_IF_ERROR(ExchangeVerdicts("rcnn", train, set.status(), coll).status());
  const int side = set->height > 0 ? static_cast<int>(std::lround(std::sqrt(static_cast<double>(train.cols)))) : 28;
  Rng init(seed);
  net_ = std::make_unique<RcnnNet>(side, train.num_classes, c_, init);
  const std::vector<std::vector<Box>> proposals = ProposalsOf(*set);
  nn::OptimizerConfig oc;
  oc.name = "adam";
  oc.lr = static_cast<float>(c_.lr);
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<nn::Optimizer> opt, nn::CreateOptimizer(oc));
  const std::vector<nn::Parameter*> params = net_->TrainableParameters();
  std::vector<int64_t> order(static_cast<size_t>(per_worker));
  std::iota(order.begin(), order.end(), int64_t{0});
  Rng shuffle = Rng(seed).Fork(5000 + static_cast<uint64_t>(rank));
  const int64_t first_id = per_worker * rank;
  std::vector<float> buffer;
  for (int64_t epoch = 1; epoch <= c_.epochs; ++epoch) {
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[shuffle.Below(i)]);
    double epoch_loss = 0, epoch_rois = 0;
    for (int64_t at = 0; at < per_worker; at += c_.batch) {
      const std::vector<int64_t> batch(order.begin() + at, order.begin() + std::min(per_worker, at + c_.batch));
      double loss = 0;
      int64_t count = 0;
      GEOMX_RETURN_IF_ERROR(
          BatchGradient(*net_, *set, proposals, batch, first_id, epoch, c_, seed, &buffer, &loss, &count));
      buffer.insert(buffer.end(), {static_cast<float>(loss), static_cast<float>(count),
                                   context.Interrupted() ? 1.0f : 0.0f});
      GEOMX_RETURN_IF_ERROR(Reduce(coll, &buffer));
      const float* tail = buffer.data() + buffer.size() - 3;
      if (tail[2] > 0) return Status::Cancelled("rcnn: interrupted");
      if (!(tail[1] > 0)) continue;
      epoch_loss += tail[0];
      epoch_rois += tail[1];
      size_t offset = 0;
      for (nn::Parameter* p : params) {
        std::vector<float> g(buffer.begin() + static_cast<std::ptrdiff_t>(offset),
                             buffer.begin() + static_cast<std::ptrdiff_t>(offset + static_cast<size_t>(p->numel())));
        for (float& v : g) v /= tail[1];
        p->var().set_grad(Tensor::FromVector(g, p->data().shape()));
        offset += static_cast<size_t>(p->numel());
      }
      opt->Step(params);
    }
    if (!std::isfinite(epoch_loss)) {
      return Status::InvalidArgument("rcnn: the training loss diverged (not finite); lower algorithm.params.lr (" +
                                     std::to_string(c_.lr) + ")");
    }
    if (context.observer != nullptr) {
      Metrics m = {{"loss", epoch_rois > 0 ? epoch_loss / epoch_rois : 0.0}};
      if (rank == 0 && context.eval != nullptr && context.eval->rows > 0) {
        Result<double> map = MapOn(*context.eval, std::min<int64_t>(c_.test_canvases, 100));
        if (map.ok()) m.push_back({"map@0.5", *map});
      }
      context.observer->OnStep(epoch, m);
    }
  }
  return Status::Ok();
}

Result<std::vector<data::Detection>> Rcnn::Detect(const data::DetectionSet& set) const {
  if (net_ == nullptr) return Status::FailedPrecondition("rcnn: the model is not fitted");
  const int k = net_->classes();
  autograd::NoGradGuard no_grad;
  net_->Eval();
  std::vector<data::Detection> out;
  constexpr int64_t kChunk = 16;
  const ProposalOptions po = Proposals();
  for (int64_t c0 = 0; c0 < set.size(); c0 += kChunk) {
    std::vector<int64_t> canvases;
    std::vector<Roi> rois;
    for (int64_t c = c0; c < std::min(set.size(), c0 + kChunk); ++c) {
      for (const Box& b : ProposeRegions(set.CanvasPixels(c), set.height, set.width, po)) {
        rois.push_back({static_cast<int64_t>(canvases.size()), b});
      }
      canvases.push_back(c);
    }
    if (rois.empty()) continue;
    GEOMX_ASSIGN_OR_RETURN(Tensor crops, Crops(set, canvases, rois, net_->side(), static_cast<float>(c_.context)));
    const autograd::Variable f = net_->Features(autograd::Variable(crops, false));
    const Tensor probs = ops::Softmax(net_->Classes(f).data());
    const Tensor deltas = net_->Boxes(f).data();
    const float* pr = probs.data<float>();
    const float* dl = deltas.data<float>();
    // Per canvas of the chunk and class: candidate boxes and scores, then NMS.
    std::vector<std::vector<Box>> boxes(canvases.size() * static_cast<size_t>(k));
    std::vector<std::vector<float>> scores(boxes.size());
    for (size_t r = 0; r < rois.size(); ++r) {
      std::array<float, 4> d{};
      for (int j = 0; j < 4; ++j) d[static_cast<size_t>(j)] = dl[r * 4 + static_cast<size_t>(j)] * kBoxScale[j];
      Box b = DecodeBox(rois[r].box, d);
      b.x0 = std::clamp(b.x0, 0.0f, static_cast<float>(set.width));
      b.x1 = std::clamp(b.x1, 0.0f, static_cast<float>(set.width));
      b.y0 = std::clamp(b.y0, 0.0f, static_cast<float>(set.height));
      b.y1 = std::clamp(b.y1, 0.0f, static_cast<float>(set.height));
      for (int cls = 0; cls < k; ++cls) {
        const float p = pr[r * static_cast<size_t>(k + 1) + static_cast<size_t>(cls)];
        if (p < c_.score_min) continue;
        const size_t slot = static_cast<size_t>(rois[r].slot) * static_cast<size_t>(k) + static_cast<size_t>(cls);
        boxes[slot].push_back(b);
        scores[slot].push_back(p);
      }
    }
    for (size_t slot = 0; slot < boxes.size(); ++slot) {
      for (size_t i : NonMaxSuppression(boxes[slot], scores[slot], c_.nms)) {
        const int64_t canvas = canvases[slot / static_cast<size_t>(k)];
        out.push_back({canvas, static_cast<int32_t>(slot % static_cast<size_t>(k)), scores[slot][i], boxes[slot][i]});
      }
    }
  }
  return out;
}

Result<double> Rcnn::MapOn(const data::Table& table, int64_t canvases) const {
  GEOMX_ASSIGN_OR_RETURN(data::ItemImages items, data::ItemsFromTable(table, net_ != nullptr ? net_->side() : 0));
  data::CanvasOptions o;
  o.canvases = canvases;
  o.size = c_.canvas;
  o.min_items = c_.min_items;
  o.max_items = c_.max_items;
  o.seed = 0x7E57;  // the same held-out canvases for every model
  GEOMX_ASSIGN_OR_RETURN(data::DetectionSet set, data::MakeCanvases(items, o));
  GEOMX_ASSIGN_OR_RETURN(std::vector<data::Detection> dets, Detect(set));
  return data::MeanAveragePrecision(dets, set.objects, net_->classes(), 0.5);
}

Metrics Rcnn::ModelMetrics(const data::Table& table, const Prediction&) const {
  Result<double> map = MapOn(table, c_.test_canvases);
  if (!map.ok()) return {};
  return {{"map@0.5", *map}};
}

Result<Prediction> Rcnn::Predict(const data::Table& input, int) const {
  if (net_ == nullptr) return Status::FailedPrecondition("rcnn: the model is not fitted");
  const int side = net_->side(), k = net_->classes();
  if (input.cols != int64_t{side} * side) {
    return Status::InvalidArgument("rcnn: the input has " + std::to_string(input.cols) + " columns, the model reads " +
                                   std::to_string(side) + "x" + std::to_string(side) + " items");
  }
  Prediction out;
  if (input.rows == 0) return out;
  GEOMX_ASSIGN_OR_RETURN(data::ItemImages items, data::ItemsFromTable(input, side));
  autograd::NoGradGuard no_grad;
  net_->Eval();
  constexpr int64_t kBlock = 256;
  const int64_t plane = int64_t{side} * side;
  for (int64_t r0 = 0; r0 < items.size(); r0 += kBlock) {
    const int64_t n = std::min(kBlock, items.size() - r0);
    std::vector<float> x(static_cast<size_t>(n * plane));
    const uint8_t* src = items.pixels.data() + r0 * plane;
    for (size_t j = 0; j < x.size(); ++j) x[j] = static_cast<float>(src[j]) / 255.0f;
    const Tensor logits = net_->Forward(autograd::Variable(Tensor::FromVector(x, Shape{n, 1, side, side}))).data();
    const float* l = logits.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      const float* row = l + i * (k + 1);
      out.value.push_back(static_cast<float>(std::max_element(row, row + k) - row));  // background excluded
    }
  }
  return out;
}

void Rcnn::Save(ModelWriter* out) const {
  GEOMX_CHECK(net_ != nullptr);
  out->PutInts("rcnn.shape", std::vector<int64_t>{net_->side(), net_->classes(), c_.channels1, c_.channels2,
                                                  c_.hidden});
  std::vector<float> flat;
  for (nn::Parameter* p : net_->Parameters()) {
    const float* v = p->data().data<float>();
    flat.insert(flat.end(), v, v + p->numel());
  }
  out->PutFloats("rcnn.params", flat);
}

Status Rcnn::Load(const ModelReader& in) {
  std::vector<int64_t> shape;
  GEOMX_RETURN_IF_ERROR(in.GetInts("rcnn.shape", &shape, 5));
  if (shape[0] < 4 || shape[0] > 1024 || shape[1] < 1 || shape[1] > 100000 || shape[2] != c_.channels1 ||
      shape[3] != c_.channels2 || shape[4] != c_.hidden) {
    return Status::DataLoss(in.source() + ": rcnn.shape does not match the model's parameters");
  }
  Rng init(1);
  auto net = std::make_unique<RcnnNet>(static_cast<int>(shape[0]), static_cast<int>(shape[1]), c_, init);
  int64_t total = 0;
  for (nn::Parameter* p : net->Parameters()) total += p->numel();
  std::vector<float> flat;
  GEOMX_RETURN_IF_ERROR(in.GetFloats("rcnn.params", &flat, total));
  size_t at = 0;
  for (nn::Parameter* p : net->Parameters()) {
    std::vector<float> v(flat.begin() + static_cast<std::ptrdiff_t>(at),
                         flat.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(p->numel())));
    p->var().set_data(Tensor::FromVector(v, p->data().shape()));
    at += static_cast<size_t>(p->numel());
  }
  net_ = std::move(net);
  return Status::Ok();
}

RcnnConfig ConfigFrom(const ParamValues& v) {
  RcnnConfig c;
  c.canvas = static_cast<int>(v.Int("canvas"));
  c.min_items = static_cast<int>(v.Int("min_items"));
  c.max_items = static_cast<int>(v.Int("max_items"));
  c.canvases = v.Int("canvases");
  c.test_canvases = v.Int("test_canvases");
  c.epochs = v.Int("epochs");
  c.batch = v.Int("batch_size");
  c.rois = v.Int("rois");
  c.positives = v.Int("positives");
  c.channels1 = static_cast<int>(v.Int("channels1"));
  c.channels2 = static_cast<int>(v.Int("channels2"));
  c.hidden = static_cast<int>(v.Int("hidden"));
  c.stride = static_cast<int>(v.Int("stride"));
  c.lr = v.Number("lr");
  c.box_weight = v.Number("box_weight");
  c.context = v.Number("context");
  c.nms = v.Number("nms");
  c.score_min = v.Number("score_min");
  c.seed = static_cast<uint64_t>(v.Int("seed"));
  return c;
}

EstimatorDef MakeRcnnDef() {
  EstimatorDef def;
  def.name = "rcnn";
  def.title = "Regions with CNN features (R-CNN)";
  def.task = data::TableTask::kClassification;
  def.help =
      "Girshick et al.'s R-CNN (CVPR 2014), small: the items of an image data set (fashion-mnist, mnist) pasted on "
      "larger black canvases; class-agnostic proposals (a bottom-up grouping of the bright pixels, as selective "
      "search does, and sliding windows); each proposal's square surroundings cropped and resized to the item size "
      "by the engine's RoI crop-and-resize; one CNN over the crops with a class head (the item classes and "
      "background) and a box-regression head; per-class NMS; mAP@0.5 on held-out canvases of the test items.";
  def.distributed =
      "each worker pastes its shard's items on its own canvases; per step push the gradient sum of the worker's "
      "RoIs (parameters + 3 floats), every worker applies the same Adam update to the total";
  def.params = {
      IntParam("canvas", 64, 8, 1024, "side of the square canvases (at least an item's side)"),
      IntParam("min_items", 1, 1, 64, "fewest items per canvas"),
      IntParam("max_items", 3, 1, 64, "most items per canvas (fewer when they do not fit without overlapping)"),
      IntParam("canvases", 3000, 1, 1000000, "training canvases, over all workers"),
      IntParam("test_canvases", 500, 1, 100000, "held-out canvases (of the test items) for mAP@0.5"),
      IntParam("epochs", 4, 1, 10000, "passes over the training canvases"),
      IntParam("batch_size", 8, 1, 4096, "canvases per step per worker"),
      IntParam("rois", 32, 1, 4096, "RoIs per canvas per step"),
      IntParam("positives", 8, 0, 4096, "most RoIs per canvas with IoU >= 0.5 to an object"),
      IntParam("channels1", 16, 1, 1024, "channels of the first convolution"),
      IntParam("channels2", 32, 1, 1024, "channels of the second convolution"),
      IntParam("hidden", 128, 1, 65536, "width of the shared fully-connected layer"),
      IntParam("stride", 8, 1, 1024, "stride of the sliding-window proposals"),
      PositiveParam("lr", 0.001, "Adam's learning rate"),
      NonNegativeParam("box_weight", 1.0, "weight of the box-regression loss"),
      RangeParam("context", 1.0, 0.5, false, 4.0, false, "crop side as a multiple of the proposal's longer side"),
      RangeParam("nms", 0.3, 0.0, false, 1.0, false, "IoU above which NMS drops the lower-scored box"),
      RangeParam("score_min", 0.05, 0.0, false, 1.0, false, "least class probability of a detection"),
      IntParam("seed", 0, 0, int64_t{1} << 62, "initialisation and sampling seed (0: the job's seed)"),
  };
  def.create = [](const ParamValues& v) -> std::unique_ptr<Estimator> { return std::make_unique<Rcnn>(ConfigFrom(v)); };
  return def;
}

}  // namespace

Status RcnnFirstGradientForTesting(const std::map<std::string, std::string>& params, const data::DetectionSet& set,
                                   int64_t first_id, Collective* collective, std::vector<float>* gradient) {
  const EstimatorDef* def = EstimatorRegistry::Find("rcnn");
  GEOMX_CHECK(def != nullptr);
  std::vector<ParamProblem> problems;
  ParamValues values = ResolveParams(def->params, params, &problems);
  GEOMX_CHECK(problems.empty());
  std::unique_ptr<Estimator> e = def->create(values);
  return static_cast<Rcnn*>(e.get())->FirstGradient(set, first_id, collective, gradient);
}

GEOMX_REGISTER_ESTIMATOR(MakeRcnnDef());

}  // namespace geomx::algorithms
