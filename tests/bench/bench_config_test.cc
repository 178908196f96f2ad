// Presets of `geomx bench RECIPE --configs`: each resolves to --set overrides that the recipe accepts, and bad
// configuration names or --wan values are rejected with a clear message.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "bench/bench_config.h"
#include "cli/recipe.h"
#include "tests/testutil.h"

namespace geomx::bench {
namespace {

using cli::ParseRecipe;
using cli::Recipe;

constexpr char kGeo2x2[] = R"(name: g
model: {name: geomx-cnn}
data: {name: synthetic, batch_size: 32}
optimizer: {name: momentum, lr: 0.05}
training: {epochs: 1, target_accuracy: 0.85}
topology:
  central: {host: 127.0.0.1, global_servers: 1}
  datacentres:
    - {name: dc-a, workers: 2, servers: 1}
    - {name: dc-b, workers: 2, servers: 1}
  links: {wan: {bandwidth: 50mbit, latency: 25ms}}
)";

Recipe Geo2x2() {
  auto r = ParseRecipe(kGeo2x2, "geo2x2");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

bool Has(const BenchConfig& c, const std::string& set) {
  return std::find(c.sets.begin(), c.sets.end(), set) != c.sets.end();
}

TEST(BenchConfig, HipsIsTheRecipesTopologyWithFsaAndNoAccelerators) {
  auto c = ResolveConfig("hips", Geo2x2());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->is_ddp);
  EXPECT_TRUE(Has(*c, "sync.mode=fsa"));
  EXPECT_TRUE(Has(*c, "accelerators.compression=none"));
  EXPECT_TRUE(Has(*c, "accelerators.p3.enabled=false"));
  for (const std::string& s : c->sets) EXPECT_EQ(s.find("topology."), std::string::npos) << s;
}

TEST(BenchConfig, FlatPsGivesEveryWorkerItsOwnDataCentre) {
  const Recipe base = Geo2x2();
  auto c = ResolveConfig("flat-ps", base);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(Has(*c, "optimizer.where=global-server"));
  auto r = ParseRecipe(kGeo2x2, "geo2x2", c->sets);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->topology.datacentres.size(), 4u);
  for (const auto& d : r->topology.datacentres) {
    EXPECT_EQ(d.workers, 1);
    EXPECT_EQ(d.servers, 1);
  }
  EXPECT_EQ(r->topology.total_workers(), base.topology.total_workers());
  EXPECT_EQ(r->sync.mode, "fsa");
  EXPECT_EQ(r->accelerators.compression, "none");
  // The two workers of a data centre share its 50 Mbit/s uplink: 4 links of 25 Mbit/s, the same aggregate WAN.
  EXPECT_DOUBLE_EQ(r->topology.options.wan.bandwidth_bps, 25e6);
  EXPECT_DOUBLE_EQ(r->topology.options.wan.latency_s, base.topology.options.wan.latency_s);
}

TEST(BenchConfig, FlatPsLeavesAnUnshapedWanUnshaped) {
  auto base = ParseRecipe(kGeo2x2, "geo2x2", {"topology.links.wan.bandwidth=0"});
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  auto c = ResolveConfig("flat-ps", *base);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (const std::string& s : c->sets) EXPECT_EQ(s.find("bandwidth"), std::string::npos) << s;
}

