// io/signal_wait.h, the part every platform shares: the waits, Cancel and the first
// signal's delivery. The handlers are io/signal_wait_posix.cc and io/signal_wait_windows.cc.
#include "io/signal_wait.h"

#include "io/wait_error.h"

namespace fairsched {

coro::Lazy<IoResult<int>> SignalWait::Wait(TaskDeadline deadline) {
  const coro::WaitStatus status = co_await event_.Wait(deadline);
  if (status == coro::WaitStatus::kOk) co_return Outcome();
  co_return ErrorOfWaitStatus(status);
}

IoResult<int> SignalWait::WaitBlocking(std::chrono::nanoseconds timeout) {
  MutexLock lock(mu_);
  if (timeout <= std::chrono::nanoseconds::zero()) {
    done_cv_.wait(lock, [this] { return done_; });
  } else if (!done_cv_.wait_for(lock, timeout, [this] { return done_; })) {
    return IoError(IoErrorCode::kTimeout);
  }
  lock.unlock();
  return Outcome();
}

void SignalWait::Cancel() {
  {
    MutexLock lock(mu_);
    if (done_) return;
    cancelled_ = true;
    done_ = true;
  }
  done_cv_.notify_all();
  event_.Set();
}

void SignalWait::Deliver(int signal_number) {
  {
    MutexLock lock(mu_);
    if (done_) return;
    // Release: pairs with received()'s acquire (see the member's comment).
    signal_.store(signal_number, std::memory_order_release);
    done_ = true;
  }
  done_cv_.notify_all();
  event_.Set();
}

IoResult<int> SignalWait::Outcome() const {
  // Acquire: the event (or mu_) already ordered us after Deliver; this only reads the value.
  const int signal_number = signal_.load(std::memory_order_acquire);
  if (signal_number != 0) return signal_number;
  return IoError(IoErrorCode::kCancelled);
}

}  // namespace fairsched
