#include "bench/bench_runner.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "bench/bench_config.h"
#include "bench/bench_result.h"
#include "bench/netns.h"
#include "cli/free_ports.h"
#include "cli/json_writer.h"
#include "cli/launcher.h"
#include "cli/recipe.h"
#include "cli/recipe_units.h"
#include "cli/run_dir.h"
#include "datasets/dataset.h"

namespace geomx::bench {
namespace fs = std::filesystem;
using cli::BandwidthText;
using cli::ChildSpec;
using cli::DurationSecondsText;
using cli::JsonObject;
using cli::Launcher;
using cli::LauncherOptions;
using cli::LoadRecipe;
using cli::PickFreePorts;
using cli::Recipe;
using cli::RunDir;
using cli::WriteFileAtomically;

namespace {

fs::path FindNextToSource(const std::string& rel) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path dir = self.parent_path(); !dir.empty() && dir != dir.parent_path(); dir = dir.parent_path()) {
    if (fs::exists(dir / rel)) return dir / rel;
  }
  return fs::path(rel);
}

}  // namespace

ChildOutcome RunChildren(const std::vector<ChildSpec>& specs, double max_time_s, const fs::path& log_path,
                         const std::atomic<bool>* interrupted, bool keep_output) {
  ChildOutcome out;
  std::ofstream log(log_path);
  LauncherOptions lo;
  lo.tail_lines = 30;
  lo.grace_period_ms = kChildStopGraceMs;
  lo.sink = [&](std::string_view line) {
    log << line << '\n';
    if (keep_output) out.output.append(line).append("\n");
    if (line.find(" eval ") != std::string_view::npos || line.find("geomx: error") != std::string_view::npos ||
        line.find("\"event\": \"eval\"") != std::string_view::npos) {
      std::printf("    %.*s\n", static_cast<int>(line.size()), line.data());
      std::fflush(stdout);
    }
  };
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    const auto t0 = std::chrono::steady_clock::now();
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (interrupted != nullptr && interrupted->load() && !stop.load()) {
        out.user_interrupt = true;
        stop = true;
      }
      if (max_time_s > 0 && el > max_time_s && !stop.load()) {
        out.timed_out = true;
        stop = true;
      }
    }
  });
  {
    Launcher launcher(lo);
    out.status = launcher.Start(specs);
    if (out.status.ok()) out.status = launcher.Wait(&stop);
  }
  done = true;
  watchdog.join();
  return out;
}

