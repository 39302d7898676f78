// Tests for //queues:mpsc_queue: single-thread semantics (FIFO, the "was empty" result,
// empty transitions through the stub, re-pushing popped items, a custom link member) and
// multi-threaded stress: exactly-once delivery with per-producer FIFO, cross-thread causal
// order, and the notify-only-on-empty wake-up protocol the scheduler relies on.
#include "queues/mpsc_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// Pops until Pop returns nullptr (single-threaded: nothing is ever in flight).
std::vector<int> PopAll(MpscQueue<Item>& q) {
  std::vector<int> out;
  while (Item* item = q.Pop()) out.push_back(item->seq);
  return out;
}

TEST(MpscQueueTest, EmptyQueuePopsNothing) {
  MpscQueue<Item> q;
  EXPECT_TRUE(q.IsEmpty());
  EXPECT_TRUE(q.IsEmpty(std::memory_order_seq_cst));
  EXPECT_EQ(q.Pop(), nullptr);
  EXPECT_EQ(q.Pop(), nullptr);
  EXPECT_TRUE(q.IsEmpty());
}

TEST(MpscQueueTest, PushReportsWhetherQueueWasEmpty) {
  MpscQueue<Item> q;
  Item a, b, c;
  EXPECT_TRUE(q.Push(&a));
  EXPECT_FALSE(q.IsEmpty());
  EXPECT_FALSE(q.Push(&b));
  EXPECT_EQ(q.Pop(), &a);
  EXPECT_FALSE(q.IsEmpty());
  EXPECT_FALSE(q.Push(&c));  // b is still queued
  EXPECT_EQ(q.Pop(), &b);
  EXPECT_EQ(q.Pop(), &c);
  EXPECT_TRUE(q.IsEmpty());
  EXPECT_TRUE(q.Push(&a));
  EXPECT_EQ(q.Pop(), &a);
  EXPECT_TRUE(q.IsEmpty());
}

TEST(MpscQueueTest, FifoAcrossEmptyTransitions) {
  MpscQueue<Item> q;
  Item items[8];
  for (int i = 0; i < 8; ++i) items[i].seq = i;
  for (int i = 0; i < 5; ++i) q.Push(&items[i]);
  EXPECT_EQ(q.Pop()->seq, 0);
  EXPECT_EQ(q.Pop()->seq, 1);
  for (int i = 5; i < 8; ++i) q.Push(&items[i]);
  EXPECT_EQ(PopAll(q), (std::vector<int>{2, 3, 4, 5, 6, 7}));
  // One item at a time: each pop takes the last item (the stub goes back in behind it).
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 8; ++i) {
      EXPECT_TRUE(q.Push(&items[i]));
      EXPECT_EQ(q.Pop(), &items[i]);
      EXPECT_TRUE(q.IsEmpty());
      EXPECT_EQ(q.Pop(), nullptr);
    }
  }
}

TEST(MpscQueueTest, PoppedItemCanBePushedAgainAtOnce) {
  MpscQueue<Item> q;
  Item a, b;
  a.seq = 1;
  b.seq = 2;
  q.Push(&a);
  q.Push(&b);
  Item* got = q.Pop();
  ASSERT_EQ(got, &a);
  EXPECT_FALSE(q.Push(got));  // behind b
  EXPECT_EQ(PopAll(q), (std::vector<int>{2, 1}));
  EXPECT_TRUE(q.IsEmpty());
}

struct TwoLinks {
  int seq = 0;
  TwoLinks* next = nullptr;
  TwoLinks* other = nullptr;
};

TEST(MpscQueueTest, CustomLinkMemberLetsAnItemBeInTwoQueues) {
  MpscQueue<TwoLinks> by_next;
  MpscQueue<TwoLinks, &TwoLinks::other> by_other;
  TwoLinks items[3];
  for (int i = 0; i < 3; ++i) {
    items[i].seq = i;
    by_next.Push(&items[i]);
    by_other.Push(&items[2 - i]);
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(by_next.Pop(), &items[i]);
    EXPECT_EQ(by_other.Pop(), &items[2 - i]);
  }
  EXPECT_TRUE(by_next.IsEmpty());
  EXPECT_TRUE(by_other.IsEmpty());
}

#ifndef NDEBUG
TEST(MpscQueueDeathTest, PushOfNullDiesInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MpscQueue<Item> q;
  EXPECT_DEATH(q.Push(nullptr), "Push of nullptr");
}
#endif

// A chain is one push: its items come out in chain order, after what was pushed before it.
TEST(MpscQueueTest, PushChainKeepsOrderAndReportsEmpty) {
  MpscQueue<Item> q;
  std::vector<Item> items(6);
  for (int i = 0; i < 6; ++i) items[i].seq = i;
  EXPECT_TRUE(q.Push(&items[0]));
  items[1].next = &items[2];
  items[2].next = &items[3];
  EXPECT_FALSE(q.PushChain(&items[1], &items[3]));
  EXPECT_FALSE(q.Push(&items[4]));
  EXPECT_EQ(PopAll(q), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(q.IsEmpty());
  EXPECT_TRUE(q.PushChain(&items[5], &items[5]));  // a one-item chain into an empty queue
  EXPECT_EQ(PopAll(q), (std::vector<int>{5}));
  // Popped items can form a new chain at once.
  items[3].next = &items[0];
  EXPECT_TRUE(q.PushChain(&items[3], &items[0]));
  EXPECT_EQ(PopAll(q), (std::vector<int>{3, 0}));
}

// Producers push chains of numbered items (of 1 to 8) while the consumer pops: every item
// arrives once, and each producer's items in order.
TEST(MpscQueueStressTest, ChainsFromManyProducersNoLossPerProducerFifo) {
  constexpr int kProducers = 3;
  const int per_producer = static_cast<int>(testing::StressIterations(60000));
  MpscQueue<Item> q;
  std::vector<std::vector<Item>> items(kProducers, std::vector<Item>(per_producer));
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      int i = 0;
      while (i < per_producer) {
        const int length = std::min(1 + i % 8, per_producer - i);
        for (int k = 0; k < length; ++k) {
          items[p][i + k].seq = p * per_producer + i + k;
          items[p][i + k].next = k + 1 < length ? &items[p][i + k + 1] : nullptr;
        }
        q.PushChain(&items[p][i], &items[p][i + length - 1]);
        i += length;
      }
    });
  }
  std::vector<int> last(kProducers, -1);
  int received = 0;
  while (received < kProducers * per_producer) {
    Item* item = q.Pop();
    if (item == nullptr) {
      std::this_thread::yield();
      continue;
    }
    const int producer = item->seq / per_producer;
    ASSERT_GT(item->seq, last[producer]) << "producer " << producer << " out of order";
    last[producer] = item->seq;
    ++received;
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(q.Pop(), nullptr);
  EXPECT_TRUE(q.IsEmpty());
}

