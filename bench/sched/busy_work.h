// Calibrated busy work for benchmark task bodies: BusyWork(n) spins n iterations of a
// dependent integer chain the compiler cannot remove, and IterationsFor(ns) converts a
// duration into iterations using a calibration measured once per process. Sleeping would
// measure the kernel's timer slack, not the scheduler, so task bodies spin.
#ifndef FAIRSCHED_BENCH_SCHED_BUSY_WORK_H_
#define FAIRSCHED_BENCH_SCHED_BUSY_WORK_H_

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace fairsched::bench {

// Spins `iterations` steps of a multiply-add chain. Each step depends on the previous one,
// so the time is latency-bound and stable across CPUs of one model. The chain starts from
// and ends in a per-thread variable, so consecutive bodies on one thread are dependent too:
// otherwise the out-of-order core overlaps the tail of one short body with the head of the
// next and a "100 ns" body costs about 65 ns in a tight loop.
inline void BusyWork(std::uint64_t iterations) {
  if (iterations == 0) return;
  static thread_local std::uint64_t chain = 1;
  std::uint64_t x = chain;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));  // keep the chain: the compiler may not fold the loop
  }
  chain = x;
}

// Nanoseconds per BusyWork iteration on this machine: the fastest of several runs, so a
// run that was preempted by another process does not inflate the estimate.
inline double BusyWorkNsPerIteration() {
  static const double kNsPerIteration = [] {
    using Clock = std::chrono::steady_clock;
    constexpr std::uint64_t kProbe = 2'000'000;
    double best = 1e9;
    for (int run = 0; run < 7; ++run) {
      const auto start = Clock::now();
      BusyWork(kProbe);
      const auto ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
      best = std::min(best, ns / kProbe);
    }
    return best;
  }();
  return kNsPerIteration;
}

// Iterations of BusyWork that take about `ns` nanoseconds (0 for 0).
inline std::uint64_t IterationsFor(std::int64_t ns) {
  if (ns <= 0) return 0;
  return static_cast<std::uint64_t>(static_cast<double>(ns) / BusyWorkNsPerIteration() + 0.5);
}

}  // namespace fairsched::bench

#endif  // FAIRSCHED_BENCH_SCHED_BUSY_WORK_H_
