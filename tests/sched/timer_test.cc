// Tests for the scheduler's deadlines: a task never runs before its deadline, deadlines
// order execution, a nearer deadline posted while the role holder sleeps towards a later
// one is honoured, and sub-millisecond delays work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <vector>

#include "sched/task_scheduler.h"

namespace fairsched {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(TimerTest, NeverRunsBeforeDeadline) {
  TaskScheduler sched;
  sched.Start(3);
  constexpr int kTasks = 300;
  std::vector<TaskDeadline> deadline(kTasks);
  std::vector<TaskDeadline> ran_at(kTasks);
  std::vector<int> expired(kTasks, -1);
  std::vector<std::unique_ptr<Task>> tasks;
  std::mt19937 rng(7);
  for (int i = 0; i < kTasks; ++i) {
    tasks.push_back(std::make_unique<Task>([&, i](Task* self) {
      ran_at[i] = TaskClock::now();
      expired[i] = self->IsExpired();
    }));
  }
  for (int i = 0; i < kTasks; ++i) {
    tasks[i]->SetDelay(microseconds(rng() % 20000));
    deadline[i] = tasks[i]->Deadline();
    sched.Post(tasks[i].get());
  }
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  for (int i = 0; i < kTasks; ++i) {
    EXPECT_GE(ran_at[i], deadline[i]) << "task " << i << " ran early";
    EXPECT_EQ(expired[i], 1);
  }
}

TEST(TimerTest, DeadlinesOrderExecutionWithOneWorker) {
  TaskScheduler sched;
  sched.Start(1);
  std::vector<int> order;  // plain: one worker
  std::vector<std::unique_ptr<Task>> tasks;
  for (int i = 0; i < 50; ++i) {
    tasks.push_back(std::make_unique<Task>([&order, i](Task*) { order.push_back(i); }));
  }
  // The margin keeps the deadlines in the future when the sched-role receives the posts;
  // tasks already due on receipt go straight to the ready queue in post order instead.
  const TaskDeadline base = TaskClock::now() + milliseconds(300);
  for (int i = 49; i >= 0; --i) sched.PostDeadline(tasks[i].get(), base + microseconds(100 * i));
  if (TaskClock::now() > base - milliseconds(250)) GTEST_SKIP() << "machine too slow";
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
}

// The role holder sleeps towards a far deadline; a nearer one posted later must wake it.
TEST(TimerTest, NearerDeadlinePostedLaterIsHonoured) {
  TaskScheduler sched;
  sched.Start(2);
  Task far([](Task*) {});
  sched.PostDelay(&far, seconds(3600));
  std::this_thread::sleep_for(milliseconds(10));
  std::atomic<bool> ran{false};
  Task near([&](Task*) { ran = true; });
  const auto posted = TaskClock::now();
  sched.PostDelay(&near, milliseconds(5));
  while (!ran.load() && TaskClock::now() - posted < seconds(20)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(ran.load());
  sched.Wakeup(&far);
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
}

TEST(TimerTest, SubMillisecondDelay) {
  TaskScheduler sched;
  sched.Start(1);
  std::atomic<std::int64_t> late_ns{-1};
  Task task;
  TaskDeadline deadline;
  task.SetCallback([&](Task*) { late_ns = (TaskClock::now() - deadline).count(); });
  task.SetDelay(microseconds(300));
  deadline = task.Deadline();
  sched.Post(&task);
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_GE(late_ns.load(), 0);
}

// A periodic task re-posting itself with a delay: every run is at or after its deadline.
TEST(TimerTest, PeriodicTask) {
  TaskScheduler sched;
  sched.Start(2);
  int runs = 0;  // plain: one run at a time
  bool early = false;
  Task task;
  task.SetCallback([&](Task* self) {
    if (TaskClock::now() < self->Deadline()) early = true;  // reset to "now" at start
    if (++runs < 20) TaskScheduler::Current()->PostDelay(self, microseconds(500));
  });
  sched.Post(&task);
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_EQ(runs, 20);
  EXPECT_FALSE(early);
}

}  // namespace
}  // namespace fairsched
