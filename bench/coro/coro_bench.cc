// Coroutine benchmarks: fairsched's coroutines (coro/runtime.h) against the callback-style
// fairsched::Task doing the same thing, asio::awaitable + co_spawn, and Boost.Fiber, in one
// binary and one run (build with --config=opt; results in bench/results/coro.md).
//
//   spawn_complete/workers:W/<contestant>   spawn (post) kSpawnBatch empty coroutines / tasks
//       from the benchmark thread and wait until all completed; items/s = spawns/s.
//   yield_round_trip/<contestant>           one coroutine yields kRoundTrips times on one
//       worker (back of the ready queue, resumed again); time per item = one round trip.
//   signal_round_trip/<contestant>          the benchmark thread wakes a waiting coroutine on
//       one worker and spins until it acknowledged and waits again; per item = one trip.
//   chain_1000/<contestant>                 a chain of 1000 nested co_awaits that complete at
//       once, run on the benchmark thread; items = levels (ns per level = 1e9 / items/s).
//   memory/<contestant>                     kSuspended coroutines suspended in a wait;
//       counters bytes_per_suspended (heap growth of the main arena per coroutine, or the
//       allocator's requested bytes) and bytes_per_frame.
// coro_home (spawn_complete, yield_round_trip): the coro rows on PostOrder::kHome with
// home_skew_ceiling 4,096, the candidate default order (bench/results/json/home_as_default/).
// Boost.Fiber runs its fibers on the benchmark thread (spawn, yield, chain, memory) or on one
// helper thread (signal); its multi-thread schedulers are not measured (n/a rows).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <boost/fiber/all.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "bench/sched/completion.h"
#include "coro/frame_allocator.h"
#include "coro/runtime.h"
#include "coro/lazy.h"
#include "sched/task.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

constexpr std::uint32_t kSpawnBatch = 10'000;
constexpr int kRoundTrips = 10'000;
constexpr int kChainDepth = 1000;
constexpr int kSuspended = 10'000;

