// Stress tests for "every post runs exactly once": millions of posts from several threads
// (and from inside tasks), and Wakeup/Signal hammering tasks while their deadlines expire
// and while they execute. Each task carries an `in_flight` flag set before every post and
// cleared (with a check) by the execution, so a duplicate run fails at once and a lost run
// shows as WaitEmpty timing out or a count mismatch. Sizes scale with tests/stress.h.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "queues/mcsp_queue.h"
#include "queues/timer_wheel.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::microseconds;
using std::chrono::seconds;

template <typename Scheduler>
class ExactlyOnceTest : public ::testing::Test {};
// The two standard configurations, plus the timer-wheel wait queue.
using WheelTaskScheduler = BasicTaskScheduler<McspQueue<Task>, TimerWheel<Task>>;
using Schedulers = ::testing::Types<TaskScheduler, TrivialPolicyTaskScheduler, WheelTaskScheduler>;
TYPED_TEST_SUITE(ExactlyOnceTest, Schedulers);

struct Tracked {
  Task task;
  std::atomic<int> in_flight{0};
  std::atomic<std::int64_t> runs{0};
};

// Marks a post; fails if the previous post of this task has not run yet.
void MarkPosted(Tracked& t, std::atomic<int>& errors) {
  if (t.in_flight.exchange(1, std::memory_order_acq_rel) != 0) errors.fetch_add(1);
}
// Marks a run; fails if there was no outstanding post (a duplicate run).
void MarkRan(Tracked& t, std::atomic<int>& errors) {
  if (t.in_flight.exchange(0, std::memory_order_acq_rel) != 1) errors.fetch_add(1);
  t.runs.fetch_add(1, std::memory_order_relaxed);
}

// Several threads post a pool of tasks over and over (a task is re-posted once its previous
// run finished), some runs re-post themselves from inside the worker.
template <typename TypeParam>
void ManyPostersEachPostRunsOnce(TaskSchedulerOptions options, std::int64_t base) {
  TypeParam sched(options);
  sched.Start(3);
  constexpr std::int64_t kPosters = 3, kPool = 512;
  const std::int64_t per_poster = testing::StressIterations(base);
  std::atomic<int> errors{0};
  std::atomic<std::int64_t> inner_posts{0};
  std::vector<std::unique_ptr<Tracked>> pool(static_cast<std::size_t>(kPosters * kPool));
  for (auto& t : pool) {
    t = std::make_unique<Tracked>();
    Tracked* self = t.get();
    t->task.SetCallback([self, &errors, &inner_posts](Task* task) {
      MarkRan(*self, errors);
      // Every 8th run re-posts itself once from inside the worker.
      if (self->runs.load(std::memory_order_relaxed) % 8 == 1) {
        inner_posts.fetch_add(1, std::memory_order_relaxed);
        MarkPosted(*self, errors);
        TypeParam::Current()->Post(task);
        return;
      }
      // Last touch: lets the owning poster re-post. Release pairs with its acquire load.
      self->in_flight.store(2, std::memory_order_release);
    });
  }
  std::vector<std::thread> posters;
  for (std::int64_t p = 0; p < kPosters; ++p) {
    posters.emplace_back([&, p] {
      for (std::int64_t i = 0; i < per_poster; ++i) {
        Tracked& t = *pool[p * kPool + i % kPool];
        if (i >= kPool) {
          // Wait until the previous run of this task is completely over.
          while (t.in_flight.load(std::memory_order_acquire) != 2) std::this_thread::yield();
          t.in_flight.store(0, std::memory_order_relaxed);
        }
        MarkPosted(t, errors);
        sched.Post(&t.task);
      }
    });
  }
  for (auto& t : posters) t.join();
  ASSERT_TRUE(sched.WaitEmpty(seconds(300)));
  std::int64_t runs = 0;
  for (auto& t : pool) runs += t->runs.load();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(runs, kPosters * per_poster + inner_posts.load());
  std::uint64_t executed = 0;
  for (const WorkerStats& s : sched.Stats()) executed += s.tasks_executed;
  EXPECT_EQ(executed, static_cast<std::uint64_t>(runs));
}

