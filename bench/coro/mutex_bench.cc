// coro::Mutex against boost::fibers::mutex and std::mutex (the trivial version: a thread
// mutex held inside a coroutine, blocking its worker), in one run:
//
//   mutex/uncontended/<impl>          lock + unlock by one coroutine (one fiber, for boost)
//                                     that never has to wait: the fast path
//   mutex/handoff/<impl>/N            as contended, but the critical section yields once, so
//                                     the others queue and every Unlock hands off (see
//                                     below); yield_only_* is the same loop without a lock
//   mutex/contended/<impl>/N          N coroutines (fibers) on 2 worker threads, each taking
//                                     the lock kLocksPerContender times with an empty
//                                     critical section (one increment). Reported per lock:
//                                     real time; `owner_switches` = fraction of
//                                     acquisitions whose owner differs from the previous
//                                     one; `time_per_switch` = time per owner switch (the
//                                     cost of one hand-off between contenders).
//
// coro::Mutex hands the lock to the oldest waiter, so under contention every acquisition
// is a switch that goes through the scheduler (wake the waiter's task, a worker picks it
// up). The peers let the unlocker take the lock again at once (barging), so most of their
// acquisitions are not switches: compare time_per_switch for the hand-off, the time per lock
// for throughput.
#include <benchmark/benchmark.h>

#include <boost/fiber/algo/shared_work.hpp>
#include <boost/fiber/all.hpp>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "coro/mutex.h"
#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

constexpr int kWorkers = 2;
constexpr std::int64_t kLocksPerContender = 5000;

// What the contenders share; only touched under the lock being measured.
struct CriticalState {
  std::int64_t counter = 0;
  std::int64_t switches = 0;
  int last_owner = -1;
  void Enter(int me) {
    if (last_owner != me) {
      ++switches;
      last_owner = me;
    }
    ++counter;
  }
};

