#include "algorithms/estimators/model_io.h"

#include <iterator>

namespace geomx::algorithms {
namespace {

constexpr const char* kTasks[] = {"classification", "regression", "ranking", "clustering", "control"};

std::string JoinLines(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += s + "\n";
  return out;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

Status SaveFittedModel(const std::string& path, const FittedModel& model) {
  ModelWriter w;
  w.PutString("meta.algorithm", model.algorithm);
  std::string params;
  for (const auto& [k, v] : model.params) params += k + "=" + v + "\n";
  w.PutString("meta.params", params);
  w.PutString("meta.task", kTasks[static_cast<int>(model.task)]);
  w.PutString("meta.data_format", model.data_format);
  w.PutNumber("meta.num_features", static_cast<double>(model.num_features));
  w.PutNumber("meta.num_classes", model.num_classes);
  w.PutString("meta.class_names", JoinLines(model.class_names));
  w.PutString("meta.scale", data::ScaleKindName(model.scaler.kind));
  w.PutFloats("meta.scale_offset", model.scaler.offset);
  w.PutFloats("meta.scale_factor", model.scaler.scale);
  model.estimator->Save(&w);
  return w.WriteTo(path);
}

Result<FittedModel> LoadFittedModel(const std::string& path) {
  GEOMX_ASSIGN_OR_RETURN(ModelReader r, ModelReader::ReadFrom(path));
  FittedModel m;
  GEOMX_RETURN_IF_ERROR(r.GetString("meta.algorithm", &m.algorithm));
  std::string text;
  GEOMX_RETURN_IF_ERROR(r.GetString("meta.params", &text));
  for (const std::string& line : SplitLines(text)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return Status::DataLoss(path + ": malformed parameter line '" + line + "'");
    m.params[line.substr(0, eq)] = line.substr(eq + 1);
  }
  GEOMX_RETURN_IF_ERROR(r.GetString("meta.task", &text));
  bool known = false;
  for (int t = 0; t < static_cast<int>(std::size(kTasks)); ++t) {
    if (text == kTasks[t]) {
      m.task = static_cast<data::TableTask>(t);
      known = true;
    }
  }
  if (!known) return Status::DataLoss(path + ": unknown task '" + text + "'");
  GEOMX_RETURN_IF_ERROR(r.GetString("meta.data_format", &m.data_format));
  double number = 0;
  GEOMX_RETURN_IF_ERROR(r.GetNumber("meta.num_features", &number));
  if (!(number >= 1 && number < 1e12)) return Status::DataLoss(path + ": bad feature count");
  m.num_features = static_cast<int64_t>(number);
  GEOMX_RETURN_IF_ERROR(r.GetNumber("meta.num_classes", &number));
  if (!(number >= 0 && number < 1e9)) return Status::DataLoss(path + ": bad class count");
  m.num_classes = static_cast<int>(number);
  GEOMX_RETURN_IF_ERROR(r.GetString("meta.class_names", &text));
  m.class_names = SplitLines(text);
  GEOMX_RETURN_IF_ERROR(r.GetString("meta.scale", &text));
  if (!data::ParseScaleKind(text, &m.scaler.kind)) return Status::DataLoss(path + ": unknown scale '" + text + "'");
  const int64_t scale_len = m.scaler.empty() ? 0 : m.num_features;
  GEOMX_RETURN_IF_ERROR(r.GetFloats("meta.scale_offset", &m.scaler.offset, scale_len));
  GEOMX_RETURN_IF_ERROR(r.GetFloats("meta.scale_factor", &m.scaler.scale, scale_len));
  auto created = CreateEstimator(m.algorithm, m.params);
  if (!created.ok()) return created.status().WithContext(path);
  m.estimator = std::move(created).value();
  GEOMX_RETURN_IF_ERROR(m.estimator->Load(r));
  return m;
}

Result<Prediction> PredictRaw(const FittedModel& model, data::Table raw, int threads) {
  if (raw.cols != model.num_features) {
    return Status::InvalidArgument(raw.source + ": " + std::to_string(raw.cols) +
                                   " features per row, the model was trained on " +
                                   std::to_string(model.num_features));
  }
  GEOMX_RETURN_IF_ERROR(data::ApplyScaler(model.scaler, &raw));
  return model.estimator->Predict(raw, threads);
}

}  // namespace geomx::algorithms
