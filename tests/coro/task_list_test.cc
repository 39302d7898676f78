// Tests for coro::TaskList (coro/task_list.h): the blog's two fork-join examples, the
// plain-thread wait that runs tasks itself, coroutine waits that keep their worker free,
// eager pulling by finishing slots, results, exceptions, cancellation, timeouts, and a
// stress run of many lists at once.
#include "coro/task_list.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched::coro {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// The blog's task: does some work, suspends once (back of the queue), finishes.
Lazy<void> BlogTask(std::atomic<int>* started, std::atomic<int>* finished,
                    std::atomic<int>* on_waiting_thread, std::thread::id waiting_thread) {
  started->fetch_add(1);
  if (std::this_thread::get_id() == waiting_thread) on_waiting_thread->fetch_add(1);
  co_await Yield();
  finished->fetch_add(1);
}

TEST(TaskListTest, BlogHundredTasksPlainThreadWaitRunsTasksItself) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> started{0}, finished{0}, on_waiting_thread{0};
  TaskList<void> list(sched);
  for (int i = 0; i < 100; ++i) {
    list.Add(BlogTask(&started, &finished, &on_waiting_thread, std::this_thread::get_id()));
  }
  EXPECT_EQ(list.size(), 100u);
  EXPECT_EQ(started.load(), 0);  // lazy: nothing runs before the wait
  list.Wait();
  EXPECT_EQ(started.load(), 100);
  EXPECT_EQ(finished.load(), 100);
  // The waiting thread always starts the first task itself.
  EXPECT_GE(on_waiting_thread.load(), 1);
}

TEST(TaskListTest, PlainThreadRunsEveryTaskWhenTheWorkersAreBusy) {
  TaskScheduler sched;
  sched.Start(1);
  std::atomic<bool> release{false}, worker_blocked{false};
  sched.PostOneShot([&] {
    worker_blocked.store(true);
    while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
  });
  while (!worker_blocked.load()) std::this_thread::sleep_for(milliseconds(1));
  std::atomic<int> on_waiting_thread{0};
  const std::thread::id me = std::this_thread::get_id();
  auto task = [](std::atomic<int>* count, std::thread::id waiting) -> Lazy<void> {
    if (std::this_thread::get_id() == waiting) count->fetch_add(1);
    co_return;
  };
  TaskList<void> list(sched);
  for (int i = 0; i < 20; ++i) list.Add(task(&on_waiting_thread, me));
  list.Wait();  // the only worker is blocked: this thread must run all 20
  EXPECT_EQ(on_waiting_thread.load(), 20);
  release.store(true);
}

// Regression test: once every task had started, the waiting thread only blocked,
// so tasks that yield waited for the busy worker (20 tasks that yield once, the only worker
// busy 1 s: Wait took 998 ms). The waiting thread now runs the list's ready continuations.
TEST(TaskListTest, PlainThreadRunsReadyContinuationsWhenTheWorkersAreBusy) {
  TaskScheduler sched;
  sched.Start(1);
  std::atomic<bool> release{false}, worker_blocked{false};
  sched.PostOneShot([&] {
    worker_blocked.store(true);
    while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
  });
  while (!worker_blocked.load()) std::this_thread::sleep_for(milliseconds(1));
  std::atomic<int> finished_on_waiting_thread{0};
  const std::thread::id me = std::this_thread::get_id();
  auto task = [](std::atomic<int>* count, std::thread::id waiting) -> Lazy<void> {
    for (int step = 0; step < 3; ++step) co_await Yield();
    if (std::this_thread::get_id() == waiting) count->fetch_add(1);
  };
  TaskList<void> list(sched);
  for (int i = 0; i < 20; ++i) list.Add(task(&finished_on_waiting_thread, me));
  // Bounded, so that a regression fails here instead of hanging: the worker is released
  // only after the wait.
  const bool done = list.WaitFor(seconds(10));
  release.store(true);
  EXPECT_TRUE(done) << "the waiting thread idled while continuations of its list were ready";
  if (!done) list.Wait();
  EXPECT_EQ(finished_on_waiting_thread.load(), 20);
}

// Continuations offered to the waiting thread are also posted to the scheduler: whoever
// comes first runs each step exactly once, with workers free to race the waiting thread.
TEST(TaskListStressTest, WaitingThreadAndWorkersShareContinuationsExactlyOnce) {
  TaskScheduler sched;
  sched.Start(2);
  const int rounds = static_cast<int>(fairsched::testing::StressIterations(30, 3));
  for (int round = 0; round < rounds; ++round) {
    constexpr int kTasks = 24, kSteps = 20;
    std::vector<std::atomic<int>> steps(kTasks);
    auto task = [](std::atomic<int>* count) -> Lazy<void> {
      for (int step = 0; step < kSteps; ++step) {
        count->fetch_add(1);
        if (step % 3 == 2) {
          co_await SleepFor(std::chrono::microseconds(50));
        } else {
          co_await Yield();
        }
      }
    };
    TaskList<void> list(sched, TaskListOptions{.max_parallel = 4});
    for (int i = 0; i < kTasks; ++i) list.Add(task(&steps[i]));
    list.Wait();
    for (int i = 0; i < kTasks; ++i) ASSERT_EQ(steps[i].load(), kSteps) << "task " << i;
  }
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
}

