#include "algorithms/estimators/trees/split.h"

#include <cmath>

namespace geomx::algorithms::trees {
namespace {

double SoftThreshold(double g, double alpha) {
  if (g > alpha) return g - alpha;
  if (g < -alpha) return g + alpha;
  return 0;
}

// Splits whose gain exceeds gamma by less than this are noise.
constexpr double kMinGain = 1e-6;
// Relative size of the rounding noise in a subtracted histogram.
constexpr double kNoise = 1e-9;

}  // namespace

double LeafWeight(const SplitParams& p, double g, double h) {
  if (h < p.min_child_weight || h <= 0) return 0;
  double w = -SoftThreshold(g, p.alpha) / (h + p.lambda);
  if (p.max_delta_step > 0 && std::fabs(w) > p.max_delta_step) w = std::copysign(p.max_delta_step, w);
  return w;
}

double LeafScore(const SplitParams& p, double g, double h) {
  if (h < p.min_child_weight || h <= 0) return 0;
  const double w = LeafWeight(p, g, h);
  return -(2 * g * w + (h + p.lambda) * w * w + 2 * p.alpha * std::fabs(w));
}

SplitCandidate FindBestSplit(const double* hist, const HistLayout& layout, const BinCuts& cuts,
                             const std::vector<int32_t>& features, double g, double h, const SplitParams& params) {
  SplitCandidate best;
  // Without alpha and max_delta_step the score is G^2 / (H + lambda): the inner loop's fast path.
  const bool plain = params.alpha == 0 && params.max_delta_step == 0;
  const double lambda = params.lambda, mcw = params.min_child_weight;
  auto score = [&](double sg, double sh) { return plain ? sg * sg / (sh + lambda) : LeafScore(params, sg, sh); };
  const double parent = LeafScore(params, g, h);
  const double need = std::max(params.gamma, 0.0) + kMinGain;
  auto consider = [&](int32_t f, int b, bool default_left, double lg, double lh) {
    const double rg = g - lg, rh = h - lh;
    if (lh < mcw || rh < mcw || lh <= 0 || rh <= 0) return;
    const double gain = score(lg, lh) + score(rg, rh) - parent;
    if (gain > need && gain > best.gain) {
      best.feature = f;
      best.bin = b;
      best.default_left = default_left;
      best.gain = gain;
      best.left_g = lg;
      best.left_h = lh;
      best.right_g = rg;
      best.right_h = rh;
    }
  };
  for (int32_t f : features) {
    const double* s = hist + 2 * layout.Offset(f);
    const int value_bins = cuts.ValueBins(f);
    const double mg = s[2 * value_bins], mh = s[2 * value_bins + 1];
    // Sums derived by subtraction carry rounding noise where the node has no missing rows: a missing slot counts
    // only with a hessian above that noise.
    const bool has_missing = mh > kNoise * std::fabs(h);
    double lg = 0, lh = 0;
    for (int b = 0; b + 1 < value_bins; ++b) {
      lg += s[2 * b];
      lh += s[2 * b + 1];
      consider(f, b, false, lg, lh);
      if (has_missing) consider(f, b, true, lg + mg, lh + mh);
    }
  }
  if (best.valid()) {
    // The default direction is a free choice when no training row had the value missing: left.
    const int value_bins = cuts.ValueBins(best.feature);
    const double* s = hist + 2 * layout.Offset(best.feature);
    if (!(s[2 * value_bins + 1] > kNoise * std::fabs(h))) best.default_left = true;
  }
  return best;
}

}  // namespace geomx::algorithms::trees
