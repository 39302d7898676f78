// Many coroutines yielding: the path every coroutine resume takes, against the
// textbook pool resuming std::coroutine_handles, Asio's co_spawn + post(use_awaitable), and
// one thread resuming the same coroutines from a plain local queue (the limit). Build with
// --config=opt; bench/coro/record_hot_path.sh adds the Tokio and Go rows (bench/coro/peers/)
// and records everything, interleaved, with the raw files.
//
//   yield/coroutines:C/steps:S/workers:W/<contestant>
//       The benchmark thread spawns C coroutines; each runs S steps with a Yield between
//       two steps (S - 1 yields), so C * S steps in all; the benchmark thread waits until
//       every coroutine finished. items/s = steps/s. Shapes: 100,000 x 100 (the set of
//       coroutines does not fit in the last-level cache) and 10,000 x 1,000.
//   Contestants:
//     fairsched      coro::Spawn on a TaskScheduler with W workers, co_await coro::Yield().
//     fairsched_strict  the same with PostOrder::kStrict (no local batches).
//     fairsched_home the same with PostOrder::kHome (per-worker home queues, the default
//                    home_skew), and fairsched_home_loose with home_skew 4,096.
//     fairsched_home_skew1k, _skew16k, _skew64k, _skew_max
//                    2 workers only: PostOrder::kHome with home_skew 1,024, 16,384,
//                    65,536 and the largest the option takes (2^30, which these shapes
//                    never reach: no look takes anything), for the cost of the bound.
//     fairsched_home_ceiling4k, _ceiling16k
//                    PostOrder::kHome with the default home_skew and home_skew_ceiling
//                    4,096 or 16,384 (the skew follows the queues); _ceiling16k at 2
//                    workers only, _ceiling4k at 1 and 2 (the candidate default order).
//     textbook_pool  W threads, one mutex, one condition variable and a std::deque of
//                    std::coroutine_handle<>: a yield pushes the handle to the back and a
//                    worker pops and resumes the front one (the coroutine type is the
//                    smallest that can do it: no result, no exception, no cancellation).
//     asio           asio::thread_pool(W), co_spawn(detached), co_await asio::post(
//                    executor, use_awaitable) as the yield.
//     home_queues_prototype, home_queues_prototype_loose, home_queues_no_looks
//                    not the library: the ready-queue rule proposed for the two-worker
//                    hot path, on plain handles, with a tight bound, a loose one and none
//                    (see its section below).
//     local_queue    W = 1 only: the benchmark thread itself resumes the handles from a
//                    std::deque, no lock, no atomics: the cost of the coroutine switch and
//                    the queue, with no scheduler.
//   Counter (fairsched): bytes_per_coroutine, the frame allocator's bytes handed out per
//   spawned coroutine (state and frame, rounded to its size classes); fairsched_home also
//   look_takes_per_1k and empty_takes_per_1k, the tasks per 1,000 steps that a look took
//   from another worker's queue and that a worker with an empty queue took.
#include <benchmark/benchmark.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/this_coro.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <initializer_list>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "bench/sched/completion.h"
#include "coro/frame_allocator.h"
#include "coro/runtime.h"
#include "coro/lazy.h"
#include "queues/home_ring.h"
#include "sched/task_scheduler.h"
#include "sched/worker_stats.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

// ---------------------------------------------------------------- fairsched

coro::Lazy<void> FairschedYielder(int steps, Completion* done, std::uint32_t index) {
  for (int step = 1; step < steps; ++step) co_await coro::Yield();
  done->Arrive(index);
}

