// `geomx bench RECIPE --configs a,b,...`: the configurations it compares. A configuration is a named preset
// (flat-ps, hips, one per other registered sync mode: diloco, esync, hfa, mixed; ddp) optionally followed by
// accelerators (+bsc, +fp16, +mpq, +p3) and
// by extra recipe overrides in brackets: `hips+bsc[accelerators.bsc.ratio=0.001;sync.k1=10]`. Every geomx
// configuration becomes a list of `--set` overrides of the recipe; `ddp` is the PyTorch peer
// (bench/peers/ddp_train.py). docs/benchmarks.md describes what each preset means.
#pragma once

#include <string>
#include <vector>

#include "cli/recipe.h"
#include "engine/base/status.h"

namespace geomx::bench {

struct BenchConfig {
  std::string name;               // as written in --configs ("hips+bsc")
  bool is_ddp = false;            // the PyTorch DDP peer, not a geomx run
  std::vector<std::string> sets;  // recipe overrides, applied after the user's --set flags
  std::string description;        // one line for the table's legend
};

// The preset names and the accelerator suffixes, for help texts and error messages.
const std::vector<std::string>& PresetNames();
const std::vector<std::string>& AcceleratorSuffixes();

// Resolves one configuration for `recipe` (which must have a topology). Every combination it resolves passes the
// recipe's rules (cli/sync_rules.h); the ones the rules would refuse are errors here, before anything runs:
// +p3 with +fp16 or +mpq for the gradient modes (those presets compress the data centres' links, P3 needs them
// dense). Errors (kInvalidArgument) name the configuration and list the known presets.
Result<BenchConfig> ResolveConfig(const std::string& spec, const cli::Recipe& recipe);

// Splits "a,b[x=1;y=2],c" at the commas outside brackets and resolves each; duplicates and empty items are errors.
Result<std::vector<BenchConfig>> ResolveConfigs(const std::string& list, const cli::Recipe& recipe);

// "50mbit/25ms" (or "50mbit/25ms/2%") -> the --set overrides of topology.links.wan, and the parsed values.
struct WanSpec {
  double bits_per_second = 0;
  double latency_s = 0;
  double loss = 0;
  std::vector<std::string> sets;
};
Result<WanSpec> ParseWan(const std::string& text);

// A file-name-safe form of a configuration name ("hips+bsc" -> "hips+bsc", "a[b=c]" -> "a_b_c_").
std::string ConfigSlug(const std::string& name);

}  // namespace geomx::bench
