#include "algorithms/estimators/estimator.h"

#include <map>

#include "engine/base/closest_name.h"

namespace geomx::algorithms {
namespace {

std::map<std::string, EstimatorDef>& Table() {
  static std::map<std::string, EstimatorDef> table;
  return table;
}

}  // namespace

double MetricValue(const Metrics& metrics, const std::string& name, double fallback) {
  for (const Metric& m : metrics) {
    if (m.name == name) return m.value;
  }
  return fallback;
}

Metrics Estimator::ModelMetrics(const data::Table&, const Prediction&) const { return {}; }

std::vector<RowTableSpec> Estimator::RowTables(int64_t, int) const { return {}; }

std::vector<Artefact> Estimator::Artefacts() const { return {}; }

Result<Prediction> Estimator::PredictAcross(const data::Table& input, int threads, Collective*) const {
  return Predict(input, threads);
}

bool EstimatorRegistry::Add(EstimatorDef def) {
  std::string name = def.name;
  return Table().emplace(std::move(name), std::move(def)).second;
}

const EstimatorDef* EstimatorRegistry::Find(const std::string& name) {
  auto it = Table().find(name);
  return it == Table().end() ? nullptr : &it->second;
}

std::vector<const EstimatorDef*> EstimatorRegistry::All() {
  std::vector<const EstimatorDef*> out;
  for (const auto& [name, def] : Table()) out.push_back(&def);
  return out;
}

std::vector<std::string> EstimatorRegistry::Names() {
  std::vector<std::string> out;
  for (const auto& [name, def] : Table()) out.push_back(name);
  return out;
}

Result<std::unique_ptr<Estimator>> CreateEstimator(const std::string& name,
                                                   const std::map<std::string, std::string>& params) {
  const EstimatorDef* def = EstimatorRegistry::Find(name);
  if (def == nullptr) {
    std::string known;
    for (const std::string& n : EstimatorRegistry::Names()) known += (known.empty() ? "" : ", ") + n;
    std::string hint = ClosestName(name, EstimatorRegistry::Names());
    return Status::NotFound("unknown algorithm '" + name + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                            "; trainable: " + known);
  }
  std::vector<ParamProblem> problems;
  ParamValues values = ResolveParams(def->params, params, &problems);
  GEOMX_RETURN_IF_ERROR(ParamProblemsStatus("", problems));
  return def->create(values);
}

}  // namespace geomx::algorithms
