// DC-ASGD (Zheng et al., ICML 2017): delay compensation of asynchronous updates at the global server
// (sync.mode: mixed with sync.dcasgd.lambda > 0; docs/synchronization.md; algorithms/sync/mixed.cc).
//
// A data centre d computes its gradient g at the weights w_bak[d] it last received; when g arrives the server is
// at w_now. The gradient is corrected with the first-order Taylor term, the Hessian approximated by the diagonal
// of the outer product:
//     g' = g + lambda * g * g * (w_now - w_bak[d])          (element-wise)
// Adaptive (DC-ASGD-a): lambda_t = lambda / sqrt(ms + eps), ms = decay * ms + (1 - decay) * g * g, one running
// mean square per key (updated with every arriving g, before it is used).
//
// The backup is kept per data centre and key: w_bak[d][key] = the weights d last received for that key (the
// answer to its update, or a pull), seeded with the initial weights. GeoMX kept ONE previous weight per key (the
// weights before the last update by anyone), which only compensates the last step's change; here the pushing
// data centre's own backup is used (reference/geomx-internals.md §3.3).
//
// Thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "algorithms/ps/server_state.h"

namespace geomx::sync {

struct DcAsgdOptions {
  float lambda = 0.04f;   // > 0
  bool adaptive = false;  // lambda / sqrt(mean square)
  float decay = 0.95f;    // adaptive: decay of the mean square, [0, 1)
  float eps = 1e-7f;      // adaptive: added under the root
};

class DcAsgd final : public ps::ServerState {
 public:
  DcAsgd(DcAsgdOptions options, int num_senders);

  // Seeds every sender's backup of `key` with the initial weights (unless it has one).
  void InitKey(uint64_t key, std::span<const float> weights);
  // Corrects `grad` in place for an update from `sender` applied at the weights `w_now`. A sender without a
  // backup of the key (never read it: cannot happen through the aggregator) is left uncorrected.
  void Compensate(int sender, uint64_t key, std::span<float> grad, std::span<const float> w_now);
  // `sender` received `weights` for `key` (its new backup).
  void Record(int sender, uint64_t key, std::span<const float> weights);

  // The backup of (sender, key), for tests.
  std::optional<std::vector<float>> BackupForTesting(int sender, uint64_t key) const;

  // ps::ServerState: every backup ("<prefix>bak/<sender>/<key>") and running mean square ("<prefix>ms/<key>").
  Status SaveState(const std::string& prefix, ps::StateTensors* out) const override;
  Status RestoreState(const std::string& prefix, const ps::StateTensors& in) override;

 private:
  const DcAsgdOptions options_;
  mutable std::mutex mu_;
  std::vector<std::map<uint64_t, std::vector<float>>> backup_;  // GUARDED_BY(mu_); [sender][key]
  std::map<uint64_t, std::vector<float>> mean_square_;          // GUARDED_BY(mu_); adaptive
};

}  // namespace geomx::sync
