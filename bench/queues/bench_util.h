// Shared harness for the queue benchmarks: an item type with every hook the queues use, a
// start barrier so all threads begin together, and the spin-then-yield wait used by every
// consumer (the same for our queues and the peers, so no queue gets a kinder idle loop).
//
// Timing: threads are created before the clock starts and wait on a "go" flag; the time
// reported (manual time) runs from "go" until the last item was taken, so thread start-up
// and join are not measured.
#ifndef FAIRSCHED_BENCH_QUEUES_BENCH_UTIL_H_
#define FAIRSCHED_BENCH_QUEUES_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "queues/concepts.h"
#include "queues/lock_stats.h"
#include "sync/primitives.h"

namespace fairsched::bench {

// Task-sized (one cache line, like sched::Task), so neighbouring items never share a line
// and a consumer reading one item does not steal the line a producer is writing the next
// one into.
struct alignas(kCacheLineSize) Item {
  Item* next = nullptr;
  std::uint32_t wait_index = kNotInWaitQueue;
  std::uint64_t payload = 0;
};

// Waits politely: spin a little with the CPU's pause hint, then yield the core (this
// machine has 2 cores, so a spinning waiter would otherwise steal the producer's CPU).
class Backoff {
 public:
  void Wait() {
    if (++spins_ < 64) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
  void Reset() { spins_ = 0; }

 private:
  int spins_ = 0;
};

// Start barrier: workers call Arrive() then spin until Go().
class StartGate {
 public:
  void Arrive() {
    ready_.fetch_add(1, std::memory_order_acq_rel);
    while (!go_.load(std::memory_order_acquire)) CpuRelax();
  }
  // Waits until `workers` threads arrived, then releases them and returns the start time.
  std::chrono::steady_clock::time_point Go(int workers) {
    while (ready_.load(std::memory_order_acquire) < workers) std::this_thread::yield();
    const auto start = std::chrono::steady_clock::now();
    go_.store(true, std::memory_order_release);
    return start;
  }

 private:
  std::atomic<int> ready_{0};
  std::atomic<bool> go_{false};
};

inline double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Adds lock counters (per processed item) for queues that have a mutex.
inline void ReportLocks(benchmark::State& state, const QueueLockStats& before,
                        const QueueLockStats& after, double items) {
  if (items <= 0) return;
  state.counters["locks_per_item"] =
      static_cast<double>(after.lock_taken - before.lock_taken) / items;
  state.counters["contended_per_item"] =
      static_cast<double>(after.lock_contended - before.lock_contended) / items;
}

}  // namespace fairsched::bench

#endif  // FAIRSCHED_BENCH_QUEUES_BENCH_UTIL_H_
