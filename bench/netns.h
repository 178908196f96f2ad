// Real Linux WAN shaping for `geomx bench RECIPE --netns` (root only): one network namespace for the central party
// and one per data centre, each data centre joined to the central party by its own link with its own bandwidth,
// latency and loss (comm::Topology::Network: topology.links.wan, or the data centre's own). Traffic between data
// centres is routed through the central namespace and crosses two links, unless topology.links.direct joins them
// (a link of their own, and a host route to each other's party address). A link is a veth pair when it has
// neither latency nor loss, otherwise a pair of TUN devices joined by bench/peers/delay_line.py, which forwards
// packets after the one-way delay and drops each with the loss probability (this kernel has no netem).
// Bandwidth: tc tbf on both ends (each direction shaped).
// Every object created is recorded; Teardown deletes them in reverse order, continues past errors and is
// idempotent; the destructor calls it. Commands go through a CommandRunner, so tests can fake them; the real one
// (SystemCommandRunner) runs them under cli::Launcher.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/recipe.h"
#include "comm/comm_options.h"
#include "engine/base/status.h"

namespace geomx::bench {

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv to completion; returns its stdout and stderr, or an error with its output when it exits non-zero.
  virtual Result<std::string> Run(const std::vector<std::string>& argv) = 0;
  // Starts argv in the background and waits until it prints a line with `ready_word` (or fails).
  virtual Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& ready_word) = 0;
  // Stops what Spawn started (SIGINT, then SIGTERM and SIGKILL after grace periods) and reaps it.
  virtual void Kill(pid_t pid) = 0;
};
std::unique_ptr<CommandRunner> SystemCommandRunner();

struct PartyNet {
  std::string ns;         // network namespace
  std::string ip;         // the party's address
  std::string interface;  // its WAN interface
};

// The --set overrides that switch off geomx's in-process emulation of every link the namespaces shape (the WAN,
// each data centre's own uplink, the direct links), for the processes of a --netns run: the kernel shapes them,
// they must not be shaped twice. Links inside a party stay as the recipe says (netns does not shape them).
std::vector<std::string> InProcessWanOff(const cli::Recipe& recipe);

class NetnsShaper {
 public:
  NetnsShaper(std::unique_ptr<CommandRunner> runner, std::string prefix);
  ~NetnsShaper();
  NetnsShaper(const NetnsShaper&) = delete;
  NetnsShaper& operator=(const NetnsShaper&) = delete;

  // kInvalidArgument when not root or when ip/tc are missing (nothing is created).
  static Status CheckCanRun();

  // Deletes namespaces "gmx<pid>-..." left by a harness that was killed (SIGKILL) and whose pid is gone; returns
  // their names.
  static std::vector<std::string> RemoveStale(CommandRunner* runner);

  // Creates the namespaces and links for `recipe`'s topology with its links' bandwidth, latency and loss. On
  // failure the caller calls Teardown (what was created is recorded). `tcp_cc` (e.g. "cubic"; empty: the host's):
  // the TCP congestion control of every namespace. A namespace takes the host's default when it is created and
  // this kernel does not let a namespace change its own, so the host's default is set to `tcp_cc` while the
  // namespaces are created and put back right after (and by Teardown if Setup stopped before); each namespace's
  // value is checked. kInvalidArgument for a name the kernel does not offer.
  Status Setup(const cli::Recipe& recipe, const std::string& python, const std::string& delay_line_script,
               const std::string& tcp_cc = "");
  // Deletes everything Setup created; returns the first error (after trying everything).
  Status Teardown();

  // "central" and every data centre name -> namespace, address, interface.
  const std::map<std::string, PartyNet>& parties() const { return parties_; }
  // The `geomx train` flags that run each party's processes in its namespace with its address as host
  // (cli::TrainFlags::party_netns): "--party-netns", "party=ns@ip", ... for every party, in name order.
  std::vector<std::string> PartyNetnsArgs() const;
  // Bytes put on the WAN links so far (tx + rx of one side of every link between parties).
  uint64_t WanBytes();
  // What was created, in order ("netns gmx1-c", "link gmx1c0", "process 1234"), for tests and diagnostics.
  const std::vector<std::string>& created() const { return created_; }

 private:
  struct LinkEnd {
    std::string ns;       // namespace
    std::string dev;      // interface
    std::string address;  // its address (a /24)
  };
  // Joins x and y (a veth pair, or a delay line for latency or loss), addresses both ends and shapes them.
  Status AddLink(const LinkEnd& x, const LinkEnd& y, const comm::LinkOptions& link, const std::string& python,
                 const std::string& delay_line, uint64_t seed);

  std::unique_ptr<CommandRunner> runner_;
  std::string prefix_;
  std::map<std::string, PartyNet> parties_;
  std::vector<std::string> created_;
  std::vector<LinkEnd> wan_ends_;  // one end of every link, for WanBytes
  std::string restore_cc_;         // the host's TCP congestion control to put back ("" when it is)
};

}  // namespace geomx::bench
