// Tests for //queues:mcsp_queue, the ready queue: FIFO inside and across block boundaries,
// pending batches, consumers attaching late (they must still see older items), block
// recycling (steady state and a lagging consumer do not make the queue allocate), Reserve,
// lock counting, and multi-threaded stress tests for several block sizes, including
// consumers that detach and re-attach while the producer runs.
#include "queues/mcsp_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "queues/concepts.h"
#include "tests/queues/queue_stress.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using testing::StressItem;
using testing::Numbered;
using Queue = McspQueue<StressItem>;

static_assert(ReadyQueue<Queue, StressItem>);

TEST(McspQueueTest, EmptyPopsNothing) {
  Queue q;
  Queue::Consumer c(q);
  EXPECT_EQ(c.Pop(), nullptr);
  EXPECT_EQ(c.Pop(), nullptr);
  EXPECT_EQ(q.Count(), 0u);
  EXPECT_EQ(q.BlockSize(), Queue::kDefaultBlockSize);
}

TEST(McspQueueTest, OneItem) {
  Queue q;
  Queue::Consumer c(q);
  StressItem a;
  q.Push(&a);
  EXPECT_EQ(q.Count(), 1u);
  EXPECT_EQ(c.Pop(), &a);
  EXPECT_EQ(c.Pop(), nullptr);
  EXPECT_EQ(q.Count(), 0u);
}

TEST(McspQueueTest, FifoAcrossBlockBoundaries) {
  for (int block_size : {1, 2, 3, 4, 7}) {
    Queue q(block_size);
    Queue::Consumer a(q), b(q);
    auto items = Numbered(20);
    for (auto& it : items) q.Push(&it);
    EXPECT_EQ(q.Count(), 20u);
    for (int i = 0; i < 20; ++i) {
      StressItem* got = (i % 3 == 0 ? a : b).Pop();
      ASSERT_NE(got, nullptr) << "block " << block_size << " item " << i;
      EXPECT_EQ(got->seq, i) << "block " << block_size;
    }
    EXPECT_EQ(a.Pop(), nullptr);
    EXPECT_EQ(b.Pop(), nullptr);
    EXPECT_EQ(q.Count(), 0u);
  }
}

TEST(McspQueueTest, ExactlyFullBlockThenEmptyThenMore) {
  Queue q(4);
  Queue::Consumer c(q);
  auto items = Numbered(9);
  for (int i = 0; i < 4; ++i) q.Push(&items[i]);  // block exactly full, no successor yet
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.Pop(), &items[i]);
  EXPECT_EQ(c.Pop(), nullptr);  // exhausted but still the tail: just empty
  for (int i = 4; i < 9; ++i) q.Push(&items[i]);
  for (int i = 4; i < 9; ++i) EXPECT_EQ(c.Pop(), &items[i]);
  EXPECT_EQ(c.Pop(), nullptr);
}

TEST(McspQueueTest, PendingInvisibleUntilFlushAndPushPublishesThem) {
  Queue q(8);
  testing::ExpectPendingVisibleOnlyAfterFlush(q);
}

TEST(McspQueueTest, BatchCrossingBlockBoundaryPublishesFullBlockEarly) {
  // Documented deviation: the full block's part of the batch is published when the
  // producer moves on; the rest only at FlushPending.
  Queue q(4);
  Queue::Consumer c(q);
  auto items = Numbered(6);
  for (auto& it : items) q.PushPending(&it);
  EXPECT_EQ(q.Count(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.Pop(), &items[i]);
  EXPECT_EQ(c.Pop(), nullptr);
  q.FlushPending();
  EXPECT_EQ(c.Pop(), &items[4]);
  EXPECT_EQ(c.Pop(), &items[5]);
  EXPECT_EQ(c.Pop(), nullptr);
}

TEST(McspQueueTest, LateConsumerSeesOlderItems) {
  Queue q(4);
  auto items = Numbered(10);
  for (auto& it : items) q.Push(&it);  // no consumer yet: 3 blocks
  Queue::Consumer a(q);                // attaches at the oldest block
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.Pop(), &items[i]);
  Queue::Consumer b(q);  // block 0 is exhausted: attaches at block 1, where item 5 is
  EXPECT_EQ(b.Pop(), &items[5]);
  EXPECT_EQ(a.Pop(), &items[6]);
  EXPECT_EQ(b.Pop(), &items[7]);
  {
    Queue::Consumer c(q);
    EXPECT_EQ(c.Pop(), &items[8]);
  }  // detaching mid-queue loses nothing
  EXPECT_EQ(a.Pop(), &items[9]);
  EXPECT_EQ(b.Pop(), nullptr);
  Queue::Consumer d(q);  // everything popped: attaches at the tail
  EXPECT_EQ(d.Pop(), nullptr);
  StressItem last;
  q.Push(&last);
  EXPECT_EQ(d.Pop(), &last);
}

