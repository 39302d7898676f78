// Tests for one-shot posts and their recycling: //sched:task_pool on its own (tiers, bounds,
// hand-over between threads) and BasicTaskScheduler::PostOneShot through it (tasks really
// are reused, from outside posters and from inside tasks, under stress; a one-shot posted
// again aborts). ASan's leak check covers "memory comes back on Stop and destruction".
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "sched/task.h"
#include "sched/task_pool.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::seconds;

TEST(TaskPoolTest, ReusesWhatWasGivenBack) {
  TaskPool pool;
  TaskPool::Cache cache;
  Task* first = pool.Take(cache);
  EXPECT_EQ(pool.Allocations(), 1u);
  EXPECT_FALSE(first->HasCallback());
  pool.Give(cache, first);
  EXPECT_EQ(pool.Take(cache), first);  // from the cache, no allocation
  EXPECT_EQ(pool.Allocations(), 1u);
  pool.Give(cache, first);
  TaskPool::Release(cache);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(TaskPoolTest, WorkerCacheIsBoundedAndFeedsOtherThreads) {
  TaskPool pool;
  TaskPool::Cache worker;
  std::vector<Task*> tasks;
  for (std::size_t i = 0; i < 4 * TaskPool::kBatch; ++i) tasks.push_back(pool.Take(worker));
  EXPECT_EQ(pool.Allocations(), 4 * TaskPool::kBatch);
  for (Task* task : tasks) pool.Give(worker, task);
  EXPECT_LE(worker.size(), 2 * TaskPool::kBatch);
  // Another thread's cache is refilled from the surplus the worker handed over.
  std::thread poster([&] {
    TaskPool::Cache mine;
    for (std::size_t i = 0; i < 2 * TaskPool::kBatch; ++i) pool.Give(mine, pool.Take(mine));
    std::vector<Task*> taken;
    for (std::size_t i = 0; i < TaskPool::kBatch; ++i) taken.push_back(pool.Take(mine));
    for (Task* task : taken) pool.Give(mine, task);
  });
  poster.join();
  EXPECT_EQ(pool.Allocations(), 4 * TaskPool::kBatch);
  TaskPool::Release(worker);
}

// A worker hands over the tasks it was given back longest ago and keeps the recent ones
// (still in its core's cache) for its own tasks' posts; the thread that takes the batch gets
// exactly those, the last of them first.
TEST(TaskPoolTest, WorkerHandsOverItsOldestTasks) {
  TaskPool pool;
  TaskPool::Cache worker;
  std::vector<Task*> tasks;
  for (std::size_t i = 0; i <= 2 * TaskPool::kBatch; ++i) tasks.push_back(pool.Take(worker));
  for (Task* task : tasks) pool.Give(worker, task);  // the last Give hands a batch over
  EXPECT_EQ(worker.size(), TaskPool::kBatch + 1);
  TaskPool::Cache poster;
  std::vector<Task*> taken;
  for (std::size_t i = 0; i < TaskPool::kBatch; ++i) taken.push_back(pool.Take(poster));
  EXPECT_EQ(pool.Allocations(), tasks.size());  // all of them from the shared batch
  for (std::size_t i = 0; i < TaskPool::kBatch; ++i) {
    EXPECT_EQ(taken[i], tasks[TaskPool::kBatch - 1 - i]) << i;
  }
  EXPECT_EQ(pool.Take(worker), tasks.back());  // the worker's most recent
  pool.Give(worker, tasks.back());
  for (Task* task : taken) pool.Give(poster, task);
  TaskPool::Release(poster);
  TaskPool::Release(worker);
}

TEST(TaskPoolTest, FullSharedTierFreesInsteadOfGrowing) {
  TaskPool pool;
  TaskPool::Cache cache;
  const std::size_t many = (TaskPool::kMaxSharedBatches + 4) * TaskPool::kBatch;
  std::vector<Task*> tasks;
  for (std::size_t i = 0; i < many; ++i) tasks.push_back(pool.Take(cache));
  for (Task* task : tasks) pool.Give(cache, task);
  // Drain the shared tier through a fresh cache: at most kMaxSharedBatches come back.
  TaskPool::Cache other;
  std::vector<Task*> reused;
  const std::uint64_t before = pool.Allocations();
  for (std::size_t i = 0; i < many; ++i) reused.push_back(pool.Take(other));
  const std::uint64_t allocated = pool.Allocations() - before;
  EXPECT_GE(allocated, many - TaskPool::kMaxSharedBatches * TaskPool::kBatch);
  for (Task* task : reused) pool.Give(other, task);
  TaskPool::Release(other);
  TaskPool::Release(cache);
}

template <typename Scheduler>
class OneShotTest : public ::testing::Test {};
using Schedulers = ::testing::Types<TaskScheduler, TrivialPolicyTaskScheduler>;
TYPED_TEST_SUITE(OneShotTest, Schedulers);

// Posted from outside in waves: after the first wave most tasks come back from the workers
// through the shared tier instead of being allocated.
TYPED_TEST(OneShotTest, OutsidePostsReuseTasks) {
  TypeParam sched;
  sched.Start(2);
  const int waves = static_cast<int>(testing::StressIterations(40, 4));
  constexpr int kWave = 1000;
  std::atomic<int> ran{0};
  for (int w = 0; w < waves; ++w) {
    for (int i = 0; i < kWave; ++i) sched.PostOneShot([&ran] { ran.fetch_add(1); });
    ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
  }
  EXPECT_EQ(ran.load(), waves * kWave);
  // Each wave may allocate what the workers keep in their own caches (2 * 2 * kBatch) plus
  // at most one batch in flight; everything else must be reused.
  const std::uint64_t bound = kWave + static_cast<std::uint64_t>(waves) * 5 * TaskPool::kBatch;
  EXPECT_LE(sched.OneShotAllocations(), std::min<std::uint64_t>(bound, waves * kWave / 2))
      << "posts: " << waves * kWave;
  sched.Stop();
}

// Posted from inside tasks: a chain where every one-shot posts the next. The worker's own
// cache serves every post: a couple of allocations for the whole chain.
TYPED_TEST(OneShotTest, InsidePostsReuseTheWorkersCache) {
  TypeParam sched;
  const std::int64_t length = testing::StressIterations(20'000);
  std::atomic<std::int64_t> ran{0};
  struct Chain {
    TypeParam* sched;
    std::atomic<std::int64_t>* ran;
    std::int64_t length;
    void Next() const {
      if (ran->fetch_add(1) + 1 < length) {
        Chain copy = *this;
        sched->PostOneShot([copy] { copy.Next(); });
      }
    }
  };
  const Chain chain{&sched, &ran, length};
  static_assert(Task::kStoresInline<Chain>);
  sched.Start(1);
  const std::uint64_t before = sched.OneShotAllocations();
  sched.PostOneShot([chain] { chain.Next(); });
  ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
  EXPECT_EQ(ran.load(), length);
  EXPECT_LE(sched.OneShotAllocations() - before, 3u);
}

// Many outside threads and the workers themselves post one-shots at once: every one runs
// exactly once (TSan/ASan check the hand-over between the tiers).
TYPED_TEST(OneShotTest, ConcurrentPostersStress) {
  TypeParam sched;
  sched.Start(2);
  const std::int64_t per_thread = testing::StressIterations(20'000);
  constexpr int kThreads = 3;
  std::atomic<std::int64_t> ran{0};
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&] {
      for (std::int64_t i = 0; i < per_thread; ++i) {
        if (i % 2 == 0) {
          sched.PostOneShot([&ran] { ran.fetch_add(1); });
        } else {
          // Half of them post a second one-shot from inside.
          sched.PostOneShot([&sched, &ran] {
            ran.fetch_add(1);
            sched.PostOneShot([&ran] { ran.fetch_add(1); });
          });
        }
      }
    });
  }
  for (std::thread& t : posters) t.join();
  ASSERT_TRUE(sched.WaitEmpty(seconds(120)));
  EXPECT_EQ(ran.load(), kThreads * (per_thread + per_thread / 2));
  sched.Stop();
  // Posts after Stop still run (next Start or the destructor), with pooled tasks.
  sched.PostOneShot([&ran] { ran.fetch_add(1); });
  sched.Start(1);
  ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
  EXPECT_EQ(ran.load(), kThreads * (per_thread + per_thread / 2) + 1);
}

