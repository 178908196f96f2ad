#include "comm/curve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include <zmq.h>

#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

namespace fs = std::filesystem;

constexpr char kZ85Alphabet[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

bool IsNamePart(const std::string& part) {
  if (part.empty() || part[0] == '.' || part.find("..") != std::string::npos) return false;
  return std::all_of(part.begin(), part.end(), IsNameChar);
}

std::string Octal(unsigned mode) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%04o", mode & 07777u);
  return buf;
}

// Runtime failure of a file operation on `path`: the disk being full is kResourceExhausted, anything else kInternal.
Status FileError(const std::string& what, const std::string& path, int err) {
  std::string message = what;
  message.append(" ").append(path).append(": ").append(std::strerror(err));
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) return Status::ResourceExhausted(message);
  return Status::Internal(message);
}

// True when `key` is kCurveKeyChars Z85 characters that decode to 32 bytes and encode back to `key` (Z85 groups
// can spell values above 2^32, which would not round-trip).
bool IsZ85Key(const std::string& key) {
  if (key.size() != kCurveKeyChars) return false;
  for (char c : key) {
    if (c == '\0' || std::strchr(kZ85Alphabet, c) == nullptr) return false;
  }
  uint8_t raw[32];
  if (zmq_z85_decode(raw, key.c_str()) == nullptr) return false;
  char again[kCurveKeyChars + 1];
  if (zmq_z85_encode(again, raw, sizeof(raw)) == nullptr) return false;
  return key == again;
}

// Reads one key file (at most kMaxKeyFileBytes, never more) and returns its key, validated.
Result<std::string> ReadKeyFile(const std::string& path, bool secret) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below as not a regular file).
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return Status::NotFound("key file " + path + " does not exist");
    std::string message = "cannot open key file ";
    message.append(path).append(": ").append(std::strerror(err));
    return Status::FailedPrecondition(message);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Status::InvalidArgument("key file " + path + " is not a regular file");
  }
  if (st.st_size > static_cast<off_t>(kMaxKeyFileBytes)) {
    close(fd);
    return Status::DataLoss("key file " + path + " has " + std::to_string(st.st_size) +
                            " bytes, not a key file (at most " + std::to_string(kMaxKeyFileBytes) + ")");
  }
  std::string text(kMaxKeyFileBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = read(fd, &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return FileError("cannot read key file", path, err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got > kMaxKeyFileBytes) {
    return Status::DataLoss("key file " + path + " grew past " + std::to_string(kMaxKeyFileBytes) + " bytes");
  }
  text.resize(got);
  if (secret && (st.st_mode & 077) != 0) {
    GEOMX_LOG(kWarning) << "secret key file " << path << " is accessible by group or others (mode "
                        << Octal(st.st_mode) << "): run chmod 600 " << path;
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  const size_t last = text.find_last_not_of(" \t\r\n");
  const std::string key = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
  if (!IsZ85Key(key)) {
    return Status::DataLoss("key file " + path + " does not hold a CurveZMQ key (" +
                            std::to_string(kCurveKeyChars) + " Z85 characters)");
  }
  return key;
}

// Writes `contents` to `path` atomically: a temporary file with `mode` in the same folder, synced, renamed over it.
Status WriteKeyFile(const std::string& path, const std::string& contents, mode_t mode) {
  const std::string tmp = path + ".tmp";
  unlink(tmp.c_str());  // a leftover of an interrupted run; O_EXCL below refuses anything still there
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return FileError("cannot create", tmp, errno);
  int err = 0;
  if (fchmod(fd, mode) != 0) err = errno;  // the umask may have cleared bits of `mode`
  size_t done = 0;
  while (err == 0 && done < contents.size()) {
    const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (err == 0 && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    unlink(tmp.c_str());
    return FileError("cannot write", path, err);
  }
  return Status::Ok();
}

// Creates `dir` with mode 0700 unless it exists (as a directory).
Status MakeDirectory(const std::string& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return Status::Ok();
  const fs::path parent = fs::path(dir).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) return FileError("cannot create directory", parent.string(), ec.value());
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return FileError("cannot create directory", dir, errno);
  if (!fs::is_directory(dir, ec)) return Status::FailedPrecondition(dir + " exists and is not a directory");
  return Status::Ok();
}

}  // namespace

std::string MemberOf(const std::string& node_name) { return node_name.substr(0, node_name.find('@')); }

Status CheckMemberName(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash != std::string::npos && IsNamePart(name.substr(0, slash)) && IsNamePart(name.substr(slash + 1))) {
    return Status::Ok();
  }
  return Status::InvalidArgument("'" + name + "' is not a member name: expected party/role, each part made of " +
                                 "letters, digits, '.', '_' and '-', not starting with '.' and without '..' " +
                                 "(e.g. dc-a/worker1)");
}