TEST(McspQueueTest, MovedConsumerKeepsItsPlace) {
  Queue q(2);
  auto items = Numbered(5);
  for (auto& it : items) q.Push(&it);
  Queue::Consumer a(q);
  EXPECT_EQ(a.Pop(), &items[0]);
  EXPECT_EQ(a.Pop(), &items[1]);
  EXPECT_EQ(a.Pop(), &items[2]);
  Queue::Consumer b(std::move(a));
  EXPECT_EQ(b.Pop(), &items[3]);
  std::vector<Queue::Consumer> many;
  many.emplace_back(q);
  many.emplace_back(q);  // may reallocate: moves the first
  EXPECT_EQ(many[0].Pop(), &items[4]);
  EXPECT_EQ(many[1].Pop(), nullptr);
}

TEST(McspQueueTest, SteadyStateRecyclesBlocks) {
  Queue q(4);
  Queue::Consumer a(q), b(q);
  auto items = Numbered(10);
  for (int round = 0; round < 1000; ++round) {
    for (auto& it : items) q.Push(&it);
    for (int i = 0; i < 10; ++i) ASSERT_EQ((i % 2 ? a : b).Pop(), &items[i]);
  }
  // 10 items span at most 4 blocks of 4; recycling keeps the total small and constant.
  EXPECT_LE(q.AllocatedBlocks(), 5u);
}

TEST(McspQueueTest, LaggingConsumerDoesNotPinTheChain) {
  Queue q(4);
  Queue::Consumer idle(q);  // sits in the first block and never pops during the loop
  Queue::Consumer busy(q);
  StressItem item;
  for (int i = 0; i < 10000; ++i) {
    q.Push(&item);
    ASSERT_EQ(busy.Pop(), &item);
  }
  // Blocks behind the idle consumer's block are recycled around it.
  EXPECT_LE(q.AllocatedBlocks(), 4u);
  EXPECT_EQ(idle.Pop(), nullptr);  // steps forward past exhausted blocks, finds nothing
  q.Push(&item);
  EXPECT_EQ(idle.Pop(), &item);
}

TEST(McspQueueTest, ReserveAvoidsAllocationDuringPushes) {
  Queue q(8);
  q.Reserve(100);
  const std::size_t allocated = q.AllocatedBlocks();
  EXPECT_GE(allocated, 1u + 13u);
  auto items = Numbered(100);
  for (auto& it : items) q.Push(&it);
  EXPECT_EQ(q.AllocatedBlocks(), allocated);
  EXPECT_EQ(q.Count(), 100u);
  Queue::Consumer c(q);
  for (auto& it : items) EXPECT_EQ(c.Pop(), &it);
}

TEST(McspQueueTest, LockTakenOncePerBlockNotPerItem) {
  Queue q(16);
  auto items = Numbered(160);
  Queue::Consumer c(q);                                         // 1 acquisition (attach)
  for (auto& it : items) q.Push(&it);                           // 9 links
  for (int i = 0; i < 160; ++i) ASSERT_EQ(c.Pop(), &items[i]);  // 9 steps
  EXPECT_EQ(c.Pop(), nullptr);
  EXPECT_EQ(c.LockStats().lock_taken, 1u + 9u);
  EXPECT_EQ(q.LockStats().lock_taken, 1u + 9u + 9u);
  EXPECT_EQ(q.LockStats().lock_contended, 0u);
}

class McspQueueStressTest : public ::testing::TestWithParam<int> {};

TEST_P(McspQueueStressTest, OneProducerManyConsumers) {
  testing::RunReadyQueueStress<Queue>(3, testing::StressIterations(300000), 8,
                                      static_cast<std::size_t>(GetParam()));
}

// Consumers repeatedly destroy their handle and attach a new one while the producer runs;
// a re-attached consumer starts at the oldest block with items. Nothing may be lost or
// popped twice, and each thread still sees increasing sequence numbers (every item older
// than one a thread popped was claimed before it).
TEST_P(McspQueueStressTest, ConsumersAttachAndDetachWhileRunning) {
  const std::int64_t count = testing::StressIterations(200000);
  Queue q(static_cast<std::size_t>(GetParam()));
  std::vector<StressItem> items(count);
  testing::PopLedger ledger(count);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::int64_t last = -1;
      while (!ledger.Done()) {
        Queue::Consumer consumer(q);
        for (int i = 0; i < 50 + 37 * t; ++i) {
          StressItem* item = consumer.Pop();
          if (item == nullptr) {
            std::this_thread::yield();
            break;
          }
          ledger.Record(item, &last);
        }
      }
    });
  }
  for (std::int64_t i = 0; i < count; ++i) {
    items[i].seq = i;
    if (i % 5 == 0) {
      q.Push(&items[i]);
    } else {
      q.PushPending(&items[i]);
      if (i % 7 == 0) q.FlushPending();
    }
  }
  q.FlushPending();
  for (auto& th : threads) th.join();
  ledger.ExpectEachPoppedOnceInOrder();
  EXPECT_EQ(q.Count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, McspQueueStressTest, ::testing::Values(1, 3, 64, 1024));

}  // namespace
}  // namespace fairsched
