// `geomx bench kernels`: measures training samples/s of geomx-cnn, of the rnn model with an LSTM or GRU of 128
// units, or of the gan algorithm's two-network step (--model), for each batch size x thread count, runs the PyTorch
// peer (bench/peers/torch_cnn.py) on the same configurations in the same run, and prints the ratio. Both sides train on
// the same real Fashion-MNIST batches in the same order (bench/kernels_data.h): geomx opens the data set, computes
// the example order and writes it to a temporary file that the peer reads with the images. No thresholds: the
// numbers are reported, never asserted.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "algorithms/estimators/gan.h"
#include "algorithms/train/trainer.h"
#include "bench/bench_commands.h"
#include "bench/kernels_data.h"
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

struct Measured {
  double samples_per_second = 0;
  double mean_loss = 0;  // over the timed iterations
  std::string layout;    // the peer's thread layout (bench/peers/torch_cnn.py LAYOUTS); empty for geomx
};

// One configuration on the geomx side. Each step assembles batch i of `order` on the host (AssembleKernelsBatch:
// fresh tensors, the data set's normalisation table, labels), then TrainStep: zero the gradients, forward,
// cross-entropy, backward, Adam, read back the loss and the correct count.
Result<Measured> MeasureGeomx(const data::Dataset& train, const std::vector<int64_t>& order, const std::string& net,
                              int batch, int threads, int iterations, int warmup) {
  BackendFor(DeviceKind::kCpu).SetNumThreads(threads);
  nn::ModelConfig mc;  // geomx-cnn on 1x28x28, 10 classes
  if (net != "cnn") {  // the rnn model: one recurrent layer of 128 units over the 28 rows
    mc.name = "rnn";
    mc.cell = net;
    mc.hidden = {128};
  }
  Rng rng(0);
  GEOMX_ASSIGN_OR_RETURN(auto model, nn::CreateModel(mc, rng));
  nn::OptimizerConfig oc;  // adam, lr 0.001
  GEOMX_ASSIGN_OR_RETURN(auto opt, nn::CreateOptimizer(oc));
  const auto params = model->Parameters();
  model->Train();
  train::LocalUpdate update(opt.get());
  std::chrono::steady_clock::time_point t0;
  double loss_sum = 0;
  for (int i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) t0 = std::chrono::steady_clock::now();
    const data::Batch b = AssembleKernelsBatch(train, order, i, batch);
    GEOMX_ASSIGN_OR_RETURN(train::StepStats s, train::TrainStep(*model, update, params, b.x, b.y, i));
    if (i >= warmup) loss_sum += s.loss;
  }
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Measured{static_cast<double>(batch) * iterations / dt, loss_sum / iterations};
}

// The gan algorithm's iteration (algorithms/estimators/gan.h, GanTrainer::Step, the code `geomx train` runs for
// `algorithm: {name: gan}`): each step assembles batch i as for the cnn, maps the normalised pixels back to [-1, 1]
// ((x * 0.3530 + 0.2860) * 2 - 1: the data set's normalisation undone), draws z ~ N(0, I) [batch, 100], then the D
// step on the batch and as many fakes and the G step, each with Adam (lr 2e-4, beta1 0.5). Reports D's loss.
Result<Measured> MeasureGan(const data::Dataset& train, const std::vector<int64_t>& order, int batch, int threads,
                            int iterations, int warmup) {
  BackendFor(DeviceKind::kCpu).SetNumThreads(threads);
  algorithms::GanNetworks nets(algorithms::GanShape{}, 0);  // G 100-256-512-784, D 784-512-256-1
  algorithms::GanTrainer trainer(&nets, algorithms::GanAdam{}, nullptr);
  Rng rng(1);
  std::chrono::steady_clock::time_point t0;
  double loss_sum = 0;
  for (int i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) t0 = std::chrono::steady_clock::now();
    const data::Batch b = AssembleKernelsBatch(train, order, i, batch);
    Tensor real = b.x.Reshape(Shape{batch, 784});
    float* x = real.data<float>();
    for (int64_t k = 0; k < real.numel(); ++k) x[k] = (x[k] * 0.3530f + 0.2860f) * 2.0f - 1.0f;
    Tensor z = Tensor::Empty(Shape{batch, 100});
    float* v = z.data<float>();
    for (int64_t k = 0; k < z.numel(); ++k) v[k] = static_cast<float>(rng.Normal());
    GEOMX_ASSIGN_OR_RETURN(const algorithms::GanStepStats s, trainer.Step(real, z));
    if (i >= warmup) loss_sum += s.d_loss;
  }
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Measured{static_cast<double>(batch) * iterations / dt, loss_sum / iterations};
}

