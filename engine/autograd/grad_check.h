// Finite-difference gradient checker: compares the gradients Backward() computes with central differences of the
// same function. Used by tests (every function in functions.h) and by `geomx bench --check`.
// Cost: one forward+backward plus 2 forwards per input element, so keep inputs small (tens to hundreds of values).
// Not thread-safe with respect to the function it calls (it runs it many times on the calling thread).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/autograd/variable.h"

namespace geomx::autograd {

struct GradCheckOptions {
  double eps = 1e-2;        // central-difference step, in input units (f32 math: smaller steps drown in rounding)
  double abs_floor = 1e-2;  // relative errors are taken against max(|analytic|, |numeric|, abs_floor)
};

struct GradCheckResult {
  double max_rel_error = 0.0;  // over every element of every input
  std::string message;         // the worst element: input, index, both values; empty when there were no elements
};

// The function under test: builds a scalar (numel 1) Variable from `inputs`, using only autograd functions.
using GradCheckFn = std::function<Variable(const std::vector<Variable>& inputs)>;

// Runs `fn` once on Variables made from copies of `inputs` (all requiring grad) and back-propagates, then
// perturbs each element by +-eps (with recording off) and compares. The differences are taken in double over the
// exact perturbation that f32 rounding allowed. Inputs are f32 on any device and are not modified. Aborts
// (GEOMX_CHECK) when fn does not return a scalar.
GradCheckResult CheckGradients(const GradCheckFn& fn, const std::vector<Tensor>& inputs,
                               const GradCheckOptions& options = {});

}  // namespace geomx::autograd
