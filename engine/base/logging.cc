#include "engine/base/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace geomx {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
std::mutex g_mu;
std::string g_prefix;  // guarded by g_mu

const char* LevelTag(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "D";
    case LogLevel::kInfo: return "I";
    case LogLevel::kWarning: return "W";
    case LogLevel::kError: return "E";
    default: return "?";
  }
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }
void SetLogPrefix(std::string prefix) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_prefix = std::move(prefix);
}

namespace internal {
LogLine::LogLine(LogLevel level, const char* file, int line) : level_(level) {
  const char* base = file;
  for (const char* p = file; *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  stream_ << LevelTag(level) << " " << base << ":" << line << "] ";
}

LogLine::~LogLine() {
  stream_ << '\n';
  std::string text = stream_.str();
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_prefix.empty()) std::fwrite(g_prefix.data(), 1, g_prefix.size(), stderr);
  std::fwrite(text.data(), 1, text.size(), stderr);
  (void)level_;
}
}  // namespace internal

}  // namespace geomx
