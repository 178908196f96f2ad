#include "algorithms/cluster/job_gate.h"

#include <map>
#include <string>

#include "comm/codec.h"

namespace geomx::cluster {
namespace {
constexpr size_t kMaxWaitingQueries = 1024;
constexpr uint64_t kMaxEarlyBytes = 256ull << 20;  // data held before the job, all requests together

uint64_t PayloadBytes(const comm::KvRequest& req) {
  uint64_t n = 0;
  for (const Bytes& b : req.data) n += b.size();
  return n;
}
}  // namespace

std::optional<ps::JobDescription> JobGate::job() const {
  std::lock_guard<std::mutex> lock(mu_);
  return job_;
}

void JobGate::Handle(const comm::KvRequest& req, comm::KvServer& server) {
  if (req.meta.command == comm::Command::kControl) return HandleControl(req, server);
  comm::ServerHandler* handler = nullptr;
  std::string full;  // why a request before the job could not be held
  {
    std::lock_guard<std::mutex> lock(mu_);
    handler = handler_;
    if (handler == nullptr) {
      // With several global servers a local server can learn the job from one of them before the master worker's
      // set-job has reached another: its data waits here for the job (bounded) instead of failing the run.
      const uint64_t bytes = PayloadBytes(req);
      if (early_.size() < kMaxWaitingQueries && early_bytes_ + bytes <= kMaxEarlyBytes) {
        early_.emplace_back(req, &server);
        early_bytes_ += bytes;
        return;
      }
      full = "no job yet (the master worker has not sent the job description), and " +
             std::to_string(early_.size()) + " requests of " + std::to_string(early_bytes_) +
             " bytes already wait for it";
    }
  }
  if (handler == nullptr) return server.Respond(req, {}, Status::ResourceExhausted(full));
  handler->Handle(req, server);
}

void JobGate::HandleControl(const comm::KvRequest& req, comm::KvServer& server) {
  std::map<std::string, std::string> fields;
  Status decoded = comm::DecodeFields(req.meta.body, &fields);
  if (!decoded.ok()) return server.RespondControl(req, decoded);
  const std::string command = fields["command"];
  if (command == ps::kGetJobCommand) {
    std::lock_guard<std::mutex> lock(mu_);
    if (job_) return server.RespondControl(req, Status::Ok(), body_);
    if (waiting_.size() >= kMaxWaitingQueries) {
      return server.RespondControl(req, Status::ResourceExhausted("too many queries waiting for the job"));
    }
    waiting_.emplace_back(req, &server);
    return;
  }
  if (command != ps::kSetJobCommand) {
    comm::ServerHandler* handler = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      handler = handler_;
    }
    if (handler != nullptr) return handler->Handle(req, server);
    return server.RespondControl(req, Status::InvalidArgument("unknown control command '" + command + "'"));
  }
  server.RespondControl(req, Set(req.meta.body));
}

Status JobGate::Set(const std::string& body) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (job_) return body == body_ ? Status::Ok() : Status::InvalidArgument("a different job is set");
  }
  Result<ps::JobDescription> job = ps::DecodeJob(body);
  if (!job.ok()) return job.status().WithContext("set-job");
  Result<comm::ServerHandler*> handler = install_(*job);
  if (!handler.ok()) return handler.status().WithContext("set-job");
  std::vector<std::pair<comm::KvRequest, comm::KvServer*>> waiting, early;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job).value();
    body_ = body;
    handler_ = *handler;
    waiting.swap(waiting_);
    early.swap(early_);
    early_bytes_ = 0;
  }
  for (auto& [query, srv] : waiting) srv->RespondControl(query, Status::Ok(), body);
  for (auto& [data, srv] : early) (*handler)->Handle(data, *srv);  // in arrival order
  return Status::Ok();
}

}  // namespace geomx::cluster
