// geomx: one binary for training, serving, benchmarking and data tools. CLI11 parses flags here and nowhere else;
// each subcommand returns a Status that becomes the exit code: 0 ok, 2 user error (bad recipe, flags, data),
// 1 runtime failure, 130 interrupted by Ctrl-C (after a checkpoint).
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_commands.h"
#include "cli/commands.h"
#include "cli/estimator_run.h"
#include "cli/role_command.h"
#include "cli/security.h"
#include "cli/train_command.h"
#include "engine/base/logging.h"
#include "engine/base/status.h"

namespace {

std::atomic<bool> g_interrupted{false};

void OnSignal(int sig) {
  if (g_interrupted.exchange(true)) {
    // Second Ctrl-C: stop now, without the final checkpoint.
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int ExitCode(const geomx::Status& s) {
  if (s.ok()) return 0;
  if (s.code() == geomx::StatusCode::kCancelled) {
    std::fprintf(stderr, "geomx: %s\n", s.message().c_str());
    return 130;
  }
  std::fprintf(stderr, "geomx: error: %s\n", s.message().c_str());
  return s.IsUserError() ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"geomx: geo-distributed machine learning over slow WANs"};
  app.require_subcommand(1);
  // Every form of every subcommand (tests/cli/doc_commands_test.cc checks that each subcommand has one here).
  app.footer(
      "Forms (docs/cli.md):\n"
      "  geomx train RECIPE [--set KEY=VALUE]... [--out DIR] [--dry-run]\n"
      "  geomx train RECIPE --party P --rank N [--set KEY=VALUE]... [--out DIR | --resume DIR] [--dry-run]\n"
      "  geomx train --resume DIR [--set KEY=VALUE]...\n"
      "  geomx serve --role ROLE RECIPE [--party P] [--rank N] [--set KEY=VALUE]... [--out DIR | --resume DIR]\n"
      "              [--dry-run]\n"
      "  geomx eval RUN [RECIPE] [--set KEY=VALUE]... [--json]\n"
      "  geomx predict RUN INPUT --out FILE [--threads N]\n"
      "  geomx plot RUN [RUN...] [--out FILE.png]\n"
      "  geomx data list\n"
      "  geomx data inspect FILE\n"
      "  geomx data fetch NAME [--dir DIR] [--mirror URL] [--force]\n"
      "  geomx algos [NAME] [--all]\n"
      "  geomx bench RECIPE --configs A,B,... [--wan RATE/DELAY[/LOSS]] [--netns] [--max-time S] [--out DIR] ...\n"
      "  geomx bench kernels [--batch-sizes 32,64] [--threads 1,2] [--iterations N] [--json FILE]\n"
      "  geomx bench comm [--sizes 4096,4194304] [--iterations N] [--repeats N] [--json FILE]\n"
      "  geomx bench algos [--only A,B] [--threads N] [--quick] [--out FILE.json] [--no-peer]\n"
      "  geomx bench soak [--rounds N] [--datacentres N] [--workers-per-dc N] [--key-bytes N] [--json FILE]\n"
      "  geomx keys generate DIR (--recipe RECIPE [--set KEY=VALUE]... | --name PARTY/ROLE...) [--force]\n"
      "  geomx version\n\n"
      "Examples:\n  geomx train recipes/quickstart.yaml --out runs/first\n  geomx plot runs/first\n  geomx data list\n"
      "  geomx algos\n\n"
      "Exit codes: 0 ok, 1 runtime failure, 2 bad input (recipe, flags, data), 130 interrupted.");
  // Hidden: parse the command line, print the subcommand it chose and exit 0 without running it; how the tests
  // check that every command shown in README.md and docs/ still parses (tests/cli/doc_commands_test.cc).
  bool parse_only = false;
  app.add_flag("--parse-only", parse_only, "Check the command line and exit")->group("");
  std::string log_level = "warning";
  app.add_option("--log-level", log_level, "Diagnostics on stderr: debug, info, warning, error")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));