TEST(BenchConfig, SparseGradientPresetsMoveTheMomentumIntoTheCompressor) {
  for (const char* spec : {"hips+bsc", "hips+mpq"}) {
    auto c = ResolveConfig(spec, Geo2x2());  // optimizer: momentum 0.9 (the default)
    ASSERT_TRUE(c.ok()) << spec;
    EXPECT_TRUE(Has(*c, "optimizer.name=sgd")) << spec;
    EXPECT_TRUE(Has(*c, "accelerators.bsc.momentum=0.9")) << spec;
    EXPECT_TRUE(Has(*c, "accelerators.size_lower_bound=2000")) << spec;
    auto r = ParseRecipe(kGeo2x2, "geo2x2", c->sets);  // the cross-key rules accept the combination
    ASSERT_TRUE(r.ok()) << spec << ": " << r.status().ToString();
    EXPECT_EQ(r->optimizer.name, "sgd");
    EXPECT_FLOAT_EQ(r->accelerators.bsc_momentum, 0.9f);
  }
  // An optimizer without momentum has none to move.
  auto sgd = ParseRecipe(kGeo2x2, "geo2x2", {"optimizer.name=sgd"});
  ASSERT_TRUE(sgd.ok());
  auto c = ResolveConfig("hips+bsc", *sgd);
  ASSERT_TRUE(c.ok());
  for (const std::string& s : c->sets) EXPECT_EQ(s.find("bsc.momentum"), std::string::npos) << s;
}

TEST(BenchConfig, AcceleratorsMapToTheirKeys) {
  const Recipe base = Geo2x2();
  auto bsc = ResolveConfig("hips+bsc", base);
  ASSERT_TRUE(bsc.ok());
  EXPECT_TRUE(Has(*bsc, "accelerators.compression=bsc"));
  EXPECT_TRUE(Has(*bsc, "optimizer.where=worker"));
  auto fp16 = ResolveConfig("hips+fp16", base);
  ASSERT_TRUE(fp16.ok());
  EXPECT_TRUE(Has(*fp16, "accelerators.compression=fp16"));
  EXPECT_FALSE(Has(*fp16, "optimizer.where=worker"));
  auto mpq = ResolveConfig("hips+mpq", base);
  ASSERT_TRUE(mpq.ok());
  EXPECT_TRUE(Has(*mpq, "accelerators.compression=mpq"));
  EXPECT_TRUE(Has(*mpq, "optimizer.where=worker"));
  EXPECT_FALSE(Has(*fp16, "optimizer.name=sgd"));
  EXPECT_FALSE(Has(*fp16, "accelerators.size_lower_bound=2000"));
  auto p3 = ResolveConfig("hips+p3", base);
  ASSERT_TRUE(p3.ok());
  EXPECT_TRUE(Has(*p3, "accelerators.p3.enabled=true"));
  auto hfa = ResolveConfig("hfa+bsc", base);
  ASSERT_TRUE(hfa.ok());
  EXPECT_TRUE(Has(*hfa, "sync.mode=hfa"));
  EXPECT_TRUE(Has(*hfa, "accelerators.links.local_to_global=bsc"));
  EXPECT_TRUE(Has(*hfa, "accelerators.links.global_to_local=bsc"));
  EXPECT_FALSE(Has(*hfa, "accelerators.compression=bsc"));
  EXPECT_TRUE(Has(*hfa, "accelerators.size_lower_bound=2000"));
  EXPECT_FALSE(Has(*hfa, "optimizer.name=sgd"));  // hfa's workers keep their optimizer
  for (const char* mode : {"mixed", "esync", "diloco"}) {
    auto m = ResolveConfig(mode, base);
    ASSERT_TRUE(m.ok()) << mode;
    EXPECT_TRUE(Has(*m, std::string("sync.mode=") + mode));
  }
}

TEST(BenchConfig, MixedDividesTheLearningRateByTheDataCentres) {
  auto m = ResolveConfig("mixed", Geo2x2());  // lr 0.05, 2 data centres
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(Has(*m, "optimizer.lr=0.025"));
  auto over = ResolveConfig("mixed[optimizer.lr=0.01]", Geo2x2());  // an explicit override comes later and wins
  ASSERT_TRUE(over.ok());
  auto r = ParseRecipe(kGeo2x2, "geo2x2", over->sets);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FLOAT_EQ(r->optimizer.lr, 0.01f);
  auto hips = ResolveConfig("hips", Geo2x2());
  ASSERT_TRUE(hips.ok());
  for (const std::string& s : hips->sets) EXPECT_EQ(s.find("optimizer.lr"), std::string::npos) << s;
}