// The blog's nested example: 100 outer tasks, each waits for a list of 20 inner ones.
Lazy<void> InnerTask(std::atomic<int>* inner_done) {
  co_await Yield();
  inner_done->fetch_add(1);
}
template <typename Scheduler>
Lazy<void> OuterTask(Scheduler* sched, std::atomic<int>* inner_done, std::atomic<int>* outer_done,
                     std::atomic<int>* inner_missing) {
  TaskList<void> inner(*sched);
  for (int j = 0; j < 20; ++j) inner.Add(InnerTask(inner_done));
  const int before = inner_done->load();
  co_await inner.Join();
  // All 20 of ours finished (others' may have too): at least 20 more than before.
  if (inner_done->load() - before < 20) inner_missing->fetch_add(1);
  co_await Yield();
  outer_done->fetch_add(1);
}

TEST(TaskListTest, BlogNestedListsHundredOuterTimesTwentyInner) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> inner_done{0}, outer_done{0}, inner_missing{0};
  TaskList<void> outer(sched);
  for (int i = 0; i < 100; ++i) {
    outer.Add(OuterTask(&sched, &inner_done, &outer_done, &inner_missing));
  }
  outer.Wait();
  EXPECT_EQ(outer_done.load(), 100);
  EXPECT_EQ(inner_done.load(), 2000);
  EXPECT_EQ(inner_missing.load(), 0);
}

TEST(TaskListTest, CoroutineJoinDoesNotBlockItsOnlyWorker) {
  TaskScheduler sched;
  sched.Start(1);  // a blocking join would deadlock: the tasks need this worker
  std::atomic<int> done{0};
  auto job = [](TaskScheduler* s, std::atomic<int>* count) -> Lazy<int> {
    TaskList<void> list(*s, TaskListOptions{.max_parallel = 4});
    for (int i = 0; i < 50; ++i) list.Add(InnerTask(count));
    co_await list.Join();
    co_return count->load();
  };
  EXPECT_EQ(Spawn(sched, job(&sched, &done)).Get(), 50);
}

TEST(TaskListTest, FinishingTaskEagerlyRunsTheNextOneInTheSameSlot) {
  TaskScheduler sched;
  sched.Start(2);
  std::mutex mu;
  std::set<const void*> coroutines;  // the spawned coroutine each task ran in
  auto task = [](std::mutex* m, std::set<const void*>* seen) -> Lazy<void> {
    std::lock_guard<std::mutex> lock(*m);
    seen->insert(internal::CurrentState());
    co_return;
  };
  auto job = [&]() -> Lazy<void> {
    TaskList<void> list(sched, TaskListOptions{.max_parallel = 1});
    for (int i = 0; i < 30; ++i) list.Add(task(&mu, &coroutines));
    co_await list.Join();
  };
  Spawn(sched, job()).Get();
  // One slot ran all 30: each finishing task pulled the next one itself.
  EXPECT_EQ(coroutines.size(), 1u);
}

TEST(TaskListTest, ResultsComeBackInAddOrder) {
  TaskScheduler sched;
  sched.Start(2);
  auto square = [](int i) -> Lazy<int> {
    if (i % 3 == 0) co_await Yield();
    co_return i* i;
  };
  TaskList<int> list(sched);
  for (int i = 0; i < 40; ++i) list.Add(square(i));
  list.Wait();
  const std::vector<int> results = list.TakeResults();
  ASSERT_EQ(results.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(results[i], i * i);
  EXPECT_EQ(list.failed_count(), 0u);
}

TEST(TaskListTest, FirstExceptionIsRethrownOthersCountedAndTheRestRun) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> ok{0};
  auto task = [](int i, std::atomic<int>* ok_count) -> Lazy<void> {
    co_await Yield();
    if (i % 10 == 3) throw std::runtime_error("task " + std::to_string(i));
    ok_count->fetch_add(1);
  };
  TaskList<void> list(sched);
  for (int i = 0; i < 30; ++i) list.Add(task(i, &ok));
  try {
    list.Wait();
    FAIL() << "Wait did not rethrow";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what == "task 3" || what == "task 13" || what == "task 23") << what;
  }
  EXPECT_EQ(ok.load(), 27);
  EXPECT_EQ(list.failed_count(), 3u);
  EXPECT_EQ(list.dropped_count(), 0u);
}

