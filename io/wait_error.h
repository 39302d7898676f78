// How io/ reports the end of a wait on a coro primitive (coro::Event, Semaphore, Mutex:
// coro::WaitStatus) as an IoError: kDeadline is kTimeout, as for every io/ operation.
#ifndef FAIRSCHED_IO_WAIT_ERROR_H_
#define FAIRSCHED_IO_WAIT_ERROR_H_

#include "coro/event.h"  // coro::WaitStatus (from the private coro/wait_list.h)
#include "io/io_error.h"

namespace fairsched {

// kOk -> success; kDeadline -> kTimeout; kCancelled -> kCancelled; kShutdown -> kShutdown.
inline IoError ErrorOfWaitStatus(coro::WaitStatus status) {
  switch (status) {
    case coro::WaitStatus::kOk:
      return IoError();
    case coro::WaitStatus::kDeadline:
      return IoError(IoErrorCode::kTimeout);
    case coro::WaitStatus::kCancelled:
      return IoError(IoErrorCode::kCancelled);
    case coro::WaitStatus::kShutdown:
      break;
  }
  return IoError(IoErrorCode::kShutdown);
}

}  // namespace fairsched

#endif  // FAIRSCHED_IO_WAIT_ERROR_H_
