// Tests for the scheduler's lifecycle as documented in sched/task_scheduler.h: Stop drains
// (waiting tasks are woken early, multi-step tasks may re-post), destroying a scheduler
// runs what is queued (also when never started), a throwing task aborts with a message, and
// API misuse dies with a clear message in builds without NDEBUG.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "queues/timer_wheel.h"
#include "sched/task_scheduler.h"
#include "tests/sched/hooked_backend.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LifecycleTest, StopWakesWaitingTasksEarlyAndRunsThem) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> runs{0}, expired{0}, signaled{0}, stopping{0};
  auto body = [&](Task* self) {
    runs.fetch_add(1);
    expired.fetch_add(self->IsExpired());
    signaled.fetch_add(self->ReceiveSignal());
    stopping.fetch_add(TaskScheduler::Current()->IsStopping());
  };
  Task forever(body), later(body), now(body);
  sched.PostWait(&forever);
  sched.PostDelay(&later, seconds(3600));
  std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(runs.load(), 0);
  const auto start = TaskClock::now();
  sched.Post(&now);
  sched.Stop();
  EXPECT_LT(TaskClock::now() - start, seconds(30));
  EXPECT_EQ(runs.load(), 3);
  EXPECT_EQ(expired.load(), 1);  // only `now`
  EXPECT_EQ(signaled.load(), 0);
  EXPECT_GE(stopping.load(), 2);  // the two woken by Stop
  EXPECT_TRUE(sched.IsEmpty());
}

TEST(LifecycleTest, StopLetsMultiStepTasksFinish) {
  TaskScheduler sched;
  sched.Start(2);
  constexpr int kTasks = 50, kSteps = 5;
  std::atomic<int> finished{0};
  std::vector<std::unique_ptr<Task>> tasks;
  std::vector<int> steps(kTasks, 0);
  for (int i = 0; i < kTasks; ++i) {
    tasks.push_back(std::make_unique<Task>([&, i](Task* self) {
      if (++steps[i] == kSteps) {
        finished.fetch_add(1);
        return;
      }
      // Each step waits a long time; Stop cuts the waits short.
      TaskScheduler::Current()->PostDelay(self, seconds(3600));
    }));
    sched.Post(tasks.back().get());
  }
  sched.Stop();
  EXPECT_EQ(finished.load(), kTasks);
}

TEST(LifecycleTest, StopIsIdempotentAndStatsSurvive) {
  TaskScheduler sched;
  sched.Start(2);
  for (int i = 0; i < 100; ++i) sched.PostOneShot([] {});
  sched.Stop();
  sched.Stop();
  std::uint64_t executed = 0;
  for (const WorkerStats& s : sched.Stats()) executed += s.tasks_executed;
  EXPECT_EQ(executed, 100u);
}

TEST(LifecycleTest, DestroyingANeverStartedSchedulerRunsQueuedTasks) {
  std::atomic<int> runs{0};
  Task waiting([&](Task*) { runs.fetch_add(1); });
  {
    TaskScheduler sched;
    for (int i = 0; i < 100; ++i) sched.PostOneShot([&] { runs.fetch_add(1); });
    sched.PostWait(&waiting);
  }
  EXPECT_EQ(runs.load(), 101);
}

TEST(LifecycleTest, DestroyingARunningSchedulerRunsQueuedTasks) {
  std::atomic<int> runs{0};
  {
    TaskScheduler sched;
    sched.Start(3);
    for (int i = 0; i < 1000; ++i) {
      if (i % 10 == 0) {
        Task* t = new Task([&](Task* self) {
          runs.fetch_add(1);
          delete self;
        });
        sched.PostDelay(t, seconds(3600));
      } else {
        sched.PostOneShot([&] { runs.fetch_add(1); });
      }
    }
  }  // ASan: the delayed tasks delete themselves, nothing leaks
  EXPECT_EQ(runs.load(), 1000);
}

TEST(LifecycleTest, EmptySchedulerStopsAtOnce) {
  TaskScheduler never_started;
  never_started.Stop();
  TaskScheduler started;
  started.Start(4);
  started.Stop();
  EXPECT_TRUE(started.IsEmpty());
}