  // train
  geomx::cli::TrainFlags train;
  CLI::App* train_cmd = app.add_subcommand("train", "Train a model from a YAML recipe");
  train_cmd->add_option("recipe", train.recipe, "Recipe file (docs/recipes.md); optional with --resume");
  train_cmd->add_option("--set", train.sets, "Override a recipe key: --set data.batch_size=64 (repeatable)");
  train_cmd->add_option("--out", train.out, "Run folder (default runs/<name>-<timestamp>)");
  train_cmd->add_option("--resume", train.resume,
                        "Continue the run in this folder from its last checkpoint, with its recorded recipe");
  train_cmd->add_flag("--dry-run", train.dry_run, "Print the resolved recipe and the plan, then exit");
  geomx::cli::RoleFlags worker;  // train --party P --rank N: one worker of a multi-host deployment
  worker.role = "worker";
  train_cmd->add_option("--party", worker.party, "Run only this data centre's worker --rank (multi-host)");
  train_cmd->add_option("--rank", worker.rank, "With --party: the worker's index in its data centre");
  // Hidden, internal to `geomx bench --netns` (docs/cli.md): run a party's processes in a network namespace.
  train_cmd
      ->add_option_function<std::vector<std::string>>(
          "--party-netns",
          [&train](const std::vector<std::string>& values) {
            for (const std::string& v : values) {
              const geomx::Status s = geomx::cli::ParsePartyNetns(v, &train.party_netns);
              if (!s.ok()) throw CLI::ValidationError("--party-netns", s.message());
            }
          },
          "PARTY=NAMESPACE@IP (repeatable; set by geomx bench --netns)")
      ->group("");
  train_cmd->footer(
      "Example:\n  geomx train recipes/quickstart.yaml --set training.epochs=1 --out runs/try1\n"
      "  geomx train --resume runs/try1                            # after Ctrl-C\n"
      "  geomx train --resume runs/try1 --set training.epochs=4   # train a finished run further\n"
      "  geomx train recipes/geo2x2.yaml --party dc-a --rank 1     # one worker (docs/deployment.md)");

  // eval
  std::string eval_ckpt, eval_recipe;
  std::vector<std::string> eval_sets;
  bool eval_json = false;
  CLI::App* eval_cmd = app.add_subcommand("eval", "Test metrics of a trained run (or a checkpoint)");
  eval_cmd->add_option("run", eval_ckpt, "A run folder (its last checkpoint or model.gxm) or a .ckpt file")
      ->required();
  eval_cmd->add_option("recipe", eval_recipe, "The recipe (default: the run folder's recipe.yaml)");
  eval_cmd->add_option("--set", eval_sets, "Override a recipe key (repeatable)");
  eval_cmd->add_flag("--json", eval_json, "Print the result as JSON");
  eval_cmd->footer("Example:\n  geomx eval runs/quickstart-20261121-101500\n"
                   "  geomx eval runs/try1/checkpoints/ckpt-1875.ckpt recipes/quickstart.yaml");

  // predict
  std::string predict_run, predict_input, predict_out;
  int predict_threads = 0;
  CLI::App* predict_cmd = app.add_subcommand("predict", "Predictions of a trained classical algorithm for a file");
  predict_cmd->add_option("run", predict_run, "Run folder of an algorithm recipe (or its model.gxm)")->required();
  predict_cmd->add_option("input", predict_input, "csv or libsvm file in the training data's layout")->required();
  predict_cmd->add_option("--out", predict_out, "Output CSV (one line per input row)")->required();
  predict_cmd->add_option("--threads", predict_threads, "Compute threads (0 = all cores)")
      ->check(CLI::Range(0, 1024));
  predict_cmd->footer("Example:\n  geomx predict runs/svr-friedman1 data/new.csv --out predictions.csv");

  // plot
  std::vector<std::string> plot_runs;
  std::string plot_out;
  CLI::App* plot_cmd = app.add_subcommand("plot", "Training curves of run folders as a PNG chart");
  plot_cmd->add_option("runs", plot_runs, "Run folders (their metrics.jsonl)")->required();
  plot_cmd->add_option("--out", plot_out, "PNG file (default RUN/curves.png; required with several runs)");
  plot_cmd->footer("Example:\n  geomx plot runs/quickstart-20261121-101500\n"
                   "  geomx plot runs/a runs/b --out compare.png");

