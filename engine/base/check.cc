#include "engine/base/check.h"

#include <cstdio>
#include <cstdlib>

namespace geomx::internal {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": check failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::string msg = stream_.str();
  std::fprintf(stderr, "geomx: internal error (a bug, please report): %s\n", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace geomx::internal