namespace {

ChildSpec GeomxSpec(const std::string& exe, const std::string& recipe, const std::vector<std::string>& sets,
                    const fs::path& run_dir) {
  ChildSpec spec{"geomx", {exe, "train", recipe}};
  for (const std::string& s : sets) spec.argv.insert(spec.argv.end(), {"--set", s});
  spec.argv.insert(spec.argv.end(), {"--out", run_dir.string()});
  return spec;
}

std::string DataDir(const Recipe& r) {
  if (r.data.path != "auto") return r.data.path;
  for (const std::string& p : data::DatasetSearchPaths(r.data.name)) {
    if (fs::exists(p)) return p;
  }
  return "";
}

// The DDP peer: one process per worker (world = all workers), rank r in the data centre of worker r. With netns
// shaping each rank runs in its data centre's namespace and gloo uses its WAN interface.
std::vector<ChildSpec> DdpSpecs(const Recipe& recipe, const std::string& python, const std::string& script,
                                NetnsShaper* shaper) {
  const int world = recipe.topology.total_workers();
  auto port = PickFreePorts("127.0.0.1", 1);
  const std::string master_port = port.ok() && !port->empty() ? std::to_string(port->front()) : "29517";
  std::string master_addr = "127.0.0.1";
  if (shaper) master_addr = shaper->parties().at(recipe.topology.datacentres.front().name).ip;
  std::vector<ChildSpec> specs;
  int rank = 0;
  for (const comm::DataCentre& d : recipe.topology.datacentres) {
    for (int w = 0; w < d.workers; ++w, ++rank) {
      ChildSpec spec{"ddp/rank" + std::to_string(rank), {}};
      if (shaper) {
        const PartyNet& p = shaper->parties().at(d.name);
        spec.argv = {"ip", "netns", "exec", p.ns, "env", "GLOO_SOCKET_IFNAME=" + p.interface};
      } else {
        spec.argv = {"env", "GLOO_SOCKET_IFNAME=lo"};
      }
      spec.argv.insert(
          spec.argv.end(),
          {python, script, "--rank", std::to_string(rank), "--world", std::to_string(world), "--master-addr",
           master_addr, "--master-port", master_port, "--data", DataDir(recipe), "--batch-size",
           std::to_string(recipe.data.batch_size), "--epochs", std::to_string(recipe.training.epochs), "--lr",
           std::to_string(recipe.optimizer.lr), "--optimizer", recipe.optimizer.name, "--weight-decay",
           std::to_string(recipe.optimizer.weight_decay), "--momentum", std::to_string(recipe.optimizer.momentum),
           "--schedule", recipe.lr_schedule.name, "--warmup", std::to_string(recipe.lr_schedule.warmup_iterations),
           "--eval-every", std::to_string(recipe.training.eval_every), "--eval-limit",
           std::to_string(recipe.training.eval_limit), "--seed", std::to_string(recipe.seed)});
      specs.push_back(std::move(spec));
    }
  }
  return specs;
}

std::string Header(const BenchRecipeFlags& f, const Recipe& recipe, double target, const std::string& shaping) {
  JsonObject j;
  std::string sets;
  for (const std::string& s : f.sets) sets.append(sets.empty() ? "" : " ").append("--set ").append(s);
  j.Add("recipe", f.recipe).Add("name", recipe.name).Add("configs", f.configs).Add("sets", sets);
  j.Add("target_accuracy", std::round(target * 1e6) / 1e6);
  j.Add("wan", BandwidthText(recipe.topology.options.wan.bandwidth_bps) + "/" +
                   DurationSecondsText(recipe.topology.options.wan.latency_s));
  j.Add("shaping", shaping).Add("repeat", f.repeat).Add("max_time_seconds", f.max_time_s);
  AddMachineAndDate(&j);
  return j.str();
}

}  // namespace

