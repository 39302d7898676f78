// AutoResetEvent implementation: see auto_reset_event.h for the protocol and its lost-wakeup argument.
#include "sync/auto_reset_event.h"

namespace fairsched {

void AutoResetEvent::Send() {
  // seq_cst (it includes release, so the sender's prior writes travel with the bit): the
  // exchange must be ordered before the load of waiters_ below in the single total order,
  // which acquire/release alone would not guarantee (store->load reordering).
  if (flag_.exchange(1, std::memory_order_seq_cst) != 0) {
    // The bit was already set: its receiver has not consumed it yet, and whoever consumes
    // it will also see our writes (the bit is cleared with acquire after our release, and
    // our exchange is later in the flag's modification order). Nobody to wake.
    return;
  }
  // seq_cst: the other half of the Dekker pattern (see signal.h). If this reads 0, every
  // receiver that registers later re-checks the bit after registering and sees it.
  if (waiters_.load(std::memory_order_seq_cst) == 0) return;
  WakeOne();
}

void AutoResetEvent::Receive() { ReceiveUntil(Clock::time_point::max()); }

bool AutoResetEvent::ReceiveTimed(std::chrono::nanoseconds timeout) {
  if (timeout <= std::chrono::nanoseconds::zero()) return TryReceive();
  const Clock::time_point now = Clock::now();
  // Saturate instead of overflowing for huge timeouts (e.g. nanoseconds::max()).
  const Clock::time_point deadline =
      timeout >= Clock::time_point::max() - now
          ? Clock::time_point::max()
          : now + std::chrono::duration_cast<Clock::duration>(timeout);
  return ReceiveUntil(deadline);
}

bool AutoResetEvent::ReceiveUntil(Clock::time_point deadline) {
  if (TryClear()) return true;
#if !FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX
  MutexLock lock(mu_);  // held from registration into the wait (see signal.h)
#endif
  // seq_cst: registration must precede our re-check of the bit in the total order (see
  // signal.h).
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  bool received = false;
  while (true) {
    // seq_cst re-check (also an acquire: pairs with the sender's release). An exchange, not
    // a load, so exactly one receiver consumes each set bit.
    if (flag_.exchange(0, std::memory_order_seq_cst) != 0) {
      received = true;
      break;
    }
    // Report a timeout only once the clock says so (sleeps may end early or spuriously),
    // so we never return false early.
    if (deadline != Clock::time_point::max() && Clock::now() >= deadline) break;
#if FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX
    SleepWhileClear(deadline);
#else
    if (deadline == Clock::time_point::max()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, deadline);
    }
#endif
  }
  // Relaxed: only the count matters to senders, and a sender that still sees us counted
  // merely makes one system call (or takes the mutex) for nothing.
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  return received;
}

bool AutoResetEvent::TryReceive() { return TryClear(); }

#if FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX

// The futex word is flag_ itself (sync/primitives.h FutexWait/FutexWake: the syscalls,
// WaitOnAddress/WakeByAddressSingle on Windows, or the interleaving explorer's model).
void AutoResetEvent::SleepWhileClear(Clock::time_point deadline) {
  // The kernel compares the word with 0 atomically with queueing us: a Send that set the bit
  // after our re-check makes this return at once (EAGAIN). EINTR, EAGAIN and ETIMEDOUT (and
  // every return of WaitOnAddress) all mean "look at the bit and the clock again", which the
  // caller's loop does.
  FutexWait(&flag_, 0u, deadline);
}

void AutoResetEvent::WakeOne() { FutexWake(&flag_, 1); }

#else

void AutoResetEvent::WakeOne() {
  {
    // A receiver registered in waiters_ holds mu_ from its registration until it is inside
    // cv_.wait; taking mu_ here means we run either before its re-check (it then sees the
    // bit) or after it started waiting (it then gets the notification).
    MutexLock lock(mu_);
  }
  cv_.notify_one();
}

#endif

}  // namespace fairsched
