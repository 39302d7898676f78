// Wait-queue benchmark harness (single-threaded, like the sched-role that owns the queue).
// At a queue size of n timers (deadlines uniform over a 10 s window, 1 ms wheel tick):
//   Insert: push a batch of new timers into a queue already holding n (removed untimed).
//   Cancel: remove a batch of random queued timers (re-inserted untimed).
//   Expire: fill a fresh queue with n timers (untimed), then drain it the way the sched-role
//           does: jump `now` to NextDeadline() and PopExpired(now) until nothing is due.
// Items/s counts pushed, removed and popped timers respectively.
#ifndef FAIRSCHED_BENCH_QUEUES_WAIT_QUEUE_BENCH_H_
#define FAIRSCHED_BENCH_QUEUES_WAIT_QUEUE_BENCH_H_

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "bench/queues/bench_util.h"
#include "queues/binary_heap.h"
#include "queues/concepts.h"
#include "queues/timer_wheel.h"

namespace fairsched::bench {

inline const WaitDeadline kBase = WaitDeadline{} + std::chrono::hours(1);
inline constexpr std::int64_t kWindowUs = 10'000'000;

template <typename Q>
std::unique_ptr<Q> MakeWaitQueue() {
  return std::make_unique<Q>();
}

template <>
inline std::unique_ptr<TimerWheel<Item>> MakeWaitQueue<TimerWheel<Item>>() {
  return std::make_unique<TimerWheel<Item>>(std::chrono::milliseconds(1), kBase);
}

inline std::vector<WaitDeadline> RandomDeadlines(std::size_t n, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<WaitDeadline> d(n);
  for (auto& x : d) {
    x = kBase + std::chrono::microseconds(static_cast<std::int64_t>(rng() % kWindowUs));
  }
  return d;
}

inline std::int64_t BatchFor(std::int64_t n) { return std::clamp<std::int64_t>(n / 10, 1, 1000); }

template <typename Q>
void BM_Insert(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const std::int64_t batch = BatchFor(n);
  std::vector<Item> queued(n), extra(batch);
  const auto deadlines = RandomDeadlines(n, 1);
  const auto extra_deadlines = RandomDeadlines(batch, 2);
  auto q = MakeWaitQueue<Q>();
  for (std::int64_t i = 0; i < n; ++i) q->Push(&queued[i], deadlines[i]);
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < batch; ++i) q->Push(&extra[i], extra_deadlines[i]);
    const auto end = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < batch; ++i) q->Remove(&extra[i]);
    state.SetIterationTime(Seconds(end - start));
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

template <typename Q>
void BM_Cancel(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const std::int64_t batch = BatchFor(n);
  std::vector<Item> queued(n);
  const auto deadlines = RandomDeadlines(n, 1);
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  auto q = MakeWaitQueue<Q>();
  for (std::int64_t i = 0; i < n; ++i) q->Push(&queued[i], deadlines[i]);
  std::int64_t cursor = 0;
  for (auto _ : state) {
    const std::int64_t first = cursor;
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < batch; ++i) q->Remove(&queued[order[(first + i) % n]]);
    const auto end = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < batch; ++i) {
      const std::int64_t victim = order[(first + i) % n];
      q->Push(&queued[victim], deadlines[victim]);
    }
    cursor = (first + batch) % n;
    state.SetIterationTime(Seconds(end - start));
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

template <typename Q>
void BM_Expire(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  std::vector<Item> queued(n);
  const auto deadlines = RandomDeadlines(n, 1);
  for (auto _ : state) {
    auto q = MakeWaitQueue<Q>();
    for (std::int64_t i = 0; i < n; ++i) q->Push(&queued[i], deadlines[i]);
    std::int64_t popped = 0;
    WaitDeadline now = kBase;
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      const WaitDeadline next = q->NextDeadline();
      if (next == kNoDeadline) break;
      now = std::max(now, next);
      while (q->PopExpired(now) != nullptr) ++popped;
    }
    const auto end = std::chrono::steady_clock::now();
    if (popped != n) state.SkipWithError("lost timers");
    state.SetIterationTime(Seconds(end - start));
  }
  state.SetItemsProcessed(state.iterations() * n);
}

}  // namespace fairsched::bench

// Use inside namespace fairsched::bench.
#define FAIRSCHED_WAIT_BENCH(kind, ...) \
  BENCHMARK_TEMPLATE(BM_##kind, __VA_ARGS__)->Arg(1000)->Arg(100000)->Arg(1000000)->UseManualTime()

#endif  // FAIRSCHED_BENCH_QUEUES_WAIT_QUEUE_BENCH_H_
