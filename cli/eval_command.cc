#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/estimator_run.h"
#include "cli/json_writer.h"
#include "cli/recipe.h"
#include "cli/run_dir.h"
#include "cli/setup.h"
#include "algorithms/train/trainer.h"
#include "nn/checkpoint.h"

namespace geomx::cli {
namespace fs = std::filesystem;

Status RunEvalCommand(const std::string& checkpoint, const std::string& recipe_path,
                      const std::vector<std::string>& sets, bool json) {
  std::error_code ec;
  std::string path = recipe_path;
  if (path.empty()) {  // a run folder carries its resolved recipe
    const fs::path recorded = fs::path(checkpoint) / "recipe.yaml";
    if (!fs::is_directory(checkpoint, ec) || !fs::exists(recorded, ec)) {
      return Status::InvalidArgument("eval " + checkpoint +
                                     ": give the RECIPE the model was trained with (only a run folder holds its own)");
    }
    path = recorded.string();
  }
  GEOMX_ASSIGN_OR_RETURN(Recipe recipe, LoadRecipe(path, sets));
  if (recipe.has_algorithm) return EvalAlgorithmRun(checkpoint, recipe, json);
  fs::path ckpt = checkpoint;
  if (fs::is_directory(ckpt, ec)) {
    GEOMX_ASSIGN_OR_RETURN(ckpt, RunDir::LastCheckpoint(ckpt));
  } else if (!fs::exists(ckpt, ec)) {
    return Status::NotFound(checkpoint + ": no such checkpoint file or run folder");
  }
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe, /*start_weights=*/false));
  nn::CheckpointMeta meta;
  Status st = nn::LoadCheckpoint(ckpt, *setup.model, nullptr, &meta);
  if (!st.ok()) return st.WithContext(ckpt.string());
  const std::vector<int64_t> scored = train::ScoredClasses(recipe.data);
  const train::EvalResult r = train::Evaluate(*setup.model, *setup.data.test, setup.device, 500, 0, scored);
  std::string among;  // data.score_within_classes: the classes every prediction is chosen among
  for (int64_t c : scored) {
    if (!among.empty()) among += ", ";
    among += std::to_string(c);
  }
  if (json) {
    JsonObject j;
    j.Add("checkpoint", ckpt.string())
        .Add("iteration", meta.iteration)
        .Add("test_accuracy", r.accuracy)
        .Add("test_loss", r.loss)
        .Add("test_examples", r.examples);
    if (!scored.empty()) j.AddRaw("scored_within_classes", std::string("[").append(among).append("]"));
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("checkpoint %s (iteration %lld, model %s)\ntest accuracy %.4f  test loss %.4f  (%lld examples%s)\n",
                ckpt.c_str(), static_cast<long long>(meta.iteration), meta.model_name.c_str(), r.accuracy,
                r.loss, static_cast<long long>(r.examples),
                scored.empty() ? "" : std::string("; predicted among classes ").append(among).c_str());
  }
  return Status::Ok();
}

}  // namespace geomx::cli
