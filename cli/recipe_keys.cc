// The table of every recipe key (declared in cli/recipe_schema.h): one row per key, in the order RecipeToYaml
// prints them. Adding a key is adding a row here (docs/recipes.md, "Adding a key").
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "algorithms/estimators/estimator.h"
#include "algorithms/sync/sync_mode.h"
#include "cli/recipe_schema.h"
#include "cli/recipe_units.h"
#include "nn/models/models.h"

namespace geomx::cli {
namespace {

// ---- range helpers for the table ----
RecipeRange AtLeast(double v) { return {.has_min = true, .min = v}; }
RecipeRange Above(double v) { return {.has_min = true, .min = v, .min_open = true}; }
RecipeRange Between(double lo, bool lo_open, double hi, bool hi_open) {
  return {.has_min = true, .min = lo, .min_open = lo_open, .has_max = true, .max = hi, .max_open = hi_open};
}
const RecipeRange kUnitOpenAbove = Between(0, false, 1, true);  // [0, 1)
const std::vector<std::string_view> kLinkSchemes = {"auto", "none", "fp16", "bsc", "mpq", "sign", "int8",
                                                     "powersgd"};

// The sync modes built into this binary (algorithms/sync/sync_mode.h registry), fsa first (the default).
std::vector<std::string_view> SyncModeNames() {
  std::vector<std::string_view> names;
  for (const sync::SyncModeDef* def : sync::SyncModeRegistry::All()) names.push_back(def->name);
  std::stable_partition(names.begin(), names.end(), [](std::string_view n) { return n == sync::SyncSettings{}.mode; });
  return names;
}

// The trainable classical estimators (algorithms/estimators/estimator.h registry), sorted.
// The registered models, the default (geomx-cnn) first, the rest sorted.
std::vector<std::string_view> ModelNames() {
  static const std::vector<std::string> kNames = nn::ModelNames();  // sorted; the views below point into it
  std::vector<std::string_view> names(kNames.begin(), kNames.end());
  std::stable_partition(names.begin(), names.end(), [](std::string_view n) { return n == nn::ModelConfig{}.name; });
  return names;
}

std::vector<std::string_view> EstimatorNames() {
  std::vector<std::string_view> names;
  for (const algorithms::EstimatorDef* def : algorithms::EstimatorRegistry::All()) names.push_back(def->name);
  return names;
}

// ---- extra syntax checks ----
std::string CheckRunName(std::string_view v) {
  if (v.empty()) return "must not be empty";
  for (char c : v) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return Quoted(v) + " may only contain letters, digits, '.', '_' and '-' (it names the run folder)";
    }
  }
  return "";
}

std::string CheckDevice(std::string_view v) {
  if (v == "cpu" || v == "cuda" || v == "auto") return "";
  if (v.substr(0, 5) == "cuda:" && v.size() > 5 && v.size() <= 8 &&
      std::all_of(v.begin() + 5, v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return "";
  }
  return "unknown device '" + std::string(v) + "' (allowed: cpu, cuda, cuda:N, auto)";
}

std::string CheckNonEmpty(std::string_view v) { return v.empty() ? "must not be empty" : ""; }

// A data centre's name is its --party on the command line and part of every process name ("dc-a/worker0").
std::string CheckPartyName(std::string_view v) {
  if (v.empty()) return "must not be empty";
  for (char c : v) {
    if (!std::islower(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) && c != '-') {
      return Quoted(v) + " may only contain lower-case letters, digits and '-' (it is the --party name)";
    }
  }
  if (v == "central") return "'central' names the central party (global scheduler and servers); pick another name";
  return "";
}

// A host name or address: no spaces, no scheme, no port (ports are separate keys).
std::string CheckHost(std::string_view v) {
  if (v.empty()) return "must not be empty";
  for (char c : v) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '/') {
      return Quoted(v) + " is not a host name or address";
    }
  }
  size_t colon = v.find(':');
  if (colon != std::string_view::npos && v.find(':', colon + 1) == std::string_view::npos) {
    return Quoted(v) + ": give the port in its own key (scheduler_port), not in the host";
  }
  return "";
}

constexpr RecipeRange kPort = {.has_min = true, .min = 0, .has_max = true, .max = 65535};

