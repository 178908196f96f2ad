#include "bench/bench_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "algorithms/sync/sync_mode.h"
#include "cli/recipe_units.h"

namespace geomx::bench {
using cli::BandwidthText;
using cli::ParseBandwidth;
using cli::ParseDurationSeconds;
using cli::ParseLoss;
using cli::Quoted;
using cli::Recipe;
using cli::Trim;

namespace {

std::string JoinNames(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

Status Bad(const std::string& spec, const std::string& why) {
  std::string msg = "--configs: ";
  msg.append(Quoted(spec)).append(": ").append(why);
  msg.append(" (presets: ").append(JoinNames(PresetNames(), ", "));
  msg.append("; accelerators to add with '+': ").append(JoinNames(AcceleratorSuffixes(), ", "));
  msg.append("; extra overrides in brackets: hips+bsc[accelerators.bsc.ratio=0.001;sync.k1=10])");
  return Status::InvalidArgument(msg);
}

// Model-averaging modes exchange weights between the tiers, so their accelerators go on the links between local
// and global servers; gradient modes (fsa, mixed) use the compression preset of all four links with the
// optimizer on the workers (bsc and mpq need it: a sparsified gradient cannot drive the global server's optimizer).
// size_lower_bound of the bsc and mpq configurations (the recipe default, 1000, is GeoMX's).
constexpr int kBenchSizeLowerBound = 2000;


// flat-ps: one data centre per worker, each with that worker and one local server, so every worker's dense FP32
// gradient crosses the WAN unaggregated to the global server and the full weights come back, as with plain
// ps-lite or MXNet across a WAN. The local server only forwards (its LAN hop is unshaped).
std::string FlatTopology(const Recipe& recipe) {
  std::string list = "topology.datacentres=[";
  const int n = recipe.topology.total_workers();
  for (int i = 0; i < n; ++i) {
    if (i > 0) list += ", ";
    list += "{name: w" + std::to_string(i) + ", workers: 1, servers: 1}";
  }
  return list + "]";
}

// The workers of a data centre share its uplink: flat-ps keeps the aggregate WAN capacity of the recipe's data
// centres (D links of bandwidth B) and spreads it over its N one-worker links, B * D / N each. Without this,
// flat-ps would get N / D times the WAN of every hierarchical configuration. Empty when the WAN is unshaped.
std::string FlatLinkBandwidth(const Recipe& recipe) {
  const double bw = recipe.topology.options.wan.bandwidth_bps;
  const int n = recipe.topology.total_workers();
  const size_t dcs = recipe.topology.datacentres.size();
  if (!(bw > 0) || n <= 0 || dcs == 0) return "";
  return BandwidthText(std::floor(bw * static_cast<double>(dcs) / n));
}

}  // namespace

// flat-ps and hips (the default sync mode, fsa), one preset per other registered sync mode (by its name), ddp.
const std::vector<std::string>& PresetNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"flat-ps", "hips"};
    for (const std::string& mode : sync::SyncModeRegistry::Names()) {
      if (mode != sync::SyncSettings{}.mode) n.push_back(mode);
    }
    n.push_back("ddp");
    return n;
  }();
  return names;
}

const std::vector<std::string>& AcceleratorSuffixes() {
  static const std::vector<std::string> names = {"bsc", "fp16", "mpq", "sign", "int8", "powersgd", "p3", "dgt",
                                                 "tsengine"};
  return names;
}

