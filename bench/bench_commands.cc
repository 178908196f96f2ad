// The CLI11 wiring of `geomx bench ...` (the only place bench/ sees CLI11) and the dispatch to the commands.
#include "bench/bench_commands.h"

#include <string>

#include <CLI/CLI.hpp>

#include "bench/bench_config.h"

namespace geomx::bench {
namespace {

// The RECIPE form's positional argument and options, on `geomx bench` itself.
void AddBenchRecipeOptions(CLI::App* bench, BenchRecipeFlags* f) {
  std::string presets;
  for (const std::string& p : PresetNames()) presets.append(presets.empty() ? "" : ", ").append(p);
  std::string accs;
  for (const std::string& a : AcceleratorSuffixes()) accs.append(accs.empty() ? "" : ", ").append(a);
  bench->add_option("recipe", f->recipe,
                    "Recipe with a topology: run its job once per --configs configuration and compare them");
  std::string help = "Comma-separated configurations: a preset (";
  help.append(presets).append(") plus accelerators joined with + (").append(accs);
  help.append("), optionally with overrides in brackets: hips+bsc[accelerators.bsc.ratio=0.001]");
  bench->add_option("--configs", f->configs, help);
  bench->add_option("--set", f->sets, "Recipe override for every configuration (key.path=value), repeatable");
  bench->add_option("--wan", f->wan, "WAN RATE/DELAY[/LOSS] for every configuration, e.g. 50mbit/25ms/2%");
  bench->add_option("--target-accuracy", f->target_accuracy, "Target test accuracy (default: the recipe's)");
  bench->add_option("--max-time", f->max_time_s, "Wall-clock limit per configuration run, seconds (0 = none)");
  bench->add_option("--repeat", f->repeat, "Runs per configuration; the table shows medians")
      ->check(CLI::Range(1, 100));
  bench->add_flag("--netns", f->netns,
                  "Real Linux shaping (root): a network namespace per party, tc tbf rate, user-space delay line");
  bench->add_option("--tcp-cc", f->tcp_cc,
                    "With --netns: the namespaces' TCP congestion control (e.g. cubic, reno; default: the host's)");
  bench->add_option("--out", f->out, "Bench folder (default runs/bench-<name>-<timestamp>)");
  bench->add_option("--python", f->python, "Python with torch for the ddp peer (Debian python3-torch)");
  bench->add_option("--ddp-script", f->ddp_script, "The DDP peer (default bench/peers/ddp_train.py)");
}

CLI::App* AddKernelsCommand(CLI::App* bench, BenchKernelsFlags* f) {
  CLI::App* cmd = bench->add_subcommand("kernels", "Training samples/s of a network vs PyTorch, same run, ratio");
  cmd->add_option("--model", f->model,
                  "cnn (geomx-cnn), lstm or gru (the rnn model: 128 units over the rows), gan (the gan algorithm's "
                  "step: G 100-256-512-784 and D 784-512-256-1, Adam 2e-4)")
      ->check(CLI::IsMember({"cnn", "lstm", "gru", "gan"}));
  cmd->add_option("--batch-sizes", f->batch_sizes, "Batch sizes")->delimiter(',');
  cmd->add_option("--threads", f->threads, "Thread counts")->delimiter(',');
  cmd->add_option("--iterations", f->iterations, "Timed iterations per configuration")->check(CLI::Range(1, 1000000));
  cmd->add_option("--warmup", f->warmup, "Warm-up iterations")->check(CLI::Range(0, 10000));
  cmd->add_option("--python", f->python, "Python with torch (Debian python3-torch)");
  cmd->add_option("--torch-script", f->torch_script, "PyTorch peer script");
  cmd->add_flag("--no-torch", f->skip_torch, "Measure geomx only");
  cmd->add_option("--data", f->data,
                  "Fashion-MNIST directory both sides train on (auto: /usr/share/datasets/fashion-mnist, "
                  "data/fashion-mnist)");
  cmd->add_option("--json", f->json_out, "Also write the results as JSON to this file");
  cmd->footer("Example:\n  geomx bench kernels --batch-sizes 32,64 --threads 1,2 --json out.json\n"
              "  geomx bench kernels --model lstm --batch-sizes 64 --threads 1,2\n"
              "  geomx bench kernels --model gan --batch-sizes 64 --threads 1");
  return cmd;
}

CLI::App* AddCommCommand(CLI::App* bench, BenchCommFlags* f) {
  CLI::App* cmd = bench->add_subcommand(
      "comm", "Parameter-server push+pull MB/s vs a raw ZeroMQ ping-pong on loopback, same run, ratio");
  cmd->add_option("--sizes", f->sizes, "Message sizes in bytes (multiples of 4)")->delimiter(',');
  cmd->add_option("--iterations", f->iterations, "Timed round trips per size (0 = by size)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--warmup", f->warmup, "Untimed round trips before each timing (-1 = auto)")
      ->check(CLI::Range(-1, 100000));
  cmd->add_option("--repeats", f->repeats, "Timings per size and path; medians are reported")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--json", f->json_out, "Also write the results as JSON to this file");
  cmd->footer("Example:\n  geomx bench comm\n  geomx bench comm --sizes 4096,65536,4194304 --json comm.json");
  return cmd;
}

CLI::App* AddAlgosCommand(CLI::App* bench, BenchAlgosFlags* f) {
  std::string cases;
  for (const std::string& n : AlgosCaseNames()) cases.append(cases.empty() ? "" : ", ").append(n);
  CLI::App* cmd = bench->add_subcommand(
      "algos", "Classical estimators vs scikit-learn (LIBLINEAR, LIBSVM) and XGBoost on the same tables: metrics, "
               "fit and predict times, ratios");
  cmd->add_option("--only", f->only, "Comma-separated cases to run (default all): " + cases)->delimiter(',');
  cmd->add_option("--threads", f->threads, "Compute threads of both sides (geomx; the peer's n_jobs, BLAS, OpenMP)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--out", f->json_out, "Also write every figure as JSON to this file");
  cmd->add_flag("--quick", f->quick, "Small variants of every case (a few thousand rows): a smoke run");
  cmd->add_option("--python", f->python, "Python with scikit-learn for the peer (Debian python3-sklearn)");
  cmd->add_option("--peer-script", f->peer_script, "The peer (default bench/peers/sklearn_algos.py)");
  cmd->add_flag("--no-peer", f->skip_peer, "Measure geomx only");
  cmd->add_option("--data-path", f->data_path, "Fashion-MNIST folder (default: auto, the well-known locations)");
  cmd->add_option("--keep-data", f->keep_data, "Write the cases' tables under this folder and keep them");
  cmd->footer(
      "Examples:\n  geomx bench algos --threads 2 --out algos.json\n  geomx bench algos --only logreg,knn --quick");
  return cmd;
}

CLI::App* AddSoakCommand(CLI::App* bench, BenchSoakFlags* f) {
  CLI::App* cmd = bench->add_subcommand(
      "soak", "Every role of a topology as threads over inproc ZeroMQ for many FSA rounds: no deadlock, every "
              "pulled value right, resident memory flat after warm-up (exit 1 otherwise)");
  cmd->add_option("--rounds", f->rounds, "Synchronous rounds")->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  cmd->add_option("--datacentres", f->datacentres, "Data centres (one local server each)")->check(CLI::Range(1, 64));
  cmd->add_option("--workers-per-dc", f->workers_per_dc, "Workers per data centre")->check(CLI::Range(1, 256));
  cmd->add_option("--key-bytes", f->key_bytes, "Bytes pushed and pulled per worker and round (4 dense keys; "
                  "a multiple of 4)")
      ->check(CLI::Range(uint64_t{4}, uint64_t{256} << 20));
  cmd->add_option("--max-drift", f->max_drift_percent, "Resident-memory growth after warm-up that passes, percent")
      ->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--deadline", f->deadline_s, "Seconds without a completed round that count as a deadlock")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--json", f->json_out, "Also write the figures as JSON to this file");
  cmd->footer("Examples:\n  geomx bench soak --json soak.json\n  geomx bench soak --rounds 200 --datacentres 2 "
              "--workers-per-dc 2");
  return cmd;
}

}  // namespace

