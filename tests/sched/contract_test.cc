// Tests for promises a line-by-line review of the scheduler found broken: each test names
// the hole it covers, and each failed (or did not compile) against the scheduler before the
// fix. Death tests check the misuse that is caught in EVERY build (including --config=opt).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Hole 1: a double post in a release build made `task->next == task` and the task ran in
// an endless loop on two workers. Now caught in every build.
TEST(ContractDeathTest, DoublePostDiesInEveryBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;  // not started: the task stays queued
        Task task([](Task*) {});
        sched.Post(&task);
        sched.Post(&task);
      },
      "already queued");
}

// The same for a task that posts itself twice from its own callback, the path whose check
// is a plain load and store instead of an exchange (Task::MarkQueuedExclusive).
TEST(ContractDeathTest, DoublePostFromOwnCallbackDiesInEveryBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        Task task([&sched](Task* self) {
          sched.Post(self);
          sched.Post(self);
        });
        sched.Post(&task);
        sched.Start(1);
        sched.WaitEmpty(seconds(10));
      },
      "already queued");
}

// Destroying a waiting task left a dangling pointer in the wait heap in release builds.
TEST(ContractDeathTest, DestroyingAWaitingTaskDiesInEveryBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        sched.Start(1);
        auto task = std::make_unique<Task>([](Task*) {});
        sched.PostWait(task.get());
        std::this_thread::sleep_for(milliseconds(5));  // let the sched-role park it
        task.reset();
      },
      "destroyed while queued");
}

// Hole 9: catching in order to abort unwound the stack first. Nothing catches on the way
// to the callback now: the message is printed by the terminate handler while the throwing
// frame is still on the stack, so the destructor below never runs (its output would come
// before the message).
struct PrintsWhenUnwound {
  ~PrintsWhenUnwound() { std::fprintf(stderr, "UNWOUND\n"); }
};
[[gnu::noinline]] void ThrowFromDeepInside() {
  PrintsWhenUnwound guard;
  throw std::runtime_error("boom");
}
TEST(ContractDeathTest, ThrowingTaskAbortsWithoutUnwinding) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        sched.Start(1);
        sched.PostOneShot([] { ThrowFromDeepInside(); });
        sched.WaitEmpty(seconds(30));
      },
      "^fairsched: a task callback threw: boom");
}

// Hole 2: a Wakeup that found the task already woken returned after a relaxed load and
// published nothing, so a run could read the waker's data from before the wakeup and no
// further run followed. Several wakers write a value and then wake the task, racing with
// the task's own runs (it re-waits after every run); the last value each waker wrote must
// be seen by some run. This stress test checks that a later run always comes; it cannot
// see the missing publication on x86 (it passed with that bug back, 30/30): the explorer
// test TaskWakeExploreTest.AnAbsorbedWakeupPublishesTheWakersWrites catches it, by
// happens-before, on the real Task.
TEST(ContractStressTest, EveryWakeupIsSeenByALaterRun) {
  TaskScheduler sched;
  sched.Start(2);
  constexpr int kWakers = 3;
  const std::int64_t rounds = testing::StressIterations(20000);
  std::atomic<std::int64_t> written[kWakers] = {};
  std::atomic<std::int64_t> seen[kWakers] = {};
  std::atomic<bool> done{false};
  Task task([&](Task* self) {
    for (int w = 0; w < kWakers; ++w) {
      const std::int64_t value = written[w].load(std::memory_order_relaxed);
      if (value > seen[w].load(std::memory_order_relaxed)) {
        seen[w].store(value, std::memory_order_relaxed);
      }
    }
    if (!done.load(std::memory_order_relaxed)) TaskScheduler::Current()->PostWait(self);
  });
  sched.PostWait(&task);
  std::vector<std::thread> wakers;
  for (int w = 0; w < kWakers; ++w) {
    wakers.emplace_back([&, w] {
      for (std::int64_t i = 1; i <= rounds; ++i) {
        written[w].store(i, std::memory_order_relaxed);
        if (w == 0) {
          sched.Signal(&task);
        } else {
          sched.Wakeup(&task);
        }
      }
    });
  }
  for (auto& t : wakers) t.join();
  // Every waker's last write happened before its last wakeup, so a run after that wakeup
  // (there must be one: the wakeup is absorbed into a run or causes one) sees it.
  const auto give_up = TaskClock::now() + seconds(30);
  bool all_seen = false;
  while (!all_seen && TaskClock::now() < give_up) {
    all_seen = true;
    for (int w = 0; w < kWakers; ++w) all_seen &= seen[w].load() == rounds;
    if (!all_seen) std::this_thread::sleep_for(microseconds(100));
  }
  EXPECT_TRUE(all_seen);
  done = true;
  sched.Wakeup(&task);
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
}

