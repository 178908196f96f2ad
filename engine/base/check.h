// GEOMX_CHECK*: abort with file:line and a message when a programmer invariant breaks (docs/style.md R3).
// Never use these for conditions a user, a file or a peer can cause: return a Status instead.
//   GEOMX_CHECK(x.rank() == 4) << "Conv2d expects NCHW, got " << x.shape().ToString();
//   GEOMX_CHECK_EQ(a, b);  GEOMX_CHECK_OK(status);
#pragma once

#include <sstream>
#include <string>

#include "engine/base/status.h"

namespace geomx::internal {

// Collects a message and aborts in its destructor. Thread-safe (each failure owns its stream).
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Makes `cond ? (void)0 : CheckFailure(...).stream() << ...` well-typed.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace geomx::internal

#define GEOMX_CHECK(cond) \
  (cond) ? (void)0        \
         : ::geomx::internal::Voidify() & ::geomx::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#define GEOMX_CHECK_OP_(a, b, op) GEOMX_CHECK((a)op(b)) << "(" << (a) << " vs " << (b) << ") "
#define GEOMX_CHECK_EQ(a, b) GEOMX_CHECK_OP_(a, b, ==)
#define GEOMX_CHECK_NE(a, b) GEOMX_CHECK_OP_(a, b, !=)
#define GEOMX_CHECK_LT(a, b) GEOMX_CHECK_OP_(a, b, <)
#define GEOMX_CHECK_LE(a, b) GEOMX_CHECK_OP_(a, b, <=)
#define GEOMX_CHECK_GT(a, b) GEOMX_CHECK_OP_(a, b, >)
#define GEOMX_CHECK_GE(a, b) GEOMX_CHECK_OP_(a, b, >=)

// Aborts when a Status that "cannot fail" failed.
#define GEOMX_CHECK_OK(expr)                                   \
  do {                                                         \
    ::geomx::Status geomx_check_status_ = (expr);              \
    GEOMX_CHECK(geomx_check_status_.ok()) << geomx_check_status_.ToString(); \
  } while (0)

#ifdef NDEBUG
#define GEOMX_DCHECK(cond) \
  while (false) GEOMX_CHECK(cond)
#else
#define GEOMX_DCHECK(cond) GEOMX_CHECK(cond)
#endif