// Tasks re-post themselves for R rounds with tiny random delays or infinite waits, while
// waker threads Wakeup/Signal random tasks as fast as they can: wakeups race with expiry,
// with the sched-role's PENDING->WAITING step and with execution.
template <typename TypeParam>
void WakeupAndSignalRaceWithExpiryAndExecution(TaskSchedulerOptions options, std::int64_t base) {
  TypeParam sched(options);
  sched.Start(3);
  constexpr int kTasks = 64, kWakers = 2;
  const std::int64_t rounds = testing::StressIterations(base);
  std::atomic<int> errors{0};
  std::atomic<int> finished{0};
  std::atomic<std::int64_t> signals_received{0};
  std::vector<std::unique_ptr<Tracked>> tasks(kTasks);
  for (int i = 0; i < kTasks; ++i) {
    tasks[i] = std::make_unique<Tracked>();
    Tracked* self = tasks[i].get();
    auto rng = std::make_shared<std::mt19937>(i);
    self->task.SetCallback([self, rng, rounds, &errors, &finished, &signals_received](Task* t) {
      MarkRan(*self, errors);
      if (t->ReceiveSignal()) signals_received.fetch_add(1, std::memory_order_relaxed);
      if (self->runs.load(std::memory_order_relaxed) == rounds) {
        finished.fetch_add(1);
        return;
      }
      MarkPosted(*self, errors);
      const unsigned choice = (*rng)() % 4;
      if (choice == 0) {
        TypeParam::Current()->PostWait(t);
      } else {
        TypeParam::Current()->PostDelay(t, microseconds((*rng)() % 30));
      }
    });
  }
  std::atomic<bool> stop_waking{false};
  std::atomic<std::int64_t> signals_sent{0};
  std::vector<std::thread> wakers;
  for (int w = 0; w < kWakers; ++w) {
    wakers.emplace_back([&, w] {
      std::mt19937 rng(100 + w);
      while (!stop_waking.load(std::memory_order_relaxed)) {
        Task* t = &tasks[rng() % kTasks]->task;
        if (rng() % 2 == 0) {
          sched.Wakeup(t);
        } else {
          sched.Signal(t);
          signals_sent.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (auto& t : tasks) {
    MarkPosted(*t, errors);
    sched.Post(&t->task);
  }
  // Tasks that finished may still be woken (they are not posted: the wakeup is remembered,
  // nothing runs). Wait for all to finish, then stop the wakers.
  const auto give_up = TaskClock::now() + seconds(300);
  while (finished.load() < kTasks && TaskClock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop_waking = true;
  for (auto& t : wakers) t.join();
  ASSERT_EQ(finished.load(), kTasks);
  ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
  EXPECT_EQ(errors.load(), 0);
  for (auto& t : tasks) EXPECT_EQ(t->runs.load(), rounds);
  EXPECT_LE(signals_received.load(), signals_sent.load());
  EXPECT_GT(signals_received.load(), 0);
}

// Idle <-> busy transitions, over and over: every round the scheduler drains and all
// workers go to sleep (the role holder in the io backend, the others on the ready event),
// then a small burst arrives, partly delayed. A lost wakeup anywhere (a role released
// without waking anyone, a notify that missed the sleeping holder, a chain wake that
// stopped early) leaves a task stuck and WaitEmpty times out.
template <typename TypeParam>
void BurstsAfterIdleNeverStall(TaskSchedulerOptions options, std::int64_t base) {
  TypeParam sched(options);
  sched.Start(3);
  const std::int64_t rounds = testing::StressIterations(base);
  std::mt19937 rng(5);
  std::atomic<std::int64_t> runs{0};
  std::int64_t posted = 0;
  for (std::int64_t r = 0; r < rounds; ++r) {
    const int burst = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < burst; ++i) {
      if (rng() % 4 == 0) {
        Task* t = new Task([&runs](Task* self) {
          runs.fetch_add(1);
          delete self;
        });
        sched.PostDelay(t, microseconds(rng() % 200));
      } else {
        sched.PostOneShot([&runs] { runs.fetch_add(1); });
      }
      ++posted;
    }
    ASSERT_TRUE(sched.WaitEmpty(seconds(30))) << "stalled in round " << r;
    // Every 4th round, stay idle longer than the workers spin, so they really park.
    if (r % 4 == 0) std::this_thread::sleep_for(microseconds(100));
  }
  EXPECT_EQ(runs.load(), posted);
  std::uint64_t parks = 0;
  for (const WorkerStats& s : sched.Stats()) parks += s.parks;
  EXPECT_GT(parks, 0u);  // the idle rounds really parked workers (not only the role holder)
}

// Every test with the default-ish options, and with every batch and block at size 1, so
// backlogs carried across role holders, role hand-overs after every task and a block
// switch on every pop are exercised too.
TaskSchedulerOptions TinyBatches() {
  return {.name = "tiny", .ready_block_size = 1, .batch_size = 1, .execute_batch_size = 1};
}

TYPED_TEST(ExactlyOnceTest, ManyPostersEachPostRunsOnce) {
  ManyPostersEachPostRunsOnce<TypeParam>({.name = "stress", .ready_block_size = 256}, 400000);
}
TYPED_TEST(ExactlyOnceTest, ManyPostersEachPostRunsOnceTinyBatches) {
  ManyPostersEachPostRunsOnce<TypeParam>(TinyBatches(), 100000);
}
TYPED_TEST(ExactlyOnceTest, WakeupAndSignalRaceWithExpiryAndExecution) {
  WakeupAndSignalRaceWithExpiryAndExecution<TypeParam>({.name = "races", .batch_size = 64}, 2000);
}
TYPED_TEST(ExactlyOnceTest, WakeupAndSignalRaceWithExpiryAndExecutionTinyBatches) {
  WakeupAndSignalRaceWithExpiryAndExecution<TypeParam>(TinyBatches(), 1000);
}
TYPED_TEST(ExactlyOnceTest, BurstsAfterIdleNeverStall) {
  BurstsAfterIdleNeverStall<TypeParam>({}, 3000);
}
TYPED_TEST(ExactlyOnceTest, BurstsAfterIdleNeverStallTinyBatches) {
  BurstsAfterIdleNeverStall<TypeParam>(TinyBatches(), 1500);
}

}  // namespace
}  // namespace fairsched