void FairschedYields(benchmark::State& state, PostOrder order, std::uint64_t home_skew = 256,
                     std::uint64_t home_skew_ceiling = 0) {
  const auto coroutines = static_cast<std::uint32_t>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  TaskScheduler sched(TaskSchedulerOptions{
      .post_order = order, .home_skew = home_skew, .home_skew_ceiling = home_skew_ceiling});
  sched.Start(static_cast<int>(state.range(2)));
  Completion done;
  std::uint64_t bytes = 0, spawned = 0;
  for (auto _ : state) {
    done.Reset(coroutines);
    const coro::FrameAllocatorStats before = coro::FrameAllocator::ThisThreadFrameStats();
    for (std::uint32_t i = 0; i < coroutines; ++i) {
      coro::Spawn(sched, FairschedYielder(steps, &done, i)).Detach();
    }
    const coro::FrameAllocatorStats after = coro::FrameAllocator::ThisThreadFrameStats();
    bytes += after.bytes_rounded - before.bytes_rounded;
    spawned += coroutines;
    done.Wait();
  }
  state.SetItemsProcessed(state.iterations() * coroutines * steps);
  state.counters["bytes_per_coroutine"] = static_cast<double>(bytes) / spawned;
  if (order == PostOrder::kHome) {
    // Tasks that changed worker, per 1,000 steps: taken by a look (older than the skew) and
    // taken by a worker whose own queue was empty.
    std::uint64_t looks = 0, idle = 0;
    for (const WorkerStats& stats : sched.Stats()) {
      looks += stats.stale_take_overs;
      idle += stats.idle_take_overs;
    }
    const double thousands = static_cast<double>(state.iterations() * coroutines * steps) / 1000;
    state.counters["look_takes_per_1k"] = static_cast<double>(looks) / thousands;
    state.counters["empty_takes_per_1k"] = static_cast<double>(idle) / thousands;
  }
}

// ---------------------------------------------------------------- a minimal coroutine type

