// Recipe parsing, validation and --set overrides (cli/recipe.h), against the schema (cli/recipe_schema.h).
#include "cli/recipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "cli/recipe_schema.h"
#include "tests/cli/recipe_test_util.h"
#include "datasets/dataset.h"
#include "nn/models/models.h"
#include "nn/optim/optimizer.h"
#include "tests/testutil.h"

namespace geomx::cli {
namespace {

using recipe_testing::ErrorLines;
using recipe_testing::Lines;
using recipe_testing::MustParse;

// A recipe that sets every key to a value other than its default.
constexpr char kFullRecipe[] = R"(name: full-run_1.0
seed: 7
device: cuda:1
threads: 3
model:
  name: mlp
  hidden: [64, 32, 16]
  activation: gelu
  dropout: 0.25
  init: xavier
  cell: gru
  init_from: runs/source
  freeze: 2
data:
  name: csv
  path: /data/my table.csv
  test_path: "/data/test #1: \"b\".csv"
  test_fraction: 0.3
  batch_size: 128
  partition: dirichlet(0.3)
  shuffle: false
  prefetch: 0
  normalize: no
  augment: true
  classes: [5, 7, 9]
  score_within_classes: true
  label_column: 0
  header: false
  num_features: 12
  allow_nan: true
  image_height: 64
  image_width: 48
  image_channels: 1
  synthetic_train: 100
  synthetic_test: 50
  synthetic_classes: 3
  synthetic_shape: [16]
  synthetic_seed: 99
  scale: maxabs
  max_train_examples: 500
optimizer:
  name: adamw
  lr: 3e-4
  weight_decay: 0.01
  momentum: 0.5
  beta1: 0.8
  beta2: 0.99
  rho: 0.95
  eps: 1e-6
  l1: 0.5
  ftrl_beta: 2
  clip_norm: 5
  where: worker
  schedule:
    name: cosine
    step_epochs: 2
    gamma: 0.5
    min_lr: 1e-5
    warmup_iterations: 100
training:
  epochs: 9
  max_iterations: 5000
  eval_every: 250
  eval_limit: 1000
  eval_async: true
  target_accuracy: 0.91
  stop_at_target: true
  checkpoint_every: 1000
  log_every: 10
sync:
  mode: hfa
  k1: 5
  k2: 4
  overlap: 2
  initial_weights: seed
  outer: {lr: 0.5, momentum: 0.8}
  esync: {max_local_steps: 8, global_lr: 0.5}
accelerators:
  compression: bsc
  bsc: {ratio: 0.05, momentum: 0.5, selection: sampled, sample_fraction: 0.01}
  int8: {block: 128, stochastic: true}
  powersgd: {rank: 8}
  size_lower_bound: 500
  links: {worker_to_local: none, local_to_global: fp16, global_to_local: mpq, local_to_worker: none}
  p3: {slice_elements: 1000}
  dgt: {block_bytes: 1000, k: 0.5, k_min: 0.1, adaptive: false, alpha: 0.5, channels: 2, deadline: 50ms,
        mode: tcp-priority-4bit}
  tsengine: {max_greedy: 0.8, expiry: 7, ewma: 0.25, tier: both}
topology:
  central:
    host: 10.0.0.1
    global_servers: 2
    scheduler_port: 9000
    state_server_port: 9003
  datacentres:
    - name: east
      host: 10.0.1.1
      workers: 4
      servers: 2
      scheduler_port: 9001
      slowdown: 2
      bandwidth: 0
      latency: 0
      loss: 0
    - {name: west, host: 10.0.2.1, workers: 3, servers: 3, scheduler_port: 9002, slowdown: 4.5, bandwidth: 10mbit,
       latency: 80ms, loss: 2%}
  split_bytes: 4096
  links:
    wan: {bandwidth: 50mbit, latency: 25ms, loss: 0.5%}
    lan: {bandwidth: 10gbit, latency: 100us, loss: 0.0001}
    direct:
      - {from: west, to: east, bandwidth: 1gbit, latency: 2ms, loss: 0.1%}
  timeouts:
    rendezvous: 90s
    request: 5min
    heartbeat_interval: 5s
    heartbeat_timeout: 1min
    rejoin: 2min
security:
  encryption: "on"
  keys: /etc/geomx/keys
)";

using recipe_testing::kTopologyBase;

// A recipe with one default item in each list of mappings: the reference for item keys' defaults.
Recipe DefaultsWithItems() {
  Recipe r;
  r.topology.datacentres.resize(1);
  r.topology.direct_links.resize(1);
  return r;
}

TEST(RecipeTest, EmptyRecipeIsAnError) {
  for (const char* text : {"", "# nothing but a comment\n", "{}\n", "\n\n"}) {
    Result<Recipe> r = ParseRecipe(text, "empty.yaml");
    ASSERT_FALSE(r.ok()) << "'" << text << "'";
    EXPECT_TRUE(r.status().IsUserError());
    EXPECT_EQ(r.status().message().rfind("empty.yaml:", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().message().find("the recipe is empty"), std::string::npos) << r.status().message();
  }
}

TEST(RecipeTest, OneKeyRecipeIsAllDefaults) {
  Recipe r = MustParse("name: run\n");
  Recipe d;
  EXPECT_EQ(r.source, "r.yaml");
  for (const RecipeKey& key : RecipeKeys()) {
    if (!IsRecipeItemKey(key)) {
      EXPECT_EQ(RecipeValueText(key, r), RecipeValueText(key, d)) << key.path;
    }
  }
  EXPECT_FALSE(r.has_topology);
  EXPECT_EQ(r.optimizer_where, "global-server");
  EXPECT_EQ(r.name, "run");
  EXPECT_EQ(r.model.name, "geomx-cnn");
  EXPECT_EQ(r.data.batch_size, 32);
  EXPECT_EQ(r.training.epochs, 5);
  EXPECT_EQ(r.lr_schedule.name, "constant");
}

TEST(RecipeTest, ParsesEveryKey) {
  Recipe r = MustParse(kFullRecipe);
  EXPECT_EQ(r.name, "full-run_1.0");
  EXPECT_EQ(r.seed, 7u);
  EXPECT_EQ(r.device, "cuda:1");
  EXPECT_EQ(r.threads, 3);
  EXPECT_EQ(r.model.name, "mlp");
  EXPECT_EQ(r.model.hidden, (std::vector<int>{64, 32, 16}));
  EXPECT_EQ(r.model.activation, "gelu");
  EXPECT_FLOAT_EQ(r.model.dropout, 0.25f);
  EXPECT_EQ(r.model.init, "xavier");
  EXPECT_EQ(r.model.cell, "gru");
  EXPECT_EQ(r.model.init_from, "runs/source");
  EXPECT_EQ(r.model.freeze, 2);
  EXPECT_EQ(r.data.name, "csv");
  EXPECT_EQ(r.data.path, "/data/my table.csv");
  EXPECT_EQ(r.data.test_path, "/data/test #1: \"b\".csv");
  EXPECT_FLOAT_EQ(r.data.test_fraction, 0.3f);
  EXPECT_EQ(r.data.batch_size, 128);
  EXPECT_EQ(r.data.partition, data::PartitionKind::kDirichlet);
  EXPECT_FLOAT_EQ(r.data.dirichlet_alpha, 0.3f);
  EXPECT_FALSE(r.data.shuffle);
  EXPECT_EQ(r.data.prefetch, 0);
  EXPECT_FALSE(r.data.normalize);
  EXPECT_TRUE(r.data.augment);
  EXPECT_EQ(r.data.classes, (std::vector<int64_t>{5, 7, 9}));
  EXPECT_TRUE(r.data.score_within_classes);
  EXPECT_EQ(r.data.label_column, 0);
  EXPECT_FALSE(r.data.header);
  EXPECT_EQ(r.data.num_features, 12);
  EXPECT_TRUE(r.data.allow_nan);
  EXPECT_EQ(r.data.image_height, 64);
  EXPECT_EQ(r.data.image_width, 48);
  EXPECT_EQ(r.data.image_channels, 1);
  EXPECT_EQ(r.data.synthetic_train, 100);
  EXPECT_EQ(r.data.synthetic_test, 50);
  EXPECT_EQ(r.data.synthetic_classes, 3);
  EXPECT_EQ(r.data.synthetic_shape, (std::vector<int64_t>{16}));
  EXPECT_EQ(r.data.synthetic_seed, 99u);
  EXPECT_EQ(r.optimizer.name, "adamw");
  EXPECT_FLOAT_EQ(r.optimizer.lr, 3e-4f);
  EXPECT_FLOAT_EQ(r.optimizer.weight_decay, 0.01f);
  EXPECT_FLOAT_EQ(r.optimizer.momentum, 0.5f);
  EXPECT_FLOAT_EQ(r.optimizer.beta1, 0.8f);
  EXPECT_FLOAT_EQ(r.optimizer.beta2, 0.99f);
  EXPECT_FLOAT_EQ(r.optimizer.rho, 0.95f);
  EXPECT_FLOAT_EQ(r.optimizer.eps, 1e-6f);
  EXPECT_EQ(r.lr_schedule.name, "cosine");
  EXPECT_EQ(r.lr_schedule.step_epochs, 2);
  EXPECT_FLOAT_EQ(r.lr_schedule.gamma, 0.5f);
  EXPECT_FLOAT_EQ(r.lr_schedule.min_lr, 1e-5f);
  EXPECT_EQ(r.lr_schedule.warmup_iterations, 100);
  EXPECT_EQ(r.training.epochs, 9);
  EXPECT_EQ(r.training.max_iterations, 5000);
  EXPECT_EQ(r.training.eval_every, 250);
  EXPECT_EQ(r.training.eval_limit, 1000);
  EXPECT_FLOAT_EQ(r.training.target_accuracy, 0.91f);
  EXPECT_TRUE(r.training.stop_at_target);
  EXPECT_EQ(r.training.checkpoint_every, 1000);
  EXPECT_EQ(r.training.log_every, 10);
  EXPECT_EQ(r.optimizer_where, "worker");
  ASSERT_TRUE(r.has_topology);
  const comm::Topology& t = r.topology;
  EXPECT_EQ(t.central_host, "10.0.0.1");
  EXPECT_EQ(t.global_servers, 2);
  EXPECT_EQ(t.global_scheduler_port, 9000);
  ASSERT_EQ(t.datacentres.size(), 2u);
  EXPECT_EQ(t.datacentres[0].name, "east");
  EXPECT_EQ(t.datacentres[0].host, "10.0.1.1");
  EXPECT_EQ(t.datacentres[0].workers, 4);
  EXPECT_EQ(t.datacentres[0].servers, 2);
  EXPECT_EQ(t.datacentres[0].scheduler_port, 9001);
  EXPECT_EQ(t.datacentres[1].name, "west");
  EXPECT_EQ(t.datacentres[1].workers, 3);
  EXPECT_EQ(t.datacentres[1].scheduler_port, 9002);
  EXPECT_EQ(t.total_workers(), 7);
  EXPECT_EQ(t.options.split_bytes, 4096);
  EXPECT_EQ(t.options.wan.bandwidth_bps, 50e6);
  EXPECT_DOUBLE_EQ(t.options.wan.latency_s, 0.025);
  EXPECT_EQ(t.options.lan.bandwidth_bps, 10e9);
  EXPECT_DOUBLE_EQ(t.options.lan.latency_s, 100e-6);
  EXPECT_EQ(t.options.rendezvous_timeout_ms, 90000);
  EXPECT_EQ(t.options.request_timeout_ms, 300000);
  EXPECT_EQ(t.options.heartbeat_interval_ms, 5000);
  EXPECT_EQ(t.options.heartbeat_timeout_ms, 60000);
  EXPECT_EQ(t.options.rejoin_timeout_ms, 120000);
}

// Keys whose non-default value another key of kFullRecipe forbids (sync.mode hfa): mixed-only and fsa-only keys.
// RecipeTest.ModeSpecificKeysParse covers them.
bool NotInFullRecipe(std::string_view path) {
  // algorithm.name: a recipe with a model has no algorithm (tests/cli/algorithm_recipe_test.cc covers it).
  // topology.failure_policy: continue and topology.snapshot_every need sync.mode fsa
  // (RecipeTest.FailurePolicyContinueNeedsFsa, RecipeTest.SnapshotsNeedFsaWithTheOptimizerAtTheServers).
  return path == "sync.max_staleness" || path.substr(0, 12) == "sync.dcasgd." || path == "accelerators.p3.enabled" ||
         path == "accelerators.dgt.enabled" || path == "accelerators.tsengine.enabled" ||
         path == "algorithm.name" || path == "topology.failure_policy" || path == "topology.snapshot_every" ||
         path == "topology.max_restarts" || path == "topology.worker_restarts";
}

TEST(RecipeTest, ModeSpecificKeysParse) {
  Recipe mixed = MustParse(std::string(kTopologyBase) + "sync: {mode: mixed, max_staleness: 3, dcasgd: {lambda: 0.04, adaptive: true, decay: 0.9}}\n");
  EXPECT_EQ(mixed.sync.max_staleness, 3);
  EXPECT_TRUE(mixed.sync.dcasgd_adaptive);
  EXPECT_FLOAT_EQ(mixed.sync.dcasgd_decay, 0.9f);
  EXPECT_FLOAT_EQ(mixed.sync.dcasgd_lambda, 0.04f);
  Recipe p3 = MustParse(std::string(kTopologyBase) + "accelerators: {p3: {enabled: true}}\n");
  EXPECT_TRUE(p3.accelerators.p3);
}

// kFullRecipe really exercises every key of the schema (so the round trip below covers them all).
TEST(RecipeTest, FullRecipeSetsEverySchemaKey) {
  Recipe full = MustParse(kFullRecipe);
  Recipe defaults = DefaultsWithItems();
  for (const RecipeKey& key : RecipeKeys()) {
    if (NotInFullRecipe(key.path)) continue;
    const size_t items = IsRecipeItemKey(key) ? RecipeListSize(RecipeListKeyOf(key), full) : 1u;
    EXPECT_GE(items, 1u) << key.path;
    for (size_t i = 0; i < items; ++i) {
      EXPECT_NE(RecipeValueText(key, full, i), RecipeValueText(key, defaults, 0)) << key.path << " item " << i;
    }
  }
}

// Each key writes its own field: setting one key changes that key's value and no other. Topology keys are set on
// top of the smallest topology (item keys of its first data centre, with --set LIST[0].key=value).
TEST(RecipeTest, EachKeySetsOnlyItsOwnField) {
  Recipe full = MustParse(kFullRecipe);
  for (const RecipeKey& key : RecipeKeys()) {
    const bool needs_topology = IsTopologyPath(key.path) || key.path.substr(0, 5) == "sync." ||
                                key.path.substr(0, 13) == "accelerators.";
    std::string base_yaml = needs_topology ? kTopologyBase : "name: run\n";
    // Direct links need data centres (those of kFullRecipe's link and two others), and one link to set keys of.
    if (key.path.substr(0, 21) == "topology.links.direct") {
      base_yaml = "topology:\n  datacentres: [{name: east}, {name: west}, {name: north}, {name: south}]\n"
                  "  links: {direct: [{from: north, to: south}]}\n";
    }
    Recipe base = MustParse(base_yaml);
    const std::string path = IsRecipeItemKey(key) ? RecipeItemPath(key, 0) : std::string(key.path);
    std::vector<std::string> flags = {path + "=" + RecipeValueText(key, full)};
    std::string companion;  // keys that are only valid together with another one
    if (key.path == "data.name") companion = "data.path";
    if (key.path == "training.stop_at_target") companion = "training.target_accuracy";
    if (key.path == "data.score_within_classes") companion = "data.classes";
    if (key.path == "sync.overlap" || key.path == "sync.initial_weights") companion = "sync.mode";  // hfa, ...
    // A sparse pull needs gradients, not weights, to come down.
    if (key.path == "accelerators.compression" || key.path == "accelerators.links.global_to_local") {
      companion = "optimizer.where";
    }
    if (!companion.empty()) flags.push_back(companion + "=" + RecipeValueText(*FindRecipeKey(companion), full));
    Recipe r = MustParse(base_yaml, flags);
    for (const RecipeKey& other : RecipeKeys()) {
      if (other.path == companion) continue;
      if (IsRecipeItemKey(key) && &RecipeListKeyOf(key) == &other) continue;  // the list holds the changed item
      // Setting the whole list sets its items' keys too.
      bool changed = other.path == key.path || (IsRecipeItemKey(other) && &RecipeListKeyOf(other) == &key);
      const Recipe& expected = changed ? full : base;
      if (IsRecipeItemKey(other) && RecipeListSize(RecipeListKeyOf(other), r) == 0) continue;  // no item to read
      EXPECT_EQ(RecipeValueText(other, r), RecipeValueText(other, expected))
          << "after --set " << flags[0] << ", key " << other.path;
    }
  }
}

TEST(RecipeTest, RoundTripsThroughYaml) {
  for (const char* text : {kFullRecipe, "name: run\n"}) {
    Recipe first = MustParse(text);
    std::string yaml = RecipeToYaml(first);
    Recipe second = MustParse(yaml);
    EXPECT_EQ(RecipeToYaml(second), yaml);
    for (const RecipeKey& key : RecipeKeys()) {
      if (IsRecipeItemKey(key) && RecipeListSize(RecipeListKeyOf(key), first) == 0) continue;
      EXPECT_EQ(RecipeValueText(key, second), RecipeValueText(key, first)) << key.path;
    }
    EXPECT_EQ(second.data.test_path, first.data.test_path);
    EXPECT_EQ(second.optimizer.lr, first.optimizer.lr);  // bit-exact floats
    EXPECT_EQ(second.optimizer.eps, first.optimizer.eps);
    EXPECT_EQ(second.has_topology, first.has_topology);
    ASSERT_EQ(second.topology.datacentres.size(), first.topology.datacentres.size());
    for (size_t i = 0; i < first.topology.datacentres.size(); ++i) {
      EXPECT_EQ(second.topology.datacentres[i].name, first.topology.datacentres[i].name);
      EXPECT_EQ(second.topology.datacentres[i].workers, first.topology.datacentres[i].workers);
    }
    EXPECT_EQ(second.topology.options.wan.latency_s, first.topology.options.wan.latency_s);  // bit-exact
    EXPECT_EQ(second.topology.options.lan.latency_s, first.topology.options.lan.latency_s);
  }
}

TEST(RecipeTest, ResolvedYamlQuotesAwkwardStrings) {
  for (const std::string& path :
       {std::string("tab\there \"q\" back\\slash\nline"), std::string("null"), std::string("~"), std::string("- dash"),
        std::string(" lead"), std::string("a:"), std::string("[x]"), std::string("#hash"), std::string("yes"),
        std::string("C:\\x y")}) {
    Recipe r;
    r.data.path = path;
    Recipe back = MustParse(RecipeToYaml(r));
    EXPECT_EQ(back.data.path, path) << RecipeToYaml(r);
  }
}

TEST(RecipeTest, ResolvedYamlListsEveryKeyInSchemaOrder) {
  std::string yaml = RecipeToYaml(MustParse("data: {batch_size: 64}"));
  EXPECT_NE(yaml.find("data:\n  name: fashion-mnist\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  batch_size: 64\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("optimizer:\n  name: adam\n  lr: 0.001\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  schedule:\n    name: constant\n"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("topology"), std::string::npos) << "no topology section means single-process training";
  size_t last = 0;
  for (const RecipeKey& key : RecipeKeys()) {
    if (IsTopologyPath(key.path)) continue;  // TopologyTest.ResolvedYamlPrintsTheDataCentresAsABlockList
    std::string leaf(key.path.substr(key.path.rfind('.') + 1));
    size_t at = yaml.find(" " + leaf + ": ", last);
    if (key.path.find('.') == std::string_view::npos) at = yaml.find("\n" + leaf + ": ", last);
    ASSERT_NE(at, std::string::npos) << key.path << " missing or out of order in\n" << yaml;
    last = at;
  }
}

TEST(RecipeTest, AcceptsEveryPartitionForm) {
  EXPECT_EQ(MustParse("data: {partition: iid}").data.partition, data::PartitionKind::kIid);
  EXPECT_EQ(MustParse("data: {partition: by-class}").data.partition, data::PartitionKind::kByClass);
  Recipe r = MustParse("data: {partition: dirichlet( 0.1 )}");
  EXPECT_EQ(r.data.partition, data::PartitionKind::kDirichlet);
  EXPECT_FLOAT_EQ(r.data.dirichlet_alpha, 0.1f);
  EXPECT_EQ(ErrorLines("data: {partition: dirichlet}"),
            Lines{"r.yaml:1:19: data.partition: dirichlet needs its concentration, e.g. dirichlet(0.5)"});
  EXPECT_EQ(ErrorLines("data: {partition: dirichlet(x)}"),
            Lines{"r.yaml:1:19: data.partition: dirichlet(ALPHA): expected a number for ALPHA, got 'x'"});
  EXPECT_EQ(ErrorLines("data: {partition: dirichlet(0)}"),
            Lines{"r.yaml:1:19: data.partition: dirichlet(ALPHA): ALPHA must be > 0, got 0"});
  EXPECT_EQ(ErrorLines("data:\n  partition: byclass\n"),
            Lines{"r.yaml:2:14: data.partition: expected iid, by-class or dirichlet(ALPHA), got 'byclass'"});
  EXPECT_EQ(ErrorLines("data:\n  dirichlet_alpha: 0.3\n"),
            Lines{"r.yaml:2:3: data.dirichlet_alpha: unknown key; the alpha is part of the partition, e.g. "
                  "partition: dirichlet(0.5)"});
}

TEST(RecipeTest, DeviceSyntax) {
  for (const char* ok : {"cpu", "cuda", "cuda:0", "cuda:12", "auto"}) {
    EXPECT_EQ(MustParse(std::string("device: ") + ok).device, ok);
  }
  EXPECT_EQ(ErrorLines("device: cuda:x"),
            Lines{"r.yaml:1:9: device: unknown device 'cuda:x' (allowed: cpu, cuda, cuda:N, auto)"});
}

TEST(RecipeTest, UnknownKeySuggestsTheClosestSibling) {
  EXPECT_EQ(ErrorLines("data:\n  name: mnist\n  batch_sise: 8\n"),
            Lines{"r.yaml:3:3: data.batch_sise: unknown key (did you mean 'batch_size'?)"});
  EXPECT_EQ(ErrorLines("modle: {name: mlp}"), Lines{"r.yaml:1:1: modle: unknown key (did you mean 'model'?)"});
  EXPECT_EQ(ErrorLines("optimizer:\n  learning_rate: 0.1\n"),
            Lines{"r.yaml:2:3: optimizer.learning_rate: unknown key (did you mean 'lr'?)"});
}

TEST(RecipeTest, KeyInTheWrongSectionSuggestsItsPath) {
  EXPECT_EQ(ErrorLines("training:\n  lr: 0.1\n"),
            Lines{"r.yaml:2:3: training.lr: unknown key (did you mean 'optimizer.lr'?)"});
  EXPECT_EQ(ErrorLines("batch_size: 8\n"),
            Lines{"r.yaml:1:1: batch_size: unknown key (did you mean 'data.batch_size'?)"});
}

TEST(RecipeTest, UnknownKeyWithoutCloseMatchListsTheSection) {
  EXPECT_EQ(ErrorLines("model:\n  zzzzzzzz: 1\n"),
            Lines{"r.yaml:2:3: model.zzzzzzzz: unknown key (model has: name, hidden, activation, dropout, init, "
                  "cell, init_from, freeze)"});
}

TEST(RecipeTest, WrongTypes) {
  EXPECT_EQ(ErrorLines("data:\n  batch_size: abc\n"),
            Lines{"r.yaml:2:15: data.batch_size: expected an integer, got 'abc'"});
  EXPECT_EQ(ErrorLines("data: {batch_size: 3.5}"),
            Lines{"r.yaml:1:20: data.batch_size: expected an integer, got '3.5'"});
  EXPECT_EQ(ErrorLines("optimizer: {lr: fast}"), Lines{"r.yaml:1:17: optimizer.lr: expected a number, got 'fast'"});
  EXPECT_EQ(ErrorLines("data: {shuffle: maybe}"),
            Lines{"r.yaml:1:17: data.shuffle: expected a boolean (true or false), got 'maybe'"});
  EXPECT_EQ(ErrorLines("seed: -1"), Lines{"r.yaml:1:7: seed: must be >= 0, got -1"});
  EXPECT_EQ(ErrorLines("training:\n  epochs: \"5\"\n"),
            Lines{"r.yaml:2:11: training.epochs: expected an integer, got the quoted string '5' (remove the quotes)"});
  EXPECT_EQ(ErrorLines("training:\n  epochs:\n"),
            Lines{"r.yaml:2:3: training.epochs: expected an integer, got an empty value"});
  EXPECT_EQ(ErrorLines("training:\n  epochs: [1]\n"),
            Lines{"r.yaml:2:11: training.epochs: expected an integer, got a list"});
  EXPECT_EQ(ErrorLines("model: {hidden: 64}"),
            Lines{"r.yaml:1:17: model.hidden: expected a list of integers, e.g. [256, 128], got '64'"});
  EXPECT_EQ(ErrorLines("model:\n  hidden: [64, abc, 0]\n"),
            Lines({"r.yaml:2:16: model.hidden[1]: expected an integer, got 'abc'",
                   "r.yaml:2:21: model.hidden[2]: must be >= 1, got 0"}));
  EXPECT_EQ(
      ErrorLines("model: mlp"),
      Lines{"r.yaml:1:8: model: expected a mapping of keys (name, hidden, activation, dropout, init, cell, init_from, "
            "freeze), got 'mlp'"});
}

TEST(RecipeTest, OutOfRangeValues) {
  EXPECT_EQ(ErrorLines("data: {batch_size: 0}"), Lines{"r.yaml:1:20: data.batch_size: must be >= 1, got 0"});
  EXPECT_EQ(ErrorLines("optimizer: {lr: -0.1}"), Lines{"r.yaml:1:17: optimizer.lr: must be > 0, got -0.1"});
  EXPECT_EQ(ErrorLines("model: {dropout: 1}"), Lines{"r.yaml:1:18: model.dropout: must be in [0, 1), got 1"});
  EXPECT_EQ(ErrorLines("training: {target_accuracy: 1.5}"),
            Lines{"r.yaml:1:29: training.target_accuracy: must be in [0, 1], got 1.5"});
  EXPECT_EQ(ErrorLines("threads: 99999999999"), Lines{"r.yaml:1:10: threads: must be <= 2147483647, got 99999999999"});
  EXPECT_EQ(ErrorLines("optimizer: {eps: 1e99}"),
            Lines{"r.yaml:1:18: optimizer.eps: must fit a 32-bit float, got 1e99"});
  EXPECT_EQ(ErrorLines("data: {synthetic_shape: [1, 2, 3, 4]}"),
            Lines{"r.yaml:1:25: data.synthetic_shape: expected 1 to 3 elements, got 4"});
}

TEST(RecipeTest, UnknownNamesListTheAllowedOnes) {
  EXPECT_EQ(ErrorLines("model: {name: resnet}"),
            Lines{"r.yaml:1:15: model.name: unknown model 'resnet' (did you mean 'resnet20'?); known: geomx-cnn, "
                  "lenet5, mlp, resnet20, rnn"});
  EXPECT_EQ(ErrorLines("data: {name: imagenet}"),
            Lines{"r.yaml:1:14: data.name: unknown dataset 'imagenet'; known: mnist, fashion-mnist, cifar10, csv, "
                  "libsvm, image-folder, synthetic, friedman1, letor-synthetic, ctr-synthetic, ratings, "
                  "ratings-synthetic, cartpole"});
  EXPECT_EQ(ErrorLines("optimizer: {name: adma}"),
            Lines{"r.yaml:1:19: optimizer.name: unknown optimizer 'adma' (did you mean 'adam'?); known: sgd, "
                  "momentum, nesterov, adagrad, rmsprop, adadelta, adam, adamw, ftrl, ftml"});
  EXPECT_EQ(ErrorLines("model: {activation: relux}"),
            Lines{"r.yaml:1:21: model.activation: unknown activation 'relux' (did you mean 'relu'?); known: relu, "
                  "tanh, sigmoid, gelu"});
  EXPECT_EQ(ErrorLines("optimizer: {schedule: {name: linear}}"),
            Lines{"r.yaml:1:30: optimizer.schedule.name: unknown schedule 'linear'; known: constant, step, cosine"});
  EXPECT_EQ(ErrorLines("name: my run"),
            Lines{"r.yaml:1:7: name: 'my run' may only contain letters, digits, '.', '_' and '-' (it names the run "
                  "folder)"});
}

// The recipe's fixed name lists agree with the registries of the libraries (when they are linked in).
TEST(RecipeTest, NameListsMatchTheRegistries) {
  struct Case {
    const char* path;
    std::vector<std::string> registered;
  };
  // data.name also names the two generated tables of classical algorithms (datasets/table.h), which are not
  // datasets of the registry.
  std::vector<std::string> data_names = data::DatasetNames();
  for (const std::string& g : data::GeneratedTableNames()) data_names.push_back(g);
  data_names.push_back("ratings");  // the table-only file format of mf (datasets/ratings.h)
  for (const Case& c : {Case{"model.name", nn::ModelNames()}, Case{"data.name", data_names},
                        Case{"optimizer.name", nn::OptimizerNames()},
                        Case{"algorithm.name", algorithms::EstimatorRegistry::Names()}}) {
    const RecipeKey* key = FindRecipeKey(c.path);
    ASSERT_NE(key, nullptr);
    if (c.registered.empty()) {
      std::cout << c.path << ": registry empty in this binary; comparison skipped\n";
      continue;
    }
    std::vector<std::string> allowed(key->allowed.begin(), key->allowed.end());
    std::sort(allowed.begin(), allowed.end());
    std::vector<std::string> registered = c.registered;
    std::sort(registered.begin(), registered.end());
    EXPECT_EQ(allowed, registered) << c.path << ": update the allowed list in cli/recipe_schema.cc (and the docs)";
  }
}

TEST(RecipeTest, ReportsAllErrorsAtOnceInFileOrder) {
  const char* text =
      "name: ok\n"
      "model:\n"
      "  name: mlp\n"
      "  hiddn: [1]\n"
      "data:\n"
      "  batch_size: -4\n"
      "  batch_size: 8\n"
      "optimizer: {name: sgd, lr: 0}\n"
      "training:\n"
      "  epochs: zero\n";
  EXPECT_EQ(ErrorLines(text, {"data.prefetch=x"}),
            Lines({"r.yaml:4:3: model.hiddn: unknown key (did you mean 'hidden'?)",
                   "r.yaml:6:15: data.batch_size: must be >= 1, got -4",
                   "r.yaml:7:3: data.batch_size: duplicate key (first given at line 6)",
                   "r.yaml:8:28: optimizer.lr: must be > 0, got 0",
                   "r.yaml:10:11: training.epochs: expected an integer, got 'zero'",
                   "--set data.prefetch=x: data.prefetch: expected an integer, got 'x'"}));
}

// 25 misspelt keys: the first 20 are listed (with hints while they are looked for), the other 5 are counted.
TEST(RecipeTest, ListsTheFirstTwentyProblemsAndCountsTheRest) {
  std::string text = "model: {name: mlp}\ndata:\n";
  for (int i = 0; i < 25; ++i) text += "  batch_sise" + std::to_string(i) + ": 1\n";
  Lines lines = ErrorLines(text);
  ASSERT_EQ(lines.size(), 21u);
  EXPECT_EQ(lines[0], "r.yaml:3:3: data.batch_sise0: unknown key (did you mean 'batch_size'?)");
  EXPECT_EQ(lines[19], "r.yaml:22:3: data.batch_sise19: unknown key (did you mean 'batch_size'?)");
  EXPECT_EQ(lines[20], "... and 5 more problems after these");
  // Flags count too, after the file's problems.
  lines = ErrorLines(text, {"data.bach_size=2"});
  ASSERT_EQ(lines.size(), 21u);
  EXPECT_EQ(lines[20], "... and 6 more problems after these");
  // Exactly twenty: all listed, no count line.
  text = "model: {name: mlp}\ndata:\n";
  for (int i = 0; i < 20; ++i) text += "  batch_sise" + std::to_string(i) + ": 1\n";
  lines = ErrorLines(text);
  ASSERT_EQ(lines.size(), 20u);
  EXPECT_EQ(lines[19], "r.yaml:22:3: data.batch_sise19: unknown key (did you mean 'batch_size'?)");
}

TEST(RecipeTest, YamlSyntaxErrorsHaveAPosition) {
  EXPECT_EQ(ErrorLines("model:\n  hidden: [1, 2\ndata: {}\n"),
            Lines{"r.yaml:3:5: YAML syntax error: end of sequence flow not found"});
  EXPECT_EQ(ErrorLines("model:\n\tname: mlp\n"), Lines{"r.yaml:2:6: YAML syntax error: illegal map value"});
  // The flags are still checked after a syntax error.
  EXPECT_EQ(ErrorLines("a: b: c\n", {"data.batch_size=0"}),
            Lines({"r.yaml:1:5: YAML syntax error: illegal map value",
                   "--set data.batch_size=0: data.batch_size: must be >= 1, got 0"}));
  EXPECT_EQ(ErrorLines("- 1\n- 2\n"),
            Lines{"r.yaml:1:1: a recipe is a mapping of sections (name, seed, device, threads, model, algorithm, data, "
                  "optimizer, training, sync, accelerators, topology, security), got a list"});
  EXPECT_EQ(ErrorLines("name: a\n---\nname: b\n"),
            Lines{"r.yaml:2:1: a recipe file holds one YAML document; remove the second '---' and what follows"});
  // Found by fuzzing: yaml-cpp 0.7's LoadAll never returned on a stray ',' at the top (allocating until the
  // process died); now a syntax error at its position.
  EXPECT_EQ(ErrorLines(","), Lines{"r.yaml:1:1: YAML syntax error: unexpected ',' outside a [...] or {...} list"});
  EXPECT_EQ(ErrorLines("# a comment\n  ,\n"),
            Lines{"r.yaml:2:3: YAML syntax error: unexpected ',' outside a [...] or {...} list"});
  // Found by fuzzing: a key spelt as a path ("topology.datacentres[].name: x") was looked up as that key and set
  // on an item that did not exist (an internal check failed, exit 134). Keys are one level each.
  EXPECT_EQ(ErrorLines("topology.datacentres[].name: x\n"),
            Lines{"r.yaml:1:1: topology.datacentres[].name: 'topology.datacentres[].name' is not a key: write one "
                  "key per level (e.g. topology: {links: {wan: ...}}); dotted paths are for --set"});
  EXPECT_EQ(ErrorLines("topology:\n  datacentres: [{name: a}]\n  links.wan: {latency: 5ms}\n"),
            Lines{"r.yaml:3:3: topology.links.wan: 'links.wan' is not a key: write one key per level (e.g. "
                  "topology: {links: {wan: ...}}); dotted paths are for --set"});
}

TEST(RecipeOverrideTest, OverridesApplyOnTopOfTheFile) {
  Recipe r = MustParse(
      "data: {batch_size: 32}\nmodel: {name: mlp}\n",
      {"data.batch_size=8", "model.hidden=[64,32]", "data.partition=dirichlet(0.5)", "optimizer.schedule.name=step",
       "name=tuned", "data.test_path=", "data.batch_size=16", "data.path=/data/a: b.csv"});
  EXPECT_EQ(r.data.batch_size, 16);  // the last flag wins
  EXPECT_EQ(r.model.name, "mlp");
  EXPECT_EQ(r.model.hidden, (std::vector<int>{64, 32}));
  EXPECT_EQ(r.data.partition, data::PartitionKind::kDirichlet);
  EXPECT_EQ(r.lr_schedule.name, "step");
  EXPECT_EQ(r.name, "tuned");
  EXPECT_EQ(r.data.test_path, "");
  EXPECT_EQ(r.data.path, "/data/a: b.csv");  // not one YAML scalar: a string key takes the text as it is
}

TEST(RecipeOverrideTest, ErrorsNameTheFlag) {
  EXPECT_EQ(ErrorLines("name: run\n", {"data.batch_sise=8"}),
            Lines{"--set data.batch_sise=8: unknown key 'data.batch_sise' (did you mean 'data.batch_size'?)"});
  EXPECT_EQ(ErrorLines("name: run\n", {"data.batch=8"}),
            Lines{"--set data.batch=8: unknown key 'data.batch' (did you mean 'data.batch_size'?)"});
  EXPECT_EQ(ErrorLines("name: run\n", {"dta.batch_size=8"}),
            Lines{"--set dta.batch_size=8: unknown key 'dta.batch_size' (did you mean 'data.batch_size'?)"});
  EXPECT_EQ(ErrorLines("name: run\n", {"training.lr=8"}),
            Lines{"--set training.lr=8: unknown key 'training.lr' (did you mean 'optimizer.lr'?)"});
  EXPECT_EQ(ErrorLines("name: run\n", {"batch_size=8"}),
            Lines{"--set batch_size=8: unknown key 'batch_size' (did you mean 'data.batch_size'?)"});
  EXPECT_EQ(ErrorLines("name: run\n", {"data.batch_size=abc"}),
            Lines{"--set data.batch_size=abc: data.batch_size: expected an integer, got 'abc'"});
  EXPECT_EQ(ErrorLines("name: run\n", {"model.hidden=[64,x]"}),
            Lines{"--set model.hidden=[64,x]: model.hidden[1]: expected an integer, got 'x'"});
  EXPECT_EQ(ErrorLines("name: run\n", {"model.hidden=[64,"}),
            Lines{"--set model.hidden=[64,: model.hidden: invalid YAML value '[64,': end of sequence flow not found"});
  EXPECT_EQ(ErrorLines("name: run\n", {"model.dropout=1"}),
            Lines{"--set model.dropout=1: model.dropout: must be in [0, 1), got 1"});
  EXPECT_EQ(ErrorLines("name: run\n", {"model=mlp"}),
            Lines{"--set model=mlp: model: is a section; set one of its keys, e.g. --set model.name=..."});
  EXPECT_EQ(ErrorLines("name: run\n", {"epochs"}), Lines{"--set epochs: expected key.path=value, e.g. --set data.batch_size=64"});
  EXPECT_EQ(ErrorLines("name: run\n", {"model.name=resnet"}),
            Lines{"--set model.name=resnet: model.name: unknown model 'resnet' (did you mean 'resnet20'?); known: "
                  "geomx-cnn, lenet5, mlp, resnet20, rnn"});
  EXPECT_EQ(ErrorLines("name: run\n", {"training.stop_at_target=true"}),
            Lines{"--set training.stop_at_target=true: training.stop_at_target: needs training.target_accuracy > 0 "
                  "(the accuracy to stop at)"});
}

TEST(LoadRecipeTest, ReadsFilesAndNamesThemInErrors) {
  testing::ScratchDir dir;
  std::string good = (dir / "good.yaml").string();
  testing::WriteFile(good, "name: from-file\ndata: {batch_size: 64}\n");
  Result<Recipe> r = LoadRecipe(good, {"training.epochs=2"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source, good);
  EXPECT_EQ(r->name, "from-file");
  EXPECT_EQ(r->data.batch_size, 64);
  EXPECT_EQ(r->training.epochs, 2);

  std::string bad = (dir / "bad.yaml").string();
  testing::WriteFile(bad, "data:\n  batch_size: 0\n");
  Result<Recipe> b = LoadRecipe(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.status().message(), bad + ":2:15: data.batch_size: must be >= 1, got 0");
}

TEST(LoadRecipeTest, MissingFileIsNotFound) {
  Result<Recipe> r = LoadRecipe("/nonexistent/geomx/recipe.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/geomx/recipe.yaml"), std::string::npos);
  testing::ScratchDir dir;
  Result<Recipe> d = LoadRecipe(dir.path().string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
}

TEST(RecipeSchemaTest, ClosestName) {
  EXPECT_EQ(ClosestName("batch_sise", {"batch_size", "shuffle"}), "batch_size");
  EXPECT_EQ(ClosestName("epoch", {"epochs", "eval_every"}), "epochs");
  EXPECT_EQ(ClosestName("lr", {"rho", "eps"}), "");
  EXPECT_EQ(ClosestName("completely_different", {"name"}), "");
}

TEST(RecipeSchemaTest, TableIsWellFormed) {
  std::vector<std::string_view> seen;
  for (const RecipeKey& key : RecipeKeys()) {
    EXPECT_EQ(std::count(seen.begin(), seen.end(), key.path), 0) << "duplicate key " << key.path;
    seen.push_back(key.path);
    EXPECT_FALSE(key.help.empty()) << key.path;
    EXPECT_FALSE(IsRecipeSection(key.path)) << key.path;
    if (IsRecipeItemKey(key)) {
      EXPECT_EQ(KindOf(RecipeListKeyOf(key)), RecipeValueKind::kRecordList) << key.path;
    }
  }
  EXPECT_TRUE(IsRecipeSection("optimizer.schedule"));
  EXPECT_EQ(RecipeSectionChildren(""), (std::vector<std::string>{"name", "seed", "device", "threads", "model",
                                                                 "algorithm", "data", "optimizer", "training", "sync", "accelerators",
                                                                 "topology", "security"}));
  EXPECT_EQ(RecipeSectionChildren("topology"),
            (std::vector<std::string>{"central", "datacentres", "split_bytes", "links", "timeouts", "failure_policy",
                                      "worker_restarts", "snapshot_every", "max_restarts"}));
  EXPECT_EQ(RecipeSectionChildren("topology.datacentres[]"),
            (std::vector<std::string>{"name", "host", "workers", "servers", "scheduler_port", "slowdown", "bandwidth",
                                      "latency", "loss"}));
  EXPECT_EQ(RecipeSectionChildren("topology.links"), (std::vector<std::string>{"wan", "lan", "direct"}));
  EXPECT_EQ(RecipeSectionChildren("topology.links.direct[]"),
            (std::vector<std::string>{"from", "to", "bandwidth", "latency", "loss"}));
}

}  // namespace
}  // namespace geomx::cli