// Caught in every build: Stop from inside a task (it would join its own thread).
TEST(LifecycleDeathTest, StopFromInsideATaskDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        sched.Start(1);
        sched.PostOneShot([&] { sched.Stop(); });
        sched.WaitEmpty(seconds(30));
      },
      "Stop called from inside a task");
}

#ifndef NDEBUG
// Caught in builds without NDEBUG (the README's list; double post and destroying a queued
// task are caught in every build: tests/sched/contract_test.cc).
TEST(LifecycleDeathTest, WakingATaskOfAnotherSchedulerDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler a;
        TaskScheduler b;
        Task task([](Task*) {});
        a.PostWait(&task);
        b.Wakeup(&task);
      },
      "another scheduler");
}

TEST(LifecycleDeathTest, PostWithoutCallbackDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        Task task;
        sched.Post(&task);
      },
      "without a callback");
}

TEST(LifecycleDeathTest, StartTwiceDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        sched.Start(1);
        sched.Start(1);
      },
      "Start called while the scheduler is running");
}
#endif  // NDEBUG

// After Stop the scheduler is back to "not started": posts queue up and run after the next
// Start, or in the destructor. Nothing is lost, in every build.
// Regression test: a wait that must see its event (a coroutine's uncancellable
// wait, an IO op's final completion) was woken by Stop, could only post itself again, and
// was woken again at once: Stop spun through hundreds of thousands of executions. A post
// made with PostDeadlineThroughStop is not woken by Stop; Stop waits for its wakeup.
TEST(LifecycleTest, StopDoesNotWakeAWaitThroughStop) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> runs{0};
  std::atomic<bool> saw_stopping{false};
  Task waiter([&](Task*) {
    runs.fetch_add(1);
    saw_stopping = TaskScheduler::Current()->IsStopping();
  });
  sched.PostDeadlineThroughStop(&waiter, kTaskDeadlineInfinite);
  std::thread stopper([&] { sched.Stop(); });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(runs.load(), 0) << "Stop woke a wait posted with PostDeadlineThroughStop";
  EXPECT_FALSE(sched.IsEmpty());  // Stop is still waiting for it
  std::uint64_t executed = 0;
  for (const WorkerStats& s : sched.Stats()) executed += s.tasks_executed;
  EXPECT_EQ(executed, 0u);
  sched.Wakeup(&waiter);  // its event
  stopper.join();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_TRUE(saw_stopping.load());
}

// The same wait with a deadline keeps it during Stop (and a plain wait posted beside it is
// still woken at once).
TEST(LifecycleTest, AWaitThroughStopKeepsItsDeadline) {
  TaskScheduler sched;
  sched.Start(1);
  std::atomic<int> expired{-1}, plain_runs{0};
  Task waiter([&](Task* self) { expired = self->IsExpired(); });
  Task plain([&](Task*) { plain_runs.fetch_add(1); });
  const TaskDeadline deadline = TaskClock::now() + milliseconds(150);
  sched.PostDeadlineThroughStop(&waiter, deadline);
  sched.PostWait(&plain);
  std::this_thread::sleep_for(milliseconds(10));
  sched.Stop();
  EXPECT_GE(TaskClock::now(), deadline);
  EXPECT_EQ(expired.load(), 1);
  EXPECT_EQ(plain_runs.load(), 1);
  // The mark held for that post only: a plain post of the same task is woken by Stop.
  sched.Start(1);
  sched.PostWait(&waiter);
  sched.Stop();
  EXPECT_EQ(expired.load(), 0);
}

// Regression test: every Start added workers that Stop never destroyed (2,000
// cycles: +19.8 MiB, Stats().size() == 4000). Joined workers are destroyed; their counts
// are kept by index.
TEST(LifecycleTest, StartStopCyclesDoNotAccumulateWorkers) {
  TaskScheduler sched;
  constexpr int kCycles = 2000;
  for (int i = 0; i < kCycles; ++i) {
    sched.Start(2);
    sched.PostOneShot([] {});
    sched.Stop();
  }
  const std::vector<WorkerStats> stats = sched.Stats();
  EXPECT_EQ(stats.size(), 2u);
  std::uint64_t executed = 0;
  for (const WorkerStats& s : stats) executed += s.tasks_executed;
  EXPECT_EQ(executed, static_cast<std::uint64_t>(kCycles));
  // One post in 64 is sampled (the default period; the count runs on across tests).
  EXPECT_GE(sched.LatencyHistogram().Total(), kCycles / 64u);
  EXPECT_LE(sched.LatencyHistogram().Total(), kCycles / 64u + 1);
}

