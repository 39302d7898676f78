// Tests for coro::BlockingPool / RunBlocking (coro/blocking_pool.h): results and exceptions
// come back on the scheduler, the queue bound makes coroutines wait without blocking their
// worker, Stop never drops a submitted call, cancellation before and after a call started,
// the join destroying the frame while a pool thread is still inside its wake, and a stress
// run with random cancellations.
#include "coro/blocking_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched::coro {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A gate the blocking calls wait on (they block a pool thread, as real blocking IO does).
class Gate {
 public:
  void Open() { open_.store(true); }
  void Pass() const {
    while (!open_.load()) std::this_thread::sleep_for(milliseconds(1));
  }

 private:
  std::atomic<bool> open_{false};
};

void WaitUntilTrue(const std::function<bool()>& condition) {
  while (!condition()) std::this_thread::sleep_for(milliseconds(1));
}

TEST(BlockingPoolTest, ReturnsTheValueOnTheSchedulerNotOnThePoolThread) {
  TaskScheduler sched;
  sched.Start(2);
  BlockingPool pool({.threads = 2, .queue_bound = 4});
  auto job = [&]() -> Lazy<bool> {
    std::thread::id call_thread;
    auto call = [&call_thread] {
      call_thread = std::this_thread::get_id();
      return std::string("blocking result");
    };
    const std::string value = co_await RunBlocking(pool, call);
    // Resumed by the scheduler: a worker, not the pool thread that ran the call.
    co_return value == "blocking result" &&
        std::this_thread::get_id() != call_thread&& internal::CurrentState() != nullptr;
  };
  EXPECT_TRUE(Spawn(sched, job()).Get());
}

TEST(BlockingPoolTest, ExceptionsAndVoidCalls) {
  TaskScheduler sched;
  sched.Start(1);
  BlockingPool pool({.threads = 1, .queue_bound = 1});
  std::atomic<int> side_effect{0};
  auto job = [&]() -> Lazy<std::string> {
    auto increment = [&side_effect] { side_effect.fetch_add(1); };
    co_await RunBlocking(pool, increment);
    auto fail = []() -> int { throw std::runtime_error("disk on fire"); };
    try {
      co_await RunBlocking(pool, fail);
    } catch (const std::runtime_error& e) {
      co_return e.what();
    }
    co_return "no exception";
  };
  EXPECT_EQ(Spawn(sched, job()).Get(), "disk on fire");
  EXPECT_EQ(side_effect.load(), 1);
}

TEST(BlockingPoolTest, FullQueueMakesCoroutinesWaitWithoutBlockingTheirWorker) {
  TaskScheduler sched;
  sched.Start(1);
  BlockingPool pool({.threads = 1, .queue_bound = 2});
  Gate gate;
  std::atomic<int> calls_started{0};
  auto job = [&](int i) -> Lazy<int> {
    auto call = [&, i] {
      calls_started.fetch_add(1);
      gate.Pass();
      return i;
    };
    co_return co_await RunBlocking(pool, call);
  };
  std::vector<JoinHandle<int>> handles;
  handles.push_back(Spawn(sched, job(0)));  // runs on the pool thread, blocked at the gate
  WaitUntilTrue([&] { return calls_started.load() == 1; });
  for (int i = 1; i <= 4; ++i) handles.push_back(Spawn(sched, job(i)));  // 2 queue, 2 wait
  WaitUntilTrue([&] { return pool.queued() == 2; });
  // The only worker is free although two coroutines wait for room: it runs this one.
  auto other = []() -> Lazy<int> { co_return 7; };
  EXPECT_EQ(Spawn(sched, other()).Get(), 7);
  std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(pool.queued(), 2u);  // the bound holds
  EXPECT_EQ(calls_started.load(), 1);
  gate.Open();
  for (int i = 0; i <= 4; ++i) EXPECT_EQ(handles[i].Get(), i);
  EXPECT_EQ(calls_started.load(), 5);
}

