// Tests for //queues:mpsc_queue: single-thread semantics and a multi-producer stress test
// that checks every item arrives exactly once and each producer's items stay in order.
#include "queues/mpsc_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "queues/concepts.h"
#include "tests/queues/queue_stress.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

struct Item {
  int seq = 0;
  Item* next = nullptr;
};

static_assert(FrontQueue<MpscQueue<Item>, Item>);

std::vector<int> Seqs(Item* list) {
  std::vector<int> out;
  for (; list != nullptr; list = list->next) out.push_back(list->seq);
  return out;
}

TEST(MpscQueueTest, EmptyQueuePopsNothing) {
  MpscQueue<Item> q;
  EXPECT_TRUE(q.IsEmpty());
  EXPECT_EQ(q.PopAll(), nullptr);
  EXPECT_EQ(q.PopAllReversed(), nullptr);
}

TEST(MpscQueueTest, PushReportsWhetherQueueWasEmpty) {
  MpscQueue<Item> q;
  Item a, b, c;
  EXPECT_TRUE(q.Push(&a));
  EXPECT_FALSE(q.Push(&b));
  EXPECT_FALSE(q.IsEmpty());
  q.PopAll();
  EXPECT_TRUE(q.IsEmpty());
  EXPECT_TRUE(q.Push(&c));
}

TEST(MpscQueueTest, PopAllIsFifoAndReversedIsLifo) {
  MpscQueue<Item> q;
  Item items[5];
  for (int i = 0; i < 5; ++i) {
    items[i].seq = i;
    q.Push(&items[i]);
  }
  EXPECT_EQ(Seqs(q.PopAll()), (std::vector<int>{0, 1, 2, 3, 4}));
  for (int i = 0; i < 5; ++i) q.Push(&items[i]);
  EXPECT_EQ(Seqs(q.PopAllReversed()), (std::vector<int>{4, 3, 2, 1, 0}));
  EXPECT_EQ(q.PopAll(), nullptr);
}

TEST(MpscQueueTest, OneItemRoundTrip) {
  MpscQueue<Item> q;
  Item a;
  a.seq = 7;
  q.Push(&a);
  Item* got = q.PopAll();
  ASSERT_EQ(got, &a);
  EXPECT_EQ(got->next, nullptr);
}

TEST(MpscQueueTest, ReverseChainOfEmptyAndSingle) {
  EXPECT_EQ(ReverseChain<Item>(nullptr), nullptr);
  Item a;
  EXPECT_EQ(ReverseChain<Item>(&a), &a);
}

// Producers push numbered items while the consumer drains; afterwards every item must have
// been seen exactly once and each producer's sequence numbers must arrive increasing.
TEST(MpscQueueStressTest, ManyProducersNoLossNoDuplicatesPerProducerFifo) {
  testing::RunFrontQueueStress<MpscQueue<testing::StressItem>>(
      4, static_cast<int>(testing::StressIterations(200000)));
}

// The "was empty" result is what the scheduler uses to decide whether to wake the consumer:
// after the consumer drains, exactly one of the following pushes must see an empty queue.
TEST(MpscQueueStressTest, ExactlyOnePushAfterDrainSeesEmpty) {
  const int rounds = static_cast<int>(testing::StressIterations(20000));
  MpscQueue<Item> q;
  std::vector<Item> items(2);
  for (int r = 0; r < rounds; ++r) {
    std::atomic<int> saw_empty{0};
    std::thread a([&] { saw_empty += q.Push(&items[0]); });
    std::thread b([&] { saw_empty += q.Push(&items[1]); });
    a.join();
    b.join();
    ASSERT_EQ(saw_empty.load(), 1);
    ASSERT_EQ(Seqs(q.PopAll()).size(), 2u);
  }
}

}  // namespace
}  // namespace fairsched