// Hole 4: executions were bounded by count only, so with long tasks on every worker a
// timer fired about execute_batch_size task-lengths late.
void BusyFor(std::chrono::nanoseconds d) {
  const auto until = TaskClock::now() + d;
  while (TaskClock::now() < until) CpuRelax();
}
// Under PostOrder::kHome the same: there a busy worker took the role only after each
// execution batch, 64 of these tasks (16 ms), so a timer posted 10 ms ahead was still in
// the front queue at its deadline and up to 51 hogs started first; an execution batch now
// also ends at a time budget (kHomeBatchBudget).
void TimersStayOnTimeWhileEveryWorkerRunsLongTasks(PostOrder order) {
  TaskScheduler sched(TaskSchedulerOptions{.post_order = order});
  sched.Start(1);
  std::atomic<bool> stop{false};
  Mutex mu;
  std::vector<TaskDeadline> hog_starts;  // guarded by mu
  // kHogs self-reposting 250 us tasks keep the worker busy. Each pass runs the ready ones
  // while their re-posts gather in the front queue. With the time check the worker takes
  // the role after the task during which a deadline passed: the re-posts made so far go
  // ahead of the timer, the rest of the pass too, so kHogs tasks start in between. Without
  // it the worker finishes the pass first, and every hog re-posted in the pass goes ahead
  // of the timer as well: up to 2 * kHogs.
  constexpr int kHogs = 16;
  std::vector<std::unique_ptr<Task>> hogs;
  for (int i = 0; i < kHogs; ++i) {
    hogs.push_back(std::make_unique<Task>([&](Task* self) {
      {
        MutexLock lock(mu);
        hog_starts.push_back(TaskClock::now());
      }
      BusyFor(microseconds(250));
      if (!stop.load()) TaskScheduler::Current()->Post(self);
    }));
    sched.Post(hogs.back().get());
  }
  std::this_thread::sleep_for(milliseconds(5));
  constexpr int kTimers = 20;
  std::vector<TaskDeadline> due(kTimers), started(kTimers);
  std::vector<std::unique_ptr<Task>> timers;
  for (int i = 0; i < kTimers; ++i) {
    // At varied points of a pass, and far enough ahead that the worker has received the
    // timer (at a role take, once per pass of about 4 ms) before it is due: a timer still
    // in the front queue at its deadline is not known yet, so the hogs of the rest of that
    // pass would start before it whatever the time check does (seen under ASan with a
    // 1.5 ms lead: 19 hogs).
    due[i] = TaskClock::now() + microseconds(10000 + 137 * i);
    timers.push_back(std::make_unique<Task>([&, i](Task*) { started[i] = TaskClock::now(); }));
    sched.PostDeadline(timers.back().get(), due[i]);
    std::this_thread::sleep_for(milliseconds(12));
  }
  stop = true;
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  // Load-independent bound: hog tasks that started between a timer's deadline and its
  // start. Before the fix a worker came back to the role only when its batch ended; now it
  // comes back after the task during which the deadline passed, and the timer queues
  // behind at most the kHogs hogs (ready, or re-posted before the deadline) plus the one
  // running.
  std::int64_t worst_late_ns = 0;
  std::size_t worst_overtaken = 0;
  for (int i = 0; i < kTimers; ++i) {
    worst_late_ns = std::max<std::int64_t>(worst_late_ns, (started[i] - due[i]).count());
    std::size_t overtaken = 0;
    for (TaskDeadline start : hog_starts) overtaken += start > due[i] && start < started[i];
    worst_overtaken = std::max(worst_overtaken, overtaken);
  }
  EXPECT_LE(worst_overtaken, static_cast<std::size_t>(kHogs) + 1)
      << "worst lateness " << worst_late_ns << " ns";
  // The wall-clock lateness is printed, not asserted: with the hogs ahead of it a timer is
  // at most a few ms late, but a compile that starts next to the test (CI builds and tests
  // in parallel, faster than the load average notices) made it 4.8 ms with only 3 hogs in
  // between. The count above is the scheduler's part and does not depend on the machine.
  std::printf("worst timer lateness %lld ns, at most %zu hog tasks started in between\n",
              static_cast<long long>(worst_late_ns), worst_overtaken);
}