// Every preset with every accelerator (alone and with +p3) against recipes/bench_geo2x2.yaml, the recipe
// `geomx bench` runs: each resolves to overrides that pass the whole recipe validation (schema and the cross-key
// rules of cli/sync_rules.h, as LoadRecipe runs them for `geomx train`), except the combinations documented as
// invalid, which the preset layer refuses with the reason before anything runs.
TEST(BenchConfig, EveryPresetAndAcceleratorPassesTheRecipeRules) {
  const std::string path = (testing::SourceDir() / "recipes" / "bench_geo2x2.yaml").string();
  auto base = cli::LoadRecipe(path);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  // The gradient modes' fp16 and mpq presets compress the data centres' links, which P3 needs dense.
  const std::set<std::string> gradient_modes = {"flat-ps", "hips", "mixed"};
  int resolved = 0, refused = 0;
  for (const std::string& preset : PresetNames()) {
    if (preset == "ddp") continue;
    for (const char* accs : {"", "+bsc", "+fp16", "+mpq", "+p3", "+bsc+p3", "+fp16+p3", "+mpq+p3"}) {
      const std::string spec = preset + accs;
      const bool invalid = gradient_modes.count(preset) &&
                           (std::string(accs) == "+fp16+p3" || std::string(accs) == "+mpq+p3");
      auto c = ResolveConfig(spec, *base);
      if (invalid) {
        ASSERT_FALSE(c.ok()) << spec << " resolved to a configuration the recipe rules refuse";
        EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << spec;
        EXPECT_NE(c.status().message().find("P3 needs dense links between workers and local servers"),
                  std::string::npos)
            << spec << ": " << c.status().message();
        EXPECT_NE(c.status().message().find("accelerators.links.local_to_global="), std::string::npos)
            << spec << ": the refusal names the configuration that works: " << c.status().message();
        ++refused;
        continue;
      }
      ASSERT_TRUE(c.ok()) << spec << ": " << c.status().ToString();
      auto r = cli::LoadRecipe(path, c->sets);
      EXPECT_TRUE(r.ok()) << spec << " is refused by the recipe rules:\n" << r.status().message();
      ++resolved;
    }
  }
  EXPECT_EQ(refused, 6);
  EXPECT_EQ(resolved, 6 * 8 - 6);  // flat-ps, hips, diloco, esync, hfa, mixed
}

// +dgt: the gradient modes (their local servers forward dense sums) take it, and the recipe rules accept what it
// resolves to; model-averaging modes and a compressed push are refused by the preset layer, naming +dgt.
TEST(BenchConfig, DgtGoesWithTheGradientModesOnly) {
  const std::string path = (testing::SourceDir() / "recipes" / "bench_geo2x2.yaml").string();
  auto base = cli::LoadRecipe(path);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  for (const std::string& preset : PresetNames()) {
    if (preset == "ddp") continue;
    const bool gradients = preset == "flat-ps" || preset == "hips" || preset == "mixed";
    for (const char* accs : {"+dgt", "+dgt+p3", "+dgt+bsc"}) {
      const std::string spec = preset + accs;
      auto c = ResolveConfig(spec, *base);
      if (!gradients || std::string(accs) == "+dgt+bsc") {
        ASSERT_FALSE(c.ok()) << spec;
        EXPECT_NE(c.status().message().find("+dgt"), std::string::npos) << c.status().message();
        continue;
      }
      ASSERT_TRUE(c.ok()) << spec << ": " << c.status().ToString();
      EXPECT_TRUE(Has(*c, "accelerators.dgt.enabled=true")) << spec;
      auto r = cli::LoadRecipe(path, c->sets);
      EXPECT_TRUE(r.ok()) << spec << ": " << r.status().message();
      EXPECT_TRUE(r->accelerators.dgt) << spec;
    }
  }
  auto plain = ResolveConfig("hips", *base);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(Has(*plain, "accelerators.dgt.enabled=false"));  // the clean slate
}