  // data
  CLI::App* data_cmd = app.add_subcommand("data", "Datasets: list, inspect, fetch");
  data_cmd->require_subcommand(1);
  data_cmd->footer("Examples:\n  geomx data list\n"
                   "  geomx data inspect /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz\n"
                   "  geomx data fetch mnist");
  CLI::App* data_list = data_cmd->add_subcommand("list", "Known datasets and where `path: auto` finds them");
  data_list->footer("Example:\n  geomx data list");
  std::string inspect_path;
  CLI::App* data_inspect = data_cmd->add_subcommand("inspect", "Describe a data file: format, counts, classes");
  data_inspect->add_option("file", inspect_path, "IDX (gz or raw), CIFAR-10 batch, CSV or LIBSVM file")->required();
  data_inspect->footer("Example:\n  geomx data inspect data/train.libsvm");
  geomx::cli::DataFetchFlags fetch;
  CLI::App* data_fetch =
      data_cmd->add_subcommand("fetch", "Download a dataset (fashion-mnist, mnist, cifar10) and verify its SHA-256");
  data_fetch->add_option("name", fetch.name, "Dataset name: fashion-mnist, mnist or cifar10")->required();
  data_fetch->add_option("--dir", fetch.dir, "Target directory (default data/NAME, where `path: auto` looks)");
  data_fetch->add_option("--mirror", fetch.mirror, "Base URL replacing the official source (a mirror, a local server)");
  data_fetch->add_flag("--force", fetch.force, "Download again over existing files that fail verification");
  data_fetch->footer("Examples:\n  geomx data fetch mnist\n  geomx data fetch cifar10 --dir /srv/data/cifar10\n"
                     "  geomx data fetch fashion-mnist --mirror http://mirror.example/fashion-mnist/");

  // algos, version
  bool algos_all = false;
  std::string algos_name;
  CLI::App* algos_cmd = app.add_subcommand("algos", "The algorithm catalogue (GeoMX's 25) and built-in models");
  algos_cmd->add_option("name", algos_name, "Show one trainable algorithm with its parameters");
  algos_cmd->add_flag("--all", algos_all, "Also list the algorithms planned but not yet trainable");
  algos_cmd->footer("Example:\n  geomx algos --all\n  geomx algos svm");
  CLI::App* version_cmd = app.add_subcommand("version", "Version and build options");
  version_cmd->footer("Example:\n  geomx version");

  // serve: one non-worker process of a topology (docs/deployment.md)
  geomx::cli::RoleFlags serve;
  CLI::App* serve_cmd = app.add_subcommand("serve", "Run one parameter-server process of a recipe's topology");
  serve_cmd->add_option("--role", serve.role,
                        "global-scheduler | global-server | scheduler | server | master-worker | state-server")
      ->required();
  serve_cmd->add_option("recipe", serve.recipe, "Recipe file with a topology section")->required();
  serve_cmd->add_option("--party", serve.party, "Data centre name (scheduler, server); omit for the central roles");
  serve_cmd->add_option("--rank", serve.rank, "Index among the party's processes of this role (default 0)");
  serve_cmd->add_option("--set", serve.sets, "Override a recipe key (repeatable), e.g. ports of a deployment");
  serve_cmd->add_option("--out", serve.out, "Run folder");
  serve_cmd->add_option("--resume", serve.resume,
                        "Continue the run in this folder from its server snapshots (instead of --out)");
  serve_cmd->add_flag("--dry-run", serve.dry_run, "Print the resolved role and where it listens, then exit");
  serve_cmd->footer(
      "Example:\n  geomx serve --role global-scheduler recipes/geo2x2.yaml\n"
      "  geomx serve --role server recipes/geo2x2.yaml --party dc-a --rank 0");

