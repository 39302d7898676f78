// The LocalBatch ring (sched/internal/local_batch.h) under the interleaving explorer: one
// owner appends and publishes its own batch (PublishAsOwner) while other threads take it
// over: idle ones that give up when a publication is under way (TryTakeOver), and a busy
// one enforcing the order bound (TakeOverStaleBatches: if the batch does not look empty,
// TakeOver, which waits for a publication under way). Capacity 2, so the owner fills the
// ring, publishes and refills it within a few steps. Shared by local_batch_explore_test.cc
// (the shipped header) and the local_batch_seeded_*_test.cc files (scratch copies with one
// seeded bug, included first).
//
// Every publication is recorded inside its `publish` callback (where the scheduler pushes
// the items into the front queue). Each draws the next number of a global publication
// sequence (an atomic fetch_add), and each item remembers the publication it came out in.
// Checks:
//   - no publication has more than Capacity items;
//   - each batch comes out oldest first (consecutive items in append order);
//   - every appended item is published exactly once;
//   - per-owner order: publications follow append order (an item appended later never
//     comes out in an earlier publication). In particular what the owner publishes
//     follows everything the takers published before it;
//   - nothing hidden (the order bound; LookerFindsNothingHidden): a looker that sees the
//     batch empty, or whose TakeOver returns, finds every item appended before its look
//     published. An item that a publisher has removed from the batch but not yet published
//     (a publisher descheduled in between) would be invisible to every other worker, which
//     would go on starting later tasks for as long as that publisher is off the core.
// Item records are explore::Data: every write must be ordered before the reads that
// check it (a read without that order is reported as a data race).
#ifndef FAIRSCHED_TESTS_EXPLORE_LOCAL_BATCH_SCENARIO_H_
#define FAIRSCHED_TESTS_EXPLORE_LOCAL_BATCH_SCENARIO_H_

#include <cstdint>
#include <string>

#include "sched/internal/local_batch.h"
#include "sync/primitives.h"

namespace fairsched::testing {

struct BatchItem {
  int id = 0;
  explore::Data<int> taken{0};         // how many takes returned it
  explore::Data<int> publication{-1};  // the publication it came out in
};

class LocalBatchHarness {
 public:
  static constexpr std::uint32_t kCapacity = 2;
  static constexpr int kItems = 4;
  using Batch = internal::LocalBatch<BatchItem, kCapacity>;

  LocalBatchHarness() {
    for (int i = 0; i < kItems; ++i) items_[i].id = i;
  }

  // The `publish` callback every publication gets: records it (see Record).
  auto Recorder() {
    return [this](BatchItem** taken, std::uint32_t count) { Record(taken, count); };
  }

  // Owner: appends item `i` (publishing the batch first when it is full, as the scheduler
  // does).
  void Append(int i) {
    if (batch_.IsFull()) OwnerPublish();
    batch_.Append(&items_[i]);
  }
  // Owner: publishes its batch.
  void OwnerPublish() {
    batch_.PublishAsOwner(Recorder());
  }
  // An idle thread: one take-over, given up if a publication is under way.
  void TryTakeOver() {
    batch_.TryTakeOver(Recorder());
  }
  // A busy worker's look at the end of its execution batch (TakeOverStaleBatches, with the
  // batch taken to be stale): if the batch does not look empty, take it over, waiting for a
  // publication under way. Then every item appended before the look (items 0 .. `appended`
  // - 1; the caller's thread was started after their appends) must be published.
  void LookAndTakeOver(int appended) {
    if (!batch_.LooksEmpty()) {
      batch_.TakeOver(Recorder());
    }
    for (int i = 0; i < appended; ++i) {
      explore::Check(items_[i].publication.Read() >= 0,
                     "item " + std::to_string(i) +
                         " is hidden: out of the batch but not published, after a look "
                         "that found nothing to wait for");
    }
  }

  // After every thread has been joined: each of the first `appended` items published once,
  // publications in append order.
  void CheckAllTakenInOrder(int appended = kItems) {
    for (int i = 0; i < appended; ++i) {
      const int taken = items_[i].taken.Read();
      explore::Check(taken == 1, "item " + std::to_string(i) + " was taken " +
                                     std::to_string(taken) + " times");
    }
    for (int i = 0; i + 1 < appended; ++i) {
      const int earlier = items_[i].publication.Read();
      const int later = items_[i + 1].publication.Read();
      explore::Check(earlier <= later,
                     "per-owner order: item " + std::to_string(i + 1) + " came out in publication " +
                         std::to_string(later) + ", before item " + std::to_string(i) +
                         " (appended earlier) in publication " + std::to_string(earlier));
    }
  }

 private:
  void Record(BatchItem** taken, std::uint32_t count) {
    explore::Check(count <= kCapacity, "a take returned " + std::to_string(count) +
                                           " items, more than Capacity (" +
                                           std::to_string(kCapacity) + ")");
    // Relaxed: a read-modify-write always reads the newest value, so the numbers follow
    // the order in which publications happen; what is published needs no ordering here.
    const int publication = publications_.fetch_add(1, std::memory_order_relaxed);
    for (std::uint32_t k = 0; k < count; ++k) {
      explore::Check(taken[k]->id == taken[0]->id + static_cast<int>(k),
                     "a batch did not come out oldest first: item " + std::to_string(taken[k]->id) +
                         " at position " + std::to_string(k) + " after item " +
                         std::to_string(taken[0]->id));
      taken[k]->taken.Write(taken[k]->taken.Read() + 1);
      taken[k]->publication.Write(publication);
    }
  }

  Batch batch_;
  BatchItem items_[kItems];
  Atomic<int> publications_{0};
};

// The owner appends 4 items through a ring of 2, publishing after the second and the third
// (and whenever the ring is full), while two idle threads each try one take-over; then the
// owner joins them and publishes the rest.
inline void LocalBatchTakeOvers() {
  LocalBatchHarness harness;
  explore::Thread taker1([&] { harness.TryTakeOver(); });
  explore::Thread taker2([&] { harness.TryTakeOver(); });
  harness.Append(0);
  harness.Append(1);
  harness.OwnerPublish();
  harness.Append(2);
  harness.OwnerPublish();
  harness.Append(3);
  taker1.Join();
  taker2.Join();
  harness.OwnerPublish();
  harness.CheckAllTakenInOrder();
}

// The order bound's look: the owner has appended items 0 and 1; an idle thread tries a
// take-over, a busy one looks (LookAndTakeOver), while the owner appends item 2 and
// publishes. The look must never find items 0 and 1 unpublished.
inline void LocalBatchLookerFindsNothingHidden() {
  LocalBatchHarness harness;
  harness.Append(0);
  harness.Append(1);
  explore::Thread taker([&] { harness.TryTakeOver(); });
  explore::Thread looker([&] { harness.LookAndTakeOver(2); });
  harness.Append(2);
  harness.OwnerPublish();
  taker.Join();
  looker.Join();
  harness.OwnerPublish();
  harness.CheckAllTakenInOrder(3);
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_LOCAL_BATCH_SCENARIO_H_
