// `geomx predict RUN INPUT --out FILE` for a neural-network run (cli/commands.h): the run's recipe rebuilds the
// model, its last checkpoint gives the weights, and INPUT is read in the layout of the training data (an IDX image
// file for mnist / fashion-mnist models; csv or libsvm rows for models trained on tables).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "algorithms/train/trainer.h"
#include "cli/commands.h"
#include "cli/recipe.h"
#include "cli/run_dir.h"
#include "cli/setup.h"
#include "datasets/dataset.h"
#include "datasets/table.h"
#include "nn/checkpoint.h"

namespace geomx::cli {
namespace fs = std::filesystem;

namespace {

// A table's rows as a dataset (features as they are; the table models were trained on the same raw values).
class TableRows final : public data::Dataset {
 public:
  explicit TableRows(data::Table table) : table_(std::move(table)) {
    info_.format = "table";
    info_.source = table_.source;
    info_.example_shape = {table_.cols};
  }
  const data::DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return table_.rows; }
  int64_t Label(int64_t) const override { return 0; }
  void Get(int64_t i, float* out, Rng*) const override { table_.CopyRow(i, out); }

 private:
  data::Table table_;
  data::DatasetInfo info_;
};

}  // namespace

Status RunNeuralPredict(const std::string& run, const std::string& input, const std::string& out) {
  GEOMX_ASSIGN_OR_RETURN(Recipe recipe, LoadRecipe((fs::path(run) / "recipe.yaml").string()));
  GEOMX_ASSIGN_OR_RETURN(RunSetup setup, PrepareRun(recipe, /*start_weights=*/false));
  GEOMX_ASSIGN_OR_RETURN(fs::path ckpt, RunDir::LastCheckpoint(run));
  nn::CheckpointMeta meta;
  Status loaded = nn::LoadCheckpoint(ckpt, *setup.model, nullptr, &meta);
  if (!loaded.ok()) return loaded.WithContext(ckpt.string());

  const data::DatasetInfo& trained = setup.data.train->info();
  int64_t numel = 1;
  for (int64_t d : trained.example_shape) numel *= d;
  std::shared_ptr<const data::Dataset> rows;
  if (recipe.data.name == "mnist" || recipe.data.name == "fashion-mnist") {
    GEOMX_ASSIGN_OR_RETURN(rows, data::OpenIdxImageFile(input, recipe.data));
  } else if (recipe.data.name == "csv" || recipe.data.name == "libsvm") {
    GEOMX_ASSIGN_OR_RETURN(data::Table table, data::ReadTableFile(input, recipe.data, data::TableTask::kClassification,
                                                                  numel, trained.class_names));
    rows = std::make_shared<TableRows>(std::move(table));
  } else {
    return Status::Unimplemented("predict reads IDX images (mnist, fashion-mnist models) or csv/libsvm rows (table "
                                 "models); a " + recipe.data.name + " model is evaluated with geomx eval");
  }
  if (rows->info().example_shape != trained.example_shape) {
    std::string got, want;
    for (int64_t d : rows->info().example_shape) got += (got.empty() ? "" : "x") + std::to_string(d);
    for (int64_t d : trained.example_shape) want += (want.empty() ? "" : "x") + std::to_string(d);
    return Status::InvalidArgument(input + ": examples of shape " + got + ", the model was trained on " + want);
  }
  int64_t classes = 0;
  const std::vector<float> proba = train::PredictProbabilities(*setup.model, *rows, setup.device, 256, &classes,
                                                                train::ScoredClasses(recipe.data));
  std::string text = "prediction";
  auto name_of = [&](int64_t c) {
    return static_cast<size_t>(c) < trained.class_names.size() ? trained.class_names[static_cast<size_t>(c)]
                                                               : std::to_string(c);
  };
  for (int64_t c = 0; c < classes; ++c) text += ",p_" + name_of(c);
  text += "\n";
  char buf[32];
  for (int64_t i = 0; i < rows->size(); ++i) {
    const float* p = proba.data() + i * classes;
    text += name_of(std::max_element(p, p + classes) - p);
    for (int64_t c = 0; c < classes; ++c) {
      std::snprintf(buf, sizeof(buf), ",%.6g", p[c]);
      text += buf;
    }
    text += "\n";
  }
  GEOMX_RETURN_IF_ERROR(WriteFileAtomically(out, text));
  std::printf("geomx: %lld predictions of %s (checkpoint %s) written to %s\n", static_cast<long long>(rows->size()),
              recipe.model.name.c_str(), ckpt.filename().c_str(), out.c_str());
  return Status::Ok();
}

}  // namespace geomx::cli
