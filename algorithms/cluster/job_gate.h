// JobGate: the global server's handler before and after the master worker's job description arrives
// (ps/job.h). Until kControl "set-job" arrives it answers "get-job" queries later (a local server fetching the
// job waits) and refuses data requests (kFailedPrecondition: nothing can arrive before the job in a correct
// run); on "set-job" it calls `install` once, which builds the server's policies for the job and returns the
// handler that serves the keys from then on, and answers every waiting "get-job" with the job.
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
};

}  // namespace geomx::cluster