void ReportContended(benchmark::State& state, const CriticalState& critical, std::int64_t locks) {
  state.SetItemsProcessed(locks);
  state.counters["owner_switches"] =
      static_cast<double>(critical.switches) / static_cast<double>(critical.counter);
  if (critical.switches > 0) {
    state.counters["time_per_switch"] =
        benchmark::Counter(static_cast<double>(critical.switches),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  }
}

// The contenders start their loops together (else the first could finish before the last
// starts, and nothing would contend).
coro::Lazy<> StartTogether(Atomic<int>& arrived, int contenders) {
  arrived.fetch_add(1);
  while (arrived.load() < contenders) co_await coro::Yield();
}

// --- Uncontended: the benchmark loop runs inside one coroutine that never suspends (so it
// stays on one worker from the first iteration to the last). ---

template <typename Body>
void RunLoopInCoroutine(Body body) {
  TaskScheduler sched;
  sched.Start(1);
  coro::Spawn(sched, body()).Get();
}

void BM_Uncontended_CoroMutex(benchmark::State& state) {
  coro::Mutex mutex;
  auto body = [&]() -> coro::Lazy<> {
    for (auto _ : state) {
      co_await mutex.Lock();
      mutex.Unlock();
    }
  };
  RunLoopInCoroutine(body);
}
BENCHMARK(BM_Uncontended_CoroMutex)->Name("mutex/uncontended/coro_mutex")->UseRealTime();

void BM_Uncontended_CoroMutexTryLock(benchmark::State& state) {
  coro::Mutex mutex;
  auto body = [&]() -> coro::Lazy<> {
    for (auto _ : state) {
      benchmark::DoNotOptimize(mutex.TryLock());
      mutex.Unlock();
    }
    co_return;
  };
  RunLoopInCoroutine(body);
}
BENCHMARK(BM_Uncontended_CoroMutexTryLock)
    ->Name("mutex/uncontended/coro_mutex_trylock")
    ->UseRealTime();

void BM_Uncontended_CoroMutexGuard(benchmark::State& state) {
  coro::Mutex mutex;
  auto body = [&]() -> coro::Lazy<> {
    for (auto _ : state) {
      coro::MutexGuard guard = co_await mutex.LockGuard();
    }
  };
  RunLoopInCoroutine(body);
}
BENCHMARK(BM_Uncontended_CoroMutexGuard)->Name("mutex/uncontended/coro_mutex_guard")->UseRealTime();

void BM_Uncontended_StdMutex(benchmark::State& state) {
  Mutex mutex;
  auto body = [&]() -> coro::Lazy<> {
    for (auto _ : state) {
      mutex.lock();
      mutex.unlock();
    }
    co_return;
  };
  RunLoopInCoroutine(body);
}
BENCHMARK(BM_Uncontended_StdMutex)->Name("mutex/uncontended/std_mutex")->UseRealTime();

void BM_Uncontended_BoostFiberMutex(benchmark::State& state) {
  boost::fibers::mutex mutex;
  // The benchmark thread's main fiber.
  for (auto _ : state) {
    mutex.lock();
    mutex.unlock();
  }
}
BENCHMARK(BM_Uncontended_BoostFiberMutex)
    ->Name("mutex/uncontended/boost_fiber_mutex")
    ->UseRealTime();

// --- Contended. ---

void BM_Contended_CoroMutex(benchmark::State& state) {
  const int contenders = static_cast<int>(state.range(0));
  TaskScheduler sched;
  sched.Start(kWorkers);
  coro::Mutex mutex;
  CriticalState critical;
  Atomic<int> arrived{0};
  auto contender = [&](int me) -> coro::Lazy<> {
    co_await StartTogether(arrived, contenders);
    for (std::int64_t i = 0; i < kLocksPerContender; ++i) {
      co_await mutex.Lock();
      critical.Enter(me);
      mutex.Unlock();
    }
  };
  for (auto _ : state) {
    arrived.store(0);
    std::vector<coro::JoinHandle<void>> handles;
    for (int c = 0; c < contenders; ++c) handles.push_back(coro::Spawn(sched, contender(c)));
    for (coro::JoinHandle<void>& handle : handles) handle.Get();
  }
  ReportContended(state, critical, critical.counter);
}
BENCHMARK(BM_Contended_CoroMutex)
    ->Name("mutex/contended/coro_mutex")
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime();

void BM_Contended_StdMutex(benchmark::State& state) {
  const int contenders = static_cast<int>(state.range(0));
  TaskScheduler sched;
  sched.Start(kWorkers);
  Mutex mutex;
  CriticalState critical;
  Atomic<int> arrived{0};
  auto contender = [&](int me) -> coro::Lazy<> {
    co_await StartTogether(arrived, contenders);
    for (std::int64_t i = 0; i < kLocksPerContender; ++i) {
      mutex.lock();  // blocks the worker while it waits
      critical.Enter(me);
      mutex.unlock();
    }
  };
  for (auto _ : state) {
    arrived.store(0);
    std::vector<coro::JoinHandle<void>> handles;
    for (int c = 0; c < contenders; ++c) handles.push_back(coro::Spawn(sched, contender(c)));
    for (coro::JoinHandle<void>& handle : handles) handle.Get();
  }
  ReportContended(state, critical, critical.counter);
}
BENCHMARK(BM_Contended_StdMutex)
    ->Name("mutex/contended/std_mutex_in_task")
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime();

// boost.fiber on two threads: the benchmark thread and a helper share their ready fibers
// (algo::shared_work, installed in main), the helper parks in a fiber condition variable
// until the run ends.
void BM_Contended_BoostFiberMutex(benchmark::State& state) {
  const int contenders = static_cast<int>(state.range(0));
  boost::fibers::mutex done_mutex;
  boost::fibers::condition_variable done_cv;
  bool done = false;
  std::thread helper([&] {
    boost::fibers::use_scheduling_algorithm<boost::fibers::algo::shared_work>();
    std::unique_lock<boost::fibers::mutex> lock(done_mutex);
    done_cv.wait(lock, [&] { return done; });
  });
  boost::fibers::mutex mutex;
  CriticalState critical;
  Atomic<int> arrived{0};
  for (auto _ : state) {
    arrived.store(0);
    std::vector<boost::fibers::fiber> fibers;
    for (int c = 0; c < contenders; ++c) {
      fibers.emplace_back([&, c] {
        arrived.fetch_add(1);
        while (arrived.load() < contenders) boost::this_fiber::yield();
        for (std::int64_t i = 0; i < kLocksPerContender; ++i) {
          mutex.lock();
          critical.Enter(c);
          mutex.unlock();
        }
      });
    }
    for (boost::fibers::fiber& fiber : fibers) fiber.join();
  }
  {
    std::unique_lock<boost::fibers::mutex> lock(done_mutex);
    done = true;
  }
  done_cv.notify_all();
  helper.join();
  ReportContended(state, critical, critical.counter);
}
BENCHMARK(BM_Contended_BoostFiberMutex)
    ->Name("mutex/contended/boost_fiber_mutex")
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime();

// --- Hand-off: the critical section yields (as one that waits for IO would suspend), so
// the other contenders run meanwhile, find the lock taken and queue: every Unlock then has
// a waiter. The trivial version is the same loop with no mutex (the yields alone); a
// std::mutex cannot be held across a suspension (the contenders would block both workers
// while the holder sits in the ready queue), so it is not a peer here. ---

enum class HandOffLock { kNone, kCoroMutex };

void BM_HandOff_Coro(benchmark::State& state, HandOffLock which) {
  const int contenders = static_cast<int>(state.range(0));
  TaskScheduler sched;
  sched.Start(kWorkers);
  coro::Mutex mutex;
  CriticalState critical;
  Atomic<std::int64_t> unlocked_count{0};  // kNone: counts iterations (no lock to guard)
  Atomic<int> arrived{0};
  auto contender = [&](int me) -> coro::Lazy<> {
    co_await StartTogether(arrived, contenders);
    for (std::int64_t i = 0; i < kLocksPerContender / 10; ++i) {
      if (which == HandOffLock::kCoroMutex) {
        co_await mutex.Lock();
        critical.Enter(me);
        co_await coro::Yield();
        mutex.Unlock();
      } else {
        unlocked_count.fetch_add(1, std::memory_order_relaxed);
        co_await coro::Yield();
      }
    }
  };
  for (auto _ : state) {
    arrived.store(0);
    std::vector<coro::JoinHandle<void>> handles;
    for (int c = 0; c < contenders; ++c) handles.push_back(coro::Spawn(sched, contender(c)));
    for (coro::JoinHandle<void>& handle : handles) handle.Get();
  }
  if (which == HandOffLock::kNone) critical.counter = unlocked_count.load();
  ReportContended(state, critical, critical.counter);
}
BENCHMARK_CAPTURE(BM_HandOff_Coro, no_mutex, HandOffLock::kNone)
    ->Name("mutex/handoff/yield_only_no_mutex")
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_HandOff_Coro, coro_mutex, HandOffLock::kCoroMutex)
    ->Name("mutex/handoff/coro_mutex")
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime();

