// IoError's messages and errno mapping (io/io_error.h). The errno texts themselves are per
// platform (internal::ErrnoText in io/socket_ops_posix.cc, io/socket_ops_windows.cc).
#include "io/io_error.h"

#include <cerrno>
#include <string>

namespace fairsched {

const char* ToString(IoErrorCode code) {
  switch (code) {
    case IoErrorCode::kOk:
      return "ok";
    case IoErrorCode::kTimeout:
      return "timed out";
    case IoErrorCode::kEndOfStream:
      return "end of stream (the peer closed the connection)";
    case IoErrorCode::kResetByPeer:
      return "connection reset by peer";
    case IoErrorCode::kRefused:
      return "connection refused";
    case IoErrorCode::kCancelled:
      return "cancelled";
    case IoErrorCode::kShutdown:
      return "the scheduler is shutting down";
    case IoErrorCode::kInvalidAddress:
      return "invalid address";
    case IoErrorCode::kSystem:
      return "system error";
    case IoErrorCode::kClosed:
      return "socket closed (by Close(), maybe while the operation was pending)";
  }
  return "?";
}

IoError IoError::FromErrno(int sys_errno) {
  switch (sys_errno) {
    case 0:
      return IoError();
    case ECONNRESET:
    case EPIPE:
      return IoError(IoErrorCode::kResetByPeer, sys_errno);
    case ECONNREFUSED:
      return IoError(IoErrorCode::kRefused, sys_errno);
    case ETIMEDOUT:
      return IoError(IoErrorCode::kTimeout, sys_errno);
    case ECANCELED:
      return IoError(IoErrorCode::kCancelled, sys_errno);
    default:
      return IoError(IoErrorCode::kSystem, sys_errno);
  }
}

std::string IoError::Message() const {
  std::string message = ToString(code_);
  if (sys_errno_ != 0) {
    message += " (errno " + std::to_string(sys_errno_) + ": " + internal::ErrnoText(sys_errno_) +
               ")";
  }
  return message;
}

namespace internal {

IoError ErrorOfResult(int result, bool timed_out) {
  if (result == -ECANCELED && timed_out) return IoError(IoErrorCode::kTimeout);
  return IoError::FromErrno(-result);
}

}  // namespace internal
}  // namespace fairsched