TEST(OneShotDeathTest, PostingTheOneShotTaskAgainAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        sched.Start(1);
        sched.PostOneShot([&sched](Task* self) {
          self->SetWait();
          sched.Post(self);
        });
        sched.WaitEmpty(seconds(10));
      },
      "Post of a PostOneShot task");
}

// Regression test: the re-post check sat in the recycling step, so a one-shot's
// Task* posted from another thread raced it: posted while the callback ran, or after the
// pool had recycled (and maybe handed out) the task, it ran a blank callback or ran twice.
// Post refuses a pooled task's pointer in every build, from any thread, at any time.
TEST(OneShotDeathTest, PostingAOneShotTaskFromAnotherThreadAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        sched.Start(1);
        std::atomic<Task*> leaked{nullptr};
        sched.PostOneShot([&leaked](Task* self) { leaked = self; });
        sched.WaitEmpty(seconds(10));  // it ran and went back to the pool
        std::thread([&] { sched.Post(leaked.load()); }).join();
        sched.WaitEmpty(seconds(10));
      },
      "Post of a PostOneShot task");
}
TEST(OneShotDeathTest, PostingAOneShotTaskWhileItRunsAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TaskScheduler sched;
        sched.Start(1);
        std::atomic<Task*> leaked{nullptr};
        std::atomic<bool> release{false};
        sched.PostOneShot([&](Task* self) {
          leaked = self;
          while (!release.load()) std::this_thread::yield();
        });
        while (leaked.load() == nullptr) std::this_thread::yield();
        std::thread([&] { sched.Post(leaked.load()); }).join();
        release = true;
        sched.WaitEmpty(seconds(10));
      },
      "Post of a PostOneShot task");
}

}  // namespace
}  // namespace fairsched
