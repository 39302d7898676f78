// Tests for the scheduler's deadlines: a task never runs before its deadline, deadlines
// order execution, a nearer deadline posted while the role holder sleeps towards a later
// one is honoured, and sub-millisecond delays work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
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

// --- A post whose deadline passed after the role read the clock for its pass. ---

// The wait queue of the scheduler below: its Push can hold the sched-role (inside its pass,
// after the pass read the clock for the task being pushed) until the test lets it go.
struct RoleHold {
  std::atomic<Task*> hold_on{nullptr};  // the task whose Push holds the role
  std::atomic<bool> held{false};
  std::atomic<bool> release{false};
};
RoleHold g_role_hold;

class HoldingWaitQueue : public BinaryHeap<Task> {
 public:
  void Push(Task* task, WaitDeadline deadline) {
    if (task == g_role_hold.hold_on.load()) {
      g_role_hold.held = true;
      const auto give_up = std::chrono::steady_clock::now() + seconds(10);
      while (!g_role_hold.release.load() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
      }
    }
    BinaryHeap<Task>::Push(task, deadline);
  }
};
using HoldingScheduler = BasicTaskScheduler<McspQueue<Task>, HoldingWaitQueue>;

// Holds the role inside a pass (in the Push of the far-future `holder`, after the pass
// read the clock), posts `late` with a deadline that passed just before the post and 20
// run-now tasks behind it, and lets the role go on. Returns how many of the 20 started
// before `late`, and whether `late` ran as expired. The other workers run busy re-posters
// meanwhile. With `stop`, all of it happens while Stop drains (the holder then waits
// through Stop, so that its Push comes in a stopping pass; it is cancelled at the end).
struct LatePostResult {
  int overtaken_by = -1;
  bool expired = false;
};
LatePostResult PostPastDeadlineWhileRoleHolds(HoldingScheduler& sched, int workers, bool stop) {
  g_role_hold.held = false;
  g_role_hold.release = false;
  std::atomic<bool> quit{false};
  std::vector<std::unique_ptr<Task>> busy;
  for (int i = 0; i + 1 < workers; ++i) {
    busy.push_back(std::make_unique<Task>([&quit](Task* self) {
      const auto until = TaskClock::now() + microseconds(50);
      while (TaskClock::now() < until) {
      }
      if (!quit.load() && !HoldingScheduler::Current()->IsStopping()) {
        HoldingScheduler::Current()->Post(self);
      }
    }));
    sched.Post(busy.back().get());
  }
  constexpr int kAfter = 20;
  std::atomic<int> starts{0};
  std::atomic<int> late_start{-1};
  std::atomic<bool> late_expired{false};
  Task holder([](Task*) {});
  Task late([&](Task* self) {
    late_expired = self->IsExpired();
    late_start = starts.fetch_add(1);
  });
  std::vector<std::unique_ptr<Task>> after;
  for (int i = 0; i < kAfter; ++i) {
    after.push_back(std::make_unique<Task>([&starts](Task*) { starts.fetch_add(1); }));
  }
  // With `stop`: keeps Stop from finishing before the holder is posted (a Stop with nothing
  // to drain returns at once, and IsStopping() would never be seen true).
  Task anchor([](Task*) {});
  std::thread stopper;
  if (stop) {
    sched.PostDeadlineThroughStop(&anchor, TaskClock::now() + std::chrono::hours(1));
    stopper = std::thread([&sched] { sched.Stop(); });
    while (!sched.IsStopping()) std::this_thread::yield();
  }
  g_role_hold.hold_on = &holder;
  const TaskDeadline far = TaskClock::now() + std::chrono::hours(1);
  if (stop) {
    sched.PostDeadlineThroughStop(&holder, far);
  } else {
    holder.SetDeadline(far);
    sched.Post(&holder);
  }
  const auto give_up = std::chrono::steady_clock::now() + seconds(10);
  while (!g_role_hold.held.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  EXPECT_TRUE(g_role_hold.held.load()) << "the role never received the holder";
  // The pass read the clock before the holder's Push: a deadline read now, and passed
  // before the post, is later than that reading.
  const TaskDeadline passed = TaskClock::now();
  while (TaskClock::now() <= passed) {
  }
  late.SetDeadline(passed);
  sched.Post(&late);
  for (auto& task : after) sched.Post(task.get());
  g_role_hold.release = true;
  while ((late_start.load() < 0 || starts.load() < kAfter + 1) &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  quit = true;
  g_role_hold.hold_on = nullptr;
  sched.Cancel(&holder);  // it waits an hour (through Stop, with `stop`)
  if (stop) {
    sched.Cancel(&anchor);
    stopper.join();
  } else {
    EXPECT_TRUE(sched.WaitEmpty(seconds(10)));
  }
  return {late_start.load(), late_expired.load()};
}

// The header: "a task whose deadline has already passed when the sched-role receives it is
// ready at once, in post order". Here the role's pass had read the clock before the post:
// the task must still go ahead of the run-now posts made after it, on 1, 2 and 3 workers
// with the other workers busy re-posting.
TEST(TimerTest, DeadlinePassedAfterThePassReadTheClockIsReadyInPostOrder) {
  // Ahead of all 20 in the ready queue. A worker that pops it and is then descheduled lets
  // the others start some or even most of the 20 first (seen: 2 under TSan; 17 under Wine,
  // 3 workers on 2 cores); one that waits in the wait queue for the next pass sees all of
  // them start first, in every attempt. So each worker count gets up to kAttempts fresh
  // schedulers, and one of them must start the post ahead of most of the 20.
  constexpr int kAttempts = 3;
  for (int workers = 1; workers <= 3; ++workers) {
    std::string overtaken;
    int last = -1;
    for (int attempt = 0; attempt < kAttempts && (last < 0 || last >= 10); ++attempt) {
      HoldingScheduler sched;
      sched.Start(workers);
      const LatePostResult result =
          PostPastDeadlineWhileRoleHolds(sched, workers, /*stop=*/false);
      EXPECT_TRUE(result.expired);
      sched.Stop();
      last = result.overtaken_by;
      overtaken += (overtaken.empty() ? "" : ", ") + std::to_string(last);
    }
    EXPECT_LT(last, 10) << workers << " workers: the past-deadline post waited behind "
                        << overtaken << " of 20 later run-now posts (one attempt each)";
  }
}

// The same while Stop drains: the task's deadline had passed, so it runs as expired, not
// as woken by Stop.
TEST(TimerTest, DeadlinePassedAfterThePassReadTheClockRunsExpiredDuringStop) {
  for (int workers = 1; workers <= 3; ++workers) {
    HoldingScheduler sched;
    sched.Start(workers);
    const LatePostResult result = PostPastDeadlineWhileRoleHolds(sched, workers, /*stop=*/true);
    EXPECT_TRUE(result.expired)
        << workers << " workers: ran as woken by Stop although its deadline had passed";
    EXPECT_TRUE(sched.IsEmpty());
  }
}

}  // namespace
}  // namespace fairsched