// +tsengine: fsa's presets (flat-ps, hips) take it, and the recipe rules accept what it resolves to; other modes,
// compression and +dgt are refused by the preset layer, naming +tsengine.
TEST(BenchConfig, TsEngineGoesWithFsaOnly) {
  const std::string path = (testing::SourceDir() / "recipes" / "bench_geo2x2.yaml").string();
  auto base = cli::LoadRecipe(path);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  int resolved = 0;
  for (const std::string& preset : PresetNames()) {
    if (preset == "ddp") continue;
    const bool fsa = preset == "flat-ps" || preset == "hips" || preset == "fsa";
    for (const char* accs : {"+tsengine", "+tsengine+p3", "+tsengine+bsc", "+tsengine+dgt"}) {
      const std::string spec = preset + accs;
      auto c = ResolveConfig(spec, *base);
      if (!fsa || std::string(accs) == "+tsengine+bsc" || std::string(accs) == "+tsengine+dgt") {
        ASSERT_FALSE(c.ok()) << spec;
        EXPECT_NE(c.status().message().find("+tsengine"), std::string::npos) << c.status().message();
        continue;
      }
      ASSERT_TRUE(c.ok()) << spec << ": " << c.status().ToString();
      EXPECT_TRUE(Has(*c, "accelerators.tsengine.enabled=true")) << spec;
      auto r = cli::LoadRecipe(path, c->sets);
      ASSERT_TRUE(r.ok()) << spec << ": " << r.status().message();
      EXPECT_TRUE(r->accelerators.tsengine) << spec;
      ++resolved;
    }
  }
  EXPECT_EQ(resolved, 4);  // flat-ps and hips, each with and without +p3
  auto plain = ResolveConfig("hips", *base);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(Has(*plain, "accelerators.tsengine.enabled=false"));  // the clean slate
}

// mixed's global server owns the weights (the optimizer steps there), so its sparse presets keep the optimizer
// there and send the weights down dense. diloco+bsc and diloco+mpq sparsify both WAN links (SparseLoCo: the
// momentum in the push's error feedback, with its defaults lr 1 and decay 0.95); with a quantiser (sign, int8,
// powersgd) diloco's deltas go up in FP16 and the answers are compressed.
TEST(BenchConfig, SparsePresetsFollowWhatTheModeNeeds) {
  const std::string path = (testing::SourceDir() / "recipes" / "bench_geo2x2.yaml").string();
  auto base = cli::LoadRecipe(path);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  for (const char* spec : {"mixed+bsc", "mixed+mpq"}) {
    auto c = ResolveConfig(spec, *base);
    ASSERT_TRUE(c.ok()) << spec;
    auto r = cli::LoadRecipe(path, c->sets);
    ASSERT_TRUE(r.ok()) << spec << ": " << r.status().ToString();
    EXPECT_EQ(r->optimizer_where, "global-server") << spec;
    EXPECT_EQ(r->accelerators.global_to_local, "none") << spec;
    EXPECT_EQ(r->optimizer.name, "sgd") << spec;  // DGC's momentum correction, as for hips
    EXPECT_FLOAT_EQ(r->accelerators.bsc_momentum, 0.9f) << spec;
    EXPECT_FLOAT_EQ(r->optimizer.lr, 0.025f) << spec;  // 0.05 over 2 data centres
  }
  for (const char* scheme : {"bsc", "mpq"}) {
    auto c = ResolveConfig(std::string("diloco+") + scheme, *base);
    ASSERT_TRUE(c.ok()) << scheme;
    auto r = cli::LoadRecipe(path, c->sets);
    ASSERT_TRUE(r.ok()) << scheme << ": " << r.status().ToString();
    EXPECT_EQ(r->accelerators.local_to_global, scheme);
    EXPECT_EQ(r->accelerators.global_to_local, scheme);
    EXPECT_FLOAT_EQ(r->sync.outer_lr, 1.0f) << scheme;
    EXPECT_FLOAT_EQ(r->sync.outer_momentum, 0.95f) << scheme;
    EXPECT_FLOAT_EQ(r->accelerators.bsc_momentum, 0.0f) << scheme;  // no momentum correction of model deltas
    EXPECT_EQ(r->optimizer.name, "momentum") << scheme;              // the workers keep their optimizer
  }
  for (const char* scheme : {"sign", "int8", "powersgd"}) {
    auto c = ResolveConfig(std::string("diloco+") + scheme, *base);
    ASSERT_TRUE(c.ok()) << scheme;
    auto r = cli::LoadRecipe(path, c->sets);
    ASSERT_TRUE(r.ok()) << scheme << ": " << r.status().ToString();
    EXPECT_EQ(r->accelerators.local_to_global, "fp16") << scheme;
    EXPECT_EQ(r->accelerators.global_to_local, scheme);
    EXPECT_FLOAT_EQ(r->sync.outer_lr, 0.7f) << scheme;  // DiLoCo's Nesterov defaults
  }
}

