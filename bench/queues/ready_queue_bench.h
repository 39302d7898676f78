// Ready-queue benchmark harness: one producer thread pushes, N consumer threads pop one
// item at a time and touch it. Shared by the McspQueue and BoundedMcQueue benchmarks so both
// are measured against the same baselines in the same way:
//   LockedReadyQueue (mutex + deque, the trivial baseline) and moodycamel::ConcurrentQueue
//   (explicit producer token, one consumer token per consumer, single-item try_dequeue,
//   the same per-item granularity as our Pop).
// Each iteration: consumers attach, wait at a start gate; the producer pushes kTotalItems,
// then one sentinel per consumer (a consumer stops at the first sentinel it pops; FIFO puts
// the sentinels after every real item). Time runs from the start signal until the last
// consumer has stopped. Reported: items/s, and lock acquisitions (and contended ones) per
// item for queues with a mutex.
#ifndef FAIRSCHED_BENCH_QUEUES_READY_QUEUE_BENCH_H_
#define FAIRSCHED_BENCH_QUEUES_READY_QUEUE_BENCH_H_

#include <benchmark/benchmark.h>
#include <concurrentqueue/concurrentqueue.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "bench/queues/bench_util.h"
#include "queues/locked_queue.h"

namespace fairsched::bench {

inline constexpr std::int64_t kTotalItems = 200000;

// Adapter for any queue with the ReadyQueue interface (McspQueue, LockedReadyQueue).
// kBatch > 1 publishes with PushPending + FlushPending every kBatch items.
template <typename Q, int kBatch = 1>
struct ReadyQueueAdapter {
  Q q;
  int staged = 0;
  struct Consumer : Q::Consumer {
    explicit Consumer(ReadyQueueAdapter& a) : Q::Consumer(a.q) {}
  };
  void Push(Item* item) {
    if constexpr (kBatch == 1) {
      q.Push(item);
    } else {
      q.PushPending(item);
      if (++staged == kBatch) {
        q.FlushPending();
        staged = 0;
      }
    }
  }
  void Flush() {
    q.FlushPending();
    staged = 0;
  }
  QueueLockStats Locks() const { return q.LockStats(); }
  static constexpr bool kHasLock = true;
};

template <int kBatch = 1>
struct MoodycamelReadyAdapter {
  moodycamel::ConcurrentQueue<Item*> q;
  moodycamel::ProducerToken producer{q};
  Item* staged[kBatch > 1 ? kBatch : 1];
  int count = 0;
  struct Consumer {
    explicit Consumer(MoodycamelReadyAdapter& a) : q(a.q), token(a.q) {}
    Item* Pop() {
      Item* item = nullptr;
      return q.try_dequeue(token, item) ? item : nullptr;
    }
    moodycamel::ConcurrentQueue<Item*>& q;
    moodycamel::ConsumerToken token;
  };
  void Push(Item* item) {
    if constexpr (kBatch == 1) {
      q.enqueue(producer, item);
    } else {
      staged[count++] = item;
      if (count == kBatch) Flush();
    }
  }
  void Flush() {
    if constexpr (kBatch > 1) {
      if (count > 0) q.enqueue_bulk(producer, staged, static_cast<std::size_t>(count));
      count = 0;
    }
  }
  QueueLockStats Locks() const { return {}; }
  static constexpr bool kHasLock = false;
};

template <typename Adapter>
void BM_PushPop(benchmark::State& state) {
  const int consumers = static_cast<int>(state.range(0));
  std::vector<Item> items(kTotalItems);
  std::vector<Item> sentinels(consumers);
  for (std::int64_t i = 0; i < kTotalItems; ++i) items[i].payload = static_cast<std::uint64_t>(i);
  const Item* const sentinel_begin = sentinels.data();
  const Item* const sentinel_end = sentinels.data() + consumers;
  auto adapter = std::make_unique<Adapter>();
  const QueueLockStats before = adapter->Locks();
  for (auto _ : state) {
    StartGate gate;
    std::vector<std::chrono::steady_clock::time_point> finished(consumers);
    std::vector<std::thread> threads;
    for (int c = 0; c < consumers; ++c) {
      threads.emplace_back([&, c] {
        typename Adapter::Consumer consumer(*adapter);
        gate.Arrive();
        std::uint64_t sum = 0;
        Backoff backoff;
        while (true) {
          Item* item = consumer.Pop();
          if (item == nullptr) {
            backoff.Wait();
            continue;
          }
          backoff.Reset();
          if (item >= sentinel_begin && item < sentinel_end) break;
          sum += item->payload;
        }
        finished[c] = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(sum);
      });
    }
    const auto start = gate.Go(consumers);
    for (std::int64_t i = 0; i < kTotalItems; ++i) adapter->Push(&items[i]);
    for (auto& s : sentinels) adapter->Push(&s);
    adapter->Flush();
    for (auto& t : threads) t.join();
    const auto end = *std::max_element(finished.begin(), finished.end());
    state.SetIterationTime(Seconds(end - start));
  }
  const double processed = static_cast<double>(state.iterations()) * kTotalItems;
  state.SetItemsProcessed(static_cast<std::int64_t>(processed));
  if (Adapter::kHasLock) ReportLocks(state, before, adapter->Locks(), processed);
  state.counters["consumers"] = consumers;
}

}  // namespace fairsched::bench

// Use inside namespace fairsched::bench.
#define FAIRSCHED_READY_BENCH(...) \
  BENCHMARK_TEMPLATE(BM_PushPop, __VA_ARGS__)->Arg(1)->Arg(2)->Arg(4)->UseManualTime()

#endif  // FAIRSCHED_BENCH_QUEUES_READY_QUEUE_BENCH_H_
