// Tests for //queues:binary_heap: ordering by deadline, FIFO among equal deadlines, the
// stored index, Remove of the top / last / a middle item, and a randomized comparison with
// a reference model (std::multimap keyed by (deadline, push order)).
#include "queues/binary_heap.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "queues/concepts.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

struct Item {
  int id = 0;
  std::uint32_t wait_index = kNotInWaitQueue;
};

static_assert(WaitQueue<BinaryHeap<Item>, Item>);

const WaitDeadline kT0 = WaitDeadline{} + std::chrono::hours(1);
WaitDeadline At(int ms) { return kT0 + std::chrono::milliseconds(ms); }

std::vector<int> DrainIds(BinaryHeap<Item>& heap, WaitDeadline now) {
  std::vector<int> ids;
  while (Item* it = heap.PopExpired(now)) {
    EXPECT_EQ(it->wait_index, kNotInWaitQueue);
    ids.push_back(it->id);
  }
  return ids;
}

TEST(BinaryHeapTest, Empty) {
  BinaryHeap<Item> heap;
  EXPECT_TRUE(heap.IsEmpty());
  EXPECT_EQ(heap.Count(), 0u);
  EXPECT_EQ(heap.NextDeadline(), kNoDeadline);
  EXPECT_EQ(heap.PopExpired(WaitDeadline::max()), nullptr);
  EXPECT_EQ(heap.Pop(), nullptr);
  EXPECT_EQ(heap.Top(), nullptr);
  Item a;
  EXPECT_FALSE(heap.Contains(&a));
}

TEST(BinaryHeapTest, OneItemNotEarly) {
  BinaryHeap<Item> heap;
  Item a{1};
  heap.Push(&a, At(10));
  EXPECT_TRUE(heap.Contains(&a));
  EXPECT_EQ(heap.NextDeadline(), At(10));
  EXPECT_EQ(heap.PopExpired(At(9)), nullptr);
  EXPECT_EQ(heap.PopExpired(At(10)), &a);  // deadline <= now
  EXPECT_FALSE(heap.Contains(&a));
  EXPECT_TRUE(heap.IsEmpty());
}

TEST(BinaryHeapTest, OrdersByDeadline) {
  BinaryHeap<Item> heap;
  std::vector<Item> items(6);
  const int deadlines[] = {50, 10, 40, 20, 60, 30};
  for (int i = 0; i < 6; ++i) {
    items[i].id = deadlines[i];
    heap.Push(&items[i], At(deadlines[i]));
  }
  EXPECT_EQ(DrainIds(heap, At(35)), (std::vector<int>{10, 20, 30}));
  EXPECT_EQ(heap.NextDeadline(), At(40));
  EXPECT_EQ(DrainIds(heap, At(100)), (std::vector<int>{40, 50, 60}));
}

TEST(BinaryHeapTest, EqualDeadlinesKeepPushOrder) {
  BinaryHeap<Item> heap;
  std::vector<Item> items(100);
  for (int i = 0; i < 100; ++i) {
    items[i].id = i;
    // Interleave a later deadline so the heap really reshuffles.
    heap.Push(&items[i], At(i % 2 == 0 ? 5 : 7));
  }
  std::vector<int> expected;
  for (int i = 0; i < 100; i += 2) expected.push_back(i);
  for (int i = 1; i < 100; i += 2) expected.push_back(i);
  EXPECT_EQ(DrainIds(heap, At(7)), expected);
}

TEST(BinaryHeapTest, RemoveTopLastAndMiddle) {
  BinaryHeap<Item> heap;
  std::vector<Item> items(7);
  for (int i = 0; i < 7; ++i) {
    items[i].id = i;
    heap.Push(&items[i], At(i * 10));
  }
  heap.Remove(&items[0]);  // the top
  EXPECT_EQ(items[0].wait_index, kNotInWaitQueue);
  EXPECT_EQ(heap.NextDeadline(), At(10));
  heap.Remove(&items[6]);  // the last array slot (pushed last, largest: stays a leaf)
  heap.Remove(&items[3]);  // a middle item
  EXPECT_FALSE(heap.Contains(&items[3]));
  EXPECT_EQ(heap.Count(), 4u);
  EXPECT_EQ(DrainIds(heap, At(1000)), (std::vector<int>{1, 2, 4, 5}));
  // Removed items can be pushed again.
  heap.Push(&items[3], At(1));
  EXPECT_EQ(heap.Pop(), &items[3]);
}

TEST(BinaryHeapTest, RemoveWhereReplacementMustSiftUp) {
  // Heap (by deadline): 0 / 100 1 / 101 102 2 3. Removing 101's sibling subtree root forces
  // the last element (small) to move up instead of down.
  BinaryHeap<Item> heap;
  std::vector<Item> items(7);
  const int deadlines[] = {0, 100, 1, 101, 102, 2, 3};
  for (int i = 0; i < 7; ++i) {
    items[i].id = deadlines[i];
    heap.Push(&items[i], At(deadlines[i]));
  }
  heap.Remove(&items[3]);  // 101, a child of 100; the last element (3) replaces it
  EXPECT_EQ(DrainIds(heap, At(1000)), (std::vector<int>{0, 1, 2, 3, 100, 102}));
}

TEST(BinaryHeapTest, IndexesStayConsistent) {
  BinaryHeap<Item> heap;
  std::vector<Item> items(64);
  std::mt19937 rng(7);
  for (int i = 0; i < 64; ++i) heap.Push(&items[i], At(static_cast<int>(rng() % 20)));
  for (int i = 0; i < 64; i += 3) heap.Remove(&items[i]);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(heap.Contains(&items[i]), i % 3 != 0);
}

// Random pushes, pops and removes checked step by step against a reference model.
TEST(BinaryHeapStressTest, MatchesReferenceModel) {
  const int steps = static_cast<int>(testing::StressIterations(200000, 4));
  constexpr int kItems = 512;
  std::vector<Item> items(kItems);
  for (int i = 0; i < kItems; ++i) items[i].id = i;
  BinaryHeap<Item> heap;
  std::map<std::pair<WaitDeadline, std::uint64_t>, int> model;
  std::vector<std::map<std::pair<WaitDeadline, std::uint64_t>, int>::iterator> where(kItems);
  std::uint64_t seq = 0;
  std::mt19937 rng(42);
  int now_ms = 0;
  for (int step = 0; step < steps; ++step) {
    const int op = static_cast<int>(rng() % 4);
    Item& it = items[rng() % kItems];
    if (op <= 1) {
      if (heap.Contains(&it)) continue;
      const int d = now_ms + static_cast<int>(rng() % 50);
      heap.Push(&it, At(d));
      where[it.id] = model.emplace(std::make_pair(At(d), seq++), it.id).first;
    } else if (op == 2) {
      if (!heap.Contains(&it)) continue;
      heap.Remove(&it);
      model.erase(where[it.id]);
    } else {
      now_ms += static_cast<int>(rng() % 5);
      while (Item* got = heap.PopExpired(At(now_ms))) {
        ASSERT_FALSE(model.empty());
        ASSERT_EQ(got->id, model.begin()->second);
        model.erase(model.begin());
      }
      ASSERT_TRUE(model.empty() || model.begin()->first.first > At(now_ms));
    }
    ASSERT_EQ(heap.Count(), model.size());
    ASSERT_EQ(heap.NextDeadline(), model.empty() ? kNoDeadline : model.begin()->first.first);
  }
}

}  // namespace
}  // namespace fairsched
