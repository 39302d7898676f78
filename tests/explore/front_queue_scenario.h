// The front-queue scenario for the interleaving explorer, shared by the test of the real
// queue (mpsc_queue_explore_test.cc) and the planted-bug copies (planted_bugs_test.cc).
//
// Two producers push `kItemsPerProducer` items each while one consumer drains the queue the
// way the scheduler's sched-role does: take what is there; when the queue is found empty,
// sleep until a producer whose Push reported "the queue was empty" wakes it. Checked in
// every schedule:
//   - every item is taken exactly once, and each producer's items in push order;
//   - no lost wakeup: a consumer that sleeps is always woken while items remain (otherwise
//     the explorer reports a livelock: the consumer spins and nobody else can run);
//   - for a queue with PopAll (take everything at once), Push's "was empty" answer is exact:
//     each batch the consumer takes starts with the one item whose push found the queue
//     empty, and no other item of the batch did.
// The queue needs `bool Push(Item*)` and either `Item* PopAll()` (oldest first, linked
// through `next`) or `Item* Pop()` (one item or nullptr) with `bool IsEmpty()` (a consumer
// that got nullptr may sleep only if IsEmpty() is true: nullptr may also mean "a push is in
// flight"). The Pop form is checked without the exact "was empty" rule: such a queue may
// answer "was empty" for an item that is not the first of the consumer's batch.
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

template <typename Queue>
inline constexpr bool kTakesAll = requires(Queue& queue) {
  queue.PopAll();
};

// Everything the consumer can take now, oldest first. Every link is read before the
// caller looks at any item (an item may be pushed again as soon as it is handled).
template <typename Item, typename Queue>
std::vector<Item*> TakeBatch(Queue& queue) {
  std::vector<Item*> batch;
  if constexpr (kTakesAll<Queue>) {
    for (Item* item = queue.PopAll(); item != nullptr; item = item->next) batch.push_back(item);
  } else {
    for (Item* item = queue.Pop(); item != nullptr; item = queue.Pop()) batch.push_back(item);
  }
  return batch;
}

// Whether a consumer that found nothing may go to sleep now.
template <typename Queue>
bool MaySleep(Queue& queue) {
  if constexpr (kTakesAll<Queue>) {
    return true;  // PopAll's nullptr means empty
  } else {
    return queue.IsEmpty();
  }
}

template <typename Queue, int kItemsPerProducer = 2>
void TwoProducersOneConsumer() {
  constexpr int kProducers = 2;
  constexpr int kTotal = kProducers * kItemsPerProducer;
  Queue queue;
  QueueItem items[kProducers][kItemsPerProducer];
  // Written by each producer, read only after the joins: Push's answer per item.
  bool saw_empty[kProducers][kItemsPerProducer] = {};
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
      saw_empty[producer][seq] = queue.Push(&item);
      if (saw_empty[producer][seq]) wake.store(true);
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
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const QueueItem* item = batch[i];
      const bool known = item >= &items[0][0] && item < &items[0][0] + kTotal;
      explore::Check(known, "the consumer took a pointer that is not one of the items");
      const int p = item->producer;
      explore::Check(++taken[p][item->seq] == 1, "item " + std::to_string(p) + "." +
                                                     std::to_string(item->seq) + " taken twice");
      explore::Check(item->seq == next_seq[p]++,
                     "producer " + std::to_string(p) + "'s items out of order");
      if constexpr (kTakesAll<Queue>) {
        explore::Check(saw_empty[p][item->seq] == (i == 0),
                       i == 0 ? "the first item of a batch did not see the queue empty"
                              : "an item behind another one saw the queue empty");
      }
    }
  }
  for (int p = 0; p < kProducers; ++p) {
    explore::Check(next_seq[p] == kItemsPerProducer,
                   "producer " + std::to_string(p) + " lost items");
  }
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_FRONT_QUEUE_SCENARIO_H_