TEST(ContractTest, TimersStayOnTimeWhileEveryWorkerRunsLongTasks) {
  TimersStayOnTimeWhileEveryWorkerRunsLongTasks(PostOrder::kBatched);
}
TEST(ContractTest, TimersStayOnTimeWhileEveryWorkerRunsLongTasksUnderHomeQueues) {
  TimersStayOnTimeWhileEveryWorkerRunsLongTasks(PostOrder::kHome);
}

// Hole 5: every batch start and every role release sent a ready event, so idle workers
// woke for nothing. Posting one task at a time into an idle scheduler must not wake the
// second worker each time. Under PostOrder::kHome the same: there, every batch start woke
// the workers that slept with no timeout (WakeUntimedSleepers), 80 idle wake-ups for 200
// posts; only a post into a worker's own queue needs them awake.
void OneTaskAtATimeDoesNotWakeIdleWorkers(PostOrder order) {
  TaskScheduler sched(TaskSchedulerOptions{.spin_before_park = std::chrono::nanoseconds(0),
                                           .post_order = order});
  sched.Start(3);
  constexpr int kPosts = 200;
  std::atomic<int> ran{0};
  for (int i = 0; i < kPosts; ++i) {
    sched.PostOneShot([&] { ran.fetch_add(1); });
    ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
    std::this_thread::sleep_for(microseconds(200));  // let every worker fall asleep
  }
  EXPECT_EQ(ran.load(), kPosts);
  std::uint64_t idle_wakeups = 0, wakes_sent = 0;
  for (const WorkerStats& s : sched.Stats()) {
    idle_wakeups += s.idle_wakeups;
    wakes_sent += s.wakes_sent;
  }
  // One task at a time needs no helper: the role holder runs it itself.
  EXPECT_LE(wakes_sent, kPosts / 10u);
  EXPECT_LE(idle_wakeups, kPosts / 10u);
}

TEST(ContractTest, OneTaskAtATimeDoesNotWakeIdleWorkers) {
  OneTaskAtATimeDoesNotWakeIdleWorkers(PostOrder::kBatched);
}
TEST(ContractTest, OneTaskAtATimeDoesNotWakeIdleWorkersUnderHomeQueues) {
  OneTaskAtATimeDoesNotWakeIdleWorkers(PostOrder::kHome);
}

// Regression test: a role holder that published work woke a helper whenever the
// wait queue was not empty, so that the helper would sleep in the role until the next
// deadline: with one PostWait task and one far timer waiting, 199 wakes for 200 posts.
// Parked workers now time their park to the nearest deadline instead; a post into an idle
// scheduler wakes the role holder only.
TEST(ContractTest, WaitingTasksDoNotCostAHelperWakePerPost) {
  TaskScheduler sched(TaskSchedulerOptions{.spin_before_park = std::chrono::nanoseconds(0)});
  sched.Start(2);
  std::atomic<int> waiting_runs{0};
  Task forever([&](Task*) { waiting_runs.fetch_add(1); });
  Task far_timer([&](Task*) { waiting_runs.fetch_add(1); });
  sched.PostWait(&forever);
  sched.PostDelay(&far_timer, seconds(3600));
  std::this_thread::sleep_for(milliseconds(5));
  constexpr int kPosts = 200;
  std::atomic<int> ran{0};
  for (int i = 0; i < kPosts; ++i) {
    sched.PostOneShot([&] { ran.fetch_add(1); });
    while (ran.load() != i + 1) std::this_thread::yield();
    std::this_thread::sleep_for(microseconds(200));  // let every worker fall asleep
  }
  std::uint64_t wakes_sent = 0;
  for (const WorkerStats& s : sched.Stats()) wakes_sent += s.wakes_sent;
  EXPECT_LE(wakes_sent, kPosts / 10u);
  EXPECT_EQ(waiting_runs.load(), 0);
  sched.Cancel(&forever);
  sched.Cancel(&far_timer);
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
}

