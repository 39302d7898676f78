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
//     textbook_pool  W threads, one mutex, one condition variable and a std::deque of
//                    std::coroutine_handle<>: a yield pushes the handle to the back and a
//                    worker pops and resumes the front one (the coroutine type is the
//                    smallest that can do it: no result, no exception, no cancellation).
//     asio           asio::thread_pool(W), co_spawn(detached), co_await asio::post(
//                    executor, use_awaitable) as the yield.
//     local_queue    W = 1 only: the benchmark thread itself resumes the handles from a
//                    std::deque, no lock, no atomics: the cost of the coroutine switch and
//                    the queue, with no scheduler.
//   Counter (fairsched): bytes_per_coroutine, the frame allocator's bytes handed out per
//   spawned coroutine (state and frame, rounded to its size classes).
#include <benchmark/benchmark.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/this_coro.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <exception>
#include <thread>
#include <vector>

#include "bench/sched/completion.h"
#include "coro/frame_allocator.h"
#include "coro/runtime.h"
#include "coro/lazy.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

// ---------------------------------------------------------------- fairsched

coro::Lazy<void> FairschedYielder(int steps, Completion* done, std::uint32_t index) {
  for (int step = 1; step < steps; ++step) co_await coro::Yield();
  done->Arrive(index);
}

void FairschedYields(benchmark::State& state, PostOrder order) {
  const auto coroutines = static_cast<std::uint32_t>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  TaskScheduler sched(TaskSchedulerOptions{.post_order = order});
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
  const auto coroutines = static_cast<std::uint32_t>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  HandlePool pool(static_cast<int>(state.range(2)));
  Completion done;
  for (auto _ : state) {
    done.Reset(coroutines);
    for (std::uint32_t i = 0; i < coroutines; ++i) {
      pool.Push(PlainYielder(&pool, steps, &done, i).handle);
    }
    done.Wait();
  }
  state.SetItemsProcessed(state.iterations() * coroutines * steps);
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
  const auto coroutines = static_cast<std::uint32_t>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  LocalQueue queue;
  Completion done;
  for (auto _ : state) {
    done.Reset(coroutines);
    for (std::uint32_t i = 0; i < coroutines; ++i) {
      queue.Push(PlainYielder(&queue, steps, &done, i).handle);
    }
    queue.RunAll();
    done.Wait();
  }
  state.SetItemsProcessed(state.iterations() * coroutines * steps);
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

void Shapes(benchmark::internal::Benchmark* b, bool one_worker_only) {
  b->ArgNames({"coroutines", "steps", "workers"});
  for (int workers : {1, 2}) {
    if (one_worker_only && workers != 1) continue;
    b->Args({100'000, 100, workers});
    b->Args({10'000, 1'000, workers});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
}

void BM_Fairsched(benchmark::State& state) { FairschedYields(state, PostOrder::kBatched); }
void BM_FairschedStrict(benchmark::State& state) { FairschedYields(state, PostOrder::kStrict); }

BENCHMARK(BM_Fairsched)->Name("yield/fairsched")->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_FairschedStrict)->Name("yield/fairsched_strict")->Apply([](auto* b) {
  Shapes(b, false);
});
BENCHMARK(BM_TextbookPool)->Name("yield/textbook_pool")->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_Asio)->Name("yield/asio")->Apply([](auto* b) { Shapes(b, false); });
BENCHMARK(BM_LocalQueue)->Name("yield/local_queue")->Apply([](auto* b) { Shapes(b, true); });

}  // namespace
}  // namespace fairsched::bench

BENCHMARK_MAIN();
