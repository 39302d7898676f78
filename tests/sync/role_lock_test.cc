// Tests for //sync:role_lock: try-lock semantics and a stress test in which plain
// (non-atomic) state guarded only by the role lock is updated by many threads (TSan checks
// that TryLock/Unlock publish it; the final count checks mutual exclusion).
#include "sync/role_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/stress.h"

namespace fairsched {
namespace {

TEST(RoleLockTest, TryLockIsExclusive) {
  RoleLock lock;
  EXPECT_FALSE(lock.IsLocked());
  EXPECT_TRUE(lock.TryLock());
  EXPECT_TRUE(lock.IsLocked());
  EXPECT_FALSE(lock.TryLock());
  lock.Unlock();
  EXPECT_FALSE(lock.IsLocked());
  EXPECT_TRUE(lock.TryLock());
  lock.Unlock();
}

TEST(RoleLockStressTest, HolderStateIsPublishedAndExclusive) {
  constexpr int kThreads = 4;
  const std::int64_t per_thread = testing::StressIterations(200000);
  RoleLock lock;
  std::int64_t guarded = 0;  // plain: only the holder touches it
  bool inside = false;       // plain: detects two holders at once
  std::atomic<std::int64_t> wins{0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::int64_t attempts = 0, my_wins = 0;
      while (my_wins < per_thread / 4 && attempts < per_thread) {
        ++attempts;
        if (!lock.TryLock()) continue;
        if (inside) overlap.store(true);
        inside = true;
        ++guarded;
        inside = false;
        lock.Unlock();
        ++my_wins;
      }
      wins.fetch_add(my_wins);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_EQ(guarded, wins.load());
  EXPECT_GT(wins.load(), 0);
}

}  // namespace
}  // namespace fairsched
