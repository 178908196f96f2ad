#include "engine/base/file_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace geomx {
namespace {

// A failed write in the caller's words; out-of-space errors get their own code (both exit 1 at the CLI).
Status WriteError(const std::filesystem::path& path, const char* what, int err) {
  std::string msg = "cannot write ";
  msg += path.string();
  msg += ": ";
  msg += what;
  msg += ": ";
  msg += std::strerror(err);
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) return Status::ResourceExhausted(std::move(msg));
  return Status::Internal(std::move(msg));
}

// Writes all of `bytes` to `fd`; the errno of the failure, or 0.
int WriteAll(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// A device, FIFO or socket: written where it is (renaming over it would replace the special file).
Status WriteInPlace(const std::filesystem::path& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return WriteError(path, "open", errno);
  const int err = WriteAll(fd, bytes);
  // Devices and FIFOs often refuse fsync (EINVAL): only the write and close results count.
  const int close_err = ::close(fd) != 0 ? errno : 0;
  if (err != 0) return WriteError(path, "write", err);
  if (close_err != 0) return WriteError(path, "close", close_err);
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::filesystem::path& path, std::string_view bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    return WriteInPlace(path, bytes);
  }
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return WriteError(path, ("create " + tmp.string()).c_str(), errno);
  int err = WriteAll(fd, bytes);
  const char* step = "write";
  if (err == 0 && ::fsync(fd) != 0) {
    err = errno;
    step = "flush";
  }
  if (::close(fd) != 0 && err == 0) {
    err = errno;
    step = "close";
  }
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    step = "rename";
  }
  if (err != 0) {
    ::unlink(tmp.c_str());
    return WriteError(path, step, err);
  }
  return Status::Ok();
}

}  // namespace geomx
