// JobDescription: what the master worker tells the global servers before training starts (kControl
// "set-job"), and what local servers fetch from global server 0 (kControl "get-job"): the key schema, how long
// the job runs, the optimizer and its schedule, and the global rule of aggregate/decision keys. With it the
// servers build their key layouts and policies without building a model or opening a data set.
// Wire form: comm::EncodeFields (docs/wire_format.md, "Job description"). Value types; thread-safe to share.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "algorithms/ps/key_schema.h"
#include "engine/base/status.h"
#include "nn/optim/optimizer_config.h"

namespace geomx::ps {

// How long the job runs, in synchronisation rounds of the FSA kind (one per training iteration).
struct JobPlan {
  int64_t iterations_per_epoch = 1;  // >= 1: rounds per epoch (every worker takes part in every round)
  int epochs = 1;                    // >= 1
  int64_t max_iterations = 0;        // 0: none; else the run stops after this many rounds
  // The first round to run: 0, or, for a job resumed from server snapshots (algorithms/cluster/snapshots.h), the
  // round after the snapshots'. Global servers restore their state of round start_round - 1 and workers begin
  // their iteration count (data position, learning-rate schedule) there. < total_rounds().
  int64_t start_round = 0;

  // epochs x iterations_per_epoch: the length the learning-rate schedule is planned over.
  int64_t scheduled_rounds() const { return iterations_per_epoch * epochs; }
  // The rounds the job actually runs: scheduled_rounds(), capped by max_iterations.
  int64_t total_rounds() const;
};

struct JobDescription {
  KeySchema schema;
  JobPlan plan;
  nn::OptimizerConfig optimizer;     // the recipe's optimizer (server-side rule or the workers' own)
  nn::LrScheduleConfig schedule;     // its learning-rate schedule over plan.scheduled_rounds()
  std::string rule;                  // ps/global_rule.h registry name; "" = aggregates answered as they are
  // InitialValuesDigest of the master worker's initial values ("" = not given): a local server that built the
  // same values from the recipe's seed may answer its workers from them instead of fetching them over the WAN.
  std::string init_digest;
};

// A 64-bit FNV-1a hash of every key's values (their float bits, keys in ascending order, each key's number and
// length included), as 16 hex digits.
std::string InitialValuesDigest(const std::map<uint64_t, std::vector<float>>& initial);

// Control bodies (comm::EncodeFields maps with a "command" field).
inline constexpr const char* kSetJobCommand = "set-job";
inline constexpr const char* kGetJobCommand = "get-job";

std::string EncodeJob(const JobDescription& job);                  // a "set-job" body
// Parses a "set-job" body (or the answer to "get-job"). kDataLoss for a malformed body; kInvalidArgument for
// values out of range (naming the field).
Result<JobDescription> DecodeJob(const std::string& body);

// The optimizer settings as typed text fields, and back (kInvalidArgument naming a bad or missing field).
std::map<std::string, std::string> OptimizerFields(const nn::OptimizerConfig& config);
Result<nn::OptimizerConfig> OptimizerFromFields(const std::map<std::string, std::string>& fields);

}  // namespace geomx::ps
