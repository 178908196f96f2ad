#include "engine/autograd/grad_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/base/check.h"

namespace geomx::autograd {

namespace {

double EvaluateScalar(const GradCheckFn& fn, const std::vector<Tensor>& inputs) {
  std::vector<Variable> vars;
  vars.reserve(inputs.size());
  for (const Tensor& t : inputs) vars.emplace_back(t, /*requires_grad=*/false);
  const Variable out = fn(vars);
  GEOMX_CHECK_EQ(out.data().numel(), 1) << "CheckGradients: fn must return a scalar, got "
                                        << out.data().shape().ToString();
  return static_cast<double>(out.data().item());
}

}  // namespace

GradCheckResult CheckGradients(const GradCheckFn& fn, const std::vector<Tensor>& inputs,
                               const GradCheckOptions& options) {
  // Analytic gradients.
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t.Clone(), /*requires_grad=*/true);
  Variable out = fn(vars);
  GEOMX_CHECK_EQ(out.data().numel(), 1) << "CheckGradients: fn must return a scalar, got "
                                        << out.data().shape().ToString();
  out.Backward();

  NoGradGuard no_grad;
  GradCheckResult result;
  std::vector<Tensor> probe;
  for (const Tensor& t : inputs) probe.push_back(t.Clone());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<float> base = inputs[i].ToFloatVector();
    const std::vector<float> analytic =
        vars[i].grad().defined() ? vars[i].grad().ToFloatVector() : std::vector<float>(base.size(), 0.0f);
    GEOMX_CHECK_EQ(analytic.size(), base.size()) << "CheckGradients: gradient size of input " << i;
    std::vector<float> values = base;
    for (size_t j = 0; j < base.size(); ++j) {
      const float plus = static_cast<float>(base[j] + options.eps);
      const float minus = static_cast<float>(base[j] - options.eps);
      values[j] = plus;
      probe[i] = Tensor::FromVector(values, inputs[i].shape(), inputs[i].device());
      const double f_plus = EvaluateScalar(fn, probe);
      values[j] = minus;
      probe[i] = Tensor::FromVector(values, inputs[i].shape(), inputs[i].device());
      const double f_minus = EvaluateScalar(fn, probe);
      values[j] = base[j];
      const double numeric = (f_plus - f_minus) / (static_cast<double>(plus) - static_cast<double>(minus));
      const double a = analytic[j];
      const double denom = std::max({std::fabs(a), std::fabs(numeric), options.abs_floor});
      const double err = std::fabs(a - numeric) / denom;
      if (std::isnan(err)) {
        result.max_rel_error = INFINITY;
        result.message = "input " + std::to_string(i) + " element " + std::to_string(j) + ": NaN gradient";
        return result;
      }
      if (result.message.empty() || err > result.max_rel_error) {
        result.max_rel_error = err;
        std::ostringstream msg;
        msg << "input " << i << " element " << j << ": analytic " << a << ", numeric " << numeric
            << " (relative error " << err << ")";
        result.message = msg.str();
      }
    }
    probe[i] = inputs[i];
  }
  return result;
}

}  // namespace geomx::autograd
