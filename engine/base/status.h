// Status and Result<T>: recoverable failures as values (docs/style.md R3).
//
// A Status is OK (free: no allocation) or carries a code and a message. Anything a user, a file or a peer can
// cause returns a Status; broken invariants use GEOMX_CHECK (check.h) instead. Status is a value type, cheap to
// move, not thread-safe to mutate concurrently (like any value).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace geomx {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,     // bad user input: recipe, flags, values out of range
  kNotFound = 2,            // a file, key or name that does not exist
  kDataLoss = 3,            // corrupt or truncated data file / message
  kFailedPrecondition = 4,  // the system is not in a state to do this (e.g. no GPU for device: cuda)
  kOutOfRange = 5,
  kUnimplemented = 6,       // a capability that is not available (yet)
  kUnavailable = 7,         // a peer did not answer
  kDeadlineExceeded = 8,
  kCancelled = 9,           // interrupted by the user (Ctrl-C)
  kResourceExhausted = 10,  // out of memory / disk
  kInternal = 11,           // a bug or an unexpected library failure
  kAlreadyExists = 12,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status DataLoss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) { return {StatusCode::kFailedPrecondition, std::move(msg)}; }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status Unimplemented(std::string msg) { return {StatusCode::kUnimplemented, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) { return {StatusCode::kDeadlineExceeded, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) { return {StatusCode::kAlreadyExists, std::move(msg)}; }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "INVALID_ARGUMENT: message" or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "prefix: message" (keeps the code). No-op on OK.
  Status WithContext(std::string_view prefix) const;

  // True for codes caused by the user's input (exit code 2 at the CLI): kInvalidArgument, kNotFound,
  // kDataLoss, kFailedPrecondition, kOutOfRange, kUnimplemented, kAlreadyExists.
  bool IsUserError() const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;  // null == OK
};

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status::Internal("Result constructed from OK status without a value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace geomx

#define GEOMX_STATUS_CONCAT_INNER_(a, b) a##b
#define GEOMX_STATUS_CONCAT_(a, b) GEOMX_STATUS_CONCAT_INNER_(a, b)

// Returns from the current function when `expr` (a Status) is not OK.
#define GEOMX_RETURN_IF_ERROR(expr)                 \
  do {                                              \
    ::geomx::Status geomx_status_ = (expr);         \
    if (!geomx_status_.ok()) return geomx_status_;  \
  } while (0)

// GEOMX_ASSIGN_OR_RETURN(auto x, Foo()); declares/assigns x from a Result, or returns its Status.
#define GEOMX_ASSIGN_OR_RETURN(lhs, expr) \
  GEOMX_ASSIGN_OR_RETURN_IMPL_(GEOMX_STATUS_CONCAT_(geomx_result_, __LINE__), lhs, expr)
#define GEOMX_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
