// `geomx bench kernels`: measures training samples/s of geomx-cnn (forward, loss, backward, Adam) for each batch
// size x thread count, runs the PyTorch peer (bench/peers/torch_cnn.py) on the same configurations in the same
// run, and prints the ratio. No thresholds: the numbers are reported, never asserted.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "algorithms/train/trainer.h"
#include "bench/bench_commands.h"
#include "cli/json_writer.h"
#include "cli/launcher.h"
#include "engine/backend_registry.h"
#include "engine/base/rng.h"
#include "nn/models/models.h"
#include "nn/optim/optimizer.h"

namespace geomx::bench {
namespace fs = std::filesystem;
using cli::JsonObject;

namespace {

Result<double> MeasureGeomx(int batch, int threads, int iterations, int warmup) {
  BackendFor(DeviceKind::kCpu).SetNumThreads(threads);
  nn::ModelConfig mc;  // geomx-cnn on 1x28x28, 10 classes
  Rng rng(0);
  GEOMX_ASSIGN_OR_RETURN(auto model, nn::CreateModel(mc, rng));
  nn::OptimizerConfig oc;  // adam, lr 0.001
  GEOMX_ASSIGN_OR_RETURN(auto opt, nn::CreateOptimizer(oc));
  const auto params = model->Parameters();
  std::vector<float> xv(static_cast<size_t>(batch) * 28 * 28);
  for (auto& v : xv) v = static_cast<float>(rng.Normal());
  std::vector<int64_t> yv(static_cast<size_t>(batch));
  for (auto& v : yv) v = static_cast<int64_t>(rng.Below(10));
  const Tensor x = Tensor::FromVector(xv, Shape({batch, 1, 28, 28}));
  const Tensor y = Tensor::FromVectorI64(yv, Shape({batch}));
  model->Train();
  train::LocalUpdate update(opt.get());
  std::chrono::steady_clock::time_point t0;
  for (int i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) t0 = std::chrono::steady_clock::now();
    GEOMX_ASSIGN_OR_RETURN(train::StepStats s, train::TrainStep(*model, update, params, x, y, i));
    (void)s;
  }
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(batch) * iterations / dt;
}

fs::path DefaultTorchScript() {
  // The binary is usually <source>/build/geomx; also try the working directory.
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path dir = self.parent_path(); !dir.empty() && dir != dir.parent_path(); dir = dir.parent_path()) {
    if (fs::exists(dir / "bench/peers/torch_cnn.py")) return dir / "bench/peers/torch_cnn.py";
  }
  return fs::path("bench/peers/torch_cnn.py");
}

std::string Join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

// Runs the PyTorch peer; returns (batch, threads) -> samples/s, or an explanation of why it could not run.
Result<std::map<std::pair<int, int>, double>> MeasureTorch(const BenchKernelsFlags& f,
                                                           const std::atomic<bool>* interrupted) {
  const fs::path script = f.torch_script.empty() ? DefaultTorchScript() : fs::path(f.torch_script);
  if (!fs::exists(script)) return Status::NotFound("PyTorch peer script not found: " + script.string());
  Result<std::string> all = cli::RunAndCapture(
      {f.python, script.string(), "--batch-sizes", Join(f.batch_sizes), "--threads", Join(f.threads),
       "--iterations", std::to_string(f.iterations), "--warmup", std::to_string(f.warmup)},
      interrupted);
  if (!all.ok() && all.status().code() == StatusCode::kCancelled) return all.status();
  std::map<std::pair<int, int>, double> out;
  if (all.ok()) {
    std::string_view rest = *all;
    while (!rest.empty()) {
      const std::string line(rest.substr(0, rest.find('\n')));
      rest.remove_prefix(std::min(rest.size(), line.size() + 1));
      int b = 0, t = 0;
      double sps = 0;
      const char* pb = std::strstr(line.c_str(), "\"batch\": ");
      const char* pt = std::strstr(line.c_str(), "\"threads\": ");
      const char* ps = std::strstr(line.c_str(), "\"samples_per_second\": ");
      if (pb && pt && ps && std::sscanf(pb, "\"batch\": %d", &b) == 1 &&
          std::sscanf(pt, "\"threads\": %d", &t) == 1 && std::sscanf(ps, "\"samples_per_second\": %lf", &sps) == 1) {
        out[{b, t}] = sps;
      }
    }
  }
  if (!all.ok() || out.empty()) {
    const std::string why = all.ok() ? *all : all.status().message();  // the cause is at its end
    return Status::Unavailable("the PyTorch peer failed (is python3-torch installed? scripts/install-deps.sh "
                               "--bench): " + (why.size() > 600 ? "..." + why.substr(why.size() - 600) : why));
  }
  return out;
}

}  // namespace

Status RunBenchKernelsCommand(const BenchKernelsFlags& f, const std::atomic<bool>* interrupted) {
  for (int b : f.batch_sizes) {
    if (b < 1) return Status::InvalidArgument("--batch-sizes: must be >= 1, got " + std::to_string(b));
  }
  for (int t : f.threads) {
    if (t < 1) return Status::InvalidArgument("--threads: must be >= 1, got " + std::to_string(t));
  }
  std::printf("geomx bench kernels: geomx-cnn training step (forward, cross-entropy, backward, Adam), "
              "%d timed iterations after %d warm-up\n", f.iterations, f.warmup);
  std::map<std::pair<int, int>, double> ours;
  for (int b : f.batch_sizes) {
    for (int t : f.threads) {
      GEOMX_ASSIGN_OR_RETURN(double sps, MeasureGeomx(b, t, f.iterations, f.warmup));
      ours[{b, t}] = sps;
    }
  }
  std::map<std::pair<int, int>, double> torch;
  std::string torch_note;
  if (!f.skip_torch) {
    auto r = MeasureTorch(f, interrupted);
    if (r.ok()) {
      torch = std::move(r).value();
    } else if (r.status().code() == StatusCode::kCancelled) {
      return r.status();
    } else {
      torch_note = r.status().message();
    }
  }
  std::printf("\n%6s %8s %16s %16s %8s\n", "batch", "threads", "geomx samples/s", "torch samples/s", "ratio");
  JsonObject json;
  std::string rows;
  for (const auto& [key, sps] : ours) {
    const auto it = torch.find(key);
    const double peer = it == torch.end() ? 0.0 : it->second;
    char ratio[32] = "-";
    char peer_s[32] = "-";
    if (peer > 0) {
      std::snprintf(ratio, sizeof(ratio), "%.2fx", sps / peer);
      std::snprintf(peer_s, sizeof(peer_s), "%.0f", peer);
    }
    std::printf("%6d %8d %16.0f %16s %8s\n", key.first, key.second, sps, peer_s, ratio);
    JsonObject row;
    row.Add("batch", key.first).Add("threads", key.second).Add("geomx_samples_per_second", sps);
    if (peer > 0) row.Add("torch_samples_per_second", peer).Add("ratio", sps / peer);
    if (!rows.empty()) rows += ", ";
    rows += row.str();
  }
  if (!torch_note.empty()) std::printf("\nPyTorch peer not measured: %s\n", torch_note.c_str());
  if (!f.json_out.empty()) {
    json.AddRaw("rows", "[" + rows + "]");
    std::ofstream out(f.json_out);
    out << json.str() << "\n";
    if (!out) return Status::InvalidArgument("--json " + f.json_out + ": cannot write");
  }
  return Status::Ok();
}

}  // namespace geomx::bench