  // keys: `geomx keys generate DIR` (docs/security.md)
  std::string keys_dir, keys_recipe;
  std::vector<std::string> keys_sets, keys_names;
  bool keys_force = false;
  CLI::App* keys_cmd = app.add_subcommand("keys", "CurveZMQ keys of a topology's processes");
  keys_cmd->require_subcommand(1);
  CLI::App* keys_generate = keys_cmd->add_subcommand("generate", "Write a key pair per process into DIR");
  keys_generate->add_option("dir", keys_dir, "Key directory (DIR/<party>/<role>.pub and .secret)")->required();
  keys_generate->add_option("--recipe", keys_recipe, "Every process of this recipe's topology gets a key pair");
  keys_generate->add_option("--set", keys_sets, "Override a recipe key (repeatable)");
  keys_generate->add_option("--name", keys_names, "Only this member, PARTY/ROLE (repeatable), e.g. dc-a/worker2");
  keys_generate->add_flag("--force", keys_force, "Replace existing keys");
  keys_generate->footer("Example:\n  geomx keys generate keys --recipe recipes/quickstart_2dc.yaml");

  // bench: `geomx bench RECIPE`, `geomx bench kernels`, `geomx bench comm` (bench/bench_commands.h)
  geomx::bench::BenchCommandLine bench;
  geomx::bench::AddBenchCommands(&app, &bench);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  if (parse_only) {
    std::string chosen;
    for (const CLI::App* sub = &app; !sub->get_subcommands().empty(); sub = sub->get_subcommands().front()) {
      chosen += (chosen.empty() ? "" : " ") + sub->get_subcommands().front()->get_name();
    }
    std::printf("parsed: %s\n", chosen.c_str());
    return 0;
  }
  geomx::SetLogLevel(log_level == "debug"  ? geomx::LogLevel::kDebug
                     : log_level == "info" ? geomx::LogLevel::kInfo
                     : log_level == "error" ? geomx::LogLevel::kError
                                            : geomx::LogLevel::kWarning);
  InstallSignalHandlers();

  geomx::Status status;
  if (train_cmd->parsed() && (train_cmd->count("--party") > 0 || train_cmd->count("--rank") > 0)) {
    if (train.recipe.empty()) {
      status = geomx::Status::InvalidArgument("train --party: a RECIPE file is required");
    } else if (worker.party.empty()) {
      status = geomx::Status::InvalidArgument("--rank needs --party: the data centre the worker belongs to");
    } else {
      worker.recipe = train.recipe;
      worker.sets = train.sets;
      worker.out = train.out;
      worker.resume = train.resume;
      worker.dry_run = train.dry_run;
      status = geomx::cli::RunRoleCommand(worker, &g_interrupted);
    }
  } else if (train_cmd->parsed()) {
    status = geomx::cli::RunTrainCommand(train, &g_interrupted);
  } else if (eval_cmd->parsed()) {
    status = geomx::cli::RunEvalCommand(eval_ckpt, eval_recipe, eval_sets, eval_json);
  } else if (data_list->parsed()) {
    status = geomx::cli::RunDataListCommand();
  } else if (data_inspect->parsed()) {
    status = geomx::cli::RunDataInspectCommand(inspect_path);
  } else if (data_fetch->parsed()) {
    status = geomx::cli::RunDataFetchCommand(fetch);
  } else if (algos_cmd->parsed()) {
    status = geomx::cli::RunAlgosCommand(algos_all, algos_name);
  } else if (plot_cmd->parsed()) {
    status = geomx::cli::RunPlotCommand(plot_runs, plot_out);
  } else if (predict_cmd->parsed()) {
    status = geomx::cli::RunPredictCommand(
        predict_run, predict_input, predict_out,
        predict_threads > 0 ? predict_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  } else if (keys_generate->parsed()) {
    status = geomx::cli::RunKeysGenerate(keys_dir, keys_recipe, keys_sets, keys_names, keys_force);
  } else if (version_cmd->parsed()) {
    status = geomx::cli::RunVersionCommand();
  } else if (serve_cmd->parsed() && serve.role == "worker") {
    status = geomx::Status::InvalidArgument("--role worker: a worker runs with `geomx train " + serve.recipe +
                                            " --party P --rank N`");
  } else if (serve_cmd->parsed()) {
    status = geomx::cli::RunRoleCommand(serve, &g_interrupted);
  } else if (geomx::bench::BenchCommandChosen(bench)) {
    status = geomx::bench::RunBenchCommand(bench, &g_interrupted);
  }
  return ExitCode(status);
}
