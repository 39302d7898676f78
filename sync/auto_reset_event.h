// AutoResetEvent: a one-bit, coalescing event between threads. `Send` sets the bit;
// `Receive` waits until the bit is set and clears it (the reset is automatic, hence the
// name). Several Sends before a Receive coalesce into one (it is a flag, not a counter). Any
// number of threads may Send and any number may Receive; each set bit is consumed by exactly
// one receiver. (Not to be confused with a task's signal, TaskScheduler::Signal: that is a
// wakeup that also tells the task "done", see sched/task.h.)
//
// The scheduler uses one AutoResetEvent to wake idle workers (the "ready" event) and one,
// inside NoIoBackend, to wake the sched-role holder (the "front" event).
//
// Textbook version: mutex + condition variable + bool. This one keeps the bit atomic so the
// three most common operations are one or two atomic instructions (docs/algorithms.md,
// "AutoResetEvent"):
//   - Send when the bit is already set: one atomic exchange, return.
//   - Send when nobody sleeps: one exchange plus one load of the waiter count, return.
//   - Receive when the bit is set: one atomic exchange, return.
// Only a receiver that must really sleep, and a Send that finds a sleeper to wake, go to the
// kernel. How they sleep depends on the platform:
//   - Linux: directly on the bit with futex(2): FUTEX_WAIT "sleep if the bit is still
//     clear", FUTEX_WAKE "wake one sleeper". One system call on each side, no mutex: a
//     wake-up is the sender's futex_wake plus the receiver's return from futex_wait (the
//     mutex + condition variable version costs a condition-variable wait, its internal
//     futexes, and a mutex round trip on both sides).
//   - Windows 8+: the same on the bit with WaitOnAddress / WakeByAddressSingle, the futex's
//     twin (sync/futex_windows.cc).
//   - elsewhere: a mutex and a condition variable, taken only on those slow paths.
//
// Lost-wakeup protection (a receiver decides to sleep while a sender takes its fast path):
// a receiver that is about to sleep first registers in `waiters_`, then re-checks the bit;
// a sender first sets the bit, then reads `waiters_`. Both sides use sequentially
// consistent operations, so in the single total order either the receiver's re-check comes
// after the Send's exchange (and sees the bit: no sleep), or the sender's load comes after
// the receiver's registration (and the sender wakes it). The wake cannot fall into the gap
// between the re-check and the sleep: with futex, FUTEX_WAIT itself re-reads the bit in
// the kernel, atomically with queueing the sleeper, and returns at once if it is set
// (WaitOnAddress gives the same guarantee against WakeByAddressSingle); with
// the condition variable, the receiver holds the mutex from its registration until it is
// inside the wait, and the sender takes that mutex before notifying. This is the Dekker
// pattern; with acquire/release alone both sides could read the stale value and the
// receiver would sleep with the bit set.
//
// Memory order promise: everything the sender wrote before Send() happens-before
// everything the receiver does after the Receive that consumed that bit (release on the
// set, acquire on the clear).
//
// Lifetime: an AutoResetEvent must outlive every Send that may still be running. A receiver can
// consume the bit (and return) while the sender is still between its exchange and its read
// of `waiters_`, so "Receive returned" does not mean "the sender is done with the object":
// do not destroy an AutoResetEvent right after Receive to hand a result back from a short-lived
// thread (use a mutex-based notification for that; examples/notification.h is one).
#ifndef FAIRSCHED_SYNC_AUTO_RESET_EVENT_H_
#define FAIRSCHED_SYNC_AUTO_RESET_EVENT_H_

#include <chrono>
#include <cstdint>

#include "sync/primitives.h"

// Which sleeping mechanism this build uses. The futex path sleeps on the bit itself
// (FutexWait/FutexWake of sync/primitives.h). The interleaving explorer's build
// (FAIRSCHED_EXPLORE, sync/explore/) takes the portable path unless the target also defines
// FAIRSCHED_EXPLORE_FUTEX: then it runs the futex path against the explorer's futex model.
#if (defined(__linux__) || defined(_WIN32)) && \
    (!defined(FAIRSCHED_EXPLORE) || defined(FAIRSCHED_EXPLORE_FUTEX))
#define FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX 1
#else
#define FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX 0
#endif

namespace fairsched {

class AutoResetEvent {
 public:
  using Clock = SteadyClock;  // std::chrono::steady_clock (the explore build: its logical clock)

  AutoResetEvent() = default;
  AutoResetEvent(const AutoResetEvent&) = delete;
  AutoResetEvent& operator=(const AutoResetEvent&) = delete;

  // Sets the bit and wakes one sleeping receiver, if any. Thread-safe; never blocks on
  // anything but the internal mutex (and only when a receiver sleeps).
  void Send();

  // Waits until the bit is set, then clears it.
  void Receive();

  // Like Receive, but gives up after `timeout`. Returns true if the bit was received (and
  // cleared). Never returns false before `timeout` has passed on the steady clock.
  // Non-positive timeouts behave like TryReceive.
  bool ReceiveTimed(std::chrono::nanoseconds timeout);

  // Like Receive, but gives up at `deadline` (steady clock). Returns true if received.
  // Never returns false before `deadline`. Clock::time_point::max() waits forever.
  bool ReceiveUntil(Clock::time_point deadline);

  // Clears and returns the bit without waiting.
  bool TryReceive();

  // Snapshot of the bit (does not clear it).
  bool IsSet() const { return flag_.load(std::memory_order_acquire) != 0; }

 private:
  // Fast path shared by all receives: clears the bit if set. A relaxed load first avoids
  // writing the cache line (and bouncing it between cores) when the bit is clear.
  bool TryClear() {
    // Relaxed: only a hint; the exchange below is what decides.
    if (flag_.load(std::memory_order_relaxed) == 0) return false;
    // Acquire: pairs with the release half of Send's exchange, so the sender's earlier
    // writes are visible to us once we own the bit.
    return flag_.exchange(0, std::memory_order_acquire) != 0;
  }
  // Slow path of Send (signal.cc): wakes one sleeping receiver.
  void WakeOne();
#if FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX
  // Slow path of a receive: sleeps until the bit may be set or `deadline` has passed.
  void SleepWhileClear(Clock::time_point deadline);
#endif

  // The bit, 0 or 1. 32 bits wide because it is also the futex word (Linux, Windows).
  Atomic<std::uint32_t> flag_{0};
  Atomic<std::uint32_t> waiters_{0};  // receivers inside the slow path
#if !FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX
  Mutex mu_;
  ConditionVariable cv_;
#endif
};

}  // namespace fairsched

#endif  // FAIRSCHED_SYNC_AUTO_RESET_EVENT_H_
