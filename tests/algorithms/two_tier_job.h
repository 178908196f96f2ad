// A job over both parameter-server tiers with every role as a thread of the test (loopback vans): the global
// scheduler, one global server and the master worker, and in each of the data centres dc-a and dc-b a scheduler,
// one local server and two workers. Shared by the tests of the parameter-server context and of the estimators'
// Collective. Test-only code.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/cluster/roles.h"
#include "algorithms/cluster/tiers.h"
#include "algorithms/ps/job.h"
#include "comm/loopback_van.h"

namespace geomx::testing {

// Two data centres of two workers and one local server each; `timeout_ms` for rendezvous and requests.
inline cluster::ClusterConfig TwoByTwoConfig(int timeout_ms = 30000) {
  cluster::ClusterConfig c;
  for (const char* name : {"dc-a", "dc-b"}) {
    comm::DataCentre dc;
    dc.name = name;
    dc.workers = 2;
    c.topology.datacentres.push_back(dc);
  }
  c.topology.options.rendezvous_timeout_ms = timeout_ms;
  c.topology.options.request_timeout_ms = timeout_ms;
  return c;
}

// Loopback vans on `net` (which must outlive every van made).
inline cluster::RoleEnv LoopbackRoleEnv(comm::LoopbackNetwork* net) {
  cluster::RoleEnv env;
  env.make_van = [net](const std::string&) { return std::make_unique<comm::LoopbackVan>(net); };
  env.scheduler_endpoint = [](const std::string& tier, const std::string&, int) { return "loop://sched-" + tier; };
  env.node_bind = [](const std::string& node, const std::string&) { return "loop://" + node; };
  return env;
}

// What a test's worker runs: (config, party, rank in the party, env) -> its status.
using TwoTierWorker =
    std::function<Status(const cluster::ClusterConfig&, const std::string&, int, const cluster::RoleEnv&)>;

// Runs the job `job` on `c` (TwoByTwoConfig) with `worker` on each worker; returns every role's status by name
// ("global-server", "dc-a/worker1", ...) once all have returned.
inline std::map<std::string, Status> RunTwoTierJob(const cluster::ClusterConfig& c, const ps::JobDescription& job,
                                                   const TwoTierWorker& worker) {
  comm::LoopbackNetwork net;
  const cluster::RoleEnv env = LoopbackRoleEnv(&net);
  std::mutex mu;
  std::map<std::string, Status> roles;
  std::vector<std::thread> threads;
  auto run = [&](std::string name, std::function<Status()> fn) {
    threads.emplace_back([&mu, &roles, name, fn] {
      Status s = fn();
      std::lock_guard<std::mutex> lock(mu);
      roles[name] = s;
    });
  };
  run("global-scheduler", [&] { return cluster::RunGlobalScheduler(c, env); });
  run("global-server", [&] { return cluster::RunGlobalServer(c, 0, env); });
  run("master", [&] { return cluster::RunMasterWorker(c, job, {}, env); });
  for (const comm::DataCentre& dc : c.topology.datacentres) {
    const std::string p = dc.name;
    run(p + "/scheduler", [&, p] { return cluster::RunScheduler(c, p, env); });
    run(p + "/server", [&, p] { return cluster::RunLocalServer(c, p, 0, env); });
    for (int r = 0; r < dc.workers; ++r) {
      run(p + "/worker" + std::to_string(r), [&, p, r] { return worker(c, p, r, env); });
    }
  }
  for (auto& t : threads) t.join();
  return roles;
}

}  // namespace geomx::testing
