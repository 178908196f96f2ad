#include "algorithms/cluster/estimator_worker.h"

#include "algorithms/cluster/worker_session.h"
#include "algorithms/estimators/ps_collective.h"

namespace geomx::cluster {

Result<algorithms::EstimatorOutcome> RunEstimatorWorker(const ClusterConfig& config, const std::string& party,
                                                        int rank, const algorithms::EstimatorJob& job,
                                                        const RoleEnv& env, algorithms::FitObserver* observer,
                                                        const std::atomic<bool>* interrupted) {
  // The data is opened before joining: the job's keys include the estimator's row tables, sized by the data.
  GEOMX_ASSIGN_OR_RETURN(algorithms::PreparedEstimatorJob prepared, algorithms::PrepareEstimatorJob(job));
  GEOMX_ASSIGN_OR_RETURN(auto session, WorkerSession::Join(config, party, rank, prepared.ps_job.schema, env));
  std::unique_ptr<ps::PsContext> ps = session->MakeContext();
  // Compression in the recipe (fp16 on every link, or the bsc preset) decides how compressible sums travel.
  algorithms::SumCompression sums = algorithms::SumCompression::kNone;
  const comm::LinkCodecConfig& wan = config.links.global.push;
  if (wan.scheme == comm::LinkScheme::kBsc) {
    sums = algorithms::SumCompression::kTopK;
  } else if (config.links.local.compressed || config.links.global.compressed) {
    sums = algorithms::SumCompression::kFp16;
  }
  const int dc = session->dc_index();
  const algorithms::Placement placement{.centre = dc,
                                        .centres = static_cast<int>(config.topology.datacentres.size()),
                                        .centre_rank = rank,
                                        .centre_size = config.topology.datacentres[static_cast<size_t>(dc)].workers};
  algorithms::PsCollective collective(ps.get(), sums, wan.bsc.ratio, placement);
  Result<algorithms::EstimatorOutcome> outcome =
      algorithms::RunEstimatorJob(job, std::move(prepared), observer, interrupted, &collective);
  // After a failure the worker leaves saying why, so its peers fail fast naming the cause instead of hanging.
  if (!outcome.ok()) {
    session->Leave(outcome.status());
    return outcome.status();
  }
  GEOMX_RETURN_IF_ERROR(session->Finish());
  return outcome;
}

}  // namespace geomx::cluster
