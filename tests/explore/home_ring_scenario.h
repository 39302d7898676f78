// HomeRing (queues/home_ring.h) under the interleaving explorer: the owner pushes four items
// through a ring of two slots (so it reuses a claimed slot and grows) and pops, while two
// other threads take from the front (one half the ring, one up to three items, so a claim
// can reach items pushed after a growth). Shared by home_ring_explore_test.cc.
//
// Checks:
//   - every pushed item is returned exactly once (a claim that read a reused slot would
//     return a later item twice and lose the earlier one);
//   - each claim returns consecutive items, oldest first, and each claimer's items increase;
//   - each item's payload, written by the owner before its push, is read by its claimer
//     without a data race: the tail's release/acquire (and the ring pointer's, across a
//     growth) must order it.
#ifndef FAIRSCHED_TESTS_EXPLORE_HOME_RING_SCENARIO_H_
#define FAIRSCHED_TESTS_EXPLORE_HOME_RING_SCENARIO_H_

#include <string>

#include "queues/home_ring.h"
#include "sync/primitives.h"

namespace fairsched::testing {

struct RingItem {
  int id = 0;
  explore::Data<int> payload{0};  // written by the owner before the push
  explore::Data<int> taken{0};    // how many claims returned it
};

class HomeRingHarness {
 public:
  static constexpr int kItems = 4;

  // `items`: how many of the kItems the scenario pushes (the check covers those).
  explicit HomeRingHarness(int items = kItems) : items_pushed_(items) {
    for (int i = 0; i < kItems; ++i) items_[i].id = i;
  }

  // Owner.
  void Push(int i) {
    items_[i].payload.Write(100 + i);
    ring_.Push(&items_[i], static_cast<std::uint64_t>(i));
  }
  void Pop(int* last) {
    if (RingItem* item = ring_.Pop()) Claimed(&item, 1, last);
  }
  void PopAll(int* last) {
    while (RingItem* item = ring_.Pop()) Claimed(&item, 1, last);
  }
  // Any thread: one TakeFront of up to `max` items (at most half the ring when `half`).
  void Take(bool half, int max, int* last) {
    RingItem* out[kItems];
    const int n = ring_.TakeFront(HomeRing<RingItem>::kAnyStamp, max, half, out);
    Claimed(out, n, last);
  }

  // After every thread has been joined.
  void CheckEachTakenOnce() {
    for (int i = 0; i < items_pushed_; ++i) {
      RingItem& item = items_[i];
      const int taken = item.taken.Read();
      explore::Check(taken == 1, "item " + std::to_string(item.id) + " was returned " +
                                     std::to_string(taken) + " times");
    }
  }

 private:
  void Claimed(RingItem** out, int n, int* last) {
    for (int k = 0; k < n; ++k) {
      explore::Check(out[k] != nullptr, "a claim returned a slot that never held an item");
      RingItem& item = *out[k];
      explore::Check(k == 0 || item.id == out[0]->id + k,
                     "a claim did not return consecutive items oldest first");
      explore::Check(item.id > *last, "a claimer got item " + std::to_string(item.id) +
                                          " after item " + std::to_string(*last));
      *last = item.id;
      explore::Check(item.payload.Read() == 100 + item.id,
                     "item " + std::to_string(item.id) + " claimed before its payload");
      item.taken.Write(item.taken.Read() + 1);
    }
  }

  const int items_pushed_;
  HomeRing<RingItem> ring_{2};
  RingItem items_[kItems];
};

// The SC scenario. Owner: push 0, 1 (the ring is full), pop, push 2 (reuses item 0's slot
// if 0 was claimed, else grows), push 3; two takers meanwhile; then the owner pops the rest.
inline void HomeRingOwnerAndTwoTakers() {
  HomeRingHarness harness;
  explore::Thread half_taker([&] {
    int last = -1;
    harness.Take(true, 2, &last);
  });
  explore::Thread front_taker([&] {
    int last = -1;
    harness.Take(false, 3, &last);
  });
  int last = -1;
  harness.Push(0);
  harness.Push(1);
  harness.Pop(&last);
  harness.Push(2);
  harness.Push(3);
  half_taker.Join();
  front_taker.Join();
  harness.PopAll(&last);
  harness.CheckEachTakenOnce();
}

// The smaller scenario for the C++20 model (whose reads-from choices multiply the
// schedules): push 0, 1, 2 (the third grows the ring unless a claim came first) against one
// taker of half the ring; then the owner pops what is left.
inline void HomeRingGrowthAndOneTaker() {
  HomeRingHarness harness(3);
  explore::Thread taker([&] {
    int last = -1;
    harness.Take(true, 2, &last);
  });
  int last = -1;
  harness.Push(0);
  harness.Push(1);
  harness.Push(2);
  taker.Join();
  harness.PopAll(&last);
  harness.CheckEachTakenOnce();
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_HOME_RING_SCENARIO_H_
