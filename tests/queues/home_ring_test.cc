// HomeRing (queues/home_ring.h): the owner's FIFO push and pop across growth, PeekAhead,
// TakeFront's stamp bound, `max` and `half`, and a stress test in which the owner pushes
// and pops while other threads take prefixes: every item is returned exactly once, each
// claimer sees items in push order, and growth under concurrent takers loses nothing.
#include "queues/home_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/queues/queue_stress.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using testing::PopLedger;
using testing::StressItem;
using testing::Numbered;
using Ring = HomeRing<StressItem>;

TEST(HomeRingTest, OwnerPopsInPushOrderAcrossGrowth) {
  std::vector<StressItem> items = Numbered(1000);
  Ring ring(2);
  EXPECT_EQ(ring.Pop(), nullptr);
  for (int round = 0; round < 2; ++round) {  // the second round reuses the grown ring
    for (int i = 0; i < 1000; ++i) ring.Push(&items[i], i);
    for (int i = 0; i < 1000; ++i) {
      StressItem* got = ring.Pop();
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(got->seq, i);
    }
    EXPECT_EQ(ring.Pop(), nullptr);
    EXPECT_FALSE(ring.SeemsNonEmpty());
  }
}

TEST(HomeRingTest, PeekAheadNamesTheItemBehindTheHeadAcrossWrapsAndGrowth) {
  std::vector<StressItem> items = Numbered(40);
  Ring ring(4);
  EXPECT_EQ(ring.PeekAhead(0), nullptr);
  for (int i = 0; i < 3; ++i) ring.Push(&items[i], i);
  EXPECT_EQ(ring.PeekAhead(0), &items[0]);
  EXPECT_EQ(ring.PeekAhead(2), &items[2]);
  EXPECT_EQ(ring.PeekAhead(3), nullptr);
  ring.Pop();
  ring.Pop();
  for (int i = 3; i < 40; ++i) ring.Push(&items[i], i);  // wraps the first ring, then grows
  StressItem* taken[2];
  ASSERT_EQ(ring.TakeFront(Ring::kAnyStamp, 2, false, taken), 2);  // items 2 and 3
  for (int head = 4; head < 40; ++head) {
    EXPECT_EQ(ring.PeekAhead(1), head + 1 < 40 ? &items[head + 1] : nullptr);
    EXPECT_EQ(ring.Pop(), &items[head]);
  }
  EXPECT_EQ(ring.PeekAhead(0), nullptr);
}

TEST(HomeRingTest, InterleavedPushAndPopKeepFifoThroughWraps) {
  std::vector<StressItem> items = Numbered(100);
  Ring ring(4);
  int next_push = 0, next_pop = 0;
  // Three pushes and two pops per step: the live items grow slowly through many wraps and
  // growths.
  while (next_pop < 100) {
    for (int k = 0; k < 3 && next_push < 100; ++k, ++next_push) {
      ring.Push(&items[next_push], next_push);
    }
    for (int k = 0; k < 2 && next_pop < next_push; ++k, ++next_pop) {
      StressItem* got = ring.Pop();
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(got->seq, next_pop);
    }
  }
}

TEST(HomeRingTest, TakeFrontStopsAtTheStampBoundAtMaxAndAtHalf) {
  std::vector<StressItem> items = Numbered(6);
  Ring ring(8);
  for (int i = 0; i < 6; ++i) ring.Push(&items[i], 10 * (i + 1));  // stamps 10..60
  ASSERT_EQ(ring.HeadStamp(), 10u);
  StressItem* out[8] = {};
  EXPECT_EQ(ring.TakeFront(10, 8, false, out), 0) << "no stamp is below 10";
  ASSERT_EQ(ring.TakeFront(25, 8, false, out), 2) << "stamps 10 and 20";
  EXPECT_EQ(out[0]->seq, 0);
  EXPECT_EQ(out[1]->seq, 1);
  ASSERT_EQ(ring.HeadStamp(), 30u);
  ASSERT_EQ(ring.TakeFront(Ring::kAnyStamp, 1, false, out), 1) << "max";
  EXPECT_EQ(out[0]->seq, 2);
  ASSERT_EQ(ring.TakeFront(Ring::kAnyStamp, 8, true, out), 2) << "half of three, rounded up";
  EXPECT_EQ(out[0]->seq, 3);
  EXPECT_EQ(out[1]->seq, 4);
  EXPECT_EQ(ring.Pop()->seq, 5);
  EXPECT_FALSE(ring.HeadStamp().has_value());
  EXPECT_EQ(ring.TakeFront(Ring::kAnyStamp, 8, true, out), 0);
}

// The owner pushes every item (growing from a small ring) and pops some of them; `takers`
// threads take halves or single items with TakeFront. Every item is returned once; every
// claimer (the owner too) sees increasing numbers.
void RunOwnerAndTakers(int takers) {
  const std::int64_t count = testing::StressIterations(200'000);
  std::vector<StressItem> items = Numbered(count);
  Ring ring(4);
  PopLedger ledger(count);
  std::vector<std::thread> threads;
  for (int t = 0; t < takers; ++t) {
    threads.emplace_back([&, t] {
      std::int64_t last = -1;
      StressItem* out[16];  // max is 1, 8 or 15
      while (!ledger.Done()) {
        const int n = ring.TakeFront(Ring::kAnyStamp, 1 + 7 * t, t % 2 == 0, out);
        for (int i = 0; i < n; ++i) ledger.Record(out[i], &last);
        if (n == 0) std::this_thread::yield();
      }
    });
  }
  std::int64_t last = -1;
  for (std::int64_t i = 0; i < count; ++i) {
    ring.Push(&items[i], static_cast<std::uint64_t>(i));
    if (i % 3 == 0) {
      if (StressItem* got = ring.Pop()) ledger.Record(got, &last);
    }
  }
  while (StressItem* got = ring.Pop()) ledger.Record(got, &last);
  for (std::thread& thread : threads) thread.join();
  ledger.ExpectEachPoppedOnceInOrder();
  EXPECT_FALSE(ring.SeemsNonEmpty());
}

TEST(HomeRingStressTest, OneTakerAgainstTheOwner) { RunOwnerAndTakers(1); }
TEST(HomeRingStressTest, ThreeTakersAgainstTheOwner) { RunOwnerAndTakers(3); }

}  // namespace
}  // namespace fairsched
