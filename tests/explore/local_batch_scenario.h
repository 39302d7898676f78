// The LocalBatch ring (sched/internal/local_batch.h) under the interleaving explorer: one
// owner appends and publishes its own batch (TakeAsOwner), two other threads take it over
// (TakeOver) at the same time. Capacity 2, so the owner fills the ring, publishes and
// refills it within a few steps, and a taker's head can be stale by more than a whole ring
// (Take's clamp; reachable under the C++20 model only, see local_batch_explore_test.cc).
// Shared by local_batch_explore_test.cc (the shipped header) and the
// local_batch_seeded_*_test.cc files (scratch copies with one seeded bug, included first).
//
// Every take is recorded as one publication: a taker's publish callback, or the owner's
// own publication right after TakeAsOwner returns (as the scheduler's owner pushes the
// items it took into the front queue). Each publication draws the next number of a global
// publication sequence (an atomic fetch_add inside the callback, or by the owner after
// TakeAsOwner), and each item remembers the publication it came out in. Checks:
//   - no take returns more than Capacity items (the owner takes into a buffer with room
//     for more, so a larger count would be seen, not written past an array);
//   - each batch comes out oldest first (consecutive items in append order);
//   - every appended item is taken exactly once;
//   - per-owner order: publications follow append order (an item appended later never
//     comes out in an earlier publication). In particular what the owner publishes after a
//     TakeAsOwner follows everything the takers took before it.
// Item records are explore::Data: every write must be ordered before the final reads.
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

  // Owner: appends item `i` (publishing the batch first when it is full, as the scheduler
  // does).
  void Append(int i) {
    if (batch_.IsFull()) OwnerPublish();
    batch_.Append(&items_[i]);
  }
  // Owner: takes its batch and publishes what it got.
  void OwnerPublish() {
    BatchItem* out[2 * kCapacity + 2] = {};  // room beyond Capacity: a larger count is seen
    const std::uint32_t count = batch_.TakeAsOwner(out);
    if (count > 0) Record(out, count);
  }
  // Another thread: one take-over.
  void TakeOver() {
    batch_.TakeOver([this](BatchItem** taken, std::uint32_t count) { Record(taken, count); });
  }

  // After every thread has been joined: every item taken once, publications in append order.
  void CheckAllTakenInOrder() {
    for (int i = 0; i < kItems; ++i) {
      const int taken = items_[i].taken.Read();
      explore::Check(taken == 1, "item " + std::to_string(i) + " was taken " +
                                     std::to_string(taken) + " times");
    }
    for (int i = 0; i + 1 < kItems; ++i) {
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
// (and whenever the ring is full), while two threads each take the batch over once; then
// the owner joins them and publishes the rest.
inline void LocalBatchTakeOvers() {
  LocalBatchHarness harness;
  explore::Thread taker1([&] { harness.TakeOver(); });
  explore::Thread taker2([&] { harness.TakeOver(); });
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

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_LOCAL_BATCH_SCENARIO_H_