Status RunBenchRecipe(const BenchRecipeFlags& f, const std::atomic<bool>* interrupted) {
  // 1. Validate everything before anything runs or is created.
  if (f.repeat < 1) return Status::InvalidArgument("--repeat: must be >= 1");
  if (f.max_time_s < 0) return Status::InvalidArgument("--max-time: must be >= 0 seconds");
  if (f.target_accuracy > 1) return Status::InvalidArgument("--target-accuracy: must be in [0, 1]");
  std::vector<std::string> common = f.sets;
  if (!f.wan.empty()) {
    GEOMX_ASSIGN_OR_RETURN(WanSpec w, ParseWan(f.wan));
    common.insert(common.end(), w.sets.begin(), w.sets.end());
  }
  if (f.target_accuracy >= 0) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "training.target_accuracy=%g", f.target_accuracy);
    common.push_back(buf);
  }
  GEOMX_ASSIGN_OR_RETURN(Recipe recipe, LoadRecipe(f.recipe, common));
  if (!recipe.has_topology) {
    return Status::InvalidArgument(f.recipe + ": geomx bench RECIPE needs a recipe with a topology section");
  }
  GEOMX_ASSIGN_OR_RETURN(std::vector<BenchConfig> configs, ResolveConfigs(f.configs, recipe));
  const double target = recipe.training.target_accuracy;
  if (!f.tcp_cc.empty() && !f.netns) {
    return Status::InvalidArgument("--tcp-cc " + f.tcp_cc + ": only with --netns (the in-process emulator models "
                                   "TCP under loss with one formula)");
  }
  if (f.netns) {
    GEOMX_RETURN_IF_ERROR(NetnsShaper::CheckCanRun());
    for (const std::string& ns : NetnsShaper::RemoveStale(SystemCommandRunner().get())) {
      std::printf("geomx bench: removed namespace %s left by a killed run\n", ns.c_str());
    }
  }
  GEOMX_ASSIGN_OR_RETURN(std::string exe, cli::ThisExecutable());
  const fs::path ddp_script =
      f.ddp_script.empty() ? FindNextToSource("bench/peers/ddp_train.py") : fs::path(f.ddp_script);

  // 2. The bench folder.
  const fs::path dir = f.out.empty() ? RunDir::DefaultPath("runs", "bench-" + recipe.name) : fs::path(f.out);
  std::error_code ec;
  if (fs::exists(dir) && !fs::is_empty(dir, ec)) {
    return Status::AlreadyExists("--out " + dir.string() + ": exists and is not empty");
  }
  fs::create_directories(dir, ec);
  if (ec) return Status::InvalidArgument("--out " + dir.string() + ": " + ec.message());

  const std::string shaping =
      f.netns ? "netns: a network namespace per party, links through a user-space delay line (veth when the "
                "delay is 0), tc tbf rate"
              : "emulated in-process (topology.links.wan)";
  std::printf("geomx bench: %s, %zu configurations x %d, WAN %s, %s one way, target %.2f; folder %s\n",
              recipe.name.c_str(), configs.size(), f.repeat,
              BandwidthText(recipe.topology.options.wan.bandwidth_bps).c_str(),
              DurationSecondsText(recipe.topology.options.wan.latency_s).c_str(), target, dir.c_str());
  std::printf("shaping: %s\n", shaping.c_str());
  std::fflush(stdout);

  // 3. Every configuration, every repeat.
  std::vector<RunResult> results;
  bool stopped = false;
  for (const BenchConfig& c : configs) {
    for (int rep = 0; rep < f.repeat && !stopped; ++rep) {
      RunResult r;
      r.config = c.name;
      r.repeat = rep;
      r.target = target;
      std::string slug = ConfigSlug(c.name);
      if (f.repeat > 1) slug.append("-r").append(std::to_string(rep + 1));
      const fs::path run_dir = dir / slug;
      std::printf("\n== %s #%d/%d: %s\n", c.name.c_str(), rep + 1, f.repeat, c.description.c_str());
      std::fflush(stdout);
      std::unique_ptr<NetnsShaper> shaper;
      std::vector<std::string> sets = common;
      sets.insert(sets.end(), c.sets.begin(), c.sets.end());
      auto resolved = LoadRecipe(f.recipe, sets);
      if (!resolved.ok()) {
        r.status = "failed";
        r.error = "recipe rejected: " + resolved.status().message();
      } else if (c.is_ddp && (resolved->model.name != "geomx-cnn" || resolved->data.name != "fashion-mnist")) {
        r.status = "failed";
        r.error = "the ddp peer mirrors geomx-cnn on fashion-mnist only; this recipe trains " +
                  resolved->model.name + " on " + resolved->data.name;
      } else if (c.is_ddp && !fs::exists(ddp_script)) {
        r.status = "failed";
        r.error = "DDP peer not found: " + ddp_script.string();
      } else {
        if (f.netns) {
          shaper = std::make_unique<NetnsShaper>(SystemCommandRunner(), "gmx" + std::to_string(getpid()));
          Status st = shaper->Setup(*resolved, f.python, FindNextToSource("bench/peers/delay_line.py").string(),
                                    f.tcp_cc);
          if (!st.ok()) {
            (void)shaper->Teardown();
            return st;  // the shaping itself does not work: no configuration could run
          }
        }
        const uint64_t bytes0 = shaper ? shaper->WanBytes() : 0;
        // With netns the kernel shapes the WAN, so geomx's in-process emulation of it is switched off (its
        // traffic counters still tell WAN from LAN by party).
        std::vector<std::string> run_sets = sets;
        if (shaper) {
          const std::vector<std::string> off = InProcessWanOff(*resolved);
          run_sets.insert(run_sets.end(), off.begin(), off.end());
        }
        std::vector<ChildSpec> specs =
            c.is_ddp ? DdpSpecs(*resolved, f.python, ddp_script.string(), shaper.get())
                     : std::vector<ChildSpec>{GeomxSpec(exe, f.recipe, run_sets, run_dir)};
        if (shaper && !c.is_ddp) {  // each party's processes in its namespace (cli::TrainFlags::party_netns)
          const std::vector<std::string> args = shaper->PartyNetnsArgs();
          specs.front().argv.insert(specs.front().argv.end(), args.begin(), args.end());
        }
        fs::create_directories(run_dir, ec);
        const auto child_start = std::chrono::steady_clock::now();
        ChildOutcome o = RunChildren(specs, f.max_time_s, c.is_ddp ? run_dir / "ddp.log" : dir / (slug + ".log"),
                                     interrupted, c.is_ddp);
        const double elapsed_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - child_start).count();
        r.run_dir = run_dir.string();
        if (c.is_ddp) {
          ParseDdpOutput(o.output, &r);
          if (shaper) {
            r.lan_total = 0.0;
            ApportionPeerWanBytes(static_cast<double>(shaper->WanBytes() - bytes0), elapsed_s, &r);
          } else {
            r.error = "ran unshaped on loopback (the in-process WAN emulator cannot shape PyTorch; use --netns): "
                      "its times are not comparable and its bytes are not measured";
          }
        } else {
          Status rs = ReadGeomxRun(run_dir, &r);
          if (!rs.ok()) r.error = rs.message();
          if (shaper) {
            r.netns_wan_bytes = static_cast<double>(shaper->WanBytes() - bytes0);
          }
        }
        if (o.user_interrupt) {
          r.status = "failed";
          r.error = "interrupted";
          stopped = true;
        } else if (o.timed_out) {
          r.status = "timeout";
        } else if (!o.status.ok()) {
          r.status = "failed";
          r.error = o.status.message();
        }
        DeriveTargetFigures(&r);
        if (shaper) {
          Status td = shaper->Teardown();
          if (!td.ok()) std::fprintf(stderr, "geomx bench: netns teardown: %s\n", td.message().c_str());
        }
      }
      if (r.status == "failed" && r.error.size() > 600) r.error = r.error.substr(0, 600) + "...";
      std::printf("== %s: %s", c.name.c_str(), r.status.c_str());
      if (r.time_to_target_s) std::printf(", %.2f reached after %.1f s", target, *r.time_to_target_s);
      if (r.final_accuracy) std::printf(", final accuracy %.4f", *r.final_accuracy);
      if (r.status == "failed") std::printf(": %s", r.error.c_str());
      std::printf("\n");
      std::fflush(stdout);
      results.push_back(std::move(r));
    }
    if (stopped) break;
  }
  // 4. Report.
  const std::vector<TableRow> rows = BuildTable(results);
  std::printf("\n%s", FormatTable(rows, target).c_str());
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(dir / "bench.csv", TableCsv(rows)));
  GEOMX_RETURN_IF_ERROR(
      WriteFileAtomically(dir / "bench.json", ResultsJson(rows, results, Header(f, recipe, target, shaping))));
  const std::string wan = BandwidthText(recipe.topology.options.wan.bandwidth_bps) + " / " +
                          DurationSecondsText(recipe.topology.options.wan.latency_s) + " one way";
  Status c1 = DrawAccuracyChart(results, target, recipe.name + ": test accuracy over wall time (WAN " + wan + ")",
                                dir / "accuracy_vs_time.png");
  Status c2 = DrawWanBytesChart(rows, recipe.name + ": WAN traffic per configuration (WAN " + wan + ")",
                                dir / "wan_bytes.png");
  Status c3 = DrawFrontierChart(rows, recipe.name + ": final accuracy against WAN bytes (WAN " + wan + ")",
                                dir / "accuracy_vs_wan_bytes.png");
  for (const Status& c : {c1, c2, c3}) {
    if (!c.ok()) std::fprintf(stderr, "geomx bench: chart: %s\n", c.message().c_str());
  }
  std::string frontier;
  for (size_t i : FrontierRows(rows)) frontier.append(frontier.empty() ? "" : ", ").append(rows[i].config);
  if (!frontier.empty()) std::printf("frontier (accuracy against WAN bytes): %s\n", frontier.c_str());
  std::printf("wrote %s/bench.csv, bench.json, accuracy_vs_time.png, wan_bytes.png, accuracy_vs_wan_bytes.png\n",
              dir.c_str());
  if (stopped) return Status::Cancelled("interrupted; results so far are in " + dir.string());
  return Status::Ok();
}

}  // namespace geomx::bench