TEST(TaskListTest, CoroutineJoinRethrows) {
  TaskScheduler sched;
  sched.Start(2);
  auto failing = []() -> Lazy<int> {
    throw std::logic_error("inner failure");
    co_return 0;
  };
  auto job = [&]() -> Lazy<std::string> {
    TaskList<int> list(sched);
    list.Add(failing());
    try {
      co_await list.Join();
    } catch (const std::logic_error& e) {
      co_return e.what();
    }
    co_return "no exception";
  };
  EXPECT_EQ(Spawn(sched, job()).Get(), "inner failure");
}

TEST(TaskListTest, CancellingTheWaiterCancelsRunningTasksAndDropsTheRest) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> started{0}, saw_cancelled{0};
  auto sleeper = [](std::atomic<int>* s, std::atomic<int>* c) -> Lazy<void> {
    s->fetch_add(1);
    const WakeReason woke = co_await SleepFor(seconds(60));
    if (woke == WakeReason::kCancelled) c->fetch_add(1);
  };
  auto job = [&]() -> Lazy<std::size_t> {
    TaskList<void> list(sched, TaskListOptions{.max_parallel = 2});
    for (int i = 0; i < 10; ++i) list.Add(sleeper(&started, &saw_cancelled));
    try {
      co_await list.Join();
    } catch (const TaskListCancelled&) {
      co_return list.dropped_count();
    }
    co_return 0;
  };
  JoinHandle<std::size_t> handle = Spawn(sched, job());
  while (started.load() < 2) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(started.load(), 2);  // two slots, each asleep in its first task
  EXPECT_TRUE(handle.Cancel());
  EXPECT_EQ(handle.Get(), 8u);
  EXPECT_EQ(saw_cancelled.load(), 2);
  EXPECT_EQ(started.load(), 2);
}

TEST(TaskListTest, WaitForTimesOutThenCompletes) {
  TaskScheduler sched;
  sched.Start(2);
  std::mutex mu;
  std::vector<CoroutineRef> waiting;
  auto task = [](std::mutex* m, std::vector<CoroutineRef>* refs) -> Lazy<void> {
    {
      std::lock_guard<std::mutex> lock(*m);
      refs->push_back(ThisCoroutine());
    }
    co_await WaitSignal();
  };
  TaskList<void> list(sched);
  for (int i = 0; i < 3; ++i) list.Add(task(&mu, &waiting));
  EXPECT_FALSE(list.WaitFor(milliseconds(30)));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(waiting.size(), 3u);  // all started, all waiting for their signal
    for (const CoroutineRef& ref : waiting) ref.Signal();
  }
  EXPECT_TRUE(list.WaitFor(seconds(60)));
}

TEST(TaskListTest, EmptyListWaitsReturnAtOnce) {
  TaskScheduler sched;
  sched.Start(1);
  TaskList<void> list(sched);
  list.Wait();
  auto job = [&]() -> Lazy<void> {
    TaskList<int> inner(sched);
    co_await inner.Join();
  };
  Spawn(sched, job()).Get();
}

TEST(TaskListTest, DestroyingAnUnwaitedListNeverRunsItsTasks) {
  TaskScheduler sched;
  sched.Start(1);
  std::atomic<int> ran{0};
  {
    TaskList<void> list(sched);
    for (int i = 0; i < 5; ++i) list.Add(InnerTask(&ran));
  }
  sched.Stop();
  EXPECT_EQ(ran.load(), 0);
}

#ifndef NDEBUG
TEST(TaskListDeathTest, PlainWaitInsideACoroutineAborts) {
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        sched.Start(1);
        auto job = [&]() -> Lazy<void> {
          TaskList<void> list(sched);
          list.Wait();
          co_return;
        };
        Spawn(sched, job()).Get();
      },
      "use co_await list.Join");
}
#endif

TEST(TaskListStressTest, ManyNestedListsFromThreadsAndCoroutines) {
  const int rounds = static_cast<int>(testing::StressIterations(20, 4));
  TaskScheduler sched;
  sched.Start(2);
  for (int round = 0; round < rounds; ++round) {
    std::atomic<int> inner_done{0}, outer_done{0}, inner_missing{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&] {
        TaskList<void> outer(
            sched, TaskListOptions{.max_parallel = static_cast<std::size_t>(1 + round % 3)});
        for (int i = 0; i < 10; ++i) {
          outer.Add(OuterTask(&sched, &inner_done, &outer_done, &inner_missing));
        }
        outer.Wait();
      });
    }
    for (std::thread& thread : threads) thread.join();
    ASSERT_EQ(outer_done.load(), 30);
    ASSERT_EQ(inner_done.load(), 600);
    ASSERT_EQ(inner_missing.load(), 0);
  }
}

}  // namespace
}  // namespace fairsched::coro
