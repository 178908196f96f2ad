// The recipe parameters that choose how the tree ensembles' histograms cross data centres (grower.h): shared by
// every estimator built on the tree grower, so they read the same in every recipe.
//   tree_learner  exact (every histogram summed over the job) | voting (PV-Tree: each data centre votes for its
//                 top_k features per node, only the most voted features' histograms cross the WAN)
//   top_k         voting: features each data centre votes for per node
#pragma once

#include <vector>

#include "algorithms/estimators/params.h"
#include "algorithms/estimators/trees/grower.h"

namespace geomx::algorithms::trees {

std::vector<ParamSpec> TreeLearnerParams();
// Sets options->learner and ->top_k from resolved values of TreeLearnerParams().
void SetTreeLearner(const ParamValues& p, GrowerOptions* options);

}  // namespace geomx::algorithms::trees