// The timers the helper used to watch are still served while the only other worker runs
// a long task: the parked worker times its park to the deadline.
TEST(ContractTest, AParkedWorkerServesATimerWhileTheOtherRunsALongTask) {
  TaskScheduler sched(TaskSchedulerOptions{.spin_before_park = std::chrono::nanoseconds(0)});
  sched.Start(2);
  std::this_thread::sleep_for(milliseconds(5));
  std::atomic<bool> timer_ran{false}, long_task_done{false};
  const TaskDeadline due = TaskClock::now() + milliseconds(30);
  Task timer([&](Task*) { timer_ran = true; });
  sched.PostDeadline(&timer, due);
  sched.PostOneShot([&] {
    BusyFor(milliseconds(300));
    long_task_done = true;
  });
  while (!timer_ran.load() && !long_task_done.load()) std::this_thread::yield();
  EXPECT_TRUE(timer_ran.load()) << "the timer waited for the long task";
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
}

// The other half of hole 5: a burst still spreads over every worker. Each task keeps its
// worker busy until a second task has started (bounded by 10 s), so the burst can only
// finish quickly if the idle worker was woken and took one; timing of a loaded machine
// (a build running beside the test, Wine) cannot make it fail.
TEST(ContractTest, BurstWakesHelpers) {
  TaskScheduler sched(TaskSchedulerOptions{.spin_before_park = std::chrono::nanoseconds(0)});
  sched.Start(2);
  std::this_thread::sleep_for(milliseconds(5));
  std::atomic<int> started{0};
  std::vector<std::unique_ptr<Task>> tasks;
  for (int i = 0; i < 8; ++i) {
    tasks.push_back(std::make_unique<Task>([&started](Task*) {
      started.fetch_add(1);
      const auto give_up = TaskClock::now() + seconds(10);
      while (started.load() < 2 && TaskClock::now() < give_up) std::this_thread::yield();
    }));
  }
  const auto posted_at = TaskClock::now();
  for (auto& t : tasks) sched.Post(t.get());
  ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
  EXPECT_LT(TaskClock::now() - posted_at, seconds(10)) << "no second worker joined the burst";
  for (const WorkerStats& s : sched.Stats()) EXPECT_GT(s.tasks_executed, 0u);
}

// yields_before_park: an idle worker that gives its core away before it parks finds the
// work that the threads it let run publish meanwhile, instead of parking and being woken.
// Rounds of two tasks, each of which keeps its worker until the other has started, so both
// workers run one task in every round (as in BurstWakesHelpers); the test thread posts a
// round once both tasks of the one before have finished. Without yields the worker that
// finishes last finds nothing and parks before the next round comes; with them it usually
// finds the next round first. Returns the parks of `rounds` rounds.
std::uint64_t ParksOfPostRounds(int yields_before_park, int rounds) {
  TaskScheduler sched(TaskSchedulerOptions{.spin_before_park = std::chrono::nanoseconds(0),
                                           .yields_before_park = yields_before_park});
  sched.Start(2);
  std::atomic<int> started{0}, finished{0};
  for (int round = 0; round < rounds; ++round) {
    const int all_started = 2 * (round + 1);
    for (int i = 0; i < 2; ++i) {
      sched.PostOneShot([&started, &finished, all_started] {
        started.fetch_add(1);
        const auto give_up = std::chrono::steady_clock::now() + seconds(10);
        while (started.load() < all_started && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::yield();
        }
        finished.fetch_add(1);
      });
    }
    const auto give_up = std::chrono::steady_clock::now() + seconds(10);
    while (finished.load() < all_started && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
  }
  EXPECT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_EQ(finished.load(), 2 * rounds);
  std::uint64_t parks = 0;
  for (const WorkerStats& s : sched.Stats()) parks += s.parks;
  return parks;
}

TEST(ContractTest, AnIdleWorkerThatYieldsFindsTheNextWorkWithoutParking) {
  constexpr int kRounds = 400;
  // Up to three attempts (a loaded machine can deschedule anything); one must show it.
  std::uint64_t parks_without = 0, parks_with = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    parks_without = ParksOfPostRounds(0, kRounds);
    parks_with = ParksOfPostRounds(64, kRounds);
    if (parks_without >= kRounds / 2 && parks_with * 4 <= parks_without) break;
  }
  EXPECT_GE(parks_without, kRounds / 2u) << "without yields the last worker should park";
  EXPECT_LE(parks_with * 4, parks_without)
      << parks_with << " parks with 64 yields before parking, " << parks_without << " without";
}

