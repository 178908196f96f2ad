// One worker of a classical-estimator job across data centres: joins its data centre's tier with the estimator
// job's keys (estimators/ps_collective.h), fits on its shard of the training table through a PsCollective, and
// returns the outcome (every worker ends with the same model). The master worker sends the job with
// EstimatorJobSchema() and no initial values; schedulers and servers are the usual roles (roles.h).
#pragma once

#include <atomic>
#include <string>

#include "algorithms/cluster/cluster_config.h"
#include "algorithms/estimators/fit_job.h"

namespace geomx::cluster {

// Runs worker `rank` of data centre `party`. `observer` (may be null) sees the fit's steps. Errors: the tier's,
// the job's (data, parameters, estimator); kCancelled when interrupted.
Result<algorithms::EstimatorOutcome> RunEstimatorWorker(const ClusterConfig& config, const std::string& party,
                                                        int rank, const algorithms::EstimatorJob& job,
                                                        const RoleEnv& env, algorithms::FitObserver* observer,
                                                        const std::atomic<bool>* interrupted);

}  // namespace geomx::cluster
