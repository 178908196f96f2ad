#include "tests/testutil.h"

#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/base/rng.h"

namespace geomx::testing {

ScratchDir::ScratchDir() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto p = std::filesystem::temp_directory_path() /
             ("geomx_test_" + std::to_string(rd()) + "_" + std::to_string(attempt));
    if (std::filesystem::create_directory(p)) {
      path_ = p;
      return;
    }
  }
  ADD_FAILURE() << "cannot create a scratch directory";
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::filesystem::path& path, const std::string& contents) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f << contents;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  auto va = a.ToFloatVector();
  auto vb = b.ToFloatVector();
  if (va.size() != vb.size()) return INFINITY;
  float m = 0;
  for (size_t i = 0; i < va.size(); ++i) m = std::max(m, std::fabs(va[i] - vb[i]));
  return m;
}

::testing::AssertionResult AllClose(const std::vector<float>& actual, const std::vector<float>& expected,
                                    float rtol, float atol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs " << expected.size();
  }
  int bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < actual.size(); ++i) {
    const float tol = atol + rtol * std::fabs(expected[i]);
    if (!(std::fabs(actual[i] - expected[i]) <= tol)) {
      if (bad < 5) msg << "\n  [" << i << "] actual " << actual[i] << " expected " << expected[i];
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << actual.size() << " elements differ" << msg.str();
}

::testing::AssertionResult AllClose(const Tensor& actual, const Tensor& expected, float rtol, float atol) {
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure() << "shape " << actual.shape().ToString() << " vs "
                                         << expected.shape().ToString();
  }
  return AllClose(actual.ToFloatVector(), expected.ToFloatVector(), rtol, atol);
}

Tensor RandomTensor(const Shape& shape, uint64_t seed, float lo, float hi, Device device) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (auto& x : v) x = lo + (hi - lo) * rng.UniformF();
  return Tensor::FromVector(v, shape, device);
}

const char kSmokeRecipe[] = R"(name: smoke
seed: 3
model: {name: mlp, hidden: [32]}
data:
  name: synthetic
  batch_size: 32
  synthetic_train: 512
  synthetic_test: 256
  synthetic_classes: 4
  synthetic_shape: [16]
optimizer: {name: adam, lr: 0.01}
training: {epochs: 2, log_every: 4}
)";

CommandResult RunShell(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1 < /dev/null").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

CommandResult RunGeomx(const std::string& args, const std::filesystem::path& cwd) {
  std::string cmd;
  if (!cwd.empty()) cmd += "cd '" + cwd.string() + "' && ";
  return RunShell(cmd + std::string("'") + GEOMX_BINARY + "' " + args);
}

std::filesystem::path SourceDir() { return GEOMX_SOURCE_DIR; }

}  // namespace geomx::testing
