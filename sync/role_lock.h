// RoleLock: the try-only lock that makes the scheduler's sched-role single-threaded.
//
// There is no scheduler thread: every worker calls TryLock between its execution batches,
// and whoever wins does the scheduling (front queue -> wait/ready queues) and then Unlocks.
// Losers never wait for the role; they go on executing ready tasks. So this is not a mutex
// (no blocking Lock, no fairness): one atomic flag.
//
// What it guarantees: TryLock returning true happens-after the previous holder's Unlock, so
// all the sched-only state (wait heap, the front queue's consumer position, the ready
// queue's producer side) that the previous holder wrote with plain stores is visible to
// the new holder. That is what lets the sched-role use plain, unsynchronised data
// structures.
//
// Waking a holder that sleeps (it sleeps in IoBackend::WaitUntil, holding the role, when
// there is nothing to schedule) is the IoBackend's job (Notify), not this class's.
#ifndef FAIRSCHED_SYNC_ROLE_LOCK_H_
#define FAIRSCHED_SYNC_ROLE_LOCK_H_

#include "sync/primitives.h"

namespace fairsched {

class RoleLock {
 public:
  RoleLock() = default;
  RoleLock(const RoleLock&) = delete;
  RoleLock& operator=(const RoleLock&) = delete;

  // Takes the role if nobody holds it. Never blocks.
  bool TryLock() {
    // Relaxed pre-check: workers call this in a loop; reading first keeps the line shared
    // instead of bouncing it with a failing exchange while someone holds the role.
    if (held_.load(std::memory_order_relaxed)) return false;
    // Acquire on success: pairs with Unlock's release, publishing the previous holder's
    // plain writes to the sched-only state.
    return !held_.exchange(true, std::memory_order_acquire);
  }

  // Gives the role back. Only the holder may call it.
  void Unlock() {
    // seq_cst (a release, plus a place in the single total order): every plain write the
    // holder made to sched-only state happens-before the next successful TryLock, and a
    // holder that looks at the front queue right after Unlock forms a Dekker pair with a
    // poster that pushes and then checks IsLocked(std::memory_order_seq_cst): at least one
    // of the two sees the other (see BasicTaskScheduler::PushFront). And the holder's
    // ready-queue publication (a release store) is ordered before its read of the parked
    // count after Unlock, for a parker that registers and then looks at the role with
    // seq_cst: this store's place in the total order is what orders that pair (see
    // BasicTaskScheduler::WakeOne; there is no fence).
    held_.store(false, std::memory_order_seq_cst);
  }

  // Snapshot, for wake-up decisions and statistics. Relaxed by default; seq_cst for the
  // Dekker pair described at Unlock.
  bool IsLocked(std::memory_order order = std::memory_order_relaxed) const {
    return held_.load(order);
  }

 private:
  // Own cache line: every idle-ish worker reads it, and it must not share a line with the
  // hot queue pointers of the object that embeds it.
  alignas(kCacheLineSize) Atomic<bool> held_{false};
};

}  // namespace fairsched

#endif  // FAIRSCHED_SYNC_ROLE_LOCK_H_
