// WorkerStats: the scheduler's per-worker statistics (BasicTaskScheduler::Stats()), and the
// counters each worker keeps for them.
//
// Contract:
//   - Each counter is written only by its worker, with a relaxed load and store (no locked
//     instruction: SingleWriterCounter), and read with relaxed loads. A snapshot may lag by
//     a few increments while workers run; it is exact after Stop.
//   - Stats() has one entry per worker index (the i-th worker of every Start, and the
//     temporary drain workers of Stop as index 0), summed over every Start since the
//     scheduler was constructed.
#ifndef FAIRSCHED_SCHED_WORKER_STATS_H_
#define FAIRSCHED_SCHED_WORKER_STATS_H_

#include <cstddef>
#include <cstdint>

#include "sched/latency_histogram.h"
#include "sync/primitives.h"

namespace fairsched {

// One worker's counts (a plain snapshot; see the contract above).
struct WorkerStats {
  std::uint64_t tasks_executed = 0;
  std::uint64_t sched_role_taken = 0;      // times this worker held the sched-role
  std::uint64_t ready_lock_taken = 0;      // ready-queue mutex taken by this worker's pops
  std::uint64_t ready_lock_contended = 0;  // ... of which it had to wait
  std::uint64_t parks = 0;                 // times it slept on the ready event
  std::uint64_t role_sleeps = 0;           // times it slept in the IO backend holding the role
  std::uint64_t role_spins = 0;            // ... of which it spun first (spin_before_park)
  std::uint64_t wakes_sent = 0;            // ready events it sent to wake a parked worker
  std::uint64_t idle_wakeups = 0;          // woke from a park and found nothing to do (spurious)
  // Other workers' local batches this worker published (docs/design.md, local batches):
  // before parking or sleeping in the role (idle), and at its own batch ends because the
  // batch had stayed held while it started execute_batch_size tasks (stale).
  std::uint64_t idle_take_overs = 0;
  std::uint64_t stale_take_overs = 0;
};

namespace internal {

// A counter with one writer thread: Add is a relaxed load and store (no locked
// instruction); Read, from any thread, a relaxed load that may lag behind the writer.
class SingleWriterCounter {
 public:
  void Add(std::uint64_t by = 1) {
    value_.store(value_.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  std::uint64_t Read() const { return value_.load(std::memory_order_relaxed); }

 private:
  Atomic<std::uint64_t> value_{0};
};
static_assert(sizeof(SingleWriterCounter) == sizeof(std::uint64_t));

// The counters a worker keeps for WorkerStats (all but the ready-queue lock counts, which
// its queue consumer keeps) and for the latency histogram. Written by their worker only.
struct WorkerCounters {
  SingleWriterCounter tasks_executed;
  SingleWriterCounter sched_role_taken;
  SingleWriterCounter parks;
  SingleWriterCounter role_sleeps;
  SingleWriterCounter role_spins;
  SingleWriterCounter wakes_sent;
  SingleWriterCounter idle_wakeups;
  SingleWriterCounter idle_take_overs;
  SingleWriterCounter stale_take_overs;
  // Post-to-start latency counts, log2 buckets (LatencyHistogram::BucketOf).
  SingleWriterCounter latency[LatencyHistogram::kBuckets];

  // Adds these counts to `s` (relaxed loads: see the contract above).
  void AddTo(WorkerStats& s) const {
    s.tasks_executed += tasks_executed.Read();
    s.sched_role_taken += sched_role_taken.Read();
    s.parks += parks.Read();
    s.role_sleeps += role_sleeps.Read();
    s.role_spins += role_spins.Read();
    s.wakes_sent += wakes_sent.Read();
    s.idle_wakeups += idle_wakeups.Read();
    s.idle_take_overs += idle_take_overs.Read();
    s.stale_take_overs += stale_take_overs.Read();
  }
  // Adds the latency counts to `h` (relaxed loads).
  void AddLatencyTo(LatencyHistogram& h) const {
    for (std::size_t i = 0; i < LatencyHistogram::kBuckets; ++i) h.counts[i] += latency[i].Read();
  }
};

}  // namespace internal
}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_WORKER_STATS_H_
