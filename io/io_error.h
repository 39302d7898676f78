// Errors of the socket layer as values: IoErrorCode (what went wrong), IoError (a code, the
// errno the system reported, and for a failed write how much of it went out) and IoResult<T>
// (a value or an IoError). Every socket operation in io/ returns one of these; nothing in
// the socket layer throws.
#ifndef FAIRSCHED_IO_IO_ERROR_H_
#define FAIRSCHED_IO_IO_ERROR_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "sched/task.h"

namespace fairsched {

// What went wrong. kOk only inside a successful IoError.
enum class IoErrorCode : std::uint8_t {
  kOk,
  kTimeout,         // the operation's deadline passed
  kEndOfStream,     // the peer closed its side (or Shutdown(kRead) here): no more data
  kResetByPeer,     // ECONNRESET / EPIPE: the peer reset the connection or stopped reading
  kRefused,         // ECONNREFUSED: nobody listens at the address
  kCancelled,       // the coroutine was cancelled while it waited
  kShutdown,        // the scheduler is stopping
  kInvalidAddress,  // an address that does not parse
  kSystem,          // any other errno (see IoError::sys_errno())
  kClosed,          // the socket was closed (Close(), maybe by another coroutine) before or
                    // while the operation ran
};

const char* ToString(IoErrorCode code);

// An error value: a code and, when the system reported one, its errno. Cheap to copy.
class IoError {
 public:
  IoError() = default;  // success
  explicit IoError(IoErrorCode code, int sys_errno = 0) : code_(code), sys_errno_(sys_errno) {}
  // Maps an errno to its code (ECONNRESET -> kResetByPeer, ECANCELED -> kCancelled, ...).
  static IoError FromErrno(int sys_errno);

  bool ok() const { return code_ == IoErrorCode::kOk; }
  IoErrorCode code() const { return code_; }
  int sys_errno() const { return sys_errno_; }
  // Of a failed TcpStream::Write: how many bytes of its data the kernel accepted before the
  // failure (a prefix; whether they reached the peer is unknown). 0 for other errors.
  std::size_t bytes_done() const { return bytes_done_; }
  IoError WithBytesDone(std::size_t bytes) const {
    IoError copy = *this;
    copy.bytes_done_ = bytes;
    return copy;
  }
  // "timed out", "connection refused (errno 111: Connection refused)", ...
  std::string Message() const;

 private:
  IoErrorCode code_ = IoErrorCode::kOk;
  int sys_errno_ = 0;
  std::size_t bytes_done_ = 0;
};

// A value or an error.
template <typename T>
class [[nodiscard]] IoResult {
 public:
  IoResult(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  IoResult(IoError error) : error_(error) {        // NOLINT: implicit on purpose
    FAIRSCHED_DCHECK(!error.ok(), "an IoResult built from a success IoError has no value");
  }
  bool ok() const { return value_.has_value(); }
  const IoError& error() const { return error_; }
  T& value() & {
    FAIRSCHED_CHECK(ok(), "value() of a failed IoResult (check ok() first)");
    return *value_;
  }
  T&& value() && {
    FAIRSCHED_CHECK(ok(), "value() of a failed IoResult (check ok() first)");
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
  IoError error_;
};

namespace internal {

// The text of an errno for IoError::Message: strerror on POSIX; on Windows also the socket
// errnos msvcrt's strerror calls "Unknown error".
const char* ErrnoText(int sys_errno);
inline IoError ErrorOfStatus(int status) {
  return status < 0 ? IoError::FromErrno(-status) : IoError();
}

// After a failed operation: the error for `result` (-errno), given how the wait ended.
IoError ErrorOfResult(int result, bool timed_out);

}  // namespace internal
}  // namespace fairsched

#endif  // FAIRSCHED_IO_IO_ERROR_H_
