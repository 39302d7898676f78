// The front-queue scenario for the interleaving explorer, shared by the test of the real
// queue (mpsc_queue_explore_test.cc) and the planted-bug copies (planted_bugs_test.cc).
//
// Two producers push `kItemsPerProducer` items each while one consumer drains the queue the
// way the scheduler's sched-role does: take what is there; when the queue is found empty,
// sleep until a producer whose Push reported "the queue was empty" wakes it. Checked in
// every schedule:
//   - every item is taken exactly once, and each producer's items in push order;
//   - no lost wakeup: a consumer that sleeps is always woken while items remain (otherwise
//     the explorer reports a livelock: the consumer spins and nobody else can run).
// The queue needs `bool Push(Item*)` (true: the queue was empty, so the consumer must be
// woken), `Item* Pop()` (one item or nullptr) and `bool IsEmpty()` (a consumer that got
// nullptr may sleep only if IsEmpty() is true: nullptr may also mean "a push is in flight").
#ifndef FAIRSCHED_TESTS_EXPLORE_FRONT_QUEUE_SCENARIO_H_
#define FAIRSCHED_TESTS_EXPLORE_FRONT_QUEUE_SCENARIO_H_

#include <string>
#include <vector>

#include "sync/primitives.h"

namespace fairsched::testing {

struct QueueItem {
  QueueItem* next = nullptr;
  int producer = 0;
  int seq = 0;
};

// Everything the consumer can take now, oldest first.
template <typename Item, typename Queue>
std::vector<Item*> TakeBatch(Queue& queue) {
  std::vector<Item*> batch;
  for (Item* item = queue.Pop(); item != nullptr; item = queue.Pop()) batch.push_back(item);
  return batch;
}

// Whether a consumer that found nothing may go to sleep now.
template <typename Queue>
bool MaySleep(Queue& queue) {
  return queue.IsEmpty();
}

template <typename Queue, int kItemsPerProducer = 2>
void TwoProducersOneConsumer() {
  constexpr int kProducers = 2;
  constexpr int kTotal = kProducers * kItemsPerProducer;
  Queue queue;
  QueueItem items[kProducers][kItemsPerProducer];
  Atomic<bool> wake{false};
  std::vector<std::vector<QueueItem*>> batches;  // consumer-only until joined
  explore::Thread consumer([&] {
    int taken = 0;
    while (taken < kTotal) {
      std::vector<QueueItem*> batch = TakeBatch<QueueItem>(queue);
      if (batch.empty()) {
        if (!MaySleep(queue)) {
          CpuRelax();  // a push is in flight: its item comes soon, unannounced
          continue;
        }
        // Found empty: sleep until a push into the empty queue wakes us.
        while (!wake.exchange(false)) CpuRelax();
        continue;
      }
      taken += static_cast<int>(batch.size());
      batches.push_back(std::move(batch));
    }
  });
  auto produce = [&](int producer) {
    for (int seq = 0; seq < kItemsPerProducer; ++seq) {
      QueueItem& item = items[producer][seq];
      item.producer = producer;
      item.seq = seq;
      if (queue.Push(&item)) wake.store(true);  // it was empty: wake the consumer
    }
  };
  explore::Thread first([&] { produce(0); });
  explore::Thread second([&] { produce(1); });
  consumer.Join();
  first.Join();
  second.Join();
  int taken[kProducers][kItemsPerProducer] = {};
  int next_seq[kProducers] = {};
  for (const std::vector<QueueItem*>& batch : batches) {
    for (const QueueItem* item : batch) {
      const bool known = item >= &items[0][0] && item < &items[0][0] + kTotal;
      explore::Check(known, "the consumer took a pointer that is not one of the items");
      const int p = item->producer;
      explore::Check(++taken[p][item->seq] == 1, "item " + std::to_string(p) + "." +
                                                     std::to_string(item->seq) + " taken twice");
      explore::Check(item->seq == next_seq[p]++,
                     "producer " + std::to_string(p) + "'s items out of order");
    }
  }
  for (int p = 0; p < kProducers; ++p) {
    explore::Check(next_seq[p] == kItemsPerProducer,
                   "producer " + std::to_string(p) + " lost items");
  }
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_FRONT_QUEUE_SCENARIO_H_
