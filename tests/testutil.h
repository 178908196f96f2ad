// Shared test helpers: devices to parameterise over, scratch directories, float comparisons, running the geomx
// binary. Test-only code.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend_registry.h"
#include "engine/tensor.h"

namespace geomx::testing {

// A fresh, empty directory under the system temp dir, removed when the object dies.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

void WriteFile(const std::filesystem::path& path, const std::string& contents);
std::string ReadFile(const std::filesystem::path& path);

// Max |a - b| over two equally shaped tensors (any device, any float dtype).
float MaxAbsDiff(const Tensor& a, const Tensor& b);
// EXPECTs every element of `actual` within atol + rtol*|expected|; reports the first few mismatches.
::testing::AssertionResult AllClose(const Tensor& actual, const Tensor& expected, float rtol = 1e-4f,
                                    float atol = 1e-5f);
::testing::AssertionResult AllClose(const std::vector<float>& actual, const std::vector<float>& expected,
                                    float rtol = 1e-4f, float atol = 1e-5f);

// A tensor filled with reproducible values uniform in [lo, hi).
Tensor RandomTensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f,
                    Device device = Device::Cpu());

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// A small synthetic training recipe (mlp on 512 generated examples, 2 epochs): a few seconds of training.
extern const char kSmokeRecipe[];

// Runs `command` through /bin/sh with stdin from /dev/null: its exit code (128 + signal when killed) and its
// stdout and stderr together.
CommandResult RunShell(const std::string& command);
// Runs the built geomx binary with `args` (shell-quoted by the caller when needed), in `cwd` when non-empty.
CommandResult RunGeomx(const std::string& args, const std::filesystem::path& cwd = {});
// The source tree (for recipes/ and fixtures).
std::filesystem::path SourceDir();

}  // namespace geomx::testing
