// A trained estimator with everything `geomx predict` and `geomx eval` need to use it on raw input: the algorithm
// and its resolved parameters, the task, the column count, the class names, the fitted scaler and the data format
// it was trained on. Stored as one model file (model_file.h; docs/formats.md "Estimator model file"), in the run
// folder as model.gxm.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "datasets/table.h"

namespace geomx::algorithms {

struct FittedModel {
  std::string algorithm;                      // registry name
  std::map<std::string, std::string> params;  // resolved, as text
  data::TableTask task = data::TableTask::kClassification;
  int64_t num_features = 0;
  int num_classes = 0;
  std::vector<std::string> class_names;
  data::Scaler scaler;
  std::string data_format;  // DataConfig::name of the training data ("csv", "libsvm", "fashion-mnist", ...)
  std::unique_ptr<Estimator> estimator;
};

// The file name of the model inside a run folder.
inline constexpr const char* kModelFileName = "model.gxm";

Status SaveFittedModel(const std::string& path, const FittedModel& model);
// kNotFound for a missing file, kDataLoss for a malformed one, kInvalidArgument for an algorithm this build lacks.
Result<FittedModel> LoadFittedModel(const std::string& path);

// Applies the model's scaler to `raw` (a table read from a file), checks its column count, and predicts.
Result<Prediction> PredictRaw(const FittedModel& model, data::Table raw, int threads);

}  // namespace geomx::algorithms
