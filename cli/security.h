// Security of a topology run as the CLI sets it up (recipe section `security`, docs/security.md): which member
// processes a recipe has, whether CurveZMQ is on, the keys one process loads, and `geomx keys generate`.
// The mechanism itself (key files, ZAP handler, CURVE sockets, identity checks) lives in comm/ (comm/curve.h,
// comm/zmq_van.h). Pure functions apart from the key files; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/recipe.h"
#include "comm/curve.h"
#include "engine/base/status.h"

namespace geomx::cli {

// Every member process of the recipe's topology, in the launcher's start order: "central/global-scheduler",
// "central/global-server<r>", "central/state-server" (sync modes with a state server), "<dc>/scheduler",
// "<dc>/server<r>", "<dc>/worker<r>", "central/master-worker". Empty without a topology.
std::vector<std::string> MemberNames(const Recipe& recipe);

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);

// Whether the links of a run with these hosts are secured: security.encryption `on`; `auto` when any host is not
// loopback; `off` never.
bool SecurityEnabled(const std::string& encryption, const std::vector<std::string>& hosts);
// The recipe's own hosts (topology.central.host and every data centre's host).
bool SecurityEnabled(const Recipe& recipe);

// What one process needs for CURVE: its key pair and every member's public key (security.keys).
struct ProcessSecurity {
  comm::CurveIdentity identity;
  std::map<std::string, std::string> public_keys;  // member -> Z85 public key
};
// nullopt when security is off for `recipe`. With security on: kInvalidArgument naming security.keys when it is
// unset (with the command that writes keys), else the key directory's errors (naming the file).
Result<std::optional<ProcessSecurity>> LoadProcessSecurity(const Recipe& recipe, const std::string& member);

// One line for `--dry-run`: "security: on (CurveZMQ ...; keys DIR)" or "security: off (...)".
std::string DescribeSecurity(const Recipe& recipe, bool enabled, const std::string& keys);

// `geomx keys generate DIR`: a key pair for each of `names`, or, when `names` is empty, for every member of the
// recipe at `recipe_path` (with `sets` applied). kInvalidArgument when neither is given.
Status RunKeysGenerate(const std::string& dir, const std::string& recipe_path, const std::vector<std::string>& sets,
                       const std::vector<std::string>& names, bool force);

}  // namespace geomx::cli
