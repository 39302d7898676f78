// Tests for //queues:locked_queue, the trivial mutex baselines: both model their concepts,
// keep FIFO order, count their lock acquisitions, and survive the same multi-threaded
// stress drivers as the lock-free queues.
#include "queues/locked_queue.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "queues/concepts.h"
#include "tests/queues/queue_stress.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using testing::StressItem;

static_assert(FrontQueue<LockedFrontQueue<StressItem>, StressItem>);
static_assert(ReadyQueue<LockedReadyQueue<StressItem>, StressItem>);

std::vector<std::int64_t> PopAll(LockedFrontQueue<StressItem>& q) {
  std::vector<std::int64_t> out;
  while (StressItem* item = q.Pop()) out.push_back(item->seq);
  return out;
}

TEST(LockedFrontQueueTest, EmptyPopsNothing) {
  LockedFrontQueue<StressItem> q;
  EXPECT_TRUE(q.IsEmpty());
  EXPECT_EQ(q.Pop(), nullptr);
}

TEST(LockedFrontQueueTest, PushReportsEmptyAndPopIsFifo) {
  LockedFrontQueue<StressItem> q;
  StressItem items[4];
  for (int i = 0; i < 4; ++i) {
    items[i].seq = i;
    EXPECT_EQ(q.Push(&items[i]), i == 0);
  }
  EXPECT_FALSE(q.IsEmpty());
  EXPECT_EQ(q.Pop(), &items[0]);
  EXPECT_FALSE(q.Push(&items[0]));  // popped items may be pushed again at once
  EXPECT_EQ(PopAll(q), (std::vector<std::int64_t>{1, 2, 3, 0}));
  EXPECT_TRUE(q.IsEmpty());
  EXPECT_TRUE(q.Push(&items[2]));
  EXPECT_EQ(q.Pop(), &items[2]);
  EXPECT_EQ(q.Pop(), nullptr);
}

TEST(LockedFrontQueueTest, CountsLockAcquisitions) {
  LockedFrontQueue<StressItem> q;
  StressItem a;
  q.Push(&a);
  q.Pop();
  q.Pop();  // an empty pop locks too: this is the trivial queue
  EXPECT_EQ(q.LockStats().lock_taken, 3u);
  EXPECT_EQ(q.LockStats().lock_contended, 0u);
}

TEST(LockedReadyQueueTest, EmptyPopsNothing) {
  LockedReadyQueue<StressItem> q;
  LockedReadyQueue<StressItem>::Consumer c(q);
  EXPECT_EQ(c.Pop(), nullptr);
  EXPECT_EQ(q.Count(), 0u);
}

TEST(LockedReadyQueueTest, FifoAcrossConsumers) {
  LockedReadyQueue<StressItem> q;
  LockedReadyQueue<StressItem>::Consumer a(q), b(q);
  StressItem items[3];
  for (auto& it : items) q.Push(&it);
  EXPECT_EQ(q.Count(), 3u);
  EXPECT_EQ(a.Pop(), &items[0]);
  EXPECT_EQ(b.Pop(), &items[1]);
  EXPECT_EQ(a.Pop(), &items[2]);
  EXPECT_EQ(b.Pop(), nullptr);
  EXPECT_EQ(q.Count(), 0u);
}

TEST(LockedReadyQueueTest, PendingInvisibleUntilFlushAndPushKeepsOrder) {
  LockedReadyQueue<StressItem> q;
  testing::ExpectPendingVisibleOnlyAfterFlush(q);
}

TEST(LockedReadyQueueTest, CountsLocksPerQueueAndPerConsumer) {
  LockedReadyQueue<StressItem> q;
  LockedReadyQueue<StressItem>::Consumer c(q);
  StressItem a;
  q.Push(&a);  // 1
  c.Pop();     // 2
  c.Pop();     // 3 (empty pop still locks: this is the trivial queue)
  EXPECT_EQ(q.LockStats().lock_taken, 3u);
  EXPECT_EQ(c.LockStats().lock_taken, 2u);
  LockedReadyQueue<StressItem>::Consumer moved(std::move(c));
  EXPECT_EQ(moved.LockStats().lock_taken, 2u);
}

TEST(LockedQueueStressTest, FrontManyProducers) {
  testing::RunFrontQueueStress<LockedFrontQueue<StressItem>>(
      4, static_cast<int>(testing::StressIterations(100000)));
}

TEST(LockedQueueStressTest, FrontCausalOrderAcrossThreads) {
  testing::RunFrontQueueCausalOrder<LockedFrontQueue<StressItem>>(
      static_cast<int>(testing::StressIterations(10000)));
}

TEST(LockedQueueStressTest, FrontWakeOnlyOnEmptyTransitionLosesNothing) {
  testing::RunFrontQueueWakeProtocol<LockedFrontQueue<StressItem>>(
      3, static_cast<int>(testing::StressIterations(20000)));
}

TEST(LockedQueueStressTest, ReadyOneProducerManyConsumers) {
  testing::RunReadyQueueStress<LockedReadyQueue<StressItem>>(3, testing::StressIterations(200000),
                                                             8);
}

}  // namespace
}  // namespace fairsched