Result<BenchConfig> ResolveConfig(const std::string& spec_in, const Recipe& recipe) {
  if (!recipe.has_topology) {
    return Status::InvalidArgument("geomx bench RECIPE: " + recipe.source +
                                   " has no topology section; the configurations compare distributed runs");
  }
  const std::string spec(Trim(spec_in));
  BenchConfig c;
  c.name = spec;
  if (spec.empty()) return Bad(spec_in, "empty configuration name");

  // Extra overrides: NAME[key=value;key=value]
  std::string head = spec;
  std::vector<std::string> extra;
  const size_t open = spec.find('[');
  if (open != std::string::npos) {
    if (spec.back() != ']' || spec.find('[', open + 1) != std::string::npos) {
      return Bad(spec, "brackets must close at the end: NAME[key=value;key=value]");
    }
    head = spec.substr(0, open);
    const std::string body = spec.substr(open + 1, spec.size() - open - 2);
    size_t start = 0;
    while (start <= body.size()) {
      const size_t semi = std::min(body.find(';', start), body.size());
      const std::string item(Trim(std::string_view(body).substr(start, semi - start)));
      if (item.find('=') == std::string::npos || item.front() == '=') {
        return Bad(spec, "override " + Quoted(item) + " is not key=value");
      }
      extra.push_back(item);
      start = semi + 1;
    }
  }

  // BASE+ACC+ACC
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t plus = head.find('+', start);
    parts.push_back(head.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  const std::string base = parts[0];
  const auto& presets = PresetNames();
  if (std::find(presets.begin(), presets.end(), base) == presets.end()) {
    return Bad(spec, "unknown preset " + Quoted(base));
  }
  std::set<std::string> accs;
  for (size_t i = 1; i < parts.size(); ++i) {
    const auto& known = AcceleratorSuffixes();
    if (std::find(known.begin(), known.end(), parts[i]) == known.end()) {
      return Bad(spec, "unknown accelerator " + Quoted(parts[i]));
    }
    if (!accs.insert(parts[i]).second) return Bad(spec, "accelerator " + Quoted(parts[i]) + " given twice");
  }
  int compressions = 0;
  for (const char* k : {"bsc", "fp16", "mpq", "sign", "int8", "powersgd"}) compressions += accs.count(k) ? 1 : 0;
  if (compressions > 1) return Bad(spec, "choose one of bsc, fp16, mpq, sign, int8, powersgd");

  if (base == "ddp") {
    if (!accs.empty() || !extra.empty()) {
      return Bad(spec, "ddp is the PyTorch DDP peer: it takes no accelerators or recipe overrides");
    }
    c.is_ddp = true;
    c.description = "PyTorch DistributedDataParallel (gloo), one process per worker, dense FP32 all-reduce";
    return c;
  }

  // Every geomx configuration starts from a clean slate, so the recipe's own accelerators do not leak in.
  const std::string mode = base == "flat-ps" || base == "hips" ? sync::SyncSettings{}.mode : base;
  const sync::SyncModeTraits traits = sync::TraitsOf(mode);
  // The gradient modes' fp16 and mpq presets compress the links inside the data centres too, which P3 (dense
  // slices between workers and local servers) cannot carry: refused here, before anything runs.
  for (const char* lan : {"fp16", "mpq"}) {
    if (accs.count("p3") && accs.count(lan) && !traits.averages_models) {
      return Bad(spec, std::string("+p3 with +") + lan + ": P3 needs dense links between workers and local servers, "
                 "and with sync.mode " + mode + " the " + lan + " preset compresses them; compress only the WAN "
                 "links: " + base + "+p3[accelerators.links.local_to_global=" + lan +
                 ";accelerators.links.global_to_local=" + (std::string(lan) == "mpq" ? "bsc" : lan) + "]");
    }
  }
  if (accs.count("dgt") && (!traits.forwards_sums || compressions > 0)) {
    return Bad(spec, "+dgt carries the dense gradient sums the local servers forward each round: use it with hips, "
               "fsa or mixed and no compression of the local-to-global link");
  }
  if (accs.count("tsengine") && (!traits.overlay || compressions > 0 || accs.count("dgt"))) {
    return Bad(spec, "+tsengine relays the dense sums and values of synchronous rounds between the local servers: "
               "use it with hips or fsa, without compression and without +dgt");
  }
  c.sets = {"sync.mode=" + mode, "accelerators.compression=none", "accelerators.p3.enabled=false",
            "accelerators.dgt.enabled=false", "accelerators.tsengine.enabled=false"};
  for (const char* link : {"worker_to_local", "local_to_global", "global_to_local", "local_to_worker"}) {
    c.sets.push_back(std::string("accelerators.links.") + link + "=auto");
  }
  if (base == "flat-ps") {
    c.sets.push_back(FlatTopology(recipe));
    c.sets.push_back("optimizer.where=global-server");
    c.description = "flat parameter server: " + std::to_string(recipe.topology.total_workers()) +
                    " workers each push dense FP32 gradients across the WAN to the central server (FSA)";
    const std::string share = FlatLinkBandwidth(recipe);
    if (!share.empty()) {
      c.sets.push_back("topology.links.wan.bandwidth=" + share);
      c.description += ", each on its share of its data centre's uplink (" + share + ")";
    }
  } else if (base == "hips") {
    c.description = "hierarchical PS (HiPS), FSA";
  } else {
    c.description = "hierarchical PS, sync " + mode;
  }
  if (traits.update_per_datacentre && recipe.topology.datacentres.size() > 1) {
    // MixedSync applies every data centre's update on its own, D optimizer steps where FSA takes one: the
    // learning rate is divided by D (docs/synchronization.md; at the full rate GEO-2x2 diverged).
    char lr[32];
    std::snprintf(lr, sizeof(lr), "%g",
                  static_cast<double>(recipe.optimizer.lr) / static_cast<double>(recipe.topology.datacentres.size()));
    c.sets.push_back(std::string("optimizer.lr=") + lr);
    c.description += std::string(", optimizer.lr ") + lr + " (the recipe's divided by the data centres)";
  }

  std::string comp;
  for (const char* k : {"bsc", "fp16", "mpq", "sign", "int8", "powersgd"}) {
    if (accs.count(k)) comp = k;
  }
  if (!comp.empty()) {
    if (traits.averages_models && traits.outer_momentum && comp != "fp16" && comp != "bsc" && comp != "mpq") {
      // diloco with a quantiser: the outer momentum needs the exact mean delta; the answer is compressed after it.
      // (bsc and mpq sparsify the push with the momentum in its error feedback, SparseLoCo: as hfa below.)
      c.sets.push_back("accelerators.links.local_to_global=fp16");
      c.sets.push_back("accelerators.links.global_to_local=" + comp);
      c.description += ", fp16 deltas up, " + comp + " answers down (compressed after the outer step, error "
                       "feedback at the global server)";
    } else if (traits.averages_models) {
      c.sets.push_back("accelerators.links.local_to_global=" + comp);
      c.sets.push_back("accelerators.links.global_to_local=" + comp);
      c.description += ", " + comp + " on the WAN links";
      if (traits.outer_momentum && comp != "fp16") c.description += " (SparseLoCo: the outer momentum in the push)";
    } else {
      c.sets.push_back("accelerators.compression=" + comp);
      c.description += ", " + comp + " compression";
      if (comp != "fp16" && traits.update_per_datacentre) {
        // mixed: the global server steps the optimizer on every data centre's update and answers with weights,
        // which are dense: the sparse push stays, the weights go down in f32 (a sparse pull is refused there).
        c.sets.push_back("accelerators.links.global_to_local=none");
        c.description += " (dense weights down)";
      } else if (comp != "fp16") {
        c.sets.push_back("optimizer.where=worker");
      }
      // DGC's momentum correction: the optimizer's momentum moves into the compressor, which accumulates the
      // velocity before selecting and masks it where it sent (docs/accelerators.md: +0.7 points after 2 epochs
      // of GEO-2x2 against momentum applied by the workers to the sparse aggregate).
      // (bsc and mpq only: sign and int8 have no momentum correction, the workers keep the optimizer's.)
      if ((comp == "bsc" || comp == "mpq") && recipe.optimizer.name == "momentum" && recipe.optimizer.momentum > 0) {
        char m[32];
        std::snprintf(m, sizeof(m), "%g", static_cast<double>(recipe.optimizer.momentum));
        c.sets.push_back("optimizer.name=sgd");
        c.sets.push_back(std::string("accelerators.bsc.momentum=") + m);
        c.description += std::string(" with momentum correction (") + m + ")";
      }
    }
    if (comp != "fp16") {
      // Classifier-sized tensors stay dense: geomx-cnn's last layer (1,280 weights) would otherwise send 13 values
      // a round at 1 % (docs/accelerators.md: +0.4 points after 2 epochs of GEO-2x2, 10 KB a round).
      c.sets.push_back("accelerators.size_lower_bound=" + std::to_string(kBenchSizeLowerBound));
    }
  }
  if (comp.empty() && base != "flat-ps") c.description += ", dense FP32";
  if (accs.count("p3")) {
    c.sets.push_back("accelerators.p3.enabled=true");
    c.description += ", P3 priority slicing";
  }
  if (accs.count("dgt")) {
    c.sets.push_back("accelerators.dgt.enabled=true");
    c.description += ", DGT (unimportant blocks of the local servers' pushes as datagrams)";
  }
  if (accs.count("tsengine")) {
    c.sets.push_back("accelerators.tsengine.enabled=true");
    c.description += ", TSEngine (local servers relay sums and values in a measured overlay)";
  }
  for (const std::string& e : extra) {
    c.sets.push_back(e);
    c.description += ", " + e;
  }
  return c;
}

Result<std::vector<BenchConfig>> ResolveConfigs(const std::string& list, const Recipe& recipe) {
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char ch : list) {
    if (ch == '[') ++depth;
    if (ch == ']') --depth;
    if (ch == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  items.push_back(cur);
  std::vector<BenchConfig> out;
  std::set<std::string> seen;
  for (const std::string& item : items) {
    GEOMX_ASSIGN_OR_RETURN(BenchConfig c, ResolveConfig(item, recipe));
    if (!seen.insert(c.name).second) return Bad(c.name, "listed twice");
    out.push_back(std::move(c));
  }
  return out;
}

Result<WanSpec> ParseWan(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) {
    return Status::InvalidArgument("--wan " + Quoted(text) + ": expected RATE/DELAY or RATE/DELAY/LOSS, e.g. "
                                   "50mbit/25ms or 50mbit/25ms/2%");
  }
  WanSpec w;
  const std::string rate = text.substr(0, slash);
  const size_t second = text.find('/', slash + 1);
  const std::string delay =
      text.substr(slash + 1, second == std::string::npos ? std::string::npos : second - slash - 1);
  std::string err = ParseBandwidth(rate, &w.bits_per_second);
  if (!err.empty()) return Status::InvalidArgument("--wan " + Quoted(text) + ": rate: " + err);
  err = ParseDurationSeconds(delay, &w.latency_s);
  if (!err.empty()) return Status::InvalidArgument("--wan " + Quoted(text) + ": delay: " + err);
  w.sets = {"topology.links.wan.bandwidth=" + std::string(Trim(rate)),
            "topology.links.wan.latency=" + std::string(Trim(delay))};
  if (second != std::string::npos) {
    const std::string loss = text.substr(second + 1);
    err = ParseLoss(loss, &w.loss);
    if (!err.empty()) return Status::InvalidArgument("--wan " + Quoted(text) + ": loss: " + err);
    w.sets.push_back("topology.links.wan.loss=" + std::string(Trim(loss)));
  }
  return w;
}

std::string ConfigSlug(const std::string& name) {
  std::string s;
  for (char ch : name) {
    s += std::isalnum(static_cast<unsigned char>(ch)) || ch == '+' || ch == '-' || ch == '.' ? ch : '_';
  }
  return s;
}

}  // namespace geomx::bench
