// Errors as values. Every library function that can fail returns Status or StatusOr<T>;
// exceptions never cross a library boundary and libraries never print.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace ipu {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // bad option or malformed user input (model, data, flags)
  kNotFound,           // a file, key or name that does not exist
  kUnsupported,        // valid input that this tool does not implement
  kResourceExhausted,  // does not fit: tile memory, disk
  kDataLoss,           // corrupt or truncated file, checksum mismatch
  kFailedPrecondition, // state does not allow the operation (version mismatch, locked)
  kIoError,            // the operating system refused a read or write
  kInternal,           // a broken invariant inside ipucc
  kOutOfRange,         // data met while running lies outside what an op accepts (an index, a label)
  kNonFinite,          // training produced a NaN or an infinity (a loss, a gradient, a weight)
  kBadOption,        // an option's value, alone or with the others or the model, cannot work (a usage error)
  kDeadlineExceeded, // another instance of the job did not answer in time (hung or stopped)
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message) : m_code(code), m_message(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return m_code == StatusCode::kOk; }
  StatusCode code() const { return m_code; }
  const std::string& message() const { return m_message; }

  // Returns a copy whose message is "<context>: <message>", so errors gain the
  // file / node / step they occurred in on their way up.
  Status with_context(const std::string& context) const;

  std::string to_string() const;

private:
  StatusCode m_code = StatusCode::kOk;
  std::string m_message;
};

inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status unsupported(std::string m) {
  return {StatusCode::kUnsupported, std::move(m)};
}
inline Status resource_exhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status data_loss(std::string m) {
  return {StatusCode::kDataLoss, std::move(m)};
}
inline Status failed_precondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status io_error(std::string m) {
  return {StatusCode::kIoError, std::move(m)};
}
inline Status internal_error(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
inline Status out_of_range(std::string m) {
  return {StatusCode::kOutOfRange, std::move(m)};
}
inline Status non_finite(std::string m) {
  return {StatusCode::kNonFinite, std::move(m)};
}
inline Status bad_option(std::string m) {
  return {StatusCode::kBadOption, std::move(m)};
}
inline Status deadline_exceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}

template <typename T> class [[nodiscard]] StatusOr {
public:
  StatusOr(T value) : m_value(std::move(value)) {}       // NOLINT: implicit by design
  StatusOr(Status status) : m_value(std::move(status)) { // NOLINT: implicit by design
    assert(!std::get<Status>(m_value).ok() && "StatusOr constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(m_value); }
  Status status() const { return ok() ? Status() : std::get<Status>(m_value); }

  T& value() & { return std::get<T>(m_value); }
  const T& value() const& { return std::get<T>(m_value); }
  T&& value() && { return std::get<T>(std::move(m_value)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

private:
  std::variant<T, Status> m_value;
};

} // namespace ipu

#define IPU_CONCAT_INNER(a, b) a##b
#define IPU_CONCAT(a, b) IPU_CONCAT_INNER(a, b)

#define IPU_RETURN_IF_ERROR(expr)                                                                            \
  do {                                                                                                       \
    ::ipu::Status ipu_status_ = (expr);                                                                      \
    if (!ipu_status_.ok()) return ipu_status_;                                                               \
  } while (0)

#define IPU_RETURN_IF_ERROR_CTX(expr, context)                                                               \
  do {                                                                                                       \
    ::ipu::Status ipu_status_ = (expr);                                                                      \
    if (!ipu_status_.ok()) return ipu_status_.with_context(context);                                         \
  } while (0)

#define IPU_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                                                            \
  auto tmp = (expr);                                                                                         \
  if (!tmp.ok()) return tmp.status();                                                                        \
  lhs = std::move(tmp).value()

#define IPU_ASSIGN_OR_RETURN(lhs, expr)                                                                      \
  IPU_ASSIGN_OR_RETURN_IMPL(IPU_CONCAT(ipu_statusor_, __LINE__), lhs, expr)
