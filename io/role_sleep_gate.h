// RoleSleepGate: decides when an IO backend's Notify must touch the kernel (write the
// eventfd that wakes the sched-role holder out of epoll_wait / io_uring_enter).
//
// Posters call Notify often (every post into an empty front queue, every IO submission); the
// holder sleeps rarely on a busy scheduler. So Notify does one atomic read-modify-write and
// writes the eventfd only when the holder really sleeps and nobody has woken it yet.
//
// The usual Dekker pair ("poster: publish, then read `sleeping`; holder: set `sleeping`,
// then re-check for work", both seq_cst) is folded into ONE word holding two bits:
//   kSleeping  set by the holder right before it blocks, cleared when it wakes;
//   kNotified  set by Notify, cleared by the holder when it consumes the notification.
// Both sides then do a read-modify-write on the same location, and all RMWs of one atomic
// are totally ordered (its modification order) with each one reading the value left by the
// previous one. So one of the two always sees the other: if Notify's RMW comes first, the
// holder's PrepareSleep sees kNotified and does not block; if PrepareSleep comes first,
// Notify sees kSleeping (and no earlier kNotified) and writes the eventfd. No seq_cst is
// needed; acquire/release carries the data (what the poster published before Notify is
// visible to the holder once it consumed the bit, through the release sequence of RMWs).
//
// Usage by a backend (role holder):
//   if (gate.PrepareSleep()) { block in the kernel; gate.FinishSleep(); }
//   else { do not block: a Notify is pending (now consumed) }
// and Notify(): if (gate.Notify()) write the eventfd. An eventfd write that lands after the
// holder already woke for another reason only makes the next wait return at once (one
// spurious wakeup, which the contract allows).
#ifndef FAIRSCHED_IO_ROLE_SLEEP_GATE_H_
#define FAIRSCHED_IO_ROLE_SLEEP_GATE_H_

#include <cstdint>

#include "sync/primitives.h"

namespace fairsched::internal {

class RoleSleepGate {
 public:
  // Any thread. Returns true if the caller must wake the holder through the kernel.
  bool Notify() {
    // Release: everything this thread published before Notify (a front-queue push, an IO
    // submission) happens-before the holder's acquire RMW that consumes kNotified.
    const std::uint32_t old = state_.fetch_or(kNotified, std::memory_order_release);
    // Only the first Notify of a sleep kicks the kernel; later ones found kNotified set.
    return old == kSleeping;
  }

  // Role holder, before blocking. Returns false (and consumes the notification) if a Notify
  // came since the last wake: then the holder must not block, but look for work again.
  bool PrepareSleep() {
    // Acquire: if a Notify came first we read its release and see what it published.
    const std::uint32_t old = state_.fetch_or(kSleeping, std::memory_order_acquire);
    if ((old & kNotified) == 0) return true;
    // Acquire: also consumes notifications that arrive between the two RMWs (they found
    // kNotified set and did not kick; we see what they published).
    state_.exchange(0, std::memory_order_acquire);
    return false;
  }

  // Role holder, after blocking (woken by anything). Clears both bits; acquire for the same
  // reason as in PrepareSleep.
  void FinishSleep() { state_.exchange(0, std::memory_order_acquire); }

 private:
  static constexpr std::uint32_t kSleeping = 1;
  static constexpr std::uint32_t kNotified = 2;
  alignas(kCacheLineSize) Atomic<std::uint32_t> state_{0};
};

}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_ROLE_SLEEP_GATE_H_