// A temporary file, removed when the object dies.
class TempFile {
 public:
  TempFile() {
    std::error_code ec;
    fs::path dir = fs::temp_directory_path(ec);
    if (ec) dir = "/tmp";
    std::string templ = (dir / "geomx-kernels-order-XXXXXX").string();
    const int fd = mkstemp(templ.data());
    if (fd >= 0) {
      close(fd);
      path_ = templ;
    }
  }
  ~TempFile() {
    std::error_code ec;
    if (!path_.empty()) fs::remove(path_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }  // empty when it could not be created

 private:
  std::string path_;
};

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

// The number after `"key": ` in `line`, or false.
bool NumberAfter(const std::string& line, const char* key, double* out) {
  const std::string k = std::string("\"") + key + "\": ";
  const size_t at = line.find(k);
  if (at == std::string::npos) return false;
  char* end = nullptr;
  *out = std::strtod(line.c_str() + at + k.size(), &end);
  return end != line.c_str() + at + k.size();
}

// The string after `"key": "` in `line` up to the next quote, or "" (the peer writes plain names).
std::string WordAfter(const std::string& line, const char* key) {
  const std::string k = std::string("\"") + key + "\": \"";
  const size_t at = line.find(k);
  if (at == std::string::npos) return "";
  const size_t end = line.find('"', at + k.size());
  return end == std::string::npos ? "" : line.substr(at + k.size(), end - at - k.size());
}

// Runs the PyTorch peer on the data in `data_dir` with the example order in `order_file`; returns (batch, threads)
// -> its figures, or an explanation of why it could not run.
Result<std::map<std::pair<int, int>, Measured>> MeasureTorch(const BenchKernelsFlags& f, const std::string& data_dir,
                                                             const std::string& order_file,
                                                             const std::atomic<bool>* interrupted) {
  const fs::path script = f.torch_script.empty() ? DefaultTorchScript() : fs::path(f.torch_script);
  if (!fs::exists(script)) return Status::NotFound("PyTorch peer script not found: " + script.string());
  Result<std::string> all = cli::RunAndCapture(
      {f.python, script.string(), "--model", f.model, "--data", data_dir, "--order", order_file, "--batch-sizes",
       Join(f.batch_sizes), "--threads", Join(f.threads), "--iterations", std::to_string(f.iterations), "--warmup",
       std::to_string(f.warmup)},
      interrupted);
  if (!all.ok() && all.status().code() == StatusCode::kCancelled) return all.status();
  std::map<std::pair<int, int>, Measured> out;
  if (all.ok()) {
    std::string_view rest = *all;
    while (!rest.empty()) {
      const std::string line(rest.substr(0, rest.find('\n')));
      rest.remove_prefix(std::min(rest.size(), line.size() + 1));
      double b = 0, t = 0;
      Measured m;
      if (NumberAfter(line, "batch", &b) && NumberAfter(line, "threads", &t) &&
          NumberAfter(line, "samples_per_second", &m.samples_per_second) &&
          NumberAfter(line, "mean_loss", &m.mean_loss)) {
        m.layout = WordAfter(line, "layout");
        out[{static_cast<int>(b), static_cast<int>(t)}] = m;
      }
    }
  }
  if (!all.ok() || out.empty()) {
    const std::string why = all.ok() ? *all : all.status().message();  // the cause is at its end
    return Status::Unavailable("the PyTorch peer failed (are python3-torch and python3-numpy installed? "
                               "scripts/install-deps.sh --bench): " +
                               (why.size() > 600 ? "..." + why.substr(why.size() - 600) : why));
  }
  return out;
}

}  // namespace

