// Completion: the "all jobs of this round finished" latch the scheduler benchmarks wait on.
//
// Every finished job must report once, from whichever worker ran it. One shared counter
// would put a contended cache line into every task of every contestant and could dominate
// the very costs we measure, so jobs count down in kLanes padded lanes (job i uses lane
// i % kLanes, and consecutive jobs usually run on different workers); only the last job of a
// lane touches the shared lane counter, and only the last lane wakes the waiter.
#ifndef FAIRSCHED_BENCH_SCHED_COMPLETION_H_
#define FAIRSCHED_BENCH_SCHED_COMPLETION_H_

#include <cstdint>

#include "sync/primitives.h"

namespace fairsched::bench {

class Completion {
 public:
  static constexpr std::uint32_t kLanes = 16;

  // Arms the latch for jobs 0..jobs-1. Not concurrent with Arrive or Wait.
  void Reset(std::uint32_t jobs) {
    std::uint32_t used = 0;
    for (std::uint32_t lane = 0; lane < kLanes; ++lane) {
      const std::uint32_t count = jobs / kLanes + (lane < jobs % kLanes ? 1 : 0);
      lanes_[lane].left.store(count, std::memory_order_relaxed);
      if (count > 0) ++used;
    }
    lanes_left_.store(used, std::memory_order_relaxed);
    // Release: a worker that runs a job posted after Reset sees the counts (the post itself
    // also synchronises, this only keeps the latch self-contained).
    done_.store(used == 0 ? 1 : 0, std::memory_order_release);
  }

  // Job `index` finished. Any thread, once per job.
  void Arrive(std::uint32_t index) {
    // acq_rel: the last arrival of a lane must see (acquire) every other arrival's work and
    // publish (release) its own, so the waiter that sees done_ sees all jobs' effects.
    if (lanes_[index % kLanes].left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (lanes_left_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    done_.store(1, std::memory_order_release);
    done_.notify_one();
  }

  // Blocks until every job arrived.
  void Wait() {
    // Acquire pairs with the release store in Arrive: all job effects are visible after.
    while (done_.load(std::memory_order_acquire) == 0) done_.wait(0, std::memory_order_acquire);
  }

  bool IsDone() const { return done_.load(std::memory_order_acquire) != 0; }

 private:
  struct alignas(kCacheLineSize) Lane {
    Atomic<std::uint32_t> left{0};
  };
  Lane lanes_[kLanes];
  alignas(kCacheLineSize) Atomic<std::uint32_t> lanes_left_{0};
  alignas(kCacheLineSize) Atomic<int> done_{1};
};

}  // namespace fairsched::bench

#endif  // FAIRSCHED_BENCH_SCHED_COMPLETION_H_
