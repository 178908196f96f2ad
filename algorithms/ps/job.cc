#include "algorithms/ps/job.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "comm/codec.h"
#include "nn/optim/optimizer.h"

namespace geomx::ps {
namespace {

Status Number(const std::map<std::string, std::string>& f, const char* key, float* out) {
  auto it = f.find(key);
  if (it == f.end()) return Status::InvalidArgument(std::string("job: missing field ") + key);
  char* end = nullptr;
  *out = std::strtof(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end != '\0') return Status::InvalidArgument(std::string("job: bad ") + key);
  return Status::Ok();
}

Status Integer(const std::map<std::string, std::string>& f, const char* key, int64_t lo, int64_t* out) {
  auto it = f.find(key);
  if (it == f.end()) return Status::InvalidArgument(std::string("job: missing field ") + key);
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0' || v < lo) {
    return Status::InvalidArgument(std::string("job: bad ") + key + " '" + it->second + "'");
  }
  *out = v;
  return Status::Ok();
}

}  // namespace

int64_t JobPlan::total_rounds() const {
  const int64_t all = scheduled_rounds();
  return max_iterations > 0 ? std::min(all, max_iterations) : all;
}

std::map<std::string, std::string> OptimizerFields(const nn::OptimizerConfig& c) {
  return {{"name", c.name},       {"lr", comm::NumberField(c.lr)},       {"weight_decay", comm::NumberField(c.weight_decay)},
          {"momentum", comm::NumberField(c.momentum)}, {"beta1", comm::NumberField(c.beta1)}, {"beta2", comm::NumberField(c.beta2)},
          {"rho", comm::NumberField(c.rho)},           {"eps", comm::NumberField(c.eps)},
          {"l1", comm::NumberField(c.l1)},             {"ftrl_beta", comm::NumberField(c.ftrl_beta)}};
}

Result<nn::OptimizerConfig> OptimizerFromFields(const std::map<std::string, std::string>& f) {
  nn::OptimizerConfig c;
  auto name = f.find("name");
  if (name == f.end()) return Status::InvalidArgument("optimizer settings: missing field name");
  c.name = name->second;
  GEOMX_RETURN_IF_ERROR(Number(f, "lr", &c.lr));
  GEOMX_RETURN_IF_ERROR(Number(f, "weight_decay", &c.weight_decay));
  GEOMX_RETURN_IF_ERROR(Number(f, "momentum", &c.momentum));
  GEOMX_RETURN_IF_ERROR(Number(f, "beta1", &c.beta1));
  GEOMX_RETURN_IF_ERROR(Number(f, "beta2", &c.beta2));
  GEOMX_RETURN_IF_ERROR(Number(f, "rho", &c.rho));
  GEOMX_RETURN_IF_ERROR(Number(f, "eps", &c.eps));
  GEOMX_RETURN_IF_ERROR(Number(f, "l1", &c.l1));
  GEOMX_RETURN_IF_ERROR(Number(f, "ftrl_beta", &c.ftrl_beta));
  GEOMX_RETURN_IF_ERROR(nn::ValidateOptimizerConfig(c));
  return c;
}

std::string EncodeJob(const JobDescription& job) {
  std::map<std::string, std::string> f = OptimizerFields(job.optimizer);
  f["command"] = kSetJobCommand;
  f["keys"] = job.schema.Encode();
  f["iterations_per_epoch"] = std::to_string(job.plan.iterations_per_epoch);
  f["epochs"] = std::to_string(job.plan.epochs);
  f["max_iterations"] = std::to_string(job.plan.max_iterations);
  f["start_round"] = std::to_string(job.plan.start_round);
  f["schedule"] = job.schedule.name;
  f["schedule.step_epochs"] = std::to_string(job.schedule.step_epochs);
  f["schedule.gamma"] = comm::NumberField(job.schedule.gamma);
  f["schedule.min_lr"] = comm::NumberField(job.schedule.min_lr);
  f["schedule.warmup_iterations"] = std::to_string(job.schedule.warmup_iterations);
  f["rule"] = job.rule;
  if (!job.init_digest.empty()) f["init_digest"] = job.init_digest;
  return comm::EncodeFields(f);
}

Result<JobDescription> DecodeJob(const std::string& body) {
  std::map<std::string, std::string> f;
  GEOMX_RETURN_IF_ERROR(comm::DecodeFields(body, &f));
  if (f["command"] != kSetJobCommand) {
    return Status::DataLoss("job: expected a '" + std::string(kSetJobCommand) + "' body, got command '" +
                            f["command"] + "'");
  }
  JobDescription job;
  GEOMX_ASSIGN_OR_RETURN(job.schema, KeySchema::Decode(f["keys"]));
  int64_t v = 0;
  GEOMX_RETURN_IF_ERROR(Integer(f, "iterations_per_epoch", 1, &job.plan.iterations_per_epoch));
  GEOMX_RETURN_IF_ERROR(Integer(f, "epochs", 1, &v));
  job.plan.epochs = static_cast<int>(std::min<int64_t>(v, INT32_MAX));
  GEOMX_RETURN_IF_ERROR(Integer(f, "max_iterations", 0, &job.plan.max_iterations));
  GEOMX_RETURN_IF_ERROR(Integer(f, "start_round", 0, &job.plan.start_round));
  if (job.plan.start_round >= job.plan.total_rounds()) {
    return Status::InvalidArgument("job: start_round " + std::to_string(job.plan.start_round) +
                                   " is not before the job's end (" + std::to_string(job.plan.total_rounds()) +
                                   " rounds)");
  }
  GEOMX_ASSIGN_OR_RETURN(job.optimizer, OptimizerFromFields(f));
  job.schedule.name = f["schedule"];
  GEOMX_RETURN_IF_ERROR(Integer(f, "schedule.step_epochs", 1, &v));
  job.schedule.step_epochs = static_cast<int>(std::min<int64_t>(v, INT32_MAX));
  GEOMX_RETURN_IF_ERROR(Number(f, "schedule.gamma", &job.schedule.gamma));
  GEOMX_RETURN_IF_ERROR(Number(f, "schedule.min_lr", &job.schedule.min_lr));
  GEOMX_RETURN_IF_ERROR(Integer(f, "schedule.warmup_iterations", 0, &v));
  job.schedule.warmup_iterations = static_cast<int>(std::min<int64_t>(v, INT32_MAX));
  GEOMX_RETURN_IF_ERROR(nn::ValidateLrScheduleConfig(job.schedule).WithContext("job"));
  job.rule = f["rule"];
  job.init_digest = f["init_digest"];
  if (!job.init_digest.empty() &&
      (job.init_digest.size() != 16 || job.init_digest.find_first_not_of("0123456789abcdef") != std::string::npos)) {
    return Status::InvalidArgument("job: init_digest must be 16 hex digits, got '" + job.init_digest.substr(0, 32) +
                                   "'");
  }
  return job;
}

std::string InitialValuesDigest(const std::map<uint64_t, std::vector<float>>& initial) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  auto mix = [&h](const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h ^= p[i];
      h *= 1099511628211ull;
    }
  };
  for (const auto& [key, values] : initial) {
    const uint64_t header[2] = {key, values.size()};
    mix(header, sizeof(header));
    mix(values.data(), values.size() * sizeof(float));
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace geomx::ps