// Producers push numbered items while the consumer pops; afterwards every item must have
// been seen exactly once and each producer's sequence numbers must arrive in order.
TEST(MpscQueueStressTest, ManyProducersNoLossNoDuplicatesPerProducerFifo) {
  testing::RunFrontQueueStress<MpscQueue<testing::StressItem>>(
      4, static_cast<int>(testing::StressIterations(200000)));
}

// X pushed on one thread, then (after a release/acquire handoff) Y on another: X pops first.
TEST(MpscQueueStressTest, CausalOrderAcrossThreads) {
  testing::RunFrontQueueCausalOrder<MpscQueue<testing::StressItem>>(
      static_cast<int>(testing::StressIterations(50000)));
}

// Notify only on "was empty", sleep only when Pop() == nullptr and IsEmpty(): never stuck.
TEST(MpscQueueStressTest, WakeOnlyOnEmptyTransitionLosesNothing) {
  testing::RunFrontQueueWakeProtocol<MpscQueue<testing::StressItem>>(
      3, static_cast<int>(testing::StressIterations(20000)));
}

// Runs `rounds` rounds of `pusher(thread)` on `pushers` long-lived threads, started
// together; `during(round)` runs on the calling thread at the same time (the consumer), and
// `after(round)` once every pusher has finished the round.
template <typename Pusher, typename During, typename After>
void RunRounds(int rounds, int pushers, Pusher pusher, During during, After after) {
  std::atomic<int> started{0};   // rounds started by the main thread
  std::atomic<int> finished{0};  // pusher-rounds finished
  std::vector<std::thread> threads;
  for (int t = 0; t < pushers; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
        while (started.load(std::memory_order_acquire) <= r) std::this_thread::yield();
        pusher(t);
        finished.fetch_add(1, std::memory_order_release);
      }
    });
  }
  for (int r = 0; r < rounds; ++r) {
    started.store(r + 1, std::memory_order_release);
    during(r);
    while (finished.load(std::memory_order_acquire) < (r + 1) * pushers) {
      std::this_thread::yield();
    }
    after(r);
  }
  for (auto& t : threads) t.join();
}

// Pops `n` items, waiting out pushes in flight.
std::vector<int> PopN(MpscQueue<Item>& q, std::size_t n) {
  std::vector<int> got;
  while (got.size() < n) {
    if (Item* item = q.Pop()) {
      got.push_back(item->seq);
    } else {
      std::this_thread::yield();
    }
  }
  return got;
}

// The "was empty" result is what the scheduler uses to decide whether to wake the consumer:
// after the consumer drains, exactly one of two racing pushes must see an empty queue. (With
// the consumer popping at the same time both may: the first item may be gone before the
// second push, or the consumer may be putting the stub back in; see the contract.)
TEST(MpscQueueStressTest, ExactlyOnePushAfterDrainSeesEmpty) {
  MpscQueue<Item> q;
  Item items[2];
  std::atomic<int> saw_empty{0};
  int bad_rounds = 0;
  RunRounds(
      static_cast<int>(testing::StressIterations(5000)), 2,
      [&](int t) { saw_empty.fetch_add(q.Push(&items[t]) ? 1 : 0); },
      [](int /*round*/) {},  // the consumer stays out of the race (see the next test)
      [&](int /*round*/) {
        if (saw_empty.exchange(0) != 1) ++bad_rounds;
        PopN(q, 2);
        if (!q.IsEmpty()) ++bad_rounds;
      });
  EXPECT_EQ(bad_rounds, 0);
}

// A push racing with the consumer taking the last item (the stub goes back in while the
// push exchanges the tail): whatever the interleaving, both items come out exactly once and
// in order, and the queue ends empty.
TEST(MpscQueueStressTest, PushRacingWithPopOfTheLastItem) {
  MpscQueue<Item> q;
  Item first, second;
  first.seq = 1;
  second.seq = 2;
  int bad_rounds = 0;
  q.Push(&first);
  RunRounds(
      static_cast<int>(testing::StressIterations(5000)), 1, [&](int) { q.Push(&second); },
      [&](int /*round*/) {
        if (PopN(q, 2) != std::vector<int>{1, 2} || !q.IsEmpty() || q.Pop() != nullptr) {
          ++bad_rounds;
        }
      },
      [&](int /*round*/) { q.Push(&first); });  // for the next round, before it starts
  EXPECT_EQ(bad_rounds, 0);
}

}  // namespace
}  // namespace fairsched
