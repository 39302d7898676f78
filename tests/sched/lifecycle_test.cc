// Tests for the scheduler's lifecycle as documented in sched/task_scheduler.h: Stop drains
// (waiting tasks are woken early, multi-step tasks may re-post), destroying a scheduler
// runs what is queued (also when never started), a throwing task aborts with a message, and
// API misuse dies with a clear message in builds without NDEBUG.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sched/task_scheduler.h"

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