// Hole 6: a post that landed between WaitEmpty and the workers' exit was stranded, and a
// release-build Start after Stop left `stopping_` set forever. Posts and wakeups race Stop
// here (run under TSan in CI); nothing is lost, and the scheduler restarts cleanly.
TEST(ContractStressTest, PostsAndWakeupsRacingStopAreNeverLost) {
  const int rounds = static_cast<int>(testing::StressIterations(50, 5));
  for (std::int64_t round = 0; round < rounds; ++round) {
    std::atomic<std::int64_t> posted{0}, ran{0};
    std::vector<std::unique_ptr<Task>> waiting;
    for (int i = 0; i < 16; ++i) {
      waiting.push_back(std::make_unique<Task>([&](Task*) { ran.fetch_add(1); }));
    }
    {
      TaskScheduler sched;
      sched.Start(2);
      for (auto& t : waiting) sched.PostWait(t.get());
      posted += 16;
      std::thread poster([&] {
        std::size_t next_wake = 0;
        // Bounded: a poster that never stops would keep Stop from returning (documented).
        for (int i = 0; i < 3000; ++i) {
          sched.PostOneShot([&] { ran.fetch_add(1); });
          posted.fetch_add(1);
          if (next_wake < waiting.size()) sched.Wakeup(waiting[next_wake++].get());
        }
      });
      std::this_thread::sleep_for(microseconds(200));
      sched.Stop();
      EXPECT_FALSE(sched.IsStopping());
      poster.join();
      // Posts after Stop queue up; a restart runs them.
      sched.Start(1);
      sched.PostOneShot([&] { ran.fetch_add(1); });
      posted.fetch_add(1);
      ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
      EXPECT_EQ(ran.load(), posted.load());
    }
    EXPECT_EQ(ran.load(), posted.load());
  }
}

// Hole 7: a waiting task could not be got rid of safely. Cancel wakes it once with
// IsCancelled(), and its callback may delete it.
TEST(ContractTest, CancelWakesAWaitingTaskWhichMayDeleteItself) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> cancelled{0}, other{0};
  std::vector<Task*> tasks;
  for (int i = 0; i < 100; ++i) {
    tasks.push_back(new Task([&](Task* self) {
      if (self->IsCancelled()) {
        cancelled.fetch_add(1);
        delete self;
        return;
      }
      other.fetch_add(1);
      TaskScheduler::Current()->PostWait(self);
    }));
  }
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (i % 2 == 0) {
      sched.PostWait(tasks[i]);
    } else {
      sched.PostDelay(tasks[i], milliseconds(1));  // runs once, then waits
    }
  }
  std::this_thread::sleep_for(milliseconds(20));
  for (Task* t : tasks) sched.Cancel(t);
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_EQ(cancelled.load(), 100);
  EXPECT_EQ(other.load(), 50);
}

// Hole 8: ready_block_size = 0 wrote out of bounds in release builds. Every option is
// clamped now (ASan checks the accesses).
TEST(ContractTest, DegenerateOptionsAreClamped) {
  TaskScheduler sched(TaskSchedulerOptions{.ready_block_size = 0,
                                           .batch_size = 0,
                                           .execute_batch_size = 0,
                                           .spin_before_park = std::chrono::hours(1)});
  EXPECT_EQ(sched.options().ready_block_size, 1u);
  EXPECT_EQ(sched.options().batch_size, 1u);
  EXPECT_EQ(sched.options().execute_batch_size, 1u);
  EXPECT_LE(sched.options().spin_before_park, milliseconds(1));
  EXPECT_EQ(TaskScheduler(TaskSchedulerOptions{.yields_before_park = 1000})
                .options()
                .yields_before_park,
            64);
  EXPECT_EQ(TaskScheduler(TaskSchedulerOptions{.yields_before_park = -1})
                .options()
                .yields_before_park,
            0);
  sched.Start(2);
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) sched.PostOneShot([&] { ran.fetch_add(1); });
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_EQ(ran.load(), 1000);
}

