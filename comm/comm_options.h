// Every knob of the parameter server, with its default. Filled from the recipe's `topology`/`comm` sections in
// cli/; never from environment variables.
#pragma once

#include <cstdint>

namespace geomx::comm {

// One link's emulated characteristics (in-process WAN emulation, comm/shaped_van.h; `geomx bench --netns`).
// 0 = unlimited / no delay / no loss.
struct LinkOptions {
  double bandwidth_bps = 0;  // bits per second
  double latency_s = 0;      // one-way propagation delay
  double loss = 0;           // packet loss rate, in [0, 1)
};

struct CommOptions {
  int rendezvous_timeout_ms = 60000;  // a tier that is not complete by then names the missing nodes and fails
  int request_timeout_ms = 120000;    // a request without a reply by then names the peer, the key and the timestamp
  int heartbeat_interval_ms = 2000;   // 0 disables heartbeats
  int heartbeat_timeout_ms = 30000;   // a node silent this long is reported dead (and the tier fails)
  // topology.failure_policy: continue. A *worker* of a data centre's tier that dies or leaves is dropped from the
  // tier (kNodeLeft to every member; servers aggregate without it) instead of failing the tier. Servers, and the
  // global tier's members, always fail their tier.
  bool continue_without_lost_workers = false;
  // topology.failure_policy: wait. A lost worker is waited for instead: the servers keep expecting its pushes (its
  // data centre pauses) until it rejoins; the tier fails, naming it, when it has not rejoined within
  // rejoin_timeout_ms of being declared lost.
  bool wait_for_lost_workers = false;
  int rejoin_timeout_ms = 60000;
  // A worker process started again for a rank of the running tier (a restart after a crash) is admitted in place
  // of the old one (kNodeJoined; comm/scheduler.h) instead of refused. Needs continue or wait.
  bool admit_rejoins = false;
  int64_t split_bytes = 1 << 20;      // MultiGPS: a tensor larger than this is split over several servers
  LinkOptions wan;                    // links between different parties
  LinkOptions lan;                    // links inside a party
};

}  // namespace geomx::comm
