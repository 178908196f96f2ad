// Recipe: the typed, validated description of a run (docs/recipes.md). YAML is parsed into these structs once,
// here in cli/, and every library receives its own typed config (nn::ModelConfig, data::DataConfig, ...),
// never a YAML node (docs/style.md R19).
//
// Errors: LoadRecipe reports *all* problems at once, one per line, each as
//   "<file>:<line>:<column>: <key.path>: <what is wrong>"
// with a "did you mean '<key>'?" hint for unknown keys, as a kInvalidArgument Status (exit code 2).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "algorithms/sync/sync_settings.h"
#include "algorithms/train/training_config.h"
#include "comm/topology.h"
#include "datasets/data_config.h"
#include "engine/base/status.h"
#include "nn/models/model_config.h"
#include "nn/optim/optimizer_config.h"

namespace geomx::cli {

// Recipe section `training` (algorithms/train/training_config.h) and section `sync` (docs/synchronization.md;
// algorithms/sync/sync_settings.h): the libraries' own typed configs, filled here.
using TrainingConfig = train::TrainingConfig;
using SyncConfig = sync::SyncSettings;

// Recipe section `accelerators` (docs/accelerators.md). Link values: auto (from `compression`) | none | fp16 | bsc
// | mpq | sign | int8; see LinkScheme in comm/compression/link_codec.h.
struct AcceleratorsConfig {
  std::string compression = "none";  // none | bsc | fp16 | mpq | sign | int8: the preset of the four links
  float bsc_ratio = 0.01f;           // kept fraction of each large tensor on a bsc push, (0, 1)
  float bsc_momentum = 0.0f;         // momentum correction of the bsc residual, [0, 1)
  std::string bsc_selection = "exact";  // exact | sampled
  float bsc_sample_fraction = 0.005f;   // sampled: share of the elements sampled for the threshold, (0, 1]
  int64_t size_lower_bound = 1000;      // bsc, mpq, sign, int8: smaller slices stay dense (mpq: FP16)
  int64_t int8_block = 256;             // int8: elements per scale
  bool int8_stochastic = false;         // int8: stochastic rounding
  int64_t powersgd_rank = 4;            // powersgd: rank of the factors
  std::string worker_to_local = "auto";
  std::string local_to_global = "auto";
  std::string global_to_local = "auto";
  std::string local_to_worker = "auto";
  bool p3 = false;                   // accelerators.p3.enabled
  int64_t p3_slice_elements = 40000; // accelerators.p3.slice_elements
  // accelerators.dgt (comm/dgt/dgt_link.h): the local servers' push to the global servers.
  bool dgt = false;                  // accelerators.dgt.enabled
  int64_t dgt_block_bytes = 1336;    // bytes per block (a multiple of 4 that fits one datagram)
  float dgt_k = 0.8f;                // share of the ranked blocks on the reliable channel (k0 when adaptive)
  float dgt_k_min = 0.2f;            // adaptive: k's floor
  bool dgt_adaptive = true;          // k = max(k * loss / first loss, k_min)
  float dgt_alpha = 0.3f;            // contribution momentum
  int64_t dgt_channels = 3;          // lower-priority channels
  double dgt_deadline_s = 0.02;      // how long a round waits for missing blocks
  std::string dgt_mode = "unreliable";  // unreliable | tcp-priority | tcp-priority-4bit (comm::DgtTransport)
  // accelerators.tsengine (comm/tsengine/ts_relay.h): relays between the local servers (between data centres)
  // and/or between the workers of each data centre.
  bool tsengine = false;             // accelerators.tsengine.enabled
  std::string tsengine_tier = "global";  // global | datacentre | both
  float tsengine_max_greedy = 0.9f;  // cap of the exploit probability
  int64_t tsengine_expiry = 5;       // rounds after which a link's measurement is forgotten
  float tsengine_ewma = 0.5f;        // weight of a new throughput sample
};

// Recipe section `algorithm` (docs/algorithms.md): a classical estimator (algorithms/estimators/) trained instead
// of the neural `model`. Its keys besides `name` are the estimator's parameters, validated against its ParamSpecs;
// after parsing, `params` holds every parameter of the estimator (defaults filled in) as canonical text.
// Recipe section `security` (docs/security.md): CurveZMQ encryption and authentication of every link.
struct SecurityConfig {
  // auto: on when a topology host is not a loopback address; on; off.
  std::string encryption = "auto";
  std::string keys;  // the key directory (`geomx keys generate`); empty: the one-host launcher makes RUN/keys
};

struct AlgorithmConfig {
  std::string name = "logreg";
  std::map<std::string, std::string> params;
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
  // No effect without a topology. Recipe key: optimizer.where; typed as sync::OptimizerPlacement for the
  // libraries (cli/cluster.h ClusterConfigOf).
  std::string optimizer_where = "global-server";
  TrainingConfig training;
  SyncConfig sync;
  AcceleratorsConfig accelerators;
  // The parameter-server hierarchy (recipe section `topology`, docs/deployment.md). Meaningful only when
  // has_topology: a recipe without the section trains in one process, as before.
  bool has_topology = false;
  comm::Topology topology;
  SecurityConfig security;
  // True when the recipe has an `algorithm` section: it trains that estimator, and `model`/`optimizer` are unused.
  bool has_algorithm = false;
  AlgorithmConfig algorithm;
  // Where each key given in the file or by --set came from: "recipe.yaml:7:9" or "--set data.path=/x". Errors
  // found after loading (a data path that does not exist) name it through WhereOf.
  std::map<std::string, std::string> origins;
};

// "<where>: <path>: " for a key the recipe or a --set flag gave (its origins entry), else "<source>: <path>: ":
// the prefix of an error about that key's value found after loading (docs/recipes.md, "Errors").
std::string WhereOf(const Recipe& recipe, const std::string& path);
// `status` (not Ok) with its message prefixed by WhereOf(recipe, path); a leading "<path>: " or "<section>: " the
// library already put there is dropped so the key is named once.
Status AtRecipeKey(const Recipe& recipe, const std::string& path, const Status& status);

// Reads and validates `path`, then applies `overrides` ("a.b=c", the --set flags; a bad key or a value of the
// wrong type is an error naming the flag) and validates the result.
Result<Recipe> LoadRecipe(const std::string& path, const std::vector<std::string>& overrides = {});
// Same, from YAML text; `source` names it in errors.
Result<Recipe> ParseRecipe(const std::string& yaml_text, const std::string& source,
                           const std::vector<std::string>& overrides = {});
// The resolved recipe (every key, defaults filled in) as YAML that ParseRecipe accepts again.
std::string RecipeToYaml(const Recipe& recipe);

}  // namespace geomx::cli