TEST(BlockingPoolTest, StopRunsEveryQueuedCallAndRefusesNewOnes) {
  TaskScheduler sched;
  sched.Start(2);
  BlockingPool pool({.threads = 1, .queue_bound = 64});
  Gate gate;
  std::atomic<int> ran{0};
  auto job = [&]() -> Lazy<int> {
    auto call = [&] {
      gate.Pass();
      return ran.fetch_add(1) + 1;
    };
    co_return co_await RunBlocking(pool, call);
  };
  std::vector<JoinHandle<int>> handles;
  for (int i = 0; i < 20; ++i) handles.push_back(Spawn(sched, job()));
  WaitUntilTrue([&] { return pool.queued() == 19; });  // one runs, 19 queued
  std::thread stopper([&] { pool.Stop(); });
  std::this_thread::sleep_for(milliseconds(10));
  gate.Open();
  stopper.join();
  EXPECT_EQ(ran.load(), 20);  // Stop ran every submitted call
  int sum = 0;
  for (JoinHandle<int>& handle : handles) sum += handle.Get();
  EXPECT_EQ(sum, 20 * 21 / 2);  // and every awaiter got its own result
  auto late = [&]() -> Lazy<std::string> {
    auto call = [] { return 1; };
    try {
      co_await RunBlocking(pool, call);
    } catch (const BlockingPoolStopped& e) {
      co_return e.what();
    }
    co_return "accepted";
  };
  EXPECT_EQ(Spawn(sched, late()).Get(), "coro::BlockingPool is stopping");
}

TEST(BlockingPoolTest, CancelBeforeTheCallStartsNeverRunsIt) {
  TaskScheduler sched;
  sched.Start(2);
  BlockingPool pool({.threads = 1, .queue_bound = 8});
  Gate gate;
  std::atomic<int> ran{0};
  std::atomic<bool> first_started{false};
  auto job = [&](bool blocks) -> Lazy<std::string> {
    auto call = [&, blocks] {
      if (blocks) {
        first_started.store(true);
        gate.Pass();
      }
      ran.fetch_add(1);
      return 1;
    };
    try {
      co_await RunBlocking(pool, call);
    } catch (const BlockingCallCancelled&) {
      co_return "cancelled";
    }
    co_return "ran";
  };
  JoinHandle<std::string> first = Spawn(sched, job(true));
  // The first call holds the pool's one thread before the second is spawned. (Waiting for
  // an empty queue instead raced: the second call could reach the queue first, run, and
  // leave the queue empty for good behind the blocked first one.)
  WaitUntilTrue([&] { return first_started.load(); });
  JoinHandle<std::string> second = Spawn(sched, job(false));
  WaitUntilTrue([&] { return pool.queued() == 1; });
  EXPECT_TRUE(second.Cancel());
  EXPECT_EQ(second.Get(), "cancelled");
  EXPECT_EQ(pool.queued(), 0u);  // withdrawn from the queue
  gate.Open();
  EXPECT_EQ(first.Get(), "ran");
  pool.Stop();
  EXPECT_EQ(ran.load(), 1);  // the cancelled call never ran
}

TEST(BlockingPoolTest, CancelAfterTheCallStartedWaitsForItsResult) {
  TaskScheduler sched;
  sched.Start(2);
  BlockingPool pool({.threads = 1, .queue_bound = 8});
  Gate gate;
  std::atomic<bool> started{false};
  auto job = [&]() -> Lazy<std::string> {
    auto call = [&] {
      started.store(true);
      gate.Pass();
      return std::string("finished");
    };
    std::string value = co_await RunBlocking(pool, call);
    co_return value + (IsCancelled() ? " then cancelled" : "");
  };
  JoinHandle<std::string> handle = Spawn(sched, job());
  WaitUntilTrue([&] { return started.load(); });
  EXPECT_TRUE(handle.Cancel());
  EXPECT_FALSE(handle.WaitFor(milliseconds(20)));  // still waiting for the running call
  gate.Open();
  EXPECT_EQ(handle.Get(), "finished then cancelled");
}

TEST(BlockingPoolTest, CancelWhileWaitingForRoom) {
  TaskScheduler sched;
  sched.Start(1);
  BlockingPool pool({.threads = 1, .queue_bound = 1});
  Gate gate;
  std::atomic<int> started{0}, ran{0};
  auto job = [&]() -> Lazy<std::string> {
    auto call = [&] {
      started.fetch_add(1);
      gate.Pass();
      ran.fetch_add(1);
      return 0;
    };
    try {
      co_await RunBlocking(pool, call);
    } catch (const BlockingCallCancelled& e) {
      co_return e.what();
    }
    co_return "ran";
  };
  JoinHandle<std::string> running = Spawn(sched, job());
  WaitUntilTrue([&] { return started.load() == 1; });
  JoinHandle<std::string> queued = Spawn(sched, job());
  WaitUntilTrue([&] { return pool.queued() == 1; });
  JoinHandle<std::string> waiting = Spawn(sched, job());
  std::this_thread::sleep_for(milliseconds(10));  // it waits for room now
  EXPECT_TRUE(waiting.Cancel());
  EXPECT_EQ(waiting.Get(), "coro::RunBlocking: cancelled while waiting for queue room");
  gate.Open();
  EXPECT_EQ(running.Get(), "ran");
  EXPECT_EQ(queued.Get(), "ran");
  EXPECT_EQ(ran.load(), 2);
}

