// Free TCP ports for the processes `geomx train` starts on one host (cli/local_topology.h).
//
// PickFreePorts binds N sockets on `host` and closes them: the ports are distinct and were free a moment ago.
// It tries random ports below the kernel's ephemeral range first (/proc/sys/net/ipv4/ip_local_port_range): the
// kernel never hands those out by itself, so the outgoing connections and port-0 binds of other processes (every
// node of a topology binds port 0) cannot take one before its user binds it; only when none is found does it fall
// back to port 0 (a port the kernel chose). Another process may still bind one explicitly; the user must report
// such a clash clearly (the schedulers do: "address already in use" names the port).
// Thread-safe (no shared state).
#pragma once

#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::cli {

// `host` is an IPv4/IPv6 address or a name that resolves to one ("127.0.0.1", "localhost"). Fails with
// kInvalidArgument for a host that does not resolve or is not local (bind fails), kResourceExhausted when the
// kernel has no port left.
Result<std::vector<int>> PickFreePorts(const std::string& host, int count);

}  // namespace geomx::cli
