#include "algorithms/cluster/job_gate.h"

#include <map>

#include "comm/codec.h"

namespace geomx::cluster {
namespace {
constexpr size_t kMaxWaitingQueries = 1024;
}  // namespace

std::optional<ps::JobDescription> JobGate::job() const {
  std::lock_guard<std::mutex> lock(mu_);
  return job_;
}

void JobGate::Handle(const comm::KvRequest& req, comm::KvServer& server) {
  if (req.meta.command == comm::Command::kControl) return HandleControl(req, server);
  comm::ServerHandler* handler = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    handler = handler_;
  }
  if (handler == nullptr) {
    return server.Respond(req, {}, Status::FailedPrecondition(
                                       "no job yet: the master worker has not sent the job description"));
  }
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
  std::vector<std::pair<comm::KvRequest, comm::KvServer*>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job).value();
    body_ = body;
    handler_ = *handler;
    waiting.swap(waiting_);
  }
  for (auto& [query, srv] : waiting) srv->RespondControl(query, Status::Ok(), body);
  return Status::Ok();
}

}  // namespace geomx::cluster