TEST(BenchConfig, BracketsAddOverrides) {
  auto c = ResolveConfig("hips+bsc[accelerators.bsc.ratio=0.001; sync.k1=5]", Geo2x2());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->sets.back(), "sync.k1=5");
  EXPECT_TRUE(Has(*c, "accelerators.bsc.ratio=0.001"));
  auto list = ResolveConfigs("hips,hips[sync.k1=5;sync.k2=2],ddp", Geo2x2());
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[1].name, "hips[sync.k1=5;sync.k2=2]");
  EXPECT_TRUE((*list)[2].is_ddp);
}

TEST(BenchConfig, BadNamesAreRejectedClearly) {
  const Recipe base = Geo2x2();
  for (const char* bad : {"nope", "hips+zip", "hips+bsc+fp16", "ddp+bsc", "", "hips[x]", "hips[a=1", "hips+bsc+bsc"}) {
    auto c = ResolveConfig(bad, base);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("presets: flat-ps"), std::string::npos) << c.status().message();
  }
  auto dup = ResolveConfigs("hips,hips", base);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("listed twice"), std::string::npos);
  auto no_topology = ParseRecipe("name: x\ndata: {name: synthetic}\n", "x");
  ASSERT_TRUE(no_topology.ok());
  EXPECT_FALSE(ResolveConfig("hips", *no_topology).ok());
}

TEST(BenchConfig, WanParses) {
  auto w = ParseWan("50mbit/25ms");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_DOUBLE_EQ(w->bits_per_second, 5e7);
  EXPECT_DOUBLE_EQ(w->latency_s, 0.025);
  ASSERT_EQ(w->sets.size(), 2u);
  EXPECT_EQ(w->sets[0], "topology.links.wan.bandwidth=50mbit");
  EXPECT_EQ(w->sets[1], "topology.links.wan.latency=25ms");
  auto lossy = ParseWan("50mbit/25ms/2%");
  ASSERT_TRUE(lossy.ok()) << lossy.status().ToString();
  EXPECT_DOUBLE_EQ(lossy->loss, 0.02);
  ASSERT_EQ(lossy->sets.size(), 3u);
  EXPECT_EQ(lossy->sets[2], "topology.links.wan.loss=2%");
  for (const char* bad : {"50mbit", "fast/25ms", "50mbit/soon", "/", "-5mbit/1ms", "50mbit/25ms/lots",
                          "50mbit/25ms/100%", "50mbit/25ms/"}) {
    auto b = ParseWan(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(b.status().message().find("--wan"), std::string::npos);
  }
}

TEST(BenchConfig, SlugIsFileNameSafe) {
  EXPECT_EQ(ConfigSlug("hips+bsc"), "hips+bsc");
  EXPECT_EQ(ConfigSlug("hips[a.b=1;c=2]"), "hips_a.b_1_c_2_");
}

}  // namespace
}  // namespace geomx::bench
