// Tests for //queues:bounded_mc_queue: FIFO, full/empty edges, capacity 1, ring wrap-around
// and 64-bit index wrap-around (indexes started just below 2^64), pending batches, and a
// one-producer / many-consumer stress test across the index wrap.
#include "queues/bounded_mc_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/queues/queue_stress.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using testing::StressItem;
using Ring = BoundedMcQueue<StressItem>;

constexpr std::uint64_t kNearWrap = UINT64_MAX - 5;

TEST(BoundedMcQueueTest, EmptyAndOneItem) {
  Ring q(4);
  EXPECT_EQ(q.Capacity(), 4u);
  EXPECT_EQ(q.TryPop(), nullptr);
  EXPECT_EQ(q.Count(), 0u);
  StressItem a;
  EXPECT_TRUE(q.TryPush(&a));
  EXPECT_EQ(q.Count(), 1u);
  EXPECT_EQ(q.TryPop(), &a);
  EXPECT_EQ(q.TryPop(), nullptr);
}

TEST(BoundedMcQueueTest, FullRejectsUntilPopped) {
  Ring q(4);
  StressItem items[5];
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.TryPush(&items[i]));
  EXPECT_FALSE(q.TryPush(&items[4]));
  EXPECT_EQ(q.Count(), 4u);
  EXPECT_EQ(q.TryPop(), &items[0]);
  EXPECT_TRUE(q.TryPush(&items[4]));  // reuses slot 0: first ring wrap
  for (int i = 1; i < 5; ++i) EXPECT_EQ(q.TryPop(), &items[i]);
  EXPECT_EQ(q.TryPop(), nullptr);
}

TEST(BoundedMcQueueTest, CapacityOne) {
  Ring q(1, kNearWrap);
  StressItem a, b;
  for (int lap = 0; lap < 20; ++lap) {  // crosses the 64-bit wrap
    EXPECT_TRUE(q.TryPush(&a));
    EXPECT_FALSE(q.TryPush(&b));
    EXPECT_EQ(q.TryPop(), &a);
    EXPECT_EQ(q.TryPop(), nullptr);
  }
}

TEST(BoundedMcQueueTest, RingAndIndexWrapKeepFifo) {
  for (std::uint64_t first : {std::uint64_t{0}, kNearWrap, UINT64_MAX}) {
    Ring q(8, first);
    std::vector<StressItem> items(100);
    int pushed = 0, popped = 0;
    // Push 3, pop 2, repeatedly: the fill level drifts up to full and the ring laps many
    // times; the indexes cross 2^64 early on when starting near the wrap.
    while (popped < 100) {
      for (int i = 0; i < 3 && pushed < 100; ++i) {
        items[pushed].seq = pushed;
        if (!q.TryPush(&items[pushed])) break;
        ++pushed;
      }
      for (int i = 0; i < 2 && popped < pushed; ++i) {
        StressItem* got = q.TryPop();
        ASSERT_NE(got, nullptr);
        ASSERT_EQ(got->seq, popped) << "first index " << first;
        ++popped;
      }
      if (pushed == 100) {
        while (StressItem* got = q.TryPop()) ASSERT_EQ(got->seq, popped++);
      }
    }
    EXPECT_EQ(q.Count(), 0u);
  }
}

TEST(BoundedMcQueueTest, PendingPublishedTogether) {
  Ring q(4, kNearWrap);
  StressItem items[5];
  EXPECT_TRUE(q.TryPushPending(&items[0]));
  EXPECT_TRUE(q.TryPushPending(&items[1]));
  EXPECT_EQ(q.TryPop(), nullptr);
  EXPECT_EQ(q.Count(), 0u);
  q.FlushPending();
  EXPECT_EQ(q.Count(), 2u);
  EXPECT_TRUE(q.TryPushPending(&items[2]));
  EXPECT_TRUE(q.TryPush(&items[3]));          // publishes the pending item too
  EXPECT_FALSE(q.TryPushPending(&items[4]));  // pending slots count against capacity
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.TryPop(), &items[i]);
}

TEST(BoundedMcQueueTest, ConsumerHandleAcrossIndexWrap) {
  Ring q(4, kNearWrap);
  Ring::Consumer a(q), b(q);  // start from the current end, not from 0
  EXPECT_EQ(a.Pop(), nullptr);
  std::vector<StressItem> items(40);
  int popped = 0;
  for (int i = 0; i < 40; ++i) {
    items[i].seq = i;
    ASSERT_TRUE(q.TryPush(&items[i]));
    if (i % 3 == 2) {  // drain in small groups, alternating handles and TryPop
      for (int k = 0; k < 3; ++k) {
        StressItem* got = k == 0 ? a.Pop() : (k == 1 ? b.Pop() : q.TryPop());
        ASSERT_NE(got, nullptr);
        EXPECT_EQ(got->seq, popped++);
      }
    }
  }
  while (StressItem* got = a.Pop()) EXPECT_EQ(got->seq, popped++);
  EXPECT_EQ(popped, 40);
  EXPECT_EQ(b.Pop(), nullptr);
}

// One producer, three consumers (two using TryPop, one a caching Consumer handle), small
// ring so it is often full and often empty, indexes crossing the 64-bit wrap mid-run.
// Every item exactly once; per-consumer increasing order.
class BoundedMcQueueStressTest : public ::testing::TestWithParam<std::size_t> {};

TEST_P(BoundedMcQueueStressTest, OneProducerManyConsumers) {
  // A one-slot ring hands over one item per producer/consumer round trip: fewer items.
  const std::int64_t count = testing::StressIterations(GetParam() == 1 ? 50000 : 300000);
  Ring q(GetParam(), UINT64_MAX - static_cast<std::uint64_t>(count / 2));
  std::vector<StressItem> items(count);
  testing::PopLedger ledger(count);
  std::vector<std::thread> threads;
  for (int c = 0; c < 3; ++c) {
    threads.emplace_back([&, c] {
      // Odd-numbered consumers use the caching handle, the others TryPop: both kinds mixed.
      Ring::Consumer handle(q);
      std::int64_t last = -1;
      while (!ledger.Done()) {
        StressItem* item = c % 2 == 1 ? handle.Pop() : q.TryPop();
        if (item == nullptr) {
          std::this_thread::yield();
          continue;
        }
        ledger.Record(item, &last);
      }
    });
  }
  for (std::int64_t i = 0; i < count; ++i) {
    items[i].seq = i;
    const bool pending = i % 3 != 0;
    while (!(pending ? q.TryPushPending(&items[i]) : q.TryPush(&items[i]))) {
      q.FlushPending();  // a full ring with unpublished items would never drain
      std::this_thread::yield();
    }
    if (i % 7 == 0) q.FlushPending();
  }
  q.FlushPending();
  for (auto& t : threads) t.join();
  ledger.ExpectEachPoppedOnceInOrder();
  EXPECT_EQ(q.Count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Capacities, BoundedMcQueueStressTest, ::testing::Values(1, 8, 1024));

}  // namespace
}  // namespace fairsched