// One key per row reads as a table; clang-format would give every field its own line.
// clang-format off
std::vector<RecipeKey> BuildTable() {
  using R = Recipe&;
  using F = RecipeField;
  return {
      {.path = "name", .field = [](R r) -> F { return &r.name; }, .help = "Run name; names the run folder.",
       .allowed_doc = "letters, digits, `.`, `_`, `-`", .check = CheckRunName},
      {.path = "seed", .field = [](R r) -> F { return &r.seed; },
       .help = "Seed of every random choice (weights, shuffling, augmentation, synthetic data).",
       .allowed_doc = "0 .. 2^64-1"},
      {.path = "device", .field = [](R r) -> F { return &r.device; },
       .help = "Where to compute. `auto` picks the first GPU when there is one, else the CPU.",
       .allowed_doc = "cpu, cuda, cuda:N, auto", .check = CheckDevice},
      {.path = "threads", .field = [](R r) -> F { return &r.threads; }, .range = AtLeast(0),
       .help = "Compute threads; 0 = all cores."},

      {.path = "model.name", .field = [](R r) -> F { return &r.model.name; },
       .allowed = ModelNames(), .noun = "model",
       .help = "The network (rnn: docs/algorithms.md)."},
      {.path = "model.hidden", .field = [](R r) -> F { return &r.model.hidden; }, .range = AtLeast(1),
       .help = "mlp: hidden layer widths ([] = a linear model); rnn: the widths of its stacked LSTM layers."},
      {.path = "model.activation", .field = [](R r) -> F { return &r.model.activation; },
       .allowed = {"relu", "tanh", "sigmoid", "gelu"}, .noun = "activation",
       .help = "mlp: activation after each hidden layer."},
      {.path = "model.dropout", .field = [](R r) -> F { return &r.model.dropout; }, .range = kUnitOpenAbove,
       .help = "mlp: dropout probability after each hidden layer."},
      {.path = "model.init", .field = [](R r) -> F { return &r.model.init; }, .allowed = {"kaiming", "xavier"},
       .noun = "init", .help = "Weight initialisation of conv and linear layers."},
      {.path = "model.cell", .field = [](R r) -> F { return &r.model.cell; }, .allowed = {"lstm", "gru"},
       .noun = "cell", .help = "rnn: the recurrent layers, LSTM or GRU (docs/algorithms.md, \"rnn\")."},
      {.path = "model.init_from", .field = [](R r) -> F { return &r.model.init_from; },
       .help = "Start from the weights of this run folder's last checkpoint (or of this checkpoint file), matched "
       "by key name; tensors of another shape (a new head) keep their fresh initialisation. Empty = fresh weights "
       "(docs/algorithms.md, \"feature-extraction\", \"fine-tune\").",
       .allowed_doc = "a run folder, a checkpoint file, or empty"},
      {.path = "model.freeze", .field = [](R r) -> F { return &r.model.freeze; }, .range = AtLeast(0),
       .help = "Freeze the first N parameterised layers (geomx-cnn: conv1, conv2, fc1, fc2, fc3): no gradient, no "
       "optimizer state, no parameter-server keys. 0 = train everything; the last layer always trains."},

      {.path = "algorithm.name", .field = [](R r) -> F { return &r.algorithm.name; },
       .allowed = EstimatorNames(), .noun = "algorithm",
       .help = "A classical algorithm to train instead of a `model` (docs/algorithms.md). The section's other "
       "keys are its parameters (`geomx algos NAME` lists them)."},

      {.path = "data.name", .field = [](R r) -> F { return &r.data.name; },
       .allowed = {"mnist", "fashion-mnist", "cifar10", "csv", "libsvm", "image-folder", "synthetic", "friedman1",
                   "letor-synthetic", "ctr-synthetic", "ratings", "ratings-synthetic", "cartpole"},
       .noun = "dataset", .help = "The dataset (its format). friedman1 (regression), letor-synthetic (ranking), "
       "ctr-synthetic (sparse click-through classification; synthetic_shape [fields, values per field]) and "
       "ratings-synthetic (low-rank ratings for mf; synthetic_shape [users, items, rank]) are generated tables for "
       "`algorithm` recipes (sizes from synthetic_train/test, seed from synthetic_seed). ratings: `user item rating` "
       "files (MovieLens layout) for mf. cartpole: the built-in CartPole-v1 environment of rl, its tables the start "
       "states of episodes (synthetic_test of them: the evaluation episodes)."},
      {.path = "data.path", .field = [](R r) -> F { return &r.data.path; },
       .help = "Directory of the dataset (idx, cifar10; image-folder: holding train/ and test/), or `auto` "
       "(well-known places such as /usr/share/datasets/<name>). csv, libsvm: the training file.",
       .allowed_doc = "a path or `auto`", .check = CheckNonEmpty},
      {.path = "data.test_path", .field = [](R r) -> F { return &r.data.test_path; },
       .help = "csv, libsvm, ratings: the test file; empty = split `test_fraction` off the training file.",
       .allowed_doc = "a path, or empty"},
      {.path = "data.test_fraction", .field = [](R r) -> F { return &r.data.test_fraction; },
       .range = Between(0, true, 1, true), .help = "csv, libsvm without test_path: share held out for testing."},
      {.path = "data.batch_size", .field = [](R r) -> F { return &r.data.batch_size; }, .range = AtLeast(1),
       .help = "Examples per training step."},
      {.path = "data.partition", .field = [](R r) -> F {
       return PartitionField{&r.data.partition, &r.data.dirichlet_alpha}; },
       .help = "How the training set is split across workers: at random (iid), by label (each worker sees "
       "few classes), or with label proportions drawn from Dirichlet(ALPHA) (smaller = more skewed). "
       "No effect with one worker.", .allowed_doc = "iid, by-class, dirichlet(ALPHA) with ALPHA > 0"},
      {.path = "data.shuffle", .field = [](R r) -> F { return &r.data.shuffle; },
       .help = "Reshuffle the training set every epoch."},
      {.path = "data.prefetch", .field = [](R r) -> F { return &r.data.prefetch; }, .range = AtLeast(0),
       .help = "Batches prepared ahead by the loader thread; 0 = no loader thread."},
      {.path = "data.normalize", .field = [](R r) -> F { return &r.data.normalize; },
       .help = "Images: (x/255 - mean)/std with the dataset's constants."},
      {.path = "data.augment", .field = [](R r) -> F { return &r.data.augment; },
       .help = "Images: random crop (pad 4 for cifar10, 2 otherwise) and horizontal flip while training."},
      {.path = "data.classes", .field = [](R r) -> F { return &r.data.classes; }, .range = AtLeast(0),
       .help = "Keep only the examples of these classes, in the training and the test set (labels keep their ids, "
       "so the model's output stays num_classes wide). [] = every class. Models only, not `algorithm` recipes.",
       .max_items = 4096},
      {.path = "data.score_within_classes", .field = [](R r) -> F { return &r.data.score_within_classes; },
       .help = "Score on the task of data.classes alone: every prediction (test accuracy and loss while training, "
       "`geomx eval`, `geomx predict`) is the most likely of the listed classes, the model's other outputs ignored, "
       "e.g. a model adapted to ten classes scored on a five-class source's task (docs/algorithms.md, "
       "\"fine-tune\"). Needs data.classes. Models only."},
      {.path = "data.label_column", .field = [](R r) -> F { return &r.data.label_column; }, .range = AtLeast(-1),
       .help = "csv: index of the label column; -1 = the last column."},
      {.path = "data.header", .field = [](R r) -> F { return &r.data.header; },
       .help = "csv: the first row is a header."},
      {.path = "data.num_features", .field = [](R r) -> F { return &r.data.num_features; }, .range = AtLeast(0),
       .help = "libsvm: number of features; 0 = the largest feature index seen (indices are 1-based). At most "
       "67108864 (2^26)."},
      {.path = "data.allow_nan", .field = [](R r) -> F { return &r.data.allow_nan; },
       .help = "csv, libsvm: accept NaN and infinite feature values. By default they are refused with the file "
       "and line."},
      {.path = "data.image_height", .field = [](R r) -> F { return &r.data.image_height; },
       .range = Between(1, false, 4096, false), .help = "image-folder: images are resized to this height."},
      {.path = "data.image_width", .field = [](R r) -> F { return &r.data.image_width; },
       .range = Between(1, false, 4096, false), .help = "image-folder: images are resized to this width."},
      {.path = "data.image_channels", .field = [](R r) -> F { return &r.data.image_channels; },
       .range = Between(1, false, 3, false), .help = "image-folder: 1 = grayscale, 3 = colour."},
      {.path = "data.synthetic_train", .field = [](R r) -> F { return &r.data.synthetic_train; },
       .range = AtLeast(1), .help = "synthetic: training examples (deterministic Gaussian blobs)."},
      {.path = "data.synthetic_test", .field = [](R r) -> F { return &r.data.synthetic_test; }, .range = AtLeast(1),
       .help = "synthetic: test examples."},
      {.path = "data.synthetic_classes", .field = [](R r) -> F { return &r.data.synthetic_classes; },
       .range = AtLeast(2), .help = "synthetic: number of classes."},
      {.path = "data.synthetic_shape", .field = [](R r) -> F { return &r.data.synthetic_shape; },
       .range = AtLeast(1), .help = "synthetic: shape of one example, e.g. [1, 8, 8] (CHW) or [64].",
       .min_items = 1, .max_items = 3},
      {.path = "data.synthetic_seed", .field = [](R r) -> F { return &r.data.synthetic_seed; },
       .help = "synthetic: seed of the class centres and examples (the same seed gives the same data; "
       "independent of `seed`).", .allowed_doc = "0 .. 2^64-1"},
      {.path = "data.scale", .field = [](R r) -> F { return &r.data.scale; },
       .allowed = {"none", "standard", "minmax", "maxabs"}, .noun = "scaling",
       .help = "algorithm recipes: column scaling fitted on the training set and saved with the model (standard: "
       "zero mean, unit variance; sparse tables are not centred; minmax: [0, 1]; maxabs: [-1, 1])."},
      {.path = "data.max_train_examples", .field = [](R r) -> F { return &r.data.max_train_examples; },
       .range = AtLeast(0),
       .help = "algorithm recipes: train on a fixed-seed random subsample of this many examples; 0 = all."},

      {.path = "optimizer.name", .field = [](R r) -> F { return &r.optimizer.name; },
       .allowed = {"sgd", "momentum", "nesterov", "adagrad", "rmsprop", "adadelta", "adam", "adamw", "ftrl", "ftml"},
       .noun = "optimizer", .help = "The update rule."},
      {.path = "optimizer.lr", .field = [](R r) -> F { return &r.optimizer.lr; }, .range = Above(0),
       .help = "Base learning rate (see optimizer.schedule)."},
      {.path = "optimizer.weight_decay", .field = [](R r) -> F { return &r.optimizer.weight_decay; },
       .range = AtLeast(0), .help = "L2 penalty; decoupled weight decay for adamw."},
      {.path = "optimizer.momentum", .field = [](R r) -> F { return &r.optimizer.momentum; },
       .range = kUnitOpenAbove, .help = "momentum, nesterov: momentum factor."},
      {.path = "optimizer.beta1", .field = [](R r) -> F { return &r.optimizer.beta1; }, .range = kUnitOpenAbove,
       .help = "adam, adamw: decay of the first moment."},
      {.path = "optimizer.beta2", .field = [](R r) -> F { return &r.optimizer.beta2; }, .range = kUnitOpenAbove,
       .help = "adam, adamw: decay of the second moment."},
      {.path = "optimizer.rho", .field = [](R r) -> F { return &r.optimizer.rho; }, .range = kUnitOpenAbove,
       .help = "rmsprop, adadelta: decay of the squared-gradient average."},
      {.path = "optimizer.eps", .field = [](R r) -> F { return &r.optimizer.eps; }, .range = Above(0),
       .help = "Added to denominators for numerical stability."},
      {.path = "optimizer.l1", .field = [](R r) -> F { return &r.optimizer.l1; }, .range = AtLeast(0),
       .help = "ftrl: L1 strength; coordinates whose accumulated gradient stays within it are exactly 0."},
      {.path = "optimizer.ftrl_beta", .field = [](R r) -> F { return &r.optimizer.ftrl_beta; }, .range = AtLeast(0),
       .help = "ftrl: beta of the per-coordinate rate lr / (beta + sqrt(sum of squared gradients))."},
      {.path = "optimizer.clip_norm", .field = [](R r) -> F { return &r.optimizer.clip_norm; },
       .range = AtLeast(0),
       .help = "Clip the global L2 norm of the gradients to this before each update (PyTorch's "
       "clip_grad_norm_); 0 = off. Parameter-server modes: each worker clips its own gradient before pushing."},

      {.path = "optimizer.where", .field = [](R r) -> F { return &r.optimizer_where; },
       .allowed = {"global-server", "worker"}, .noun = "placement",
       .help = "With a topology: where the update rule runs. global-server: the global servers update the "
       "model and workers pull weights; worker: every worker applies the aggregated gradients itself."},
      {.path = "optimizer.schedule.name", .field = [](R r) -> F { return &r.lr_schedule.name; },
       .allowed = {"constant", "step", "cosine"}, .noun = "schedule",
       .help = "Learning-rate schedule: constant, step decay, or cosine decay to min_lr over the run."},
      {.path = "optimizer.schedule.step_epochs", .field = [](R r) -> F { return &r.lr_schedule.step_epochs; },
       .range = AtLeast(1), .help = "step: multiply the lr by gamma every this many epochs."},
      {.path = "optimizer.schedule.gamma", .field = [](R r) -> F { return &r.lr_schedule.gamma; },
       .range = Between(0, true, 1, false), .help = "step: decay factor."},
      {.path = "optimizer.schedule.min_lr", .field = [](R r) -> F { return &r.lr_schedule.min_lr; },
       .range = AtLeast(0), .help = "cosine: final learning rate (at most optimizer.lr)."},
      {.path = "optimizer.schedule.warmup_iterations",
       .field = [](R r) -> F { return &r.lr_schedule.warmup_iterations; }, .range = AtLeast(0),
       .help = "Linear warm-up from 0 over this many iterations (any schedule)."},

      {.path = "training.epochs", .field = [](R r) -> F { return &r.training.epochs; }, .range = AtLeast(1),
       .help = "Passes over the training set."},
      {.path = "training.max_iterations", .field = [](R r) -> F { return &r.training.max_iterations; },
       .range = AtLeast(0), .help = "Stop after this many iterations in total; 0 = no limit."},
      {.path = "training.eval_every", .field = [](R r) -> F { return &r.training.eval_every; }, .range = AtLeast(0),
       .help = "Also evaluate every N iterations; 0 = at epoch ends only."},
      {.path = "training.eval_limit", .field = [](R r) -> F { return &r.training.eval_limit; }, .range = AtLeast(0),
       .help = "Intermediate evaluations use at most N test examples; 0 = all."},
      {.path = "training.eval_async", .field = [](R r) -> F { return &r.training.eval_async; },
       .help = "Intermediate evaluations (eval_every) run on a copy of the model on a thread of their own while "
       "training goes on (CPU); each row keeps the time and iteration of its copy. Epoch-end and final "
       "evaluations stay in line."},
      {.path = "training.target_accuracy", .field = [](R r) -> F { return &r.training.target_accuracy; },
       .range = Between(0, false, 1, false),
       .help = "Records the time to reach this test accuracy; 0 = none. Training continues."},
      {.path = "training.stop_at_target", .field = [](R r) -> F { return &r.training.stop_at_target; },
       .help = "Stop as soon as target_accuracy is reached (needs target_accuracy > 0)."},
      {.path = "training.checkpoint_every", .field = [](R r) -> F { return &r.training.checkpoint_every; },
       .range = AtLeast(0), .help = "Also checkpoint every N iterations; 0 = at epoch ends only."},
      {.path = "training.log_every", .field = [](R r) -> F { return &r.training.log_every; }, .range = AtLeast(1),
       .help = "A progress line every N iterations when stdout is not a terminal."},

      {.path = "sync.mode", .field = [](R r) -> F { return &r.sync.mode; },
       .allowed = SyncModeNames(), .noun = "sync mode",
       .help = "With a topology: fsa = synchronous on both tiers; mixed = synchronous inside a data centre, "
       "asynchronous between them; hfa = k1 local steps, k2 local averages per global average; diloco = hfa "
       "with an outer Nesterov optimizer (SparseLoCo with a bsc or mpq push); esync = per-worker local steps set "
       "by a state server."},
      {.path = "sync.max_staleness", .field = [](R r) -> F { return &r.sync.max_staleness; }, .range = AtLeast(0),
       .help = "mixed: an update is applied only if at most this many other updates of its key were applied "
       "since its data centre read the weights (faster data centres wait); 0 = no bound."},
      {.path = "sync.k1", .field = [](R r) -> F { return &r.sync.k1; }, .range = AtLeast(1),
       .help = "hfa, diloco: local steps of every worker between two data-centre averages."},
      {.path = "sync.k2", .field = [](R r) -> F { return &r.sync.k2; }, .range = AtLeast(1),
       .help = "hfa, diloco: data-centre averages between two global synchronisations over the WAN."},
      {.path = "sync.overlap", .field = [](R r) -> F { return &r.sync.overlap; }, .range = AtLeast(0),
       .help = "hfa, diloco: data-centre averages a global synchronisation may take (at most sync.k2): the "
       "workers train on meanwhile and its global model is folded in under their progress that many averages "
       "later; 0 = they wait for it."},
      {.path = "sync.initial_weights", .field = [](R r) -> F { return &r.sync.initial_weights; },
       .allowed = {"transfer", "seed"}, .noun = "initial weights source",
       .help = "hfa, diloco, esync: transfer = each local server fetches the initial weights over the WAN; seed = "
       "it builds them from the recipe's seed (opening the data set for the model's shape) and uses them if "
       "their digest equals the master worker's, else fetches them."},
      {.path = "sync.dcasgd.lambda", .field = [](R r) -> F { return &r.sync.dcasgd_lambda; }, .range = AtLeast(0),
       .help = "mixed: DC-ASGD delay compensation strength at the global server; 0 = off."},
      {.path = "sync.dcasgd.adaptive", .field = [](R r) -> F { return &r.sync.dcasgd_adaptive; },
       .help = "mixed: adaptive DC-ASGD (lambda divided by the root of the gradient's running mean square)."},
      {.path = "sync.dcasgd.decay", .field = [](R r) -> F { return &r.sync.dcasgd_decay; },
       .range = kUnitOpenAbove, .help = "adaptive DC-ASGD: decay of the running mean square."},
      {.path = "sync.outer.lr", .field = [](R r) -> F { return &r.sync.outer_lr; }, .range = Above(0),
       .help = "diloco: learning rate of the outer step on the averaged model delta (Nesterov; SGD when the WAN "
               "push sparsifies: SparseLoCo, whose default is 1)."},
      {.path = "sync.outer.momentum", .field = [](R r) -> F { return &r.sync.outer_momentum; },
       .range = kUnitOpenAbove,
       .help = "diloco: momentum of the outer Nesterov step; with a sparsifying WAN push (bsc, mpq) the decay of "
               "the local servers' error feedback instead (SparseLoCo, default 0.95)."},
      {.path = "sync.esync.max_local_steps", .field = [](R r) -> F { return &r.sync.esync_max_local_steps; },
       .range = Between(1, false, 1000, false), .help = "esync: most local steps a worker takes in one round."},
      {.path = "sync.esync.global_lr", .field = [](R r) -> F { return &r.sync.esync_global_lr; },
       .range = Above(0), .help = "esync: the averaged model delta is applied scaled by this."},

      {.path = "accelerators.compression", .field = [](R r) -> F { return &r.accelerators.compression; },
       .allowed = {"none", "bsc", "fp16", "mpq", "sign", "int8", "powersgd"}, .noun = "compression",
       .help = "With a topology: the preset of the four links. bsc = Bi-Sparse between local and global "
       "servers; fp16 = FP16 on every link; mpq = FP16 for small tensors, Bi-Sparse for large ones on the WAN; "
       "sign = 1-bit signs, int8 = int8, powersgd = rank-r factors, each with error feedback, between local and "
       "global servers."},
      {.path = "accelerators.size_lower_bound", .field = [](R r) -> F { return &r.accelerators.size_lower_bound; },
       .range = AtLeast(1),
       .help = "bsc, mpq, sign, int8, powersgd: slices with fewer elements stay dense (mpq: FP16)."},
      {.path = "accelerators.int8.block", .field = [](R r) -> F { return &r.accelerators.int8_block; },
       .range = Between(1, false, 16777216, false), .help = "int8: elements per f32 scale (max |v| / 127)."},
      {.path = "accelerators.int8.stochastic", .field = [](R r) -> F { return &r.accelerators.int8_stochastic; },
       .help = "int8: stochastic rounding (unbiased, seeded by seed, sender, key and round) instead of nearest."},
      {.path = "accelerators.powersgd.rank", .field = [](R r) -> F { return &r.accelerators.powersgd_rank; },
       .range = Between(1, false, 1024, false),
       .help = "powersgd: rank of the factors P and Q; bytes per slice of n elements ~ 8 r sqrt(n)."},
      {.path = "accelerators.bsc.ratio", .field = [](R r) -> F { return &r.accelerators.bsc_ratio; },
       .range = Between(0, true, 1, true), .help = "Fraction of each large tensor's elements a bsc push keeps."},
      {.path = "accelerators.bsc.momentum", .field = [](R r) -> F { return &r.accelerators.bsc_momentum; },
       .range = kUnitOpenAbove,
       .help = "Momentum correction of the bsc residual (DGC); 0 = plain error feedback."},
      {.path = "accelerators.bsc.selection", .field = [](R r) -> F { return &r.accelerators.bsc_selection; },
       .allowed = {"exact", "sampled"}, .noun = "selection",
       .help = "How bsc finds its top-k: exact selection, or a threshold estimated from a fresh random sample."},
      {.path = "accelerators.bsc.sample_fraction",
       .field = [](R r) -> F { return &r.accelerators.bsc_sample_fraction; }, .range = Between(0, true, 1, false),
       .help = "sampled selection: share of the elements sampled to estimate the threshold."},
      {.path = "accelerators.links.worker_to_local",
       .field = [](R r) -> F { return &r.accelerators.worker_to_local; }, .allowed = kLinkSchemes, .noun = "scheme",
       .help = "Pushes from workers to their local server; auto = from accelerators.compression."},
      {.path = "accelerators.links.local_to_global",
       .field = [](R r) -> F { return &r.accelerators.local_to_global; }, .allowed = kLinkSchemes, .noun = "scheme",
       .help = "Pushes from local servers to the global servers (WAN)."},
      {.path = "accelerators.links.global_to_local",
       .field = [](R r) -> F { return &r.accelerators.global_to_local; }, .allowed = kLinkSchemes, .noun = "scheme",
       .help = "Answers of the global servers to the local servers (WAN)."},
      {.path = "accelerators.links.local_to_worker",
       .field = [](R r) -> F { return &r.accelerators.local_to_worker; }, .allowed = kLinkSchemes, .noun = "scheme",
       .help = "Answers of the local servers to their workers."},
      {.path = "accelerators.p3.enabled", .field = [](R r) -> F { return &r.accelerators.p3; },
       .help = "P3: workers send gradient slices first layers first and start the next forward pass of a layer "
       "as soon as its parameters are back."},
      {.path = "accelerators.p3.slice_elements",
       .field = [](R r) -> F { return &r.accelerators.p3_slice_elements; }, .range = AtLeast(1),
       .help = "P3: elements per slice (the unit of priority and pre-emption)."},
      {.path = "accelerators.dgt.enabled", .field = [](R r) -> F { return &r.accelerators.dgt; },
       .help = "DGT: the local servers push each slice in blocks, the important ones reliably and the rest as "
       "lower-priority channels (accelerators.dgt.mode)."},
      {.path = "accelerators.dgt.block_bytes", .field = [](R r) -> F { return &r.accelerators.dgt_block_bytes; },
       .range = Between(4, false, 1336, false),
       .help = "DGT: bytes per block, a multiple of 4; a block, its headers and its datagram's seal fit one "
       "1500-byte frame."},
      {.path = "accelerators.dgt.k", .field = [](R r) -> F { return &r.accelerators.dgt_k; },
       .range = Between(0, false, 1, false),
       .help = "DGT: share of the ranked blocks sent on the reliable channel (the start value when adaptive)."},
      {.path = "accelerators.dgt.k_min", .field = [](R r) -> F { return &r.accelerators.dgt_k_min; },
       .range = Between(0, false, 1, false), .help = "DGT, adaptive: the floor of k; at most k."},
      {.path = "accelerators.dgt.adaptive", .field = [](R r) -> F { return &r.accelerators.dgt_adaptive; },
       .help = "DGT: k follows the training loss, k * loss / first loss, never below k_min."},
      {.path = "accelerators.dgt.alpha", .field = [](R r) -> F { return &r.accelerators.dgt_alpha; },
       .range = kUnitOpenAbove, .help = "DGT: momentum of each block's contribution (moving average of mean |g|)."},
      {.path = "accelerators.dgt.channels", .field = [](R r) -> F { return &r.accelerators.dgt_channels; },
       .range = Between(1, false, 7, false), .help = "DGT: lower-priority channels the unimportant blocks are "
       "ranked into."},
      {.path = "accelerators.dgt.deadline",
       .field = [](R r) -> F { return DurationField{.seconds = &r.accelerators.dgt_deadline_s}; },
       .range = Between(0, false, 60, false),
       .help = "DGT: how long a global server waits for a round's missing blocks after its reliable part.",
       .allowed_doc = "0 to 60 s, N with us, ms, s"},
      {.path = "accelerators.dgt.mode", .field = [](R r) -> F { return &r.accelerators.dgt_mode; },
       .allowed = {"unreliable", "tcp-priority", "tcp-priority-4bit"}, .noun = "DGT mode",
       .help = "DGT: how the unimportant blocks travel: datagrams a lossy link may drop (error feedback sends "
       "them again), or a TCP connection per channel with its own IP TOS, sent after the reliable part (blocks "
       "late for their round are added into the next one), optionally quantised to 4 bits with error feedback."},
      {.path = "accelerators.tsengine.enabled", .field = [](R r) -> F { return &r.accelerators.tsengine; },
       .help = "TSEngine: the senders of a tier pass their sums to each other and the new model on to each other, "
       "in an overlay the tier's servers choose transfer by transfer from measured link throughput."},
      {.path = "accelerators.tsengine.tier", .field = [](R r) -> F { return &r.accelerators.tsengine_tier; },
       .allowed = {"global", "datacentre", "both"}, .noun = "TSEngine tier",
       .help = "TSEngine: where it relays: between data centres (the local servers; the global servers "
       "coordinate), inside each data centre (its workers; its local servers coordinate), or both."},
      {.path = "accelerators.tsengine.max_greedy",
       .field = [](R r) -> F { return &r.accelerators.tsengine_max_greedy; }, .range = Between(0, false, 1, false),
       .help = "TSEngine: the highest probability of sending to the fastest known link instead of exploring."},
      {.path = "accelerators.tsengine.expiry", .field = [](R r) -> F { return &r.accelerators.tsengine_expiry; },
       .range = AtLeast(1), .help = "TSEngine: rounds after which a link's throughput is forgotten and probed again."},
      {.path = "accelerators.tsengine.ewma", .field = [](R r) -> F { return &r.accelerators.tsengine_ewma; },
       .range = Between(0, true, 1, false), .help = "TSEngine: weight of a new throughput sample in a link's moving average."},

      // The parameter-server hierarchy (comm::Topology). Printed, and meaningful, only when the recipe has it.
      {.path = "topology.central.host", .field = [](R r) -> F { return &r.topology.central_host; },
       .help = "Host of the central party: global scheduler, global servers, master worker.",
       .allowed_doc = "a host name or address", .check = CheckHost},
      {.path = "topology.central.global_servers", .field = [](R r) -> F { return &r.topology.global_servers; },
       .range = Between(1, false, 1024, false),
       .help = "Global servers; several split the model's keys evenly by bytes (MultiGPS)."},
      {.path = "topology.central.scheduler_port",
       .field = [](R r) -> F { return &r.topology.global_scheduler_port; }, .range = kPort,
       .help = "Port of the global scheduler; 0 = a free port picked by `geomx train` (one host only)."},
      {.path = "topology.central.state_server_port",
       .field = [](R r) -> F { return &r.topology.state_server_port; }, .range = kPort,
       .help = "sync.mode esync: port of the state server; 0 = a free port picked by `geomx train`."},
      {.path = "topology.datacentres", .field = [](R r) -> F { return &r.topology.datacentres; },
       .help = "The data centres, each a mapping with the keys of `topology.datacentres[]` below.",
       .allowed_doc = "at least 1 item; names unique"},
      {.path = "topology.split_bytes", .field = [](R r) -> F { return &r.topology.options.split_bytes; },
       .range = AtLeast(1), .help = "A tensor larger than this many bytes is split over several global servers."},
      {.path = "topology.datacentres[].name",
       .item_field = [](R r, size_t i) -> F { return &r.topology.datacentres[i].name; },
       .help = "Name of the data centre: the --party of its processes. Required.",
       .allowed_doc = "lower-case letters, digits, `-`; not `central`", .check = CheckPartyName},
      {.path = "topology.datacentres[].host",
       .item_field = [](R r, size_t i) -> F { return &r.topology.datacentres[i].host; },
       .help = "Host of the data centre's scheduler.", .allowed_doc = "a host name or address",
       .check = CheckHost},
      {.path = "topology.datacentres[].workers",
       .item_field = [](R r, size_t i) -> F { return &r.topology.datacentres[i].workers; },
       .range = Between(1, false, 4096, false), .help = "Workers (training processes) of the data centre."},
      {.path = "topology.datacentres[].servers",
       .item_field = [](R r, size_t i) -> F { return &r.topology.datacentres[i].servers; },
       .range = Between(1, false, 1024, false),
       .help = "Local servers: aggregate the data centre's workers, talk to the global servers."},
      {.path = "topology.datacentres[].scheduler_port",
       .item_field = [](R r, size_t i) -> F { return &r.topology.datacentres[i].scheduler_port; },
       .range = kPort, .help = "Port of the data centre's scheduler; 0 = a free port picked by `geomx train`."},
      {.path = "topology.datacentres[].slowdown",
       .item_field = [](R r, size_t i) -> F { return &r.topology.datacentres[i].slowdown; },
       .range = Between(1, false, 1000, false),
       .help = "Heterogeneity emulation: the data centre's workers take this many times as long per step."},
      {.path = "topology.datacentres[].bandwidth",
       .item_field = [](R r, size_t i) -> F {
         return BandwidthField{&r.topology.datacentres[i].uplink.bandwidth_bps, true};
       },
       .help = "Emulated bandwidth of the data centre's own link to the central party (uneven WANs).",
       .allowed_doc = "`wan` (= topology.links.wan.bandwidth), 0, or N with bit, kbit, mbit, gbit"},
      {.path = "topology.datacentres[].latency",
       .item_field = [](R r, size_t i) -> F {
         return DurationField{.seconds = &r.topology.datacentres[i].uplink.latency_s, .inherit = true};
       },
       .help = "Emulated one-way delay of the data centre's link to the central party.",
       .allowed_doc = "`wan` (= topology.links.wan.latency), 0, or N with us, ms, s"},
      {.path = "topology.datacentres[].loss",
       .item_field = [](R r, size_t i) -> F {
         return LossField{&r.topology.datacentres[i].uplink.loss, true};
       },
       .help = "Emulated packet loss rate of the data centre's link to the central party.",
       .allowed_doc = "`wan` (= topology.links.wan.loss), or a rate in [0, 1) such as 0.02 or 2%"},
      {.path = "topology.links.wan.bandwidth",
       .field = [](R r) -> F { return BandwidthField{&r.topology.options.wan.bandwidth_bps}; },
       .help = "Emulated bandwidth of each link between parties (unless a data centre has its own), in bits/s; "
               "0 = unlimited.",
       .allowed_doc = "0, or N with bit, kbit, mbit, gbit (e.g. `50mbit`)"},
      {.path = "topology.links.wan.latency",
       .field = [](R r) -> F { return DurationField{.seconds = &r.topology.options.wan.latency_s}; },
       .help = "Emulated one-way delay of each link between parties.",
       .allowed_doc = "0, or N with us, ms, s (e.g. `25ms`)"},
      {.path = "topology.links.wan.loss",
       .field = [](R r) -> F { return LossField{&r.topology.options.wan.loss}; },
       .help = "Emulated packet loss rate of each link between parties (TCP: losses cost time, docs/deployment.md).",
       .allowed_doc = "a rate in [0, 1) such as 0.02 or 2%"},
      {.path = "topology.links.lan.bandwidth",
       .field = [](R r) -> F { return BandwidthField{&r.topology.options.lan.bandwidth_bps}; },
       .help = "Emulated bandwidth of each link inside a party; 0 = unlimited.",
       .allowed_doc = "0, or N with bit, kbit, mbit, gbit"},
      {.path = "topology.links.lan.latency",
       .field = [](R r) -> F { return DurationField{.seconds = &r.topology.options.lan.latency_s}; },
       .help = "Emulated one-way delay of each link inside a party.", .allowed_doc = "0, or N with us, ms, s"},
      {.path = "topology.links.lan.loss",
       .field = [](R r) -> F { return LossField{&r.topology.options.lan.loss}; },
       .help = "Emulated packet loss rate of each link inside a party.",
       .allowed_doc = "a rate in [0, 1) such as 0.02 or 2%"},
      {.path = "topology.links.direct", .field = [](R r) -> F { return &r.topology.direct_links; },
       .help = "Direct links between two data centres (both directions), in place of the path through the central "
               "party; each a mapping with the keys of `topology.links.direct[]` below.",
       .allowed_doc = "a list of mappings, at most one per pair of data centres"},
      {.path = "topology.links.direct[].from",
       .item_field = [](R r, size_t i) -> F { return &r.topology.direct_links[i].from; },
       .help = "One data centre of the link. Required.", .allowed_doc = "a data centre's name"},
      {.path = "topology.links.direct[].to",
       .item_field = [](R r, size_t i) -> F { return &r.topology.direct_links[i].to; },
       .help = "The other data centre. Required.", .allowed_doc = "another data centre's name"},
      {.path = "topology.links.direct[].bandwidth",
       .item_field = [](R r, size_t i) -> F {
         return BandwidthField{&r.topology.direct_links[i].link.bandwidth_bps};
       },
       .help = "Emulated bandwidth of the direct link.", .allowed_doc = "0, or N with bit, kbit, mbit, gbit"},
      {.path = "topology.links.direct[].latency",
       .item_field = [](R r, size_t i) -> F {
         return DurationField{.seconds = &r.topology.direct_links[i].link.latency_s};
       },
       .help = "Emulated one-way delay of the direct link.", .allowed_doc = "0, or N with us, ms, s"},
      {.path = "topology.links.direct[].loss",
       .item_field = [](R r, size_t i) -> F { return LossField{&r.topology.direct_links[i].link.loss}; },
       .help = "Emulated packet loss rate of the direct link.", .allowed_doc = "a rate in [0, 1) such as 0.02 or 2%"},
      {.path = "topology.timeouts.rendezvous",
       .field = [](R r) -> F { return DurationField{.millis = &r.topology.options.rendezvous_timeout_ms}; },
       .range = Above(0), .help = "A tier not complete by then fails, naming the nodes that are missing.",
       .allowed_doc = "> 0, whole ms (e.g. `60s`)"},
      {.path = "topology.timeouts.request",
       .field = [](R r) -> F { return DurationField{.millis = &r.topology.options.request_timeout_ms}; },
       .range = Above(0), .help = "A request without a reply by then fails, naming the peer and the key.",
       .allowed_doc = "> 0, whole ms"},
      {.path = "topology.timeouts.heartbeat_interval",
       .field = [](R r) -> F { return DurationField{.millis = &r.topology.options.heartbeat_interval_ms}; },
       .help = "Every node tells its scheduler it is alive this often; 0 = no heartbeats.",
       .allowed_doc = ">= 0, whole ms"},
      {.path = "topology.timeouts.heartbeat_timeout",
       .field = [](R r) -> F { return DurationField{.millis = &r.topology.options.heartbeat_timeout_ms}; },
       .range = Above(0), .help = "A node silent this long is reported dead (longer than heartbeat_interval).",
       .allowed_doc = "> 0, whole ms"},
      {.path = "topology.timeouts.rejoin",
       .field = [](R r) -> F { return DurationField{.millis = &r.topology.options.rejoin_timeout_ms}; },
       .range = Above(0),
       .help = "failure_policy: wait: a lost worker that has not rejoined this long after it was declared lost "
               "stops the job (heartbeat_timeout + rejoin must stay below the request timeout).",
       .allowed_doc = "> 0, whole ms"},
      {.path = "topology.failure_policy", .field = [](R r) -> F { return &r.topology.failure_policy; },
       .allowed = {"stop", "continue", "wait"}, .noun = "failure policy",
       .help = "A worker, or a data centre's scheduler or local server, dies or fails: stop the job; continue "
               "without the worker (its shard is skipped) or the whole data centre (not the first: its worker 0 "
               "evaluates); or wait for the worker to rejoin (its data centre pauses; a lost data centre stops "
               "the job). With continue or wait a worker started again rejoins the running job; sync.mode fsa. "
               "Global servers and the global scheduler always stop the job."},
      {.path = "topology.worker_restarts", .field = [](R r) -> F { return &r.topology.worker_restarts; },
       .range = AtLeast(0),
       .help = "`geomx train` on one host: a worker that dies is started again and rejoins the running job, up "
               "to N times in all (failure_policy continue or wait; not the evaluating worker, the first data "
               "centre's worker 0)."},
      {.path = "topology.snapshot_every", .field = [](R r) -> F { return &r.topology.snapshot_every; },
       .range = AtLeast(0),
       .help = "Global servers snapshot the model and optimizer state every N rounds into RUN/snapshots, so "
               "`geomx train --resume RUN` continues the job from there (sync.mode fsa); 0 = never."},
      {.path = "topology.max_restarts", .field = [](R r) -> F { return &r.topology.max_restarts; },
       .range = AtLeast(0),
       .help = "`geomx train` on one host: when a process fails or is killed, restart the whole job from the "
               "servers' last snapshots, up to N times (needs snapshot_every > 0)."},
      {.path = "security.encryption", .field = [](R r) -> F { return &r.security.encryption; },
       .allowed = {"auto", "on", "off"}, .noun = "encryption setting",
       .help = "CurveZMQ encryption and authentication of every link; auto = on when a topology host is not "
               "loopback (docs/security.md)."},
      {.path = "security.keys", .field = [](R r) -> F { return &r.security.keys; },
       .help = "Key directory written by `geomx keys generate`; empty: `geomx train` on one host makes RUN/keys.",
       .allowed_doc = "a directory path"},
  };
}
// clang-format on

}  // namespace

const std::vector<RecipeKey>& RecipeKeys() {
  static const std::vector<RecipeKey> kKeys = BuildTable();
  return kKeys;
}

}  // namespace geomx::cli