// The smallest coroutine a handle-resuming pool needs: starts suspended, frees its frame
// at the end, reports nothing. `Queue` is the pool or the local queue it yields to.
struct PlainCoroutine {
  struct promise_type {
    PlainCoroutine get_return_object() {
      return PlainCoroutine{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

template <typename Queue>
struct YieldTo {
  Queue* queue;
  bool await_ready() noexcept { return false; }
  void await_suspend(std::coroutine_handle<> handle) { queue->Push(handle); }
  void await_resume() noexcept {}
};

template <typename Queue>
PlainCoroutine PlainYielder(Queue* queue, int steps, Completion* done, std::uint32_t index) {
  for (int step = 1; step < steps; ++step) co_await YieldTo<Queue>{queue};
  done->Arrive(index);
}

// The rounds of a pool that resumes PlainCoroutines: spawn them all through Push, then
// (a pool with no threads of its own: the one-thread limit) run them on this thread, wait.
template <typename Pool>
void RunPlainYields(benchmark::State& state, Pool& pool) {
  const auto coroutines = static_cast<std::uint32_t>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  Completion done;
  for (auto _ : state) {
    done.Reset(coroutines);
    for (std::uint32_t i = 0; i < coroutines; ++i) {
      pool.Push(PlainYielder(&pool, steps, &done, i).handle);
    }
    if constexpr (requires { pool.RunAll(); }) pool.RunAll();
    done.Wait();
  }
  state.SetItemsProcessed(state.iterations() * coroutines * steps);
}

// ---------------------------------------------------------------- textbook pool

class HandlePool {
 public:
  explicit HandlePool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
  }
  ~HandlePool() {
    {
      MutexLock lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }
  void Push(std::coroutine_handle<> handle) {
    {
      MutexLock lock(mu_);
      queue_.push_back(handle);
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    while (true) {
      std::coroutine_handle<> handle;
      {
        MutexLock lock(mu_);
        while (queue_.empty()) {
          if (stopped_) return;
          cv_.wait(lock);
        }
        handle = queue_.front();
        queue_.pop_front();
      }
      handle.resume();
    }
  }
  Mutex mu_;
  ConditionVariable cv_;
  std::deque<std::coroutine_handle<>> queue_;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

void BM_TextbookPool(benchmark::State& state) {
  HandlePool pool(static_cast<int>(state.range(2)));
  RunPlainYields(state, pool);
}

// ---------------------------------------------------------------- home queues (prototype)

// Not the library: a measurement of the ready-queue rule proposed for the two-worker hot
// path (tla/README.md, "Proposed: home queues with a skew bound"; the rule is checked in
// tla/spin/home_queues.pml) on plain handles, taken before the core changes, to see what it
// can reach here next to the same run's fairsched, textbook pool and Tokio.
//
// Each worker owns a FIFO of (handle, stamp), a HomeRing (queues/home_ring.h: the lock-free
// ring, its growth and its orders are there). A yield on a worker goes to the tail of
// that worker's ring; a post from any other thread goes to one shared injection queue.
// Stamps come from one global clock, reserved kStampBlock at a time by each worker (one
// fetch_add per kStampBlock yields; the injection queue takes one per post). A worker runs
// its own ring's head; every `look_every` starts it takes, from the injection queue and from
// the other rings' heads, every task more than `skew` stamps older than its own head (up to
// kTakeMax) and runs those first. A look reads one line per other worker, that worker's
// published head stamp, and touches its ring only when that stamp is old enough: the owner
// publishes its head's stamp at each of its own looks and when it pushes into an empty ring,
// and "nothing" when it finds its ring empty, so the published stamp is never newer than
// the ring's real head (a stale one only costs a look that takes nothing).
// Contestants: home_queues_prototype (skew 256, a look every 64 starts: the tight bound),
// home_queues_prototype_loose (skew 4,096, a look every 1,024 starts) and
// home_queues_no_looks (no look at all, so no bound: the rule's ceiling, Tokio's per-worker
// queue without stealing from it while busy). A worker whose ring is empty takes from the
// injection queue, then half of another ring, spins, and parks. A pusher reads the parked
// count relaxed, with no fence on the yield path, so a pusher and a worker that is
// registering to park can miss each other (the store-load race); a parked worker therefore
// looks again every kParkRecheck, which bounds in time what a missed wakeup costs.
// tla/spin/home_ring.pml checks the ring and this parking protocol.
class HomeQueuePool {
 public:
  // `skew`: how many stamps older than its own head a task must be for a look to take it;
  // `look_every`: starts between two looks (0: never look).
  HomeQueuePool(int workers, std::uint64_t skew, int look_every)
      : skew_(skew), look_every_(look_every) {
    for (int i = 0; i < workers; ++i) workers_.push_back(std::make_unique<Worker>());
    for (int i = 0; i < workers; ++i) {
      threads_.emplace_back([this, i] { Run(*workers_[i]); });
    }
  }
  ~HomeQueuePool() {
    stopped_.store(true, std::memory_order_release);
    {
      MutexLock lock(park_mu_);
    }
    park_cv_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }

  // Sums of the workers' counters (see Worker), approximate while tasks run.
  std::uint64_t TakenByLook() const { return Sum(&Worker::taken_by_look); }
  std::uint64_t TakenWhenEmpty() const { return Sum(&Worker::taken_when_empty); }
  std::uint64_t Parks() const { return Sum(&Worker::parks); }

  void Push(std::coroutine_handle<> handle) {
    if (this_pool_ == this) {
      PushOwn(*this_worker_, handle);
    } else {
      Inject(handle);
    }
  }

 private:
  static constexpr std::size_t kFirstRingSize = 256;  // grows (doubling) when full
  static constexpr std::chrono::milliseconds kParkRecheck{1};
  static constexpr std::uint64_t kStampBlock = 64;
  static constexpr int kTakeMax = 64;
  static constexpr std::uint64_t kAny = ~std::uint64_t{0};  // a `below` every stamp is under

  struct alignas(kCacheLineSize) Worker {
    // The stamp of the ring's head as of the owner's last look or push into an empty ring
    // (kAny: the ring was empty), on a line of its own: the one line another worker's look
    // reads when it finds nothing old. Never newer than the real head. Stored by the owner
    // only (relaxed: a stale value errs towards reading the ring, which checks the stamps
    // again under its own acquire).
    Atomic<std::uint64_t> published{kAny};
    std::uint64_t published_last = kAny;  // the owner's copy, so an unchanged stamp is not stored
    HomeRing<void> ring{kFirstRingSize};  // handle addresses, with their stamps
    // The owner's reserved block [stamp_next, stamp_end): after the ring, off the line of
    // `published` that other workers read.
    std::uint64_t stamp_next = 0;
    std::uint64_t stamp_end = 0;
    // Counters, written by the owner only, read between rounds.
    internal::SingleWriterCounter taken_by_look;  // tasks a look took from elsewhere
    internal::SingleWriterCounter taken_when_empty;  // tasks taken with the own ring empty
    internal::SingleWriterCounter parks;
  };
  struct Injected {
    std::coroutine_handle<> handle;
    std::uint64_t stamp;
  };

  void PushOwn(Worker& me, std::coroutine_handle<> handle) {
    if (me.stamp_next == me.stamp_end) {
      // Relaxed: the clock only orders stamps; no data travels with it.
      me.stamp_next = clock_.fetch_add(kStampBlock, std::memory_order_relaxed);
      me.stamp_end = me.stamp_next + kStampBlock;
    }
    // The ring may have been empty since the last publication ("nothing"); without this an
    // owner that pushes and then runs a long task would leave the push invisible to looks.
    if (me.published_last == kAny) Publish(me, me.stamp_next);
    me.ring.Push(handle.address(), me.stamp_next++);
    // Relaxed, no fence: may miss a worker registering right now (see FindWork).
    if (parked_.load(std::memory_order_relaxed) > 0) WakeParked();
  }

  void Inject(std::coroutine_handle<> handle) {
    {
      MutexLock lock(inject_mu_);
      injected_.push_back({handle, clock_.fetch_add(1, std::memory_order_relaxed)});
      injected_count_.store(injected_.size(), std::memory_order_relaxed);
    }
    if (parked_.load(std::memory_order_relaxed) > 0) WakeParked();
  }

  // A worker may be parked: wake one. The lock orders the notify after a parker's
  // re-check (it holds park_mu_ from its registration until the wait releases it), so the
  // notify cannot fall between its re-check and its wait.
  void WakeParked() {
    {
      MutexLock lock(park_mu_);
    }
    park_cv_.notify_one();
  }

  int TakeInjected(std::uint64_t below, int max, void** out) {
    if (injected_count_.load(std::memory_order_relaxed) == 0) return 0;
    MutexLock lock(inject_mu_);
    int n = 0;
    while (n < max && !injected_.empty() && injected_.front().stamp < below) {
      out[n++] = injected_.front().handle.address();
      injected_.pop_front();
    }
    injected_count_.store(injected_.size(), std::memory_order_relaxed);
    return n;
  }

  static void Publish(Worker& me, std::uint64_t stamp) {
    if (me.published_last == stamp) return;
    me.published_last = stamp;
    me.published.store(stamp, std::memory_order_relaxed);
  }

  // The look: everything more than skew_ stamps older than this worker's own head.
  int TakeOld(Worker& me, void** out) {
    const std::optional<std::uint64_t> head_stamp = me.ring.HeadStamp();
    if (!head_stamp) return 0;  // FindWork's case
    const std::uint64_t own = *head_stamp;
    Publish(me, own);
    if (own <= skew_) return 0;
    const std::uint64_t below = own - skew_;
    int n = TakeInjected(below, kTakeMax, out);
    for (auto& other : workers_) {
      if (other.get() != &me && n < kTakeMax &&
          other->published.load(std::memory_order_relaxed) < below) {
        n += other->ring.TakeFront(below, kTakeMax - n, false, out + n);
      }
    }
    return n;
  }

  // Own ring empty: the injection queue, then half of another ring; spins, then parks.
  // Returns how many tasks it took, or -1 once the pool stops.
  int FindWork(Worker& me, void** out) {
    Publish(me, kAny);  // our ring is empty (only we push to it)
    for (int round = 0; round < 256; ++round) {
      int n = TakeInjected(kAny, kTakeMax, out);
      for (auto& other : workers_) {
        if (n == 0 && other.get() != &me) n = other->ring.TakeFront(kAny, kTakeMax, true, out);
      }
      if (n > 0) return n;
      if (stopped_.load(std::memory_order_acquire)) return -1;
      CpuRelax();
    }
    MutexLock lock(park_mu_);
    if (stopped_.load(std::memory_order_acquire)) return -1;
    // Register, then look again: a pusher that stored its tail before our look is seen by
    // it; one that read parked_ after our registration wakes us. seq_cst orders our half;
    // the pusher's half has no fence (it would cost every yield), so both can miss each
    // other, and the wait is timed: a task pushed in that window waits at most
    // kParkRecheck for us (while its owner runs on; it is only stranded if the owner runs a
    // long task).
    parked_.fetch_add(1, std::memory_order_seq_cst);
    if (!WorkVisible(me)) {
      me.parks.Add();
      park_cv_.wait_for(lock, kParkRecheck);
    }
    // Relaxed: a pusher that still counts us sends one notify too many.
    parked_.fetch_sub(1, std::memory_order_relaxed);
    return 0;
  }

  // Whether another ring or the injection queue holds a task (the park's re-check).
  bool WorkVisible(const Worker& me) const {
    if (injected_count_.load(std::memory_order_seq_cst) > 0) return true;
    for (const auto& other : workers_) {
      if (other.get() != &me && other->ring.SeemsNonEmpty()) return true;
    }
    return false;
  }

  void Run(Worker& me) {
    this_pool_ = this;
    this_worker_ = &me;
    void* taken[kTakeMax];  // handle addresses
    int since_look = 0;
    while (true) {
      int n = 0;
      if (look_every_ > 0 && ++since_look >= look_every_) {
        since_look = 0;
        n = TakeOld(me, taken);
        me.taken_by_look.Add(n);
      }
      if (n == 0) {
        if (void* own = me.ring.Pop()) {
          std::coroutine_handle<>::from_address(own).resume();
          continue;
        }
        n = FindWork(me, taken);
        if (n < 0) return;
        me.taken_when_empty.Add(n);
      }
      for (int i = 0; i < n; ++i) std::coroutine_handle<>::from_address(taken[i]).resume();
    }
  }

  std::uint64_t Sum(internal::SingleWriterCounter Worker::*counter) const {
    std::uint64_t sum = 0;
    for (const auto& worker : workers_) sum += ((*worker).*counter).Read();
    return sum;
  }


  static inline thread_local HomeQueuePool* this_pool_ = nullptr;
  static inline thread_local Worker* this_worker_ = nullptr;

  const std::uint64_t skew_;
  const int look_every_;
  std::vector<std::unique_ptr<Worker>> workers_;
  alignas(kCacheLineSize) Atomic<std::uint64_t> clock_{0};
  alignas(kCacheLineSize) Atomic<int> parked_{0};
  Atomic<bool> stopped_{false};
  alignas(kCacheLineSize) Atomic<std::size_t> injected_count_{0};
  Mutex inject_mu_;
  std::deque<Injected> injected_;
  Mutex park_mu_;
  ConditionVariable park_cv_;
  std::vector<std::thread> threads_;
};

void HomeQueueYields(benchmark::State& state, std::uint64_t skew, int look_every) {
  HomeQueuePool pool(static_cast<int>(state.range(2)), skew, look_every);
  RunPlainYields(state, pool);
  const double steps_total = static_cast<double>(state.iterations()) * state.range(0) *
                             state.range(1);
  // Where the steps ran: how many were moved from another worker's ring or the injection
  // queue by a look, or taken with the own ring empty, per 1,000 steps; and parks.
  state.counters["look_takes_per_1k"] = 1000.0 * pool.TakenByLook() / steps_total;
  state.counters["empty_takes_per_1k"] = 1000.0 * pool.TakenWhenEmpty() / steps_total;
  state.counters["parks"] = static_cast<double>(pool.Parks());
}

// ---------------------------------------------------------------- the one-thread limit

class LocalQueue {
 public:
  void Push(std::coroutine_handle<> handle) { queue_.push_back(handle); }
  void RunAll() {
    while (!queue_.empty()) {
      const std::coroutine_handle<> handle = queue_.front();
      queue_.pop_front();
      handle.resume();
    }
  }

 private:
  std::deque<std::coroutine_handle<>> queue_;
};

void BM_LocalQueue(benchmark::State& state) {
  LocalQueue queue;
  RunPlainYields(state, queue);
}

// ---------------------------------------------------------------- asio

asio::awaitable<void> AsioYielder(int steps, Completion* done, std::uint32_t index) {
  auto executor = co_await asio::this_coro::executor;
  for (int step = 1; step < steps; ++step) co_await asio::post(executor, asio::use_awaitable);
  done->Arrive(index);
}

void BM_Asio(benchmark::State& state) {
  const auto coroutines = static_cast<std::uint32_t>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  asio::thread_pool pool(static_cast<std::size_t>(state.range(2)));
  Completion done;
  for (auto _ : state) {
    done.Reset(coroutines);
    for (std::uint32_t i = 0; i < coroutines; ++i) {
      asio::co_spawn(pool, AsioYielder(steps, &done, i), asio::detached);
    }
    done.Wait();
  }
  pool.join();
  state.SetItemsProcessed(state.iterations() * coroutines * steps);
}

void ShapesOn(benchmark::internal::Benchmark* b, std::initializer_list<int> worker_counts) {
  b->ArgNames({"coroutines", "steps", "workers"});
  for (int workers : worker_counts) {
    b->Args({100'000, 100, workers});
    b->Args({10'000, 1'000, workers});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
}

void BM_Fairsched(benchmark::State& state) { FairschedYields(state, PostOrder::kBatched); }
void BM_FairschedStrict(benchmark::State& state) { FairschedYields(state, PostOrder::kStrict); }
void BM_FairschedHome(benchmark::State& state) { FairschedYields(state, PostOrder::kHome); }

BENCHMARK(BM_Fairsched)->Name("yield/fairsched")->Apply([](auto* b) { ShapesOn(b, {1, 2}); });
BENCHMARK(BM_FairschedStrict)->Name("yield/fairsched_strict")->Apply([](auto* b) {
  ShapesOn(b, {1, 2});
});
BENCHMARK(BM_FairschedHome)->Name("yield/fairsched_home")->Apply([](auto* b) {
  ShapesOn(b, {1, 2});
});
// PostOrder::kHome with a constant skew: fairsched_home_loose (4,096) at 1 and 2 workers,
// and the sweep at two workers only (with one worker no look ever runs).
template <std::uint64_t kSkew>
void BM_FairschedHomeSkew(benchmark::State& state) {
  FairschedYields(state, PostOrder::kHome, kSkew);
}
BENCHMARK(BM_FairschedHomeSkew<4096>)->Name("yield/fairsched_home_loose")->Apply([](auto* b) {
  ShapesOn(b, {1, 2});
});
BENCHMARK(BM_FairschedHomeSkew<1024>)->Name("yield/fairsched_home_skew1k")->Apply([](auto* b) {
  ShapesOn(b, {2});
});
BENCHMARK(BM_FairschedHomeSkew<16384>)->Name("yield/fairsched_home_skew16k")->Apply([](auto* b) {
  ShapesOn(b, {2});
});
BENCHMARK(BM_FairschedHomeSkew<65536>)->Name("yield/fairsched_home_skew64k")->Apply([](auto* b) {
  ShapesOn(b, {2});
});
BENCHMARK(BM_FairschedHomeSkew<std::uint64_t{1} << 30>)
    ->Name("yield/fairsched_home_skew_max")
    ->Apply([](auto* b) { ShapesOn(b, {2}); });
// The default skew (256) with a ceiling: the skew follows each worker's own queue (an
// quarter of it, scaled to stamps) up to 4,096 or 16,384.
template <std::uint64_t kCeiling>
void BM_FairschedHomeCeiling(benchmark::State& state) {
  FairschedYields(state, PostOrder::kHome, 256, kCeiling);
}
BENCHMARK(BM_FairschedHomeCeiling<4096>)
    ->Name("yield/fairsched_home_ceiling4k")
    ->Apply([](auto* b) { ShapesOn(b, {1, 2}); });
BENCHMARK(BM_FairschedHomeCeiling<16384>)
    ->Name("yield/fairsched_home_ceiling16k")
    ->Apply([](auto* b) { ShapesOn(b, {2}); });
BENCHMARK(BM_TextbookPool)->Name("yield/textbook_pool")->Apply([](auto* b) {
  ShapesOn(b, {1, 2});
});
BENCHMARK(BM_Asio)->Name("yield/asio")->Apply([](auto* b) { ShapesOn(b, {1, 2}); });
void BM_HomeQueues(benchmark::State& state) { HomeQueueYields(state, 256, 64); }
void BM_HomeQueuesLoose(benchmark::State& state) { HomeQueueYields(state, 4096, 1024); }
void BM_HomeQueuesNoLooks(benchmark::State& state) { HomeQueueYields(state, 0, 0); }

BENCHMARK(BM_HomeQueues)->Name("yield/home_queues_prototype")->Apply([](auto* b) {
  ShapesOn(b, {1, 2});
});
BENCHMARK(BM_HomeQueuesLoose)->Name("yield/home_queues_prototype_loose")->Apply([](auto* b) {
  ShapesOn(b, {1, 2});
});
BENCHMARK(BM_HomeQueuesNoLooks)->Name("yield/home_queues_no_looks")->Apply([](auto* b) {
  ShapesOn(b, {1, 2});
});
BENCHMARK(BM_LocalQueue)->Name("yield/local_queue")->Apply([](auto* b) { ShapesOn(b, {1}); });

}  // namespace
}  // namespace fairsched::bench

BENCHMARK_MAIN();
