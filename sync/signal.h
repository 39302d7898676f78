// Signal: a one-bit event between threads. `Send` sets the bit; `Receive` waits until the
// bit is set and clears it. Several Sends before a Receive coalesce into one (it is a flag,
// not a counter). Any number of threads may Send and any number may Receive; each set bit
// is consumed by exactly one receiver.
//
// The scheduler uses one Signal to wake idle workers (the "ready" signal) and one, inside
// NoIoBackend, to wake the sched-role holder (the "front" signal).
//
// Textbook version: mutex + condition variable + bool. This one keeps the bool atomic so the
// two most common operations never touch the mutex (docs/algorithms.md, "Signal"):
//   - Send when the bit is already set: one atomic exchange, return.
//   - Send when nobody sleeps: one exchange plus one load of the waiter count, return.
//   - Receive when the bit is set: one atomic exchange, return.
// The mutex is taken only when a receiver must really sleep, and by a Send that finds a
// sleeper to wake.
//
// Lost-wakeup protection (a receiver decides to sleep while a sender takes its fast path):
// a receiver that is about to sleep first registers in `waiters_`, then re-checks the bit,
// all while holding the mutex; a sender first sets the bit, then reads `waiters_`. Both
// sides use sequentially consistent operations, so in the single total order either the
// receiver's re-check comes after the Send's exchange (and sees the bit: no sleep), or the
// sender's load comes after the receiver's registration (and the sender takes the mutex,
// which it can only get once the receiver is inside the condition-variable wait, so the
// notification cannot fall into the gap between check and wait). This is the Dekker
// pattern; with acquire/release alone both sides could read the stale value and the
// receiver would sleep with the bit set.
//
// Memory order promise: everything the sender wrote before Send() happens-before
// everything the receiver does after the Receive that consumed that bit (release on the
// set, acquire on the clear).
//
// Lifetime: a Signal must outlive every Send that may still be running. A receiver can
// consume the bit (and return) while the sender is still between its exchange and its read
// of `waiters_`, so "Receive returned" does not mean "the sender is done with the object":
// do not destroy a Signal right after Receive to hand a result back from a short-lived
// thread (use a mutex-based notification for that; examples/notification.h is one).
#ifndef FAIRSCHED_SYNC_SIGNAL_H_
#define FAIRSCHED_SYNC_SIGNAL_H_

#include <chrono>
#include <cstdint>

#include "sync/primitives.h"

namespace fairsched {

class Signal {
 public:
  using Clock = std::chrono::steady_clock;

  Signal() = default;
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;

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
  bool IsSet() const { return flag_.load(std::memory_order_acquire); }

 private:
  // Fast path shared by all receives: clears the bit if set. A relaxed load first avoids
  // writing the cache line (and bouncing it between cores) when the bit is clear.
  bool TryClear() {
    // Relaxed: only a hint; the exchange below is what decides.
    if (!flag_.load(std::memory_order_relaxed)) return false;
    // Acquire: pairs with the release half of Send's exchange, so the sender's earlier
    // writes are visible to us once we own the bit.
    return flag_.exchange(false, std::memory_order_acquire);
  }

  Atomic<bool> flag_{false};
  Atomic<std::uint32_t> waiters_{0};  // receivers inside the slow path (changed under mu_)
  Mutex mu_;
  ConditionVariable cv_;
};

}  // namespace fairsched

#endif  // FAIRSCHED_SYNC_SIGNAL_H_
