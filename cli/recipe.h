// Recipe: the typed, validated description of a run (docs/recipes.md). YAML is parsed into these structs once,
// here in cli/, and every library receives its own typed config (nn::ModelConfig, data::DataConfig, ...),
// never a YAML node (docs/style.md R19).
//
// Errors: LoadRecipe reports *all* problems at once, one per line, each as
//   "<file>:<line>:<column>: <key.path>: <what is wrong>"
// with a "did you mean '<key>'?" hint for unknown keys, as a kInvalidArgument Status (exit code 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/topology.h"
#include "datasets/data_config.h"
#include "engine/base/status.h"
#include "nn/models/model_config.h"
#include "nn/optim/optimizer_config.h"

namespace geomx::cli {

struct TrainingConfig {
  int epochs = 5;                  // >= 1
  int64_t max_iterations = 0;      // stop after this many iterations in total; 0 = no limit
  int64_t eval_every = 0;          // evaluate every N iterations (plus at every epoch end); 0 = epoch ends only
  int64_t eval_limit = 0;          // evaluate on at most N test examples at intermediate evals; 0 = all
  float target_accuracy = 0.0f;    // [0, 1]; 0 = none. Records time_to_target; training continues
  bool stop_at_target = false;     // stop as soon as target_accuracy is reached
  int64_t checkpoint_every = 0;    // also checkpoint every N iterations; 0 = at epoch ends only
  int64_t log_every = 50;          // progress line every N iterations when stdout is not a terminal, >= 1
};

// Recipe section `sync` (docs/synchronization.md): how the tiers synchronise. Keys of other modes are ignored.
struct SyncConfig {
  std::string mode = "fsa";        // fsa | mixed | hfa | diloco | esync
  int max_staleness = 0;           // mixed: an applied update is at most this many updates stale; 0 = no bound
  float dcasgd_lambda = 0.0f;      // mixed: DC-ASGD delay compensation at the global server; 0 = off
  bool dcasgd_adaptive = false;    // mixed: lambda / sqrt(running mean square of the gradient)
  float dcasgd_decay = 0.95f;      // adaptive DC-ASGD: decay of the mean square
  int k1 = 20;                     // hfa, diloco: local steps per data-centre average
  int k2 = 10;                     // hfa, diloco: data-centre averages per global synchronisation
  float outer_lr = 0.7f;           // diloco: outer learning rate (Nesterov)
  float outer_momentum = 0.9f;     // diloco: outer momentum
  int esync_max_local_steps = 16;  // esync: most local steps a worker takes in one round
  float esync_global_lr = 1.0f;    // esync: scale of the averaged model delta
};

// Recipe section `accelerators` (docs/accelerators.md). Link values: auto (from `compression`) | none | fp16 | bsc
// | mpq; see LinkScheme in comm/compression/link_codec.h.
struct AcceleratorsConfig {
  std::string compression = "none";  // none | bsc | fp16 | mpq: the preset of the four links (GeoMX's table)
  float bsc_ratio = 0.01f;           // kept fraction of each large tensor on a bsc push, (0, 1)
  float bsc_momentum = 0.0f;         // momentum correction of the bsc residual, [0, 1)
  std::string bsc_selection = "exact";  // exact | sampled
  float bsc_sample_fraction = 0.005f;   // sampled: share of the elements sampled for the threshold, (0, 1]
  int64_t size_lower_bound = 1000;      // bsc, mpq: slices with fewer elements are never sparsified (mpq: FP16)
  std::string worker_to_local = "auto";
  std::string local_to_global = "auto";
  std::string global_to_local = "auto";
  std::string local_to_worker = "auto";
  bool p3 = false;                   // accelerators.p3.enabled
  int64_t p3_slice_elements = 40000; // accelerators.p3.slice_elements
};

struct Recipe {
  std::string source;        // file the recipe came from ("<string>" when parsed from text)
  std::string name = "run";  // [A-Za-z0-9._-]+, used in the run folder name
  uint64_t seed = 42;
  std::string device = "cpu";  // cpu | cuda | cuda:N | auto
  int threads = 0;             // compute threads; 0 = all cores
  nn::ModelConfig model;
  data::DataConfig data;
  nn::OptimizerConfig optimizer;
  nn::LrScheduleConfig lr_schedule;  // recipe key: optimizer.schedule
  // Where the optimizer runs once there is a parameter server: "global-server" (the global servers apply the
  // aggregated gradients; workers pull weights) or "worker" (every worker applies them; servers only aggregate).
  // No effect without a topology. Recipe key: optimizer.where.
  std::string optimizer_where = "global-server";
  TrainingConfig training;
  SyncConfig sync;
  AcceleratorsConfig accelerators;
  // The parameter-server hierarchy (recipe section `topology`, docs/deployment.md). Meaningful only when
  // has_topology: a recipe without the section trains in one process, as before.
  bool has_topology = false;
  comm::Topology topology;
};

// Reads and validates `path`, then applies `overrides` ("a.b=c", the --set flags; a bad key or a value of the
// wrong type is an error naming the flag) and validates the result.
Result<Recipe> LoadRecipe(const std::string& path, const std::vector<std::string>& overrides = {});
// Same, from YAML text; `source` names it in errors.
Result<Recipe> ParseRecipe(const std::string& yaml_text, const std::string& source,
                           const std::vector<std::string>& overrides = {});
// The resolved recipe (every key, defaults filled in) as YAML that ParseRecipe accepts again.
std::string RecipeToYaml(const Recipe& recipe);

}  // namespace geomx::cli
