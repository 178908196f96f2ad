// The strong-Wolfe line search of full-batch L-BFGS (logreg.cc), header-only because it is a template over the
// objective's evaluation. Deterministic: every decision depends only on the values the evaluation returns, so
// workers that evaluate the same collective sums take the same steps.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/base/status.h"

namespace geomx::algorithms::line_search {

inline double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// One point of the line search phi(a) = f(x0 + a d).
struct LinePoint {
  double a = 0, f = 0, dphi = 0;
};

// Minimiser of the cubic through two line points, or NaN when it does not exist.
inline double CubicMin(const LinePoint& p, const LinePoint& q) {
  const double d1 = p.dphi + q.dphi - 3.0 * (p.f - q.f) / (p.a - q.a);
  const double rad = d1 * d1 - p.dphi * q.dphi;
  if (!(rad >= 0)) return std::numeric_limits<double>::quiet_NaN();
  const double d2 = (q.a > p.a ? 1.0 : -1.0) * std::sqrt(rad);
  const double den = q.dphi - p.dphi + 2.0 * d2;
  if (den == 0) return std::numeric_limits<double>::quiet_NaN();
  return q.a - (q.a - p.a) * (q.dphi + d2 - d1) / den;
}

// Strong-Wolfe line search (Nocedal & Wright, Algorithms 3.5 and 3.6, cubic interpolation with safeguards).
// On success (*found) x, f, g hold the accepted point. Every decision depends only on f and g, which are the
// collective's sums, so all workers take the same steps and make the same number of evaluations.
template <typename Eval>
Status WolfeSearch(Eval&& eval, const std::vector<double>& x0, double f0, const std::vector<double>& g0,
                   const std::vector<double>& dir, double a0, std::vector<double>* x, double* f,
                   std::vector<double>* g, bool* found) {
  constexpr double kC1 = 1e-4, kC2 = 0.9;
  constexpr int kMaxEvals = 25;
  const double dphi0 = Dot(g0, dir);
  *found = false;
  int evals = 0;
  std::vector<double> best_x, best_g;
  double best_f = f0;
  auto at = [&](double a, LinePoint* p) -> Status {
    for (size_t i = 0; i < x0.size(); ++i) (*x)[i] = x0[i] + a * dir[i];
    GEOMX_RETURN_IF_ERROR(eval(*x, f, g));
    ++evals;
    p->a = a;
    p->f = *f;
    p->dphi = Dot(*g, dir);
    if (std::isfinite(*f) && *f <= f0 + kC1 * a * dphi0 && *f < best_f) {
      best_f = *f;
      best_x = *x;
      best_g = *g;
    }
    return Status::Ok();
  };
  auto zoom = [&](LinePoint lo, LinePoint hi) -> Status {
    while (evals < kMaxEvals) {
      double a = CubicMin(lo, hi);
      const double left = std::min(lo.a, hi.a), right = std::max(lo.a, hi.a), width = right - left;
      if (!std::isfinite(a) || a < left + 0.1 * width || a > right - 0.1 * width) a = 0.5 * (lo.a + hi.a);
      if (width <= 1e-16 * std::max(1.0, right)) return Status::Ok();
      LinePoint p;
      GEOMX_RETURN_IF_ERROR(at(a, &p));
      if (!std::isfinite(p.f) || p.f > f0 + kC1 * a * dphi0 || p.f >= lo.f) {
        hi = p;
      } else {
        if (std::fabs(p.dphi) <= -kC2 * dphi0) {
          *found = true;
          return Status::Ok();
        }
        if (p.dphi * (hi.a - lo.a) >= 0) hi = lo;
        lo = p;
      }
    }
    return Status::Ok();
  };
  LinePoint prev{0, f0, dphi0};
  double a = a0;
  while (evals < kMaxEvals && !*found) {
    LinePoint p;
    GEOMX_RETURN_IF_ERROR(at(a, &p));
    if (!std::isfinite(p.f) || p.f > f0 + kC1 * a * dphi0 || (evals > 1 && p.f >= prev.f)) {
      GEOMX_RETURN_IF_ERROR(zoom(prev, p));
      break;
    }
    if (std::fabs(p.dphi) <= -kC2 * dphi0) {
      *found = true;
      break;
    }
    if (p.dphi >= 0) {
      GEOMX_RETURN_IF_ERROR(zoom(p, prev));
      break;
    }
    prev = p;
    a *= 2.0;
  }
  if (!*found && !best_x.empty()) {
    // Sufficient decrease without the curvature condition: still progress.
    *x = best_x;
    *f = best_f;
    *g = best_g;
    *found = true;
  }
  return Status::Ok();
}

}  // namespace geomx::algorithms::line_search