// A TaskScheduler whose Wakeup, when a pool thread calls it, lingers for a while after
// posting the task: what a real scheduler's wake may do after the post (wake a parked
// worker), stretched so that the woken coroutine surely finishes first.
thread_local bool this_thread_is_pool = false;  // set by the blocking call
class LingeringWakeScheduler {
 public:
  explicit LingeringWakeScheduler(TaskScheduler* real) : real_(real) {}
  void PostDeadline(fairsched::Task* task, TaskDeadline deadline) {
    real_->PostDeadline(task, deadline);
  }
  void PostDeadlineThroughStop(fairsched::Task* task, TaskDeadline deadline) {
    real_->PostDeadlineThroughStop(task, deadline);
  }
  void Wakeup(fairsched::Task* task) {
    real_->Wakeup(task);
    if (this_thread_is_pool) std::this_thread::sleep_for(milliseconds(200));
  }
  bool IsStopping() const { return real_->IsStopping(); }

 private:
  TaskScheduler* const real_;
};

// Counts its destruction into `*destroyed` (a parameter of the spawned coroutine).
class CountsDestruction {
 public:
  explicit CountsDestruction(int* destroyed) : destroyed_(destroyed) {}
  CountsDestruction(CountsDestruction&& other) noexcept
      : destroyed_(std::exchange(other.destroyed_, nullptr)) {}
  ~CountsDestruction() {
    if (destroyed_ != nullptr) ++*destroyed_;
  }

 private:
  int* destroyed_;
};

Lazy<int> CallThePool(BlockingPool* pool, CountsDestruction) {
  auto call = [] {
    this_thread_is_pool = true;
    return 42;
  };
  co_return co_await RunBlocking(*pool, call);
}

// The join destroys the spawned coroutine's frame, its parameters included, before it
// returns, also when the pool thread's wake is still running: the pool keeps no reference
// to the coroutine. (With the waker moved out of the call and released after the wake, the
// pool thread destroyed the frame 200 ms after the join: the count below was 0, and the
// parameter's destructor wrote to the freed int, reported under ASan.)
TEST(BlockingPoolTest, TheJoinDestroysTheFrameWhileThePoolThreadIsStillWaking) {
  TaskScheduler real;
  real.Start(2);
  LingeringWakeScheduler sched(&real);
  BlockingPool pool({.threads = 1, .queue_bound = 8});
  auto destroyed = std::make_unique<int>(0);
  JoinHandle<int> handle = Spawn(sched, CallThePool(&pool, CountsDestruction(destroyed.get())));
  EXPECT_EQ(handle.Get(), 42);
  EXPECT_EQ(*destroyed, 1) << "the frame outlived the join";
  destroyed.reset();
  pool.Stop();  // the pool thread's wake has returned
  real.Stop();
}

TEST(BlockingPoolStressTest, EveryCallRunsOnceOrIsReportedCancelled) {
  const int coroutines = static_cast<int>(testing::StressIterations(400, 4));
  TaskScheduler sched;
  sched.Start(2);
  BlockingPool pool({.threads = 3, .queue_bound = 4});
  std::atomic<int> ran{0}, got_result{0}, got_cancelled{0}, wrong{0};
  auto job = [&](int i) -> Lazy<void> {
    for (int k = 0; k < 5; ++k) {
      auto call = [&, i, k] {
        ran.fetch_add(1);
        if ((i + k) % 7 == 0) std::this_thread::yield();
        return i * 10 + k;
      };
      try {
        const int result = co_await RunBlocking(pool, call);
        if (result != i * 10 + k) wrong.fetch_add(1);
        got_result.fetch_add(1);
      } catch (const BlockingCallCancelled&) {
        got_cancelled.fetch_add(1);
      }
    }
  };
  std::vector<JoinHandle<void>> handles;
  for (int i = 0; i < coroutines; ++i) {
    handles.push_back(Spawn(sched, job(i)));
    if (i % 3 == 0 && i > 0) handles[i - 1].Cancel();
  }
  for (JoinHandle<void>& handle : handles) handle.Get();
  pool.Stop();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(ran.load(), got_result.load());  // no call ran without its result arriving
  EXPECT_EQ(got_result.load() + got_cancelled.load(), coroutines * 5);
}

}  // namespace
}  // namespace fairsched::coro
