// BinaryHeap: the scheduler's default wait queue. An intrusive binary min-heap of items by
// deadline; models the WaitQueue concept of queues/concepts.h.
//
// Single-threaded: only the sched-role touches it, so it has no synchronisation at all.
//
// Layout: a std::vector of entries {deadline, sequence, item}. The keys are copied into the
// array so sifting compares neighbouring array slots without touching the items' memory
// (one cache miss per level saved). Each item stores its current array index in the member
// `kIndex` (default `uint32_t wait_index`), kept up to date on every move, so `Remove(item)`
// finds it in O(1) and repairs the heap in O(log n). `kNotInWaitQueue` marks an item that is
// not in a heap.
//
// Ordering: by deadline, then by a 64-bit push sequence number, so items with equal
// deadlines come out in push order (FIFO), as the concept promises. The sequence never wraps
// in practice (2^64 pushes).
//
// Complexity: Push, PopExpired, PopAny, Remove O(log n); NextDeadline, Contains, Count O(1).
// Capacity: fewer than kNotInWaitQueue (2^32 - 1) items.
#ifndef FAIRSCHED_QUEUES_BINARY_HEAP_H_
#define FAIRSCHED_QUEUES_BINARY_HEAP_H_

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "queues/concepts.h"

namespace fairsched {

template <typename T, std::uint32_t T::*kIndex = &T::wait_index>
class BinaryHeap {
 public:
  BinaryHeap() = default;
  BinaryHeap(const BinaryHeap&) = delete;
  BinaryHeap& operator=(const BinaryHeap&) = delete;

  // Inserts `item` with `deadline`. The item must not be in any wait queue (its index must
  // be kNotInWaitQueue: initialise the member to that).
  void Push(T* item, WaitDeadline deadline) {
    assert(item->*kIndex == kNotInWaitQueue && "item is already in a wait queue");
    assert(entries_.size() < kNotInWaitQueue);
    entries_.push_back(Entry{deadline, next_sequence_++, item});
    SiftUp(static_cast<std::uint32_t>(entries_.size() - 1));
  }

  // Removes and returns the earliest item if its deadline is <= now; otherwise nullptr.
  // An item pushed with kNoDeadline never expires.
  T* PopExpired(WaitDeadline now) {
    if (entries_.empty() || entries_[0].deadline > now || entries_[0].deadline == kNoDeadline) {
      return nullptr;
    }
    return Pop();
  }

  // Removes and returns the earliest item regardless of its deadline; nullptr if empty.
  T* Pop() {
    if (entries_.empty()) return nullptr;
    T* item = entries_[0].item;
    RemoveAt(0);
    return item;
  }

  // WaitQueue's PopAny: the heap has no clock to move, so this is Pop.
  T* PopAny() { return Pop(); }

  // The earliest item without removing it; nullptr if empty.
  T* Top() const { return entries_.empty() ? nullptr : entries_[0].item; }

  // Takes a queued item out. The item must be in this heap.
  void Remove(T* item) {
    assert(Contains(item) && "Remove of an item that is not in this heap");
    RemoveAt(item->*kIndex);
  }

  // The earliest deadline (exact), or kNoDeadline when empty.
  WaitDeadline NextDeadline() const {
    return entries_.empty() ? kNoDeadline : entries_[0].deadline;
  }

  // Whether `item` is queued in this heap.
  bool Contains(const T* item) const {
    const std::uint32_t index = item->*kIndex;
    return index < entries_.size() && entries_[index].item == item;
  }

  std::size_t Count() const { return entries_.size(); }
  bool IsEmpty() const { return entries_.empty(); }

  // Pre-allocates room for `n` items so pushes up to that size do not allocate.
  void Reserve(std::size_t n) { entries_.reserve(n); }

 private:
  struct Entry {
    WaitDeadline deadline;
    std::uint64_t sequence;  // push order; breaks deadline ties FIFO
    T* item;
  };

  static bool Before(const Entry& a, const Entry& b) {
    return a.deadline < b.deadline || (a.deadline == b.deadline && a.sequence < b.sequence);
  }

  void Place(std::uint32_t index, const Entry& entry) {
    entries_[index] = entry;
    entry.item->*kIndex = index;
  }

  // Removes the entry at `index`: the last entry fills the hole and is sifted into place.
  void RemoveAt(std::uint32_t index) {
    entries_[index].item->*kIndex = kNotInWaitQueue;
    const Entry last = entries_.back();
    entries_.pop_back();
    if (index == entries_.size()) return;  // removed the last slot itself
    // The moved entry may belong above (if it beats the parent) or below the hole.
    if (index > 0 && Before(last, entries_[Parent(index)])) {
      entries_[index] = last;
      SiftUp(index);
    } else {
      entries_[index] = last;
      SiftDown(index);
    }
  }

  static std::uint32_t Parent(std::uint32_t index) { return (index - 1) / 2; }

  // Moves entries_[index] up until its parent is not after it. Uses a hole instead of swaps.
  void SiftUp(std::uint32_t index) {
    const Entry moving = entries_[index];
    while (index > 0) {
      const std::uint32_t parent = Parent(index);
      if (!Before(moving, entries_[parent])) break;
      Place(index, entries_[parent]);
      index = parent;
    }
    Place(index, moving);
  }

  // Moves entries_[index] down until no child is before it.
  void SiftDown(std::uint32_t index) {
    const Entry moving = entries_[index];
    const std::size_t size = entries_.size();
    while (true) {
      std::size_t child = 2 * std::size_t{index} + 1;
      if (child >= size) break;
      if (child + 1 < size && Before(entries_[child + 1], entries_[child])) ++child;
      if (!Before(entries_[child], moving)) break;
      Place(index, entries_[child]);
      index = static_cast<std::uint32_t>(child);
    }
    Place(index, moving);
  }

  std::vector<Entry> entries_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_BINARY_HEAP_H_