// Regression test: Stop drained the wait queue with PopExpired(kNoDeadline), which
// walked a timer wheel to the end of time (1,000 waits: 3.5 s, 4,000: 14 s) and left it
// there, so after a restart every new timer fired at once.
TEST(LifecycleTest, StopWithATimerWheelIsQuickAndKeepsTheWheelOnTime) {
  BasicTaskScheduler<McspQueue<Task>, TimerWheel<Task>> sched;
  sched.Start(2);
  constexpr int kWaiting = 4000;
  std::atomic<int> runs{0};
  std::vector<std::unique_ptr<Task>> tasks;
  for (int i = 0; i < kWaiting; ++i) {
    tasks.push_back(std::make_unique<Task>([&](Task*) { runs.fetch_add(1); }));
    if (i % 2 == 0) {
      sched.PostWait(tasks.back().get());
    } else {
      sched.PostDelay(tasks.back().get(), seconds(3600 + i));
    }
  }
  const auto start = TaskClock::now();
  sched.Stop();
  const auto took = TaskClock::now() - start;
  EXPECT_EQ(runs.load(), kWaiting);
  EXPECT_LT(took, seconds(2)) << "Stop took "
                              << std::chrono::duration_cast<milliseconds>(took).count() << " ms";
  sched.Start(1);
  std::atomic<bool> ran_early{false}, ran{false};
  const TaskDeadline due = TaskClock::now() + milliseconds(50);
  Task timer([&](Task*) {
    ran_early = TaskClock::now() < due;
    ran = true;
  });
  sched.PostDeadline(&timer, due);
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(ran.load()) << "a 50 ms timer fired after 20 ms";
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_TRUE(ran.load());
  EXPECT_FALSE(ran_early.load());
}

// Regression test: a post that lands after Stop's drain
// (WaitEmpty) and after the workers left must still run before Stop returns. The test's IO
// backend makes exactly that post from inside Stop, at its exit notify, after the workers
// had time to exit; the post is checked before any restart.
std::atomic<int> g_owner_notifies{0};
std::atomic<bool> g_post_at_exit{false};
std::thread::id g_owner;
std::function<void()> g_exit_post;
// Stop notifies from its own thread twice: after stopping_ is set, and after exit_ is.
void PostAtExitNotify() {
  if (g_post_at_exit.load() && std::this_thread::get_id() == g_owner &&
      g_owner_notifies.fetch_add(1) == 1) {
    g_post_at_exit = false;
    std::this_thread::sleep_for(milliseconds(50));  // the workers see exit_ and leave
    g_exit_post();
  }
}

TEST(LifecycleTest, APostRacingTheWorkersExitRunsBeforeStopReturns) {
  testing::HookedBackend::after_notify = PostAtExitNotify;
  BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, testing::HookedBackend> sched;
  sched.Start(2);
  std::atomic<int> runs{0};
  g_owner = std::this_thread::get_id();
  g_exit_post = [&] { sched.PostOneShot([&] { runs.fetch_add(1); }); };
  g_post_at_exit = true;
  sched.Stop();
  EXPECT_EQ(g_owner_notifies.load(), 2);
  EXPECT_EQ(runs.load(), 1) << "the post made while the workers exited was stranded";
  EXPECT_TRUE(sched.IsEmpty());
  g_exit_post = nullptr;
  testing::HookedBackend::after_notify = nullptr;
}

TEST(LifecycleTest, PostAfterStopRunsAfterRestartOrOnDestruction) {
  std::atomic<int> runs{0};
  {
    TaskScheduler sched;
    sched.Start(1);
    sched.Stop();
    sched.PostOneShot([&] { runs.fetch_add(1); });
    EXPECT_FALSE(sched.IsEmpty());
    sched.Start(2);
    ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
    EXPECT_EQ(runs.load(), 1);
    sched.Stop();
    sched.PostOneShot([&] { runs.fetch_add(1); });
  }
  EXPECT_EQ(runs.load(), 2);
}

}  // namespace
}  // namespace fairsched
