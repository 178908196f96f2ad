// Learning-rate schedules (formulas documented at ScheduledLr in optimizer.h). Schedules are pure functions of
// (iteration, epoch), so resuming from a checkpoint needs no schedule state.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/base/check.h"
#include "nn/optim/optimizer.h"

namespace geomx::nn {
namespace {

struct ScheduleArgs {
  float base_lr;
  int64_t iteration;
  int epoch;
  int64_t total_iterations;
};
using ScheduleFn = float (*)(const LrScheduleConfig&, const ScheduleArgs&);

float Constant(const LrScheduleConfig&, const ScheduleArgs& a) { return a.base_lr; }

float StepDecay(const LrScheduleConfig& c, const ScheduleArgs& a) {
  const int drops = std::max(a.epoch, 0) / c.step_epochs;
  return a.base_lr * static_cast<float>(std::pow(static_cast<double>(c.gamma), drops));
}

float Cosine(const LrScheduleConfig& c, const ScheduleArgs& a) {
  const int64_t span = a.total_iterations - c.warmup_iterations;
  if (span <= 0) return a.base_lr;
  const int64_t t = std::clamp<int64_t>(a.iteration - c.warmup_iterations, 0, span);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * static_cast<double>(t) / static_cast<double>(span)));
  return static_cast<float>(c.min_lr + (a.base_lr - c.min_lr) * cosine);
}

// Name -> formula. Adding a schedule is one function and one line here.
const std::map<std::string, ScheduleFn>& Schedules() {
  static const std::map<std::string, ScheduleFn> schedules = {
      {"constant", &Constant}, {"step", &StepDecay}, {"cosine", &Cosine}};
  return schedules;
}

std::string Num(float v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

float ScheduledLr(const LrScheduleConfig& schedule, float base_lr, int64_t iteration, int epoch,
                  int64_t total_iterations) {
  auto it = Schedules().find(schedule.name);
  GEOMX_CHECK(it != Schedules().end()) << "ScheduledLr: unknown schedule '" << schedule.name
                                       << "' (ValidateLrScheduleConfig first)";
  float lr = it->second(schedule, ScheduleArgs{base_lr, iteration, epoch, total_iterations});
  if (iteration < schedule.warmup_iterations) {
    lr *= static_cast<float>(std::max<int64_t>(iteration, 0) + 1) / static_cast<float>(schedule.warmup_iterations);
  }
  return lr;
}

Status ValidateLrScheduleConfig(const LrScheduleConfig& c) {
  std::vector<std::string> errors;
  if (Schedules().count(c.name) == 0) {
    std::string known;
    for (const auto& [name, fn] : Schedules()) known += (known.empty() ? "" : ", ") + name;
    errors.push_back("optimizer.schedule.name: unknown '" + c.name + "' (known: " + known + ")");
  }
  if (c.step_epochs < 1) {
    errors.push_back("optimizer.schedule.step_epochs: must be >= 1, got " + std::to_string(c.step_epochs));
  }
  if (!(c.gamma > 0.0f && c.gamma <= 1.0f)) {
    errors.push_back("optimizer.schedule.gamma: must be in (0, 1], got " + Num(c.gamma));
  }
  if (!(c.min_lr >= 0.0f)) errors.push_back("optimizer.schedule.min_lr: must be >= 0, got " + Num(c.min_lr));
  if (c.warmup_iterations < 0) {
    errors.push_back("optimizer.schedule.warmup_iterations: must be >= 0, got " +
                     std::to_string(c.warmup_iterations));
  }
  if (errors.empty()) return Status::Ok();
  std::string msg;
  for (const std::string& e : errors) msg += (msg.empty() ? "" : "; ") + e;
  return Status::InvalidArgument(msg);
}

}  // namespace geomx::nn
