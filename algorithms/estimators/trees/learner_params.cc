#include "algorithms/estimators/trees/learner_params.h"

namespace geomx::algorithms::trees {

std::vector<ParamSpec> TreeLearnerParams() {
  return {
      ChoiceParam("tree_learner", "exact", {"exact", "voting"},
                  "across data centres: exact sums every histogram over the job; voting (PV-Tree) lets each data "
                  "centre vote for its top_k features per node and sums only the most voted features' histograms "
                  "over the WAN (one process or one data centre: exact either way)"),
      IntParam("top_k", 20, 1, 1 << 20, "tree_learner voting: features each data centre votes for per node"),
  };
}

void SetTreeLearner(const ParamValues& p, GrowerOptions* options) {
  options->learner = p.Choice("tree_learner") == "voting" ? TreeLearner::kVoting : TreeLearner::kExact;
  options->top_k = static_cast<int>(p.Int("top_k"));
}

}  // namespace geomx::algorithms::trees
