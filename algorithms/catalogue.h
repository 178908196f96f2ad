// The catalogue of GeoMX's 25 algorithms in 6 categories (../shared/reference/ml-suite.md): what each is, how it
// is distributed over the hierarchical parameter server, and whether this build can train it. `geomx algos`
// prints it. An entry is marked available only when a recipe can train it end to end in this build.
#pragma once

#include <string>
#include <vector>

namespace geomx::algorithms {

struct AlgorithmInfo {
  int number;                // 1..25, GeoMX's order
  std::string category;      // "gradient-descent", "ensemble", "support-vector", "mapreduce", "online", "incremental"
  std::string id;            // recipe name, e.g. "cnn", "gbdt", "kmeans"
  std::string title;         // "Convolutional Neural Network"
  std::string distribution;  // what crosses the parameter server (push / pull / reducer)
  std::string recipe;        // how to train it in this build ("model: {name: geomx-cnn}"), empty when unavailable
  bool available;            // trainable in this build: set from the estimator registry (estimators/estimator.h)
  std::vector<std::string> estimators;  // the registered estimators that implement it ("svm", "linear-svm")
};

// All 25 entries, in GeoMX's order. An entry is available when one of its estimators is registered (or it is the
// CNN, trained through `model:`).
const std::vector<AlgorithmInfo>& Catalogue();

}  // namespace geomx::algorithms
