// Leveled logging to stderr, the only process-wide mutable state besides registries (docs/design.md).
// Library code logs diagnostics only; user-facing output (progress, tables) is printed by cli/.
//   GEOMX_LOG(kInfo) << "listening on " << endpoint;
// Thread-safe: each line is written with a single fwrite under a mutex.
#pragma once

#include <sstream>
#include <string>

namespace geomx {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Text prepended to every line (e.g. "[dc-a/worker1] "); empty by default.
void SetLogPrefix(std::string prefix);

namespace internal {
// Makes `cond ? (void)0 : LogVoidify() & stream << ...` well-typed.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace geomx

// An expression (not an if/else), so `if (x) GEOMX_LOG(kInfo) << ...;` is safe without braces.
#define GEOMX_LOG(level)                                                  \
  (::geomx::LogLevel::level < ::geomx::GetLogLevel())                     \
      ? (void)0                                                           \
      : ::geomx::internal::LogVoidify() &                                 \
            ::geomx::internal::LogLine(::geomx::LogLevel::level, __FILE__, __LINE__).stream()
