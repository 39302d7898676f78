// Benchmark for BoundedMcQueue, the lock-free bounded ring: 1 producer, N consumers (see
// ready_queue_bench.h), ring of 1024 slots; the producer backs off while the ring is full.
// Consumers use the ring's caching Consumer handle.
// Same run: the trivial LockedReadyQueue and moodycamel::ConcurrentQueue.
#include "bench/queues/ready_queue_bench.h"
#include "queues/bounded_mc_queue.h"
#include "queues/locked_queue.h"

namespace fairsched::bench {
namespace {

template <std::size_t kCapacity>
struct BoundedRing {
  BoundedMcQueue<Item> q{kCapacity};
  // Each benchmark consumer uses the queue's caching Consumer handle.
  struct Consumer : BoundedMcQueue<Item>::Consumer {
    explicit Consumer(BoundedRing& a) : BoundedMcQueue<Item>::Consumer(a.q) {}
  };
  void Push(Item* item) {
    Backoff backoff;
    while (!q.TryPush(item)) backoff.Wait();
  }
  void Flush() {}
  QueueLockStats Locks() const { return {}; }
  static constexpr bool kHasLock = false;
};

using Locked = ReadyQueueAdapter<LockedReadyQueue<Item>>;
using Moodycamel = MoodycamelReadyAdapter<>;

using BoundedRing1024 = BoundedRing<1024>;
// Diagnostic: a ring larger than one iteration's items, so the producer never finds it
// full; the gap to BoundedRing1024 is the cost of the full-ring regime (the producer polling
// begin_, the line every consumer CAS writes).
using BoundedRingNeverFull = BoundedRing<std::size_t{1} << 18>;

FAIRSCHED_READY_BENCH(BoundedRing1024);
FAIRSCHED_READY_BENCH(BoundedRingNeverFull);
FAIRSCHED_READY_BENCH(Locked);
FAIRSCHED_READY_BENCH(Moodycamel);

}  // namespace
}  // namespace fairsched::bench