Status RunBenchKernelsCommand(const BenchKernelsFlags& f, const std::atomic<bool>* interrupted) {
  if (f.batch_sizes.empty()) return Status::InvalidArgument("--batch-sizes: give at least one batch size");
  if (f.threads.empty()) return Status::InvalidArgument("--threads: give at least one thread count");
  for (int b : f.batch_sizes) {
    if (b < 1) return Status::InvalidArgument("--batch-sizes: must be >= 1, got " + std::to_string(b));
  }
  for (int t : f.threads) {
    if (t < 1) return Status::InvalidArgument("--threads: must be >= 1, got " + std::to_string(t));
  }
  std::string data_dir;
  GEOMX_ASSIGN_OR_RETURN(const std::shared_ptr<const data::Dataset> train, OpenKernelsTrainingSet(f.data, &data_dir));
  const std::vector<int64_t> order = KernelsExampleOrder(train->size(), kKernelsOrderSeed);
  const std::string what = f.model == "cnn"   ? "geomx-cnn training step (batch assembly, forward, cross-entropy, "
                                                 "backward, Adam)"
                           : f.model == "gan" ? "gan training step (batch assembly, noise, D step on the batch and "
                                                "as many fakes, G step; binary cross-entropy, Adam for each)"
                                              : "rnn (" + f.model + ", 128 units) training step (batch assembly, "
                                                "forward, cross-entropy, backward, Adam)";
  std::printf("geomx bench kernels: %s, %d timed iterations after %d warm-up\n"
              "  data: the Fashion-MNIST training set in %s (%lld examples); both sides train on the same batches in "
              "the same order (order seed %llu)\n",
              what.c_str(), f.iterations, f.warmup, data_dir.c_str(), static_cast<long long>(train->size()),
              static_cast<unsigned long long>(kKernelsOrderSeed));
  std::map<std::pair<int, int>, Measured> ours;
  for (int b : f.batch_sizes) {
    for (int t : f.threads) {
      GEOMX_ASSIGN_OR_RETURN(ours[std::make_pair(b, t)],
                             f.model == "gan" ? MeasureGan(*train, order, b, t, f.iterations, f.warmup)
                                              : MeasureGeomx(*train, order, f.model, b, t, f.iterations, f.warmup));
    }
  }
  std::map<std::pair<int, int>, Measured> torch;
  std::string torch_note;
  if (!f.skip_torch) {
    TempFile order_file;
    const Status written = order_file.path().empty()
                               ? Status::Unavailable("cannot create a temporary file for the example order")
                               : WriteKernelsOrder(order, order_file.path());
    auto r = written.ok() ? MeasureTorch(f, data_dir, order_file.path(), interrupted)
                          : Result<std::map<std::pair<int, int>, Measured>>(written);
    if (r.ok()) {
      torch = std::move(r).value();
    } else if (r.status().code() == StatusCode::kCancelled) {
      return r.status();
    } else {
      torch_note = r.status().message();
    }
  }
  std::printf("\n%6s %8s %16s %16s %8s %11s %11s\n", "batch", "threads", "geomx samples/s", "torch samples/s", "ratio",
              "geomx loss", "torch loss");
  JsonObject json;
  std::string rows;
  std::string layouts;  // the peer's faster thread layout of each multi-threaded row
  for (const auto& [key, m] : ours) {
    const auto it = torch.find(key);
    const double peer = it == torch.end() ? 0.0 : it->second.samples_per_second;
    char ratio[32] = "-";
    char peer_s[32] = "-";
    char peer_loss[32] = "-";
    if (peer > 0) {
      std::snprintf(ratio, sizeof(ratio), "%.2fx", m.samples_per_second / peer);
      std::snprintf(peer_s, sizeof(peer_s), "%.0f", peer);
      std::snprintf(peer_loss, sizeof(peer_loss), "%.4f", it->second.mean_loss);
    }
    std::printf("%6d %8d %16.0f %16s %8s %11.4f %11s\n", key.first, key.second, m.samples_per_second, peer_s, ratio,
                m.mean_loss, peer_loss);
    JsonObject row;
    row.Add("batch", key.first).Add("threads", key.second).Add("geomx_samples_per_second", m.samples_per_second);
    row.Add("geomx_mean_loss", m.mean_loss);
    if (peer > 0) {
      row.Add("torch_samples_per_second", peer).Add("ratio", m.samples_per_second / peer);
      row.Add("torch_mean_loss", it->second.mean_loss);
      if (!it->second.layout.empty()) row.Add("torch_layout", it->second.layout);
      if (key.second > 1 && !it->second.layout.empty()) {
        layouts += (layouts.empty() ? "" : ", ") + it->second.layout + " at batch " + std::to_string(key.first) +
                   ", " + std::to_string(key.second) + " threads";
      }
    }
    if (!rows.empty()) rows += ", ";
    rows += row.str();
  }
  std::printf("(loss: mean training loss of the timed iterations%s; both sides see the same batches)\n",
              f.model == "gan" ? ", D's; the noise is each side's own" : "");
  if (!layouts.empty()) {
    std::printf("(torch with several threads: the faster of its thread layouts shared / blas, "
                "bench/peers/torch_cnn.py: %s)\n",
                layouts.c_str());
  }
  if (!torch_note.empty()) std::printf("\nPyTorch peer not measured: %s\n", torch_note.c_str());
  if (!f.json_out.empty()) {
    cli::AddMachineAndDate(&json);
    json.Add("model", f.model).Add("data", data_dir).Add("order_seed", static_cast<uint64_t>(kKernelsOrderSeed));
    json.Add("iterations", f.iterations).Add("warmup", f.warmup);
    json.AddRaw("rows", "[" + rows + "]");
    std::ofstream out(f.json_out);
    out << json.str() << "\n";
    if (!out) return Status::InvalidArgument("--json " + f.json_out + ": cannot write");
  }
  return Status::Ok();
}

}  // namespace geomx::bench
