// Shared by the tree-ensemble tests: the Ensemble inside a fitted estimator, read back through its model file.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/model_file.h"
#include "algorithms/estimators/trees/tree.h"

namespace geomx::algorithms::testing {

// The ensemble `est` saves under the model-file prefix `prefix` ("xgboost", "lambdamart").
inline trees::Ensemble EnsembleOf(const Estimator& est, const std::string& prefix) {
  ModelWriter w;
  est.Save(&w);
  auto r = ModelReader::Parse(w.Encode(), "model");
  EXPECT_TRUE(r.ok());
  trees::Ensemble e;
  EXPECT_TRUE(e.Load(prefix, *r).ok());
  return e;
}

}  // namespace geomx::algorithms::testing
