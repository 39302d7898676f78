// Front-queue benchmark: N producer threads push, one consumer pops (one item per Pop, as
// the sched-role does) and touches each item. In the main rows each producer writes the
// item right before pushing it, as Post writes a task's fields before pushing it into the
// scheduler's front queue; the "read-only items" rows skip that write (items prepared before
// the clock starts), which favours queues whose consumer never touches producer-written
// memory. Compares, in the same run:
//   MpscQueue (lock-free Vyukov linked queue: one exchange per push), LockedFrontQueue
//   (mutex + list, the trivial baseline: one lock per push and per pop) and
//   moodycamel::ConcurrentQueue (explicit producer tokens, bulk dequeue of up to 256 with a
//   consumer token: its fastest configuration; it keeps no order between producers).
// Reports items/s (all pushes, measured from the start signal until the consumer has taken
// the last item) and, for the locked baseline, lock acquisitions per item.
#include <benchmark/benchmark.h>
#include <concurrentqueue/concurrentqueue.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "bench/queues/bench_util.h"
#include "queues/locked_queue.h"
#include "queues/mpsc_queue.h"

namespace fairsched::bench {
namespace {

constexpr std::int64_t kTotalItems = 200000;

// Our two front queues share one adapter: producers push directly, the consumer pops until
// Pop returns nullptr (empty, or a push in flight: the driver backs off and comes again).
// Only the locked baseline has a mutex to count.
template <typename Q>
struct FrontQueueAdapter {
  Q q;
  struct Producer {
    explicit Producer(FrontQueueAdapter& a) : q(a.q) {}
    void Push(Item* item) { q.Push(item); }
    Q& q;
  };
  std::uint64_t Drain(std::int64_t* got) {
    std::uint64_t sum = 0;
    while (Item* it = q.Pop()) {
      sum += it->payload;
      ++*got;
    }
    return sum;
  }
  static constexpr bool kHasLock = requires(const Q& queue) { queue.LockStats(); };
  QueueLockStats Locks() const {
    if constexpr (kHasLock) {
      return q.LockStats();
    } else {
      return {};
    }
  }
};
using MpscAdapter = FrontQueueAdapter<MpscQueue<Item>>;
using LockedAdapter = FrontQueueAdapter<LockedFrontQueue<Item>>;

struct MoodycamelAdapter {
  moodycamel::ConcurrentQueue<Item*> q;
  moodycamel::ConsumerToken consumer{q};
  struct Producer {
    explicit Producer(MoodycamelAdapter& a) : q(a.q), token(a.q) {}
    void Push(Item* item) { q.enqueue(token, item); }
    moodycamel::ConcurrentQueue<Item*>& q;
    moodycamel::ProducerToken token;
  };
  std::uint64_t Drain(std::int64_t* got) {
    Item* buffer[256];
    const std::size_t n = q.try_dequeue_bulk(consumer, buffer, 256);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += buffer[i]->payload;
    *got += static_cast<std::int64_t>(n);
    return sum;
  }
  QueueLockStats Locks() const { return {}; }
  static constexpr bool kHasLock = false;
};

// The one driver behind both benchmarks below. Producers are released together; the
// consumer either drains while they push (kDrainWhilePushing) or only after all have been
// joined. Manual time runs from the release until the consumer has taken the last item.
template <typename Adapter, bool kProducerWritesItem, bool kDrainWhilePushing>
void RunFrontQueue(benchmark::State& state) {
  const int producers = static_cast<int>(state.range(0));
  const std::int64_t per_producer = kTotalItems / producers;
  const std::int64_t total = per_producer * producers;
  std::vector<Item> items(total);
  for (std::int64_t i = 0; i < total; ++i) items[i].payload = static_cast<std::uint64_t>(i);
  Adapter adapter;
  const QueueLockStats before = adapter.Locks();
  for (auto _ : state) {
    StartGate gate;
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        typename Adapter::Producer producer(adapter);
        Item* const first = &items[p * per_producer];
        gate.Arrive();
        for (std::int64_t i = 0; i < per_producer; ++i) {
          if constexpr (kProducerWritesItem) first[i].payload = static_cast<std::uint64_t>(i);
          producer.Push(first + i);
        }
      });
    }
    const auto start = gate.Go(producers);
    if constexpr (!kDrainWhilePushing) {
      for (auto& t : threads) t.join();
    }
    std::int64_t got = 0;
    std::uint64_t sum = 0;
    Backoff backoff;
    while (got < total) {
      const std::int64_t had = got;
      sum += adapter.Drain(&got);
      if (got == had) {
        backoff.Wait();
      } else {
        backoff.Reset();
      }
    }
    const auto end = std::chrono::steady_clock::now();
    if constexpr (kDrainWhilePushing) {
      for (auto& t : threads) t.join();
    }
    benchmark::DoNotOptimize(sum);
    state.SetIterationTime(Seconds(end - start));
  }
  const double processed = static_cast<double>(state.iterations()) * static_cast<double>(total);
  state.SetItemsProcessed(static_cast<std::int64_t>(processed));
  if (Adapter::kHasLock) ReportLocks(state, before, adapter.Locks(), processed);
  state.counters["producers"] = producers;
}

// The goal metric: producers push while the consumer drains.
template <typename Adapter, bool kProducerWritesItem>
void BM_PushPop(benchmark::State& state) {
  RunFrontQueue<Adapter, kProducerWritesItem, /*kDrainWhilePushing=*/true>(state);
}

// Diagnostic, not the goal metric: the same pushes (of read-only items), but the consumer
// starts draining only after every producer has finished, so pushes never compete with the
// consumer for the queue's cache lines. The gap to BM_PushPop shows how much of the cost
// is that competition (for MpscQueue: every push exchanges the one `tail_` line, and the
// consumer reads each item's link right after a producer wrote it).
template <typename Adapter>
void BM_PushThenPop(benchmark::State& state) {
  RunFrontQueue<Adapter, /*kProducerWritesItem=*/false, /*kDrainWhilePushing=*/false>(state);
}

#define FRONT_BENCH(adapter, producer_writes_item)              \
  BENCHMARK_TEMPLATE(BM_PushPop, adapter, producer_writes_item) \
      ->Arg(1)                                                  \
      ->Arg(2)                                                  \
      ->Arg(4)                                                  \
      ->UseManualTime()

FRONT_BENCH(MpscAdapter, true);
FRONT_BENCH(LockedAdapter, true);
FRONT_BENCH(MoodycamelAdapter, true);
// Diagnostic: read-only items.
FRONT_BENCH(MpscAdapter, false);
FRONT_BENCH(LockedAdapter, false);
FRONT_BENCH(MoodycamelAdapter, false);

#define PHASED_FRONT_BENCH(adapter) \
  BENCHMARK_TEMPLATE(BM_PushThenPop, adapter)->Arg(1)->Arg(2)->Arg(4)->UseManualTime()

PHASED_FRONT_BENCH(MpscAdapter);
PHASED_FRONT_BENCH(LockedAdapter);
PHASED_FRONT_BENCH(MoodycamelAdapter);

}  // namespace
}  // namespace fairsched::bench