void BM_HandOff_BoostFiber(benchmark::State& state, bool with_mutex) {
  const int contenders = static_cast<int>(state.range(0));
  boost::fibers::mutex done_mutex;
  boost::fibers::condition_variable done_cv;
  bool done = false;
  std::thread helper([&] {
    boost::fibers::use_scheduling_algorithm<boost::fibers::algo::shared_work>();
    std::unique_lock<boost::fibers::mutex> lock(done_mutex);
    done_cv.wait(lock, [&] { return done; });
  });
  boost::fibers::mutex mutex;
  CriticalState critical;
  Atomic<std::int64_t> unlocked_count{0};
  Atomic<int> arrived{0};
  for (auto _ : state) {
    arrived.store(0);
    std::vector<boost::fibers::fiber> fibers;
    for (int c = 0; c < contenders; ++c) {
      fibers.emplace_back([&, c] {
        arrived.fetch_add(1);
        while (arrived.load() < contenders) boost::this_fiber::yield();
        for (std::int64_t i = 0; i < kLocksPerContender / 10; ++i) {
          if (with_mutex) {
            mutex.lock();
            critical.Enter(c);
            boost::this_fiber::yield();
            mutex.unlock();
          } else {
            unlocked_count.fetch_add(1, std::memory_order_relaxed);
            boost::this_fiber::yield();
          }
        }
      });
    }
    for (boost::fibers::fiber& fiber : fibers) fiber.join();
  }
  {
    std::unique_lock<boost::fibers::mutex> lock(done_mutex);
    done = true;
  }
  done_cv.notify_all();
  helper.join();
  if (!with_mutex) critical.counter = unlocked_count.load();
  ReportContended(state, critical, critical.counter);
}
BENCHMARK_CAPTURE(BM_HandOff_BoostFiber, no_mutex, false)
    ->Name("mutex/handoff/boost_fiber_yield_only_no_mutex")
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_HandOff_BoostFiber, boost_fiber_mutex, true)
    ->Name("mutex/handoff/boost_fiber_mutex")
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime();

}  // namespace
}  // namespace fairsched::bench

int main(int argc, char** argv) {
  // The benchmark thread's fiber scheduler shares its ready fibers with the helper thread
  // of the contended boost benchmark; installed before the thread uses any fiber.
  boost::fibers::use_scheduling_algorithm<boost::fibers::algo::shared_work>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
