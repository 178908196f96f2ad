// What the kernel SVM (kernel_svm.cc) shares with its cascade reducer (svm_cascade.cc): the solver settings and one
// SMO fit of a table, reduced to the rows that became support vectors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/estimators/estimator.h"
#include "algorithms/estimators/smo.h"
#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::algorithms::svm {

struct SvmConfig {
  smo::KernelSpec kernel;  // gamma resolved at Fit time when it is a word
  std::string gamma_word;  // "scale" | "auto" | "" (a number)
  double C = 1;
  double epsilon = 0.1;
  smo::SolverOptions solver;
};

// The rows of `train` that are support vectors of its model (one-vs-one C-SVC, or epsilon-SVR when `regression`).
Result<std::vector<int64_t>> SupportVectorRows(const data::Table& train, const SvmConfig& config, bool regression,
                                               const FitContext& context);

// Classes with at least one row of positive weight.
int CountClasses(const data::Table& t);

// Appends the rows of `more` (dense, same columns) to `into`.
void AppendRows(const data::Table& more, data::Table* into);

}  // namespace geomx::algorithms::svm
