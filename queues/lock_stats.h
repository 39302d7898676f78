// Counting of mutex acquisitions for the semi-lock-free and locked queues.
//
// The ready queue's selling point is that its mutex is taken rarely (about once per block of
// pops), so the queues that have a mutex count how often it was taken and how often the
// taker had to wait for it. `lock_contended / operations` is the "lock contention per
// operation" figure the benchmarks and the scheduler's statistics report.
#ifndef FAIRSCHED_QUEUES_LOCK_STATS_H_
#define FAIRSCHED_QUEUES_LOCK_STATS_H_

#include <cstdint>
#include <mutex>

#include "sync/primitives.h"

namespace fairsched {

// A snapshot of a lock's counters.
struct QueueLockStats {
  std::uint64_t lock_taken = 0;      // times the mutex was acquired
  std::uint64_t lock_contended = 0;  // of those, times a try_lock failed first (had to wait)

  QueueLockStats& operator+=(const QueueLockStats& other) {
    lock_taken += other.lock_taken;
    lock_contended += other.lock_contended;
    return *this;
  }
};

// Two counters with a single writer at a time, readable from any thread.
//
// A queue's counter is updated only while the counted mutex is held; a consumer's own
// counter only by the thread that owns the consumer. Either way writers are already
// serialised, so an increment is a
// relaxed load plus a relaxed store (a plain `mov`), not a locked read-modify-write, so
// counting adds no atomic instruction to the lock path. Readers use relaxed loads and get a
// value that is at most a few increments stale, which is all a statistic needs.
class LockCounter {
 public:
  LockCounter() = default;
  // Starts from `initial` (used when a consumer handle is moved).
  explicit LockCounter(QueueLockStats initial)
      : taken_(initial.lock_taken), contended_(initial.lock_contended) {}
  LockCounter(const LockCounter&) = delete;
  LockCounter& operator=(const LockCounter&) = delete;

  // Acquires `mutex`, first with try_lock so a wait can be counted as contention. Counts
  // into this counter and, if given, into `also` (a per-consumer counter owned by the
  // calling thread).
  MutexLock Lock(Mutex& mutex, LockCounter* also = nullptr) {
    MutexLock lock(mutex, std::try_to_lock);
    const bool contended = !lock.owns_lock();
    if (contended) lock.lock();
    Count(contended);
    if (also != nullptr) also->Count(contended);
    return lock;
  }

  // Records one acquisition. Caller guarantees a single writer (see the class comment).
  void Count(bool contended) {
    Bump(taken_);
    if (contended) Bump(contended_);
  }

  QueueLockStats Stats() const {
    return {taken_.load(std::memory_order_relaxed), contended_.load(std::memory_order_relaxed)};
  }

 private:
  static void Bump(Atomic<std::uint64_t>& counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  Atomic<std::uint64_t> taken_{0};
  Atomic<std::uint64_t> contended_{0};
};

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_LOCK_STATS_H_