void AddBenchCommands(CLI::App* app, BenchCommandLine* cl) {
  cl->bench_cmd = app->add_subcommand(
      "bench",
      "Benchmarks: `geomx bench RECIPE --configs a,b` (WAN configurations of a recipe compared), `geomx bench "
      "kernels` (engine vs PyTorch), `geomx bench comm` (PS vs raw ZeroMQ), `geomx bench algos` (classical "
      "estimators vs scikit-learn), `geomx bench soak` (inproc topology, 10,000 rounds)");
  AddBenchRecipeOptions(cl->bench_cmd, &cl->recipe);
  cl->bench_cmd->footer(
      "Example:\n  geomx bench recipes/bench_geo2x2.yaml --configs flat-ps,hips,hips+bsc --max-time 600"
      "\n  geomx bench kernels --batch-sizes 32,64 --threads 1,2\n  geomx bench comm\n  geomx bench algos --quick"
      "\n  geomx bench soak");
  cl->kernels_cmd = AddKernelsCommand(cl->bench_cmd, &cl->kernels);
  cl->comm_cmd = AddCommCommand(cl->bench_cmd, &cl->comm);
  cl->algos_cmd = AddAlgosCommand(cl->bench_cmd, &cl->algos);
  cl->soak_cmd = AddSoakCommand(cl->bench_cmd, &cl->soak);
}

bool BenchCommandChosen(const BenchCommandLine& cl) { return cl.bench_cmd != nullptr && cl.bench_cmd->parsed(); }

Status RunBenchCommand(const BenchCommandLine& cl, const std::atomic<bool>* interrupted) {
  if (cl.kernels_cmd != nullptr && cl.kernels_cmd->parsed()) return RunBenchKernelsCommand(cl.kernels, interrupted);
  if (cl.comm_cmd != nullptr && cl.comm_cmd->parsed()) return RunBenchCommCommand(cl.comm);
  if (cl.algos_cmd != nullptr && cl.algos_cmd->parsed()) return RunBenchAlgosCommand(cl.algos, interrupted);
  if (cl.soak_cmd != nullptr && cl.soak_cmd->parsed()) return RunBenchSoakCommand(cl.soak, interrupted);
  if (cl.recipe.recipe.empty()) {
    return Status::InvalidArgument(
        "bench: give a RECIPE (geomx bench RECIPE --configs a,b), or one of the subcommands kernels, comm, algos, "
        "soak");
  }
  return RunBenchRecipe(cl.recipe, interrupted);
}

}  // namespace geomx::bench