std::string CurvePublicKeyPath(const std::string& dir, const std::string& member) {
  return (fs::path(dir) / (member + ".pub")).string();
}

std::string CurveSecretKeyPath(const std::string& dir, const std::string& member) {
  return (fs::path(dir) / (member + ".secret")).string();
}

bool CurveAvailable() { return zmq_has("curve") != 0; }

Status GenerateKeys(const std::string& dir, const std::vector<std::string>& members, bool force) {
  if (!CurveAvailable()) {
    return Status::FailedPrecondition("this libzmq was built without CURVE security (zmq_has(\"curve\") is false): "
                                      "install a libzmq built with libsodium");
  }
  const std::set<std::string> unique(members.begin(), members.end());
  for (const std::string& m : unique) GEOMX_RETURN_IF_ERROR(CheckMemberName(m));
  if (!force) {
    for (const std::string& m : unique) {
      for (const std::string& path : {CurvePublicKeyPath(dir, m), CurveSecretKeyPath(dir, m)}) {
        struct stat st;
        if (lstat(path.c_str(), &st) == 0) {
          return Status::AlreadyExists("key file " + path + " exists already (use --force to replace the keys)");
        }
      }
    }
  }
  GEOMX_RETURN_IF_ERROR(MakeDirectory(dir));
  for (const std::string& m : unique) {
    GEOMX_RETURN_IF_ERROR(MakeDirectory((fs::path(dir) / m.substr(0, m.find('/'))).string()));
    char public_key[kCurveKeyChars + 1];
    char secret_key[kCurveKeyChars + 1];
    if (zmq_curve_keypair(public_key, secret_key) != 0) {
      return Status::Internal("zmq_curve_keypair failed for " + m + ": " + zmq_strerror(zmq_errno()));
    }
    // The secret first: a public key on disk always has its secret next to it.
    std::string text(secret_key);
    GEOMX_RETURN_IF_ERROR(WriteKeyFile(CurveSecretKeyPath(dir, m), text + "\n", 0600));
    text = public_key;
    GEOMX_RETURN_IF_ERROR(WriteKeyFile(CurvePublicKeyPath(dir, m), text + "\n", 0644));
  }
  return Status::Ok();
}

Result<CurveIdentity> LoadIdentity(const std::string& dir, const std::string& member) {
  GEOMX_RETURN_IF_ERROR(CheckMemberName(member));
  const std::string public_path = CurvePublicKeyPath(dir, member);
  const std::string secret_path = CurveSecretKeyPath(dir, member);
  GEOMX_ASSIGN_OR_RETURN(std::string public_key, ReadKeyFile(public_path, /*secret=*/false));
  GEOMX_ASSIGN_OR_RETURN(std::string secret_key, ReadKeyFile(secret_path, /*secret=*/true));
  char derived[kCurveKeyChars + 1];
  if (zmq_curve_public(derived, secret_key.c_str()) != 0) {
    return Status::FailedPrecondition("cannot check " + secret_path + ": this libzmq has no CURVE support (" +
                                      zmq_strerror(zmq_errno()) + ")");
  }
  if (public_key != derived) {
    return Status::InvalidArgument("the secret key in " + secret_path + " does not belong to the public key in " +
                                   public_path + " (files of different key pairs)");
  }
  return CurveIdentity{member, std::move(public_key), std::move(secret_key), dir};
}

Result<std::map<std::string, std::string>> LoadPublicKeys(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound("key directory " + dir + " does not exist");
  std::vector<fs::path> parties;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] != '.' && it->is_directory(ec)) parties.push_back(it->path());
  }
  if (ec) return FileError("cannot list key directory", dir, ec.value());
  std::sort(parties.begin(), parties.end());
  std::map<std::string, std::string> keys;        // member -> key
  std::map<std::string, std::string> owner_path;  // key -> the file it came from
  for (const fs::path& party : parties) {
    std::vector<fs::path> files;
    for (fs::directory_iterator it(party, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".pub") files.push_back(it->path());
    }
    if (ec) return FileError("cannot list key directory", party.string(), ec.value());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      const std::string member = party.filename().string() + "/" + file.stem().string();
      Status name_ok = CheckMemberName(member);
      if (!name_ok.ok()) return Status::InvalidArgument("key file " + file.string() + ": " + name_ok.message());
      GEOMX_ASSIGN_OR_RETURN(std::string key, ReadKeyFile(file.string(), /*secret=*/false));
      auto [it, inserted] = owner_path.emplace(key, file.string());
      if (!inserted) {
        return Status::InvalidArgument("key files " + it->second + " and " + file.string() +
                                       " hold the same public key (every member needs its own key pair)");
      }
      keys[member] = std::move(key);
    }
  }
  if (keys.empty()) {
    return Status::NotFound("key directory " + dir + " holds no public keys (<party>/<role>.pub files); generate "
                            "them with geomx keys generate");
  }
  return keys;
}

}  // namespace geomx::comm
