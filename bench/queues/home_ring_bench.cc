// HomeRing (queues/home_ring.h): the cost of the owner's push + pop, the yield pattern of
// a worker's home queue (push the yielding task at the tail, pop the oldest at the head),
// with `live` items in the ring. Same run: the trivial version, a std::deque with no
// synchronisation (the single-thread limit), and the locked baseline, a std::deque under a
// mutex. The `_with_taker` rows add a thread that takes half the ring whenever it can and
// hands the items back to the owner's side through a locked return queue, so the owner's
// pops and pushes run against a concurrent claimer (items/s counts the owner's cycles).
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "queues/home_ring.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

struct Item {
  std::uint64_t value = 0;
};

void LiveItems(benchmark::internal::Benchmark* b) {
  b->ArgName("live");
  for (int live : {16, 1024, 65536}) b->Arg(live);
}

void BM_HomeRing(benchmark::State& state) {
  std::vector<Item> items(state.range(0));
  HomeRing<Item> ring;
  std::uint64_t stamp = 0;
  for (Item& item : items) ring.Push(&item, stamp++);
  for (auto _ : state) {
    Item* item = ring.Pop();
    ring.Push(item, stamp++);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_PlainDeque(benchmark::State& state) {
  std::vector<Item> items(state.range(0));
  std::deque<Item*> deque;
  for (Item& item : items) deque.push_back(&item);
  for (auto _ : state) {
    Item* item = deque.front();
    deque.pop_front();
    deque.push_back(item);
    benchmark::DoNotOptimize(item);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_LockedDeque(benchmark::State& state) {
  std::vector<Item> items(state.range(0));
  Mutex mu;
  std::deque<Item*> deque;
  for (Item& item : items) deque.push_back(&item);
  for (auto _ : state) {
    Item* item;
    {
      MutexLock lock(mu);
      item = deque.front();
      deque.pop_front();
    }
    {
      MutexLock lock(mu);
      deque.push_back(item);
    }
    benchmark::DoNotOptimize(item);
  }
  state.SetItemsProcessed(state.iterations());
}

// The owner cycles as in BM_HomeRing; a taker takes half the ring when it can and returns
// what it took through `returned`, from which the owner pushes it back when its pop finds
// the ring empty.
void BM_HomeRingWithTaker(benchmark::State& state) {
  std::vector<Item> items(state.range(0));
  HomeRing<Item> ring;
  std::uint64_t stamp = 0;
  for (Item& item : items) ring.Push(&item, stamp++);
  Mutex returned_mu;
  std::vector<Item*> returned;
  std::atomic<bool> stop{false};
  std::thread taker([&] {
    Item* out[64];
    while (!stop.load(std::memory_order_relaxed)) {
      const int n = ring.TakeFront(HomeRing<Item>::kAnyStamp, 64, true, out);
      if (n > 0) {
        MutexLock lock(returned_mu);
        returned.insert(returned.end(), out, out + n);
      }
      for (int i = 0; i < 256; ++i) CpuRelax();  // a look now and then, not a spin on the line
    }
  });
  std::vector<Item*> back;
  for (auto _ : state) {
    Item* item = ring.Pop();
    if (item == nullptr) {
      {
        MutexLock lock(returned_mu);
        back.swap(returned);
      }
      for (Item* taken : back) ring.Push(taken, stamp++);
      back.clear();
      continue;
    }
    ring.Push(item, stamp++);
  }
  stop.store(true);
  taker.join();
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_HomeRing)->Name("home_ring/owner_push_pop")->Apply(LiveItems);
BENCHMARK(BM_PlainDeque)->Name("home_ring/plain_deque")->Apply(LiveItems);
BENCHMARK(BM_LockedDeque)->Name("home_ring/locked_deque")->Apply(LiveItems);
BENCHMARK(BM_HomeRingWithTaker)
    ->Name("home_ring/owner_push_pop_with_taker")
    ->Apply(LiveItems)
    ->UseRealTime();

}  // namespace
}  // namespace fairsched::bench

BENCHMARK_MAIN();
