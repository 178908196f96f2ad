// Free TCP ports for the processes `geomx train` starts on one host (cli/local_topology.h).
//
// PickFreePorts binds N sockets to port 0 on `host`, reads back the ports the kernel chose, and closes them: the
// ports are distinct and were free a moment ago. Another process may still take one before its user binds it;
// the user must report such a clash clearly (the schedulers do: "address already in use" names the port).
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