// Waits (bounded) until `flag` is set; returns whether it was.
bool AwaitFlag(const std::atomic<bool>& flag) {
  const auto give_up = std::chrono::steady_clock::now() + seconds(5);
  while (!flag.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

// IsEmpty counts posts per worker without a shared counter (sched/post_counters.h). A task
// that posts another and keeps running after that one finished on the other worker is still
// not finished: WaitEmpty must wait for it (a scheme that settled a worker's posts later,
// say at the end of its batch, returned early here).
TEST(ContractTest, WaitEmptyWaitsForACallbackThatKeepsRunningAfterItsChildFinished) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<bool> child_ran{false};
  std::atomic<bool> child_seen{false};
  std::atomic<bool> parent_finished{false};
  Task child([&](Task*) { child_ran.store(true, std::memory_order_release); });
  Task parent([&](Task*) {
    sched.Post(&child);
    child_seen.store(AwaitFlag(child_ran), std::memory_order_relaxed);
    std::this_thread::sleep_for(milliseconds(20));  // a window for an early return
    parent_finished.store(true, std::memory_order_relaxed);
  });
  sched.Post(&parent);
  ASSERT_TRUE(sched.WaitEmpty(seconds(10)));
  EXPECT_TRUE(child_seen.load(std::memory_order_relaxed)) << "the child never ran in parallel";
  EXPECT_TRUE(parent_finished.load(std::memory_order_relaxed));
  sched.Stop();
}

// The same for a task that re-posts itself (its first callback keeps running while its
// second run starts and finishes on the other worker).
TEST(ContractTest, WaitEmptyWaitsForTheFirstRunOfATaskThatRepostedItself) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> runs{0};
  std::atomic<bool> second_ran{false};
  std::atomic<bool> second_seen{false};
  std::atomic<bool> first_finished{false};
  Task task([&](Task* self) {
    if (runs.fetch_add(1, std::memory_order_relaxed) > 0) {
      second_ran.store(true, std::memory_order_release);
      return;
    }
    sched.Post(self);  // the task is the scheduler's now: not touched below
    second_seen.store(AwaitFlag(second_ran), std::memory_order_relaxed);
    std::this_thread::sleep_for(milliseconds(20));
    first_finished.store(true, std::memory_order_relaxed);
  });
  sched.Post(&task);
  ASSERT_TRUE(sched.WaitEmpty(seconds(10)));
  EXPECT_TRUE(second_seen.load(std::memory_order_relaxed)) << "the second run never overlapped";
  EXPECT_TRUE(first_finished.load(std::memory_order_relaxed));
  EXPECT_EQ(runs.load(), 2);
  sched.Stop();
}

// Many threads post (outside posters and tasks on every worker, one-shot and intrusive) while
// another thread keeps asking WaitEmpty: every true answer must come with every counted
// post's effect visible.
TEST(ContractStressTest, WaitEmptyNeverAnswersEarly) {
  const std::int64_t rounds = 200 * testing::StressScale();
  TaskScheduler sched;
  sched.Start(2);
  for (std::int64_t round = 0; round < rounds; ++round) {
    std::atomic<int> finished{0};
    constexpr int kChains = 8;
    constexpr int kDepth = 6;
    std::vector<std::unique_ptr<Task>> tasks;
    std::vector<int> steps(kChains, 0);
    for (int i = 0; i < kChains; ++i) {
      tasks.push_back(std::make_unique<Task>([&, i](Task* self) {
        finished.fetch_add(1, std::memory_order_relaxed);
        if (++steps[i] < kDepth) {
          sched.PostOneShot([&finished] { finished.fetch_add(1, std::memory_order_relaxed); });
          sched.Post(self);
        }
      }));
    }
    std::thread poster([&] {
      for (int i = 0; i < kChains; i += 2) sched.Post(tasks[i].get());
    });
    for (int i = 1; i < kChains; i += 2) sched.Post(tasks[i].get());
    poster.join();
    ASSERT_TRUE(sched.WaitEmpty(seconds(10)));
    // Each chain: kDepth runs of its task, kDepth - 1 one-shots.
    ASSERT_EQ(finished.load(std::memory_order_relaxed), kChains * (2 * kDepth - 1));
  }
  sched.Stop();
}

}  // namespace
}  // namespace fairsched
