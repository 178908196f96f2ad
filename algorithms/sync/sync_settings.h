// SyncSettings: the recipe section `sync`, typed (docs/synchronization.md). cli/ parses it once; every mode reads
// the fields it owns into its own config (fsa.cc: none; mixed.cc: MixedConfig; hfa.cc: HfaConfig, DilocoConfig;
// esync.cc: EsyncConfig) and validates them there. Fields of other modes are ignored by a mode, and the recipe
// rules of the mode that owns them say when setting them without that mode is an error. Value type.
#pragma once

#include <string>
#include <string_view>

#include "engine/base/status.h"

namespace geomx::sync {

struct SyncSettings {
  std::string mode = "fsa";        // a registered mode (sync_mode.h): fsa | mixed | hfa | diloco | esync
  int max_staleness = 0;           // mixed: an applied update is at most this many updates stale; 0 = no bound
  float dcasgd_lambda = 0.0f;      // mixed: DC-ASGD delay compensation at the global server; 0 = off
  bool dcasgd_adaptive = false;    // mixed: lambda / sqrt(running mean square of the gradient)
  float dcasgd_decay = 0.95f;      // adaptive DC-ASGD: decay of the mean square
  int k1 = 20;                     // hfa, diloco: local steps per data-centre average
  int k2 = 10;                     // hfa, diloco: data-centre averages per global synchronisation
  int overlap = 0;                 // hfa, diloco: data-centre averages a global sync may take (0..k2; 0 = wait)
  // hfa, diloco, esync: "transfer" (the local servers fetch the initial weights over the WAN) or "seed" (each
  // builds them from the recipe's seed and checks them against the master's digest; transfer if they differ).
  std::string initial_weights = "transfer";
  float outer_lr = 0.7f;           // diloco: outer learning rate (Nesterov)
  float outer_momentum = 0.9f;     // diloco: outer momentum
  int esync_max_local_steps = 16;  // esync: most local steps a worker takes in one round
  float esync_global_lr = 1.0f;    // esync: scale of the averaged model delta
};

// Where the optimizer runs once there is a parameter server (recipe optimizer.where).
enum class OptimizerPlacement : uint8_t {
  kGlobalServer,  // the global servers apply the aggregated gradients; workers pull weights
  kWorker,        // every worker applies the mean gradient; servers only aggregate
};
// "global-server" | "worker".
const char* OptimizerPlacementName(OptimizerPlacement where);
// kInvalidArgument for any other text.
Result<OptimizerPlacement> ParseOptimizerPlacement(std::string_view text);

}  // namespace geomx::sync
