// CurveZMQ keys of a job: one key pair per member process, kept in a key directory.
//
// A *member* is a process identity "party/role": "central/global-scheduler", "central/global-server0",
// "central/master-worker", "central/state-server", "dc-a/scheduler", "dc-a/server0", "dc-a/worker1". A process
// that belongs to several tiers names its nodes "<member>@<what>" ("dc-a/server0@global"); every such node
// authenticates with its member's key (MemberOf).
//
// Key directory layout (what GenerateKeys writes and the Load* functions read):
//   DIR/<party>/<role>.pub      the member's public key: 40 Z85 characters and a newline (mode 0644)
//   DIR/<party>/<role>.secret   its secret key, same format (mode 0600; party folders are 0700)
// Every host gets the .pub files of all members and the .secret files of the members it runs.
//
// Errors are values (user errors: a missing file is kNotFound, a malformed one kDataLoss, a bad member name
// kInvalidArgument), each naming the file or the name. Every file read is bounded (kMaxKeyFileBytes).
// Free functions, no state; thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx::comm {

inline constexpr size_t kCurveKeyChars = 40;     // a Z85-encoded 32-byte key
inline constexpr size_t kMaxKeyFileBytes = 4096;  // larger files are refused without being read

// One member's key pair, as the ZmqVan of its nodes uses it (ZmqVanOptions::curve).
struct CurveIdentity {
  std::string member;      // "dc-a/worker1"
  std::string public_key;  // Z85, kCurveKeyChars characters
  std::string secret_key;  // Z85, kCurveKeyChars characters
  std::string key_dir;     // the directory it was loaded from (for error messages)
};

// The member a node name belongs to: the part before the first '@' ("dc-a/server0@global" -> "dc-a/server0"),
// or the whole name.
std::string MemberOf(const std::string& node_name);

// OK when `name` is exactly "party/role", each part non-empty, made of [A-Za-z0-9._-], not starting with '.'
// and without "..". kInvalidArgument naming `name` otherwise (names come from recipes).
Status CheckMemberName(const std::string& name);

// The files of `member` in `dir`: "DIR/party/role.pub" and "DIR/party/role.secret".
std::string CurvePublicKeyPath(const std::string& dir, const std::string& member);
std::string CurveSecretKeyPath(const std::string& dir, const std::string& member);

// True when the linked libzmq supports CURVE (zmq_has("curve")).
bool CurveAvailable();

// Writes a fresh key pair for every member (duplicates are written once) into `dir`, creating `dir` and the
// party folders (0700) as needed. Each file is written atomically (a temporary file renamed over it), the secret
// with mode 0600. Without `force`, an existing key file of any member is refused (kAlreadyExists naming it and
// --force) before anything is written. kInvalidArgument for a bad member name, kFailedPrecondition when libzmq
// lacks CURVE, kInternal / kResourceExhausted (naming the file) when writing fails.
Status GenerateKeys(const std::string& dir, const std::vector<std::string>& members, bool force);

// Reads `member`'s key pair from `dir`: both files must hold a valid Z85 key, and the secret key must belong to
// the public key. Logs a warning when the secret file is accessible by group or others.
Result<CurveIdentity> LoadIdentity(const std::string& dir, const std::string& member);

// Every DIR/<party>/<role>.pub, as member name -> Z85 public key. Refuses a malformed file, a file whose name is
// not a valid member, two members sharing one key, a missing directory (kNotFound) and a directory without any
// key (kNotFound).
Result<std::map<std::string, std::string>> LoadPublicKeys(const std::string& dir);

}  // namespace geomx::comm
