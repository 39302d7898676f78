// The non-template helpers of the socket core (io/internal/socket_core.h): how a wait's end
// and a cancelled coroutine become IoErrors.
#include "io/internal/socket_core.h"

namespace fairsched::internal {

IoError ErrorOfWake(coro::WakeReason reason) {
  switch (reason) {
    case coro::WakeReason::kDeadline:
      return IoError(IoErrorCode::kTimeout);
    case coro::WakeReason::kShutdown:
      return IoError(IoErrorCode::kShutdown);
    case coro::WakeReason::kCancelled:
    case coro::WakeReason::kWakeup:
    case coro::WakeReason::kSignal:
      break;
  }
  return IoError(IoErrorCode::kCancelled);
}

IoError CancellationError() {
  switch (coro::CurrentCancelReason()) {
    case coro::CancelReason::kNone:
      return IoError();
    case coro::CancelReason::kShutdown:
      return IoError(IoErrorCode::kShutdown);
    case coro::CancelReason::kRequested:
    case coro::CancelReason::kDeadline:
      break;
  }
  return IoError(IoErrorCode::kCancelled);
}

}  // namespace fairsched::internal
