// JobGate: the global server's handler before and after the master worker's job description arrives
// (ps/job.h). Until kControl "set-job" arrives it answers "get-job" queries later (a local server fetching the
// job waits) and holds data requests (with several global servers a local server may have the job from one of
// them before the master worker's set-job reached another; at most 1024 requests and 256 MiB wait, more are
// refused with kResourceExhausted); on "set-job" it calls `install` once, which builds the server's policies for
// the job and returns the handler that serves the keys from then on, answers every waiting "get-job" with the job
// and hands the held data requests to the handler in arrival order.
// A second "set-job" is accepted when identical (a retried send) and refused otherwise.
// Thread-safe: Handle runs on the receive thread; install is called on it, without the gate's lock.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/ps/job.h"
#include "comm/kv_server.h"

namespace geomx::cluster {

class JobGate final : public comm::ServerHandler {
 public:
  using Install = std::function<Result<comm::ServerHandler*>(const ps::JobDescription& job)>;
  explicit JobGate(Install install) : install_(std::move(install)) {}

  void Handle(const comm::KvRequest& req, comm::KvServer& server) override;

  // The installed job, once set.
  std::optional<ps::JobDescription> job() const;

  // What a "set-job" request with `body` does (the local servers, which know the job, set it themselves so their
  // workers can ask for it): installs the job and answers the waiting "get-job" queries. The status is the answer.
  Status Set(const std::string& body);

 private:
  void HandleControl(const comm::KvRequest& req, comm::KvServer& server);

  const Install install_;
  mutable std::mutex mu_;
  std::string body_;                              // GUARDED_BY(mu_): the set-job body, once installed
  std::optional<ps::JobDescription> job_;         // GUARDED_BY(mu_)
  comm::ServerHandler* handler_ = nullptr;        // GUARDED_BY(mu_)
  std::vector<std::pair<comm::KvRequest, comm::KvServer*>> waiting_;  // GUARDED_BY(mu_): get-job queries
  std::vector<std::pair<comm::KvRequest, comm::KvServer*>> early_;    // GUARDED_BY(mu_): data before the job
  uint64_t early_bytes_ = 0;                                           // GUARDED_BY(mu_): their payload bytes
};

}  // namespace geomx::cluster
