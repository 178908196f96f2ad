// The global rule "online-update": the server-side form of the online learners (ftrl.cc). For every row-sparse key
// of the job it keeps the weights and the per-coordinate state of the job's optimizer (JobDescription::optimizer:
// `ftrl` (z, n) or `ftml` (d, v, z)) and turns each round's summed row gradients into the rows' new weights with
// engine/kernels/online_update.h, the functors the workers, the engine's UpdateRule and the CUDA kernels share.
// A coordinate whose summed gradient is exactly 0 is left alone (lazy updates, as the workers' local loop); FTML's
// step count advances once per round that updates anything.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/ps/global_rule.h"
#include "engine/kernels/online_update.h"

namespace geomx::algorithms {
namespace {

class OnlineUpdateRule final : public ps::GlobalRule {
 public:
  explicit OnlineUpdateRule(const nn::OptimizerConfig& c) : config_(c) {}

  Status OnRows(const ps::KeyDef& key, int64_t, const std::vector<uint64_t>& rows, std::vector<float>* values, int,
                ps::DecisionBoard&) override {
    std::lock_guard<std::mutex> lock(mu_);
    State& s = states_[key.key];
    if (s.w.empty()) {
      const int slots = config_.name == "ftrl" ? 2 : 3;
      s.w.assign(key.elems, 0.0f);
      s.slots.assign(static_cast<size_t>(slots), std::vector<float>(key.elems, 0.0f));
    }
    const uint64_t width = key.row_width;
    bool any = false;
    for (float g : *values) any = any || g != 0.0f;
    if (any) ++s.step;
    const kernels::FtrlUpdate ftrl{config_.lr, config_.ftrl_beta, config_.l1, config_.weight_decay};
    const kernels::FtmlUpdate ftml = kernels::FtmlUpdate::Make(config_.lr, config_.weight_decay, config_.beta1,
                                                               config_.beta2, config_.eps, s.step);
    for (size_t r = 0; r < rows.size(); ++r) {
      for (uint64_t j = 0; j < width; ++j) {
        const uint64_t k = rows[r] * width + j;
        float& v = (*values)[r * width + j];
        if (v != 0.0f) {
          if (config_.name == "ftrl") {
            ftrl(s.w[k], v, s.slots[0][k], s.slots[1][k]);
          } else {
            ftml(s.w[k], v, s.slots[0][k], s.slots[1][k], s.slots[2][k]);
          }
        }
        v = s.w[k];
      }
    }
    return Status::Ok();
  }

  bool RowsAreValues(const ps::KeyDef&) const override { return true; }

 private:
  struct State {
    std::vector<float> w;
    std::vector<std::vector<float>> slots;
    long long step = 0;
  };
  const nn::OptimizerConfig config_;
  std::mutex mu_;
  std::map<uint64_t, State> states_;  // GUARDED_BY(mu_), by key
};

}  // namespace

GEOMX_REGISTER(ps::GlobalRuleRegistry, "online-update",
               [](const ps::JobDescription& job) -> Result<std::unique_ptr<ps::GlobalRule>> {
                 if (job.optimizer.name != "ftrl" && job.optimizer.name != "ftml") {
                   return Status::InvalidArgument("rule online-update: the job's optimizer is '" +
                                                  job.optimizer.name + "', expected ftrl or ftml");
                 }
                 return std::unique_ptr<ps::GlobalRule>(std::make_unique<OnlineUpdateRule>(job.optimizer));
               },
               "server-side FTRL/FTML on the job's row tables (the online learners' weights)");

}  // namespace geomx::algorithms