// Resident set size of the process (pages actually touched, e.g. of fiber stacks).
std::size_t ResidentBytes() {
  long pages = 0, resident = 0;
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (file != nullptr) {
    if (std::fscanf(file, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(file);
  }
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

std::size_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// ---------------------------------------------------------------- spawn + complete

coro::Lazy<void> EmptyCoroutine(Completion* done, std::uint32_t index) {
  done->Arrive(index);
  co_return;
}

// The scheduler a coro_home row runs on: PostOrder::kHome with the skew following the
// queues up to 4,096 (sched/task_scheduler_options.h), the candidate for the default order.
TaskSchedulerOptions HomeOptions() {
  return TaskSchedulerOptions{.post_order = PostOrder::kHome, .home_skew_ceiling = 4096};
}

void SpawnCoros(benchmark::State& state, TaskSchedulerOptions options) {
  TaskScheduler sched(options);
  sched.Start(static_cast<int>(state.range(0)));
  Completion done;
  for (auto _ : state) {
    done.Reset(kSpawnBatch);
    for (std::uint32_t i = 0; i < kSpawnBatch; ++i) {
      coro::Spawn(sched, EmptyCoroutine(&done, i)).Detach();
    }
    done.Wait();
  }
  state.SetItemsProcessed(state.iterations() * kSpawnBatch);
}

void BM_SpawnCoro(benchmark::State& state) { SpawnCoros(state, TaskSchedulerOptions{}); }
void BM_SpawnCoroHome(benchmark::State& state) { SpawnCoros(state, HomeOptions()); }

void BM_SpawnCallback(benchmark::State& state) {
  TaskScheduler sched;
  sched.Start(static_cast<int>(state.range(0)));
  Completion done;
  for (auto _ : state) {
    done.Reset(kSpawnBatch);
    for (std::uint32_t i = 0; i < kSpawnBatch; ++i) {
      sched.PostOneShot([&done, i] { done.Arrive(i); });
    }
    done.Wait();
  }
  state.SetItemsProcessed(state.iterations() * kSpawnBatch);
}

asio::awaitable<void> EmptyAwaitable(Completion* done, std::uint32_t index) {
  done->Arrive(index);
  co_return;
}

void BM_SpawnAsio(benchmark::State& state) {
  asio::thread_pool pool(static_cast<std::size_t>(state.range(0)));
  Completion done;
  for (auto _ : state) {
    done.Reset(kSpawnBatch);
    for (std::uint32_t i = 0; i < kSpawnBatch; ++i) {
      asio::co_spawn(pool, EmptyAwaitable(&done, i), asio::detached);
    }
    done.Wait();
  }
  pool.join();
  state.SetItemsProcessed(state.iterations() * kSpawnBatch);
}

// The benchmark thread is the one worker. Stacks come from a pool (Boost's default
// allocator maps and unmaps a fresh stack per fiber, which costs far more: its best case).
void BM_SpawnFiber(benchmark::State& state) {
  boost::fibers::pooled_fixedsize_stack stacks(16 * 1024);
  std::uint32_t finished = 0;
  for (auto _ : state) {
    finished = 0;
    for (std::uint32_t i = 0; i < kSpawnBatch; ++i) {
      boost::fibers::fiber(std::allocator_arg, stacks, [&finished] { ++finished; }).detach();
    }
    while (finished != kSpawnBatch) boost::this_fiber::yield();
  }
  state.SetItemsProcessed(state.iterations() * kSpawnBatch);
}

// ---------------------------------------------------------------- yield round trip

coro::Lazy<void> Yielder(int count) {
  for (int i = 0; i < count; ++i) co_await coro::Yield();
}

void YieldCoros(benchmark::State& state, TaskSchedulerOptions options) {
  TaskScheduler sched(options);
  sched.Start(1);
  for (auto _ : state) coro::Spawn(sched, Yielder(kRoundTrips)).Get();
  state.SetItemsProcessed(state.iterations() * kRoundTrips);
}
void BM_YieldCoro(benchmark::State& state) { YieldCoros(state, TaskSchedulerOptions{}); }
void BM_YieldCoroHome(benchmark::State& state) { YieldCoros(state, HomeOptions()); }

// The callback equivalent of a yield: the task re-posts itself (back of the ready queue).
struct RepostingTask {
  Task task;
  int left = 0;
  Completion done;
};

void BM_YieldCallback(benchmark::State& state) {
  TaskScheduler sched;
  sched.Start(1);
  RepostingTask job;
  job.task.SetCallback([&job, &sched] {
    if (--job.left > 0) {
      sched.Post(&job.task);
    } else {
      job.done.Arrive(0);
    }
  });
  for (auto _ : state) {
    job.left = kRoundTrips + 1;
    job.done.Reset(1);
    sched.Post(&job.task);
    job.done.Wait();
  }
  state.SetItemsProcessed(state.iterations() * kRoundTrips);
}

asio::awaitable<void> AsioYielder(int count, Completion* done) {
  auto executor = co_await asio::this_coro::executor;
  for (int i = 0; i < count; ++i) co_await asio::post(executor, asio::use_awaitable);
  done->Arrive(0);
}

void BM_YieldAsio(benchmark::State& state) {
  asio::thread_pool pool(1);
  Completion done;
  for (auto _ : state) {
    done.Reset(1);
    asio::co_spawn(pool, AsioYielder(kRoundTrips, &done), asio::detached);
    done.Wait();
  }
  pool.join();
  state.SetItemsProcessed(state.iterations() * kRoundTrips);
}

void BM_YieldFiber(benchmark::State& state) {
  for (auto _ : state) {
    boost::fibers::fiber([] {
      for (int i = 0; i < kRoundTrips; ++i) boost::this_fiber::yield();
    }).join();
  }
  state.SetItemsProcessed(state.iterations() * kRoundTrips);
}

// ---------------------------------------------------------------- signal round trip

void SpinUntil(const Atomic<int>& value, int expected) {
  // Acquire: pairs with the coroutine's release store of its acknowledgement.
  while (value.load(std::memory_order_acquire) != expected) {
  }
}

coro::Lazy<void> SignalWaiter(Atomic<int>* acks, const Atomic<bool>* stop) {
  while (!stop->load(std::memory_order_acquire)) {
    co_await coro::WaitSignal();
    acks->fetch_add(1, std::memory_order_release);
  }
}

void BM_SignalCoro(benchmark::State& state) {
  TaskScheduler sched;
  sched.Start(1);
  Atomic<int> acks{0};
  Atomic<bool> stop{false};
  coro::JoinHandle<void> waiter = coro::Spawn(sched, SignalWaiter(&acks, &stop));
  int expected = 0;
  for (auto _ : state) {
    waiter.Signal();
    SpinUntil(acks, ++expected);
  }
  stop.store(true, std::memory_order_release);
  waiter.Signal();
  waiter.Get();
  state.SetItemsProcessed(state.iterations());
}

void BM_SignalCallback(benchmark::State& state) {
  TaskScheduler sched;
  sched.Start(1);
  Atomic<int> acks{0};
  Atomic<bool> stop{false};
  Task task;
  task.SetCallback([&] {
    if (task.ReceiveSignal()) acks.fetch_add(1, std::memory_order_release);
    if (!stop.load(std::memory_order_acquire)) sched.PostWait(&task);
  });
  sched.PostWait(&task);
  int expected = 0;
  for (auto _ : state) {
    sched.Signal(&task);
    SpinUntil(acks, ++expected);
  }
  stop.store(true, std::memory_order_release);
  sched.Signal(&task);
  sched.Stop();
  state.SetItemsProcessed(state.iterations());
}

// asio has no cross-thread wakeup of a coroutine other than posting to its executor: the
// signal is a posted cancel of the timer the coroutine waits on (one pool thread, so the
// cancel always runs after the coroutine has started waiting again).
asio::awaitable<void> AsioSignalWaiter(asio::steady_timer* timer, Atomic<int>* acks,
                                       const Atomic<bool>* stop) {
  while (!stop->load(std::memory_order_acquire)) {
    timer->expires_at(asio::steady_timer::time_point::max());
    asio::error_code ignored;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    acks->fetch_add(1, std::memory_order_release);
  }
}

void BM_SignalAsio(benchmark::State& state) {
  asio::thread_pool pool(1);
  asio::steady_timer timer(pool);
  Atomic<int> acks{0};
  Atomic<bool> stop{false};
  asio::co_spawn(pool, AsioSignalWaiter(&timer, &acks, &stop), asio::detached);
  int expected = 0;
  for (auto _ : state) {
    asio::post(pool, [&timer] { timer.cancel(); });
    SpinUntil(acks, ++expected);
  }
  stop.store(true, std::memory_order_release);
  asio::post(pool, [&timer] { timer.cancel(); });
  pool.join();
  state.SetItemsProcessed(state.iterations());
}

void BM_SignalFiber(benchmark::State& state) {
  boost::fibers::mutex mu;
  boost::fibers::condition_variable cv;
  int signals = 0;  // guarded by mu
  bool stop = false;
  Atomic<int> acks{0};
  std::thread helper([&] {
    boost::fibers::fiber([&] {
      int seen = 0;
      std::unique_lock<boost::fibers::mutex> lock(mu);
      while (true) {
        cv.wait(lock, [&] { return signals != seen || stop; });
        if (stop) return;
        seen = signals;
        acks.fetch_add(1, std::memory_order_release);
      }
    }).join();
  });
  int expected = 0;
  for (auto _ : state) {
    {
      std::unique_lock<boost::fibers::mutex> lock(mu);
      ++signals;
    }
    cv.notify_one();
    SpinUntil(acks, ++expected);
  }
  {
    std::unique_lock<boost::fibers::mutex> lock(mu);
    stop = true;
  }
  cv.notify_one();
  helper.join();
  state.SetItemsProcessed(state.iterations());
}

// ---------------------------------------------------------------- chain of co_awaits

coro::Lazy<int> CoroChain(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await CoroChain(depth - 1);
}

void BM_ChainCoro(benchmark::State& state) {
  for (auto _ : state) {
    int levels = coro::RunSync(CoroChain(kChainDepth));
    benchmark::DoNotOptimize(levels);
  }
  state.SetItemsProcessed(state.iterations() * kChainDepth);  // items = levels
}

asio::awaitable<int> AsioChain(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await AsioChain(depth - 1);
}

void BM_ChainAsio(benchmark::State& state) {
  asio::io_context context;  // runs on the benchmark thread, as RunSync does
  for (auto _ : state) {
    int levels = 0;
    auto run = [&levels]() -> asio::awaitable<void> { levels = co_await AsioChain(kChainDepth); };
    asio::co_spawn(context, run(), asio::detached);
    context.run();
    context.restart();
    benchmark::DoNotOptimize(levels);
  }
  state.SetItemsProcessed(state.iterations() * kChainDepth);
}

[[gnu::noinline]] int PlainChain(int depth) {  // the trivial version: plain calls
  if (depth == 0) return 0;
  int below = PlainChain(depth - 1);
  benchmark::DoNotOptimize(below);
  return 1 + below;
}

void BM_ChainPlainCalls(benchmark::State& state) {
  for (auto _ : state) {
    int levels = PlainChain(kChainDepth);
    benchmark::DoNotOptimize(levels);
  }
  state.SetItemsProcessed(state.iterations() * kChainDepth);
}

// ---------------------------------------------------------------- memory

void ReportMemory(benchmark::State& state, double bytes_per_suspended, double bytes_per_frame) {
  state.counters["bytes_per_suspended"] = bytes_per_suspended;
  state.counters["bytes_per_frame"] = bytes_per_frame;
}

coro::Lazy<void> SuspendedCoroutine() { co_await coro::WaitSignal(); }

void BM_MemoryCoro(benchmark::State& state) {
  TaskScheduler sched;
  sched.Start(1);
  double requested = 0, heap = 0, frame = 0;
  for (auto _ : state) {
    const coro::FrameAllocatorStats before = coro::FrameAllocator::ThisThreadFrameStats();
    { coro::Lazy<void> unused = SuspendedCoroutine(); }
    const coro::FrameAllocatorStats one = coro::FrameAllocator::ThisThreadFrameStats();
    frame = static_cast<double>(one.bytes_requested - before.bytes_requested);
    const std::size_t heap_before = HeapInUse();
    std::vector<coro::JoinHandle<void>> handles;
    handles.reserve(kSuspended);
    const std::size_t heap_vector = HeapInUse();
    for (int i = 0; i < kSuspended; ++i)
      handles.push_back(coro::Spawn(sched, SuspendedCoroutine()));
    const coro::FrameAllocatorStats after = coro::FrameAllocator::ThisThreadFrameStats();
    heap = static_cast<double>(HeapInUse() - heap_vector) / kSuspended;
    requested = static_cast<double>(after.bytes_requested - one.bytes_requested) / kSuspended;
    benchmark::DoNotOptimize(heap_before);
    for (coro::JoinHandle<void>& handle : handles) handle.Signal();
    for (coro::JoinHandle<void>& handle : handles) handle.Get();
  }
  ReportMemory(state, requested, frame);
  // Heap growth, not requested bytes: includes the 64-byte size-class rounding, but the
  // allocator recycles frames, so a warm cache shows less than the requested bytes.
  state.counters["heap_bytes_per_suspended"] = heap;
}

asio::awaitable<void> AsioSuspended() {
  asio::steady_timer timer(co_await asio::this_coro::executor,
                           asio::steady_timer::time_point::max());
  asio::error_code ignored;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

void BM_MemoryAsio(benchmark::State& state) {
  double heap = 0;
  for (auto _ : state) {
    auto context = std::make_unique<asio::io_context>(1);
    const std::size_t before = HeapInUse();
    for (int i = 0; i < kSuspended; ++i) asio::co_spawn(*context, AsioSuspended(), asio::detached);
    context->poll();  // every coroutine runs up to its timer wait
    heap = static_cast<double>(HeapInUse() - before) / kSuspended;
    context.reset();  // destroys the suspended coroutines
  }
  ReportMemory(state, heap, 0);
}

void BM_MemoryFiber(benchmark::State& state) {
  constexpr int kFibers = 1000;  // each reserves a whole stack
  double heap = 0, resident = 0;
  for (auto _ : state) {
    boost::fibers::mutex mu;
    boost::fibers::condition_variable cv;
    bool release = false;
    std::vector<boost::fibers::fiber> fibers;
    fibers.reserve(kFibers);
    const std::size_t before = HeapInUse();
    const std::size_t resident_before = ResidentBytes();
    for (int i = 0; i < kFibers; ++i) {
      fibers.emplace_back([&] {
        std::unique_lock<boost::fibers::mutex> lock(mu);
        cv.wait(lock, [&] { return release; });
      });
    }
    boost::this_fiber::yield();  // every fiber runs up to its wait
    heap = static_cast<double>(HeapInUse() - before) / kFibers;
    resident = static_cast<double>(ResidentBytes() - resident_before) / kFibers;
    {
      std::unique_lock<boost::fibers::mutex> lock(mu);
      release = true;
    }
    cv.notify_all();
    for (boost::fibers::fiber& fiber : fibers) fiber.join();
  }
  ReportMemory(state, heap, 0);
  state.counters["resident_bytes_per_suspended"] = resident;
}

void BM_MemoryCallback(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(sizeof(Task));
  ReportMemory(state, sizeof(Task), 0);
}

BENCHMARK(BM_SpawnCoro)
    ->Name("spawn_complete/coro")
    ->ArgName("workers")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime();
BENCHMARK(BM_SpawnCoroHome)
    ->Name("spawn_complete/coro_home")
    ->ArgName("workers")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime();
BENCHMARK(BM_SpawnCallback)
    ->Name("spawn_complete/callback_task")
    ->ArgName("workers")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime();
BENCHMARK(BM_SpawnAsio)
    ->Name("spawn_complete/asio")
    ->ArgName("workers")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime();
BENCHMARK(BM_SpawnFiber)
    ->Name("spawn_complete/boost_fiber")
    ->ArgName("workers")
    ->Arg(1)
    ->UseRealTime();
BENCHMARK(BM_YieldCoro)->Name("yield_round_trip/coro")->UseRealTime();
BENCHMARK(BM_YieldCoroHome)->Name("yield_round_trip/coro_home")->UseRealTime();
BENCHMARK(BM_YieldCallback)->Name("yield_round_trip/callback_task")->UseRealTime();
BENCHMARK(BM_YieldAsio)->Name("yield_round_trip/asio")->UseRealTime();
BENCHMARK(BM_YieldFiber)->Name("yield_round_trip/boost_fiber")->UseRealTime();
BENCHMARK(BM_SignalCoro)->Name("signal_round_trip/coro")->UseRealTime();
BENCHMARK(BM_SignalCallback)->Name("signal_round_trip/callback_task")->UseRealTime();
BENCHMARK(BM_SignalAsio)->Name("signal_round_trip/asio")->UseRealTime();
BENCHMARK(BM_SignalFiber)->Name("signal_round_trip/boost_fiber")->UseRealTime();
BENCHMARK(BM_ChainCoro)->Name("chain_1000/coro")->UseRealTime();
BENCHMARK(BM_ChainAsio)->Name("chain_1000/asio")->UseRealTime();
BENCHMARK(BM_ChainPlainCalls)->Name("chain_1000/plain_calls")->UseRealTime();
BENCHMARK(BM_MemoryCoro)->Name("memory/coro")->Iterations(3);
BENCHMARK(BM_MemoryAsio)->Name("memory/asio")->Iterations(3);
BENCHMARK(BM_MemoryFiber)->Name("memory/boost_fiber")->Iterations(3);
BENCHMARK(BM_MemoryCallback)->Name("memory/callback_task")->Iterations(1);

}  // namespace
}  // namespace fairsched::bench

BENCHMARK_MAIN();
