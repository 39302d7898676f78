// TimerWheel: a hierarchical timing wheel, the alternative wait-queue backend for very many
// timers. Same interface as BinaryHeap (models the WaitQueue concept of queues/concepts.h).
//
// Single-threaded: only the sched-role touches it.
//
// Time is cut into ticks (`tick`, default 1 ms; a deadline's tick is floor(deadline / tick)
// on the clock's epoch). The wheel has `kLevels` levels (default 4) of 64 slots. Level k
// slot s holds the timers whose tick agrees with the wheel's current tick `cur` above digit
// k (digits are 6 bits) and has digit k equal to s > digit k of `cur`: level 0 covers the
// next 64 ticks one slot each, level 1 the next 64 * 64, and so on (4 levels x 1 ms =
// 4.6 hours). Timers farther out wait in an overflow slot that is re-sorted each time `cur`
// crosses a top-level rotation. A per-level 64-bit occupancy mask finds the next non-empty
// slot with one count-trailing-zeros, so idle stretches are skipped in O(levels), not
// tick by tick.
//
// Each item stores, in the member `kIndex` (default `uint32_t wait_index`), the index of an
// internal node; nodes live in one vector (with a free list). A slot is a vector of node
// indices and every node remembers its position in its slot, so removal swaps the last
// entry into the hole. (A slot is a bag, not a FIFO: order is restored by the due heap,
// below.) Vectors rather than intrusive linked lists because cascading walks a whole slot:
// over an index array the node loads are independent and can be prefetched, while a linked
// list makes every cache miss wait for the previous one (measured: the list version spent
// ~70% of a 10^6-timer expiry in that pointer chase). So:
//   Push    O(1)  (append to a slot; O(log d) if the deadline's tick is already due)
//   Remove  O(1)  (swap-remove by stored position; O(log d) if the timer is already due)
//   PopExpired: amortised O(levels) cascading per timer over its life, plus O(log d),
// where d is the number of due timers (see below), usually small.
//
// Due timers and exact order: when `cur` reaches a timer's tick, the timer moves to a small
// binary min-heap of "due" nodes ordered by (deadline, push sequence). `PopExpired(now)`
// first advances `cur` to now's tick (cascading higher-level slots down as their start tick
// is reached), then pops the heap's top if its deadline <= now. Everything still in the
// wheel has a later tick, hence a later deadline, than everything in the due heap, so
// timers come out in exactly the heap's order: by deadline, and equal deadlines in push
// order (the sequence number survives cascading). Never early: an item leaves only after an
// exact `deadline <= now` comparison. Eventually: once `now` reaches a deadline, the
// deadline's tick is <= now's tick and the timer is in the due heap.
//
// `NextDeadline()` is exact while the due heap is not empty; otherwise it is the start of
// the next non-empty slot (or overflow rotation), which is at or before the earliest
// deadline, as the concept allows. A caller sleeping until then may wake up to `kLevels`
// times early for a far timer as it cascades down; each wake-up costs one PopExpired.
//
// Timers without a deadline (kNoDeadline: a wait only a wakeup ends) never enter the wheel:
// they sit in an unordered bag of their own, so they cost no cascading and never expire.
// `PopAny()` (the scheduler's Stop, which wakes every waiting task) takes the due heap's top,
// else a timer from the lowest occupied slot, else from the overflow slot, else from the
// bag, without moving `cur`: the wheel stays on the real clock, and a scheduler restarted
// after Stop keeps its timers on time.
//
// Limits: fewer than 2^32 - 1 queued timers. Deadlines before the clock's epoch count as
// tick 0 (they are always due). `now` passed to PopExpired must be a time the clock has
// reached: a later one moves `cur` ahead of the clock, and every timer pushed afterwards
// before that time is due at once.
#ifndef FAIRSCHED_QUEUES_TIMER_WHEEL_H_
#define FAIRSCHED_QUEUES_TIMER_WHEEL_H_

#include <bit>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "queues/concepts.h"

namespace fairsched {

template <typename T, std::uint32_t T::*kIndex = &T::wait_index, int kLevels = 4>
class TimerWheel {
  static_assert(kLevels >= 1 && kLevels <= 10, "6 bits per level, 64-bit ticks");

 public:
  static constexpr int kSlotBits = 6;
  static constexpr int kSlots = 1 << kSlotBits;
  static constexpr std::chrono::nanoseconds kDefaultTick = std::chrono::milliseconds(1);

  // `tick` is the slot granularity. `start` is where the wheel's clock begins; deadlines
  // before it are simply due at once.
  explicit TimerWheel(std::chrono::nanoseconds tick = kDefaultTick,
                      WaitDeadline start = WaitClock::now())
      : tick_ns_(tick.count() > 0 ? static_cast<std::uint64_t>(tick.count()) : 1),
        cur_(TickOf(start)) {}
  TimerWheel(const TimerWheel&) = delete;
  TimerWheel& operator=(const TimerWheel&) = delete;

  // Inserts `item` with `deadline`. The item must not be in any wait queue (its index member
  // must be kNotInWaitQueue).
  void Push(T* item, WaitDeadline deadline) {
    assert(item->*kIndex == kNotInWaitQueue && "item is already in a wait queue");
    const std::uint32_t node = NewNode();
    Node& n = nodes_[node];
    n.deadline = deadline;
    n.sequence = next_sequence_++;
    n.tick = TickOf(deadline);
    n.item = item;
    item->*kIndex = node;
    if (deadline == kNoDeadline) {
      n.where = kUnbounded;
      n.pos = static_cast<std::uint32_t>(unbounded_.size());
      unbounded_.push_back(node);
    } else {
      Place(node);
    }
    ++count_;
  }

  // Removes and returns the earliest item if its deadline is <= now (ties: push order);
  // otherwise nullptr.
  T* PopExpired(WaitDeadline now) {
    AdvanceTo(TickOf(now));
    if (due_.empty() || nodes_[due_[0]].deadline > now) return nullptr;
    const std::uint32_t node = due_[0];
    DueRemoveAt(0);
    return Release(node);
  }

  // Removes and returns some item whatever its deadline (see the file comment), or nullptr
  // when empty. Does not move the wheel's clock.
  T* PopAny() {
    if (!due_.empty()) {
      const std::uint32_t node = due_[0];
      DueRemoveAt(0);
      return Release(node);
    }
    for (int level = 0; level < kLevels; ++level) {
      if (occupied_[level] == 0) continue;
      const auto slot = static_cast<std::uint32_t>(std::countr_zero(occupied_[level]));
      return Release(UnlinkLast(static_cast<std::uint32_t>(level * kSlots) + slot));
    }
    if (!slots_[kOverflow].empty()) return Release(UnlinkLast(kOverflow));
    if (!unbounded_.empty()) {
      const std::uint32_t node = unbounded_.back();
      unbounded_.pop_back();
      return Release(node);
    }
    return nullptr;
  }

  // Takes a queued item out. The item must be in this wheel.
  void Remove(T* item) {
    assert(Contains(item) && "Remove of an item that is not in this wheel");
    const std::uint32_t node = item->*kIndex;
    if (nodes_[node].where == kDue) {
      DueRemoveAt(nodes_[node].pos);
    } else if (nodes_[node].where == kUnbounded) {
      const std::uint32_t last = unbounded_.back();
      unbounded_[nodes_[node].pos] = last;
      nodes_[last].pos = nodes_[node].pos;
      unbounded_.pop_back();
    } else {
      Unlink(node);
    }
    Release(node);
  }

  // A time at or before the earliest deadline (exact when a timer is due), or kNoDeadline.
  WaitDeadline NextDeadline() const {
    if (!due_.empty()) return nodes_[due_[0]].deadline;
    const std::uint64_t tick = NextEventTick();
    if (tick == kNever) return kNoDeadline;
    const std::uint64_t max_tick = static_cast<std::uint64_t>(INT64_MAX) / tick_ns_;
    if (tick > max_tick) return kNoDeadline;
    return WaitDeadline{} +
           std::chrono::duration_cast<WaitClock::duration>(
               std::chrono::nanoseconds(static_cast<std::int64_t>(tick * tick_ns_)));
  }

  bool Contains(const T* item) const {
    const std::uint32_t node = item->*kIndex;
    return node < nodes_.size() && nodes_[node].item == item;
  }

  std::size_t Count() const { return count_; }
  bool IsEmpty() const { return count_ == 0; }

  // Pre-allocates nodes for `n` timers. (Slot vectors grow on demand and keep their
  // capacity, so a steady state does not allocate either.)
  void Reserve(std::size_t n) { nodes_.reserve(n); }

  std::chrono::nanoseconds Tick() const {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(tick_ns_));
  }

 private:
  static constexpr std::uint32_t kNil = UINT32_MAX;
  static constexpr std::uint64_t kNever = UINT64_MAX;
  // Node locations (`where`): a slot id in [0, kOverflow], or one of these.
  static constexpr std::uint32_t kOverflow = kLevels * kSlots;  // slot id of the overflow
  static constexpr std::uint32_t kDue = kOverflow + 1;
  static constexpr std::uint32_t kFree = kOverflow + 2;
  static constexpr std::uint32_t kUnbounded = kOverflow + 3;  // in unbounded_ (kNoDeadline)

  struct Node {
    WaitDeadline deadline;
    std::uint64_t sequence = 0;  // push order: breaks deadline ties
    std::uint64_t tick = 0;      // TickOf(deadline)
    T* item = nullptr;           // nullptr while the node is free
    std::uint32_t where = kFree;
    // Index in slots_[where] (or in due_ when where == kDue); next free node when free.
    std::uint32_t pos = kNil;
  };

  std::uint64_t TickOf(WaitDeadline t) const {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
    return ns.count() <= 0 ? 0 : static_cast<std::uint64_t>(ns.count()) / tick_ns_;
  }

  std::uint32_t NewNode() {
    if (free_ != kNil) {
      const std::uint32_t node = free_;
      free_ = nodes_[node].pos;
      return node;
    }
    assert(nodes_.size() < kNotInWaitQueue);
    nodes_.emplace_back();
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }

  // Frees `node` (already out of every slot and the due heap) and detaches its item.
  T* Release(std::uint32_t node) {
    Node& n = nodes_[node];
    T* item = n.item;
    item->*kIndex = kNotInWaitQueue;
    n.item = nullptr;
    n.where = kFree;
    n.pos = free_;
    free_ = node;
    --count_;
    return item;
  }

  // Puts `node` where its tick belongs relative to cur_: the due heap, a wheel slot, or the
  // overflow slot.
  void Place(std::uint32_t node) {
    const std::uint64_t tick = nodes_[node].tick;
    if (tick <= cur_) {
      DuePush(node);
      return;
    }
    // The highest 6-bit digit in which the tick differs from cur_ picks the level; the tick
    // is later, so its digit there is greater than cur_'s.
    const int level = (63 - std::countl_zero(tick ^ cur_)) / kSlotBits;
    if (level >= kLevels) {
      Append(kOverflow, node);
      return;
    }
    const int slot = static_cast<int>((tick >> (kSlotBits * level)) & (kSlots - 1));
    occupied_[level] |= std::uint64_t{1} << slot;
    Append(static_cast<std::uint32_t>(level * kSlots + slot), node);
  }

  void Append(std::uint32_t slot_id, std::uint32_t node) {
    std::vector<std::uint32_t>& slot = slots_[slot_id];
    Node& n = nodes_[node];
    n.where = slot_id;
    n.pos = static_cast<std::uint32_t>(slot.size());
    slot.push_back(node);
  }

  // Removes `node` from its slot: the slot's last entry moves into its position.
  void Unlink(std::uint32_t node) {
    const Node& n = nodes_[node];
    std::vector<std::uint32_t>& slot = slots_[n.where];
    const std::uint32_t last = slot.back();
    slot[n.pos] = last;
    nodes_[last].pos = n.pos;
    slot.pop_back();
    if (slot.empty() && n.where != kOverflow) {
      occupied_[n.where / kSlots] &= ~(std::uint64_t{1} << (n.where % kSlots));
    }
  }

  // Unlinks the last node of the non-empty slot `slot_id` and returns it.
  std::uint32_t UnlinkLast(std::uint32_t slot_id) {
    const std::uint32_t node = slots_[slot_id].back();
    Unlink(node);
    return node;
  }

  // Empties slot `slot_id` and re-places each of its nodes relative to the current cur_.
  void Redistribute(std::uint32_t slot_id) {
    // Move the entries out first: Place may append to other slots (and, for the overflow
    // slot, to this one). scratch_ is empty between calls and keeps its capacity.
    scratch_.swap(slots_[slot_id]);
    if (slot_id != kOverflow) {
      occupied_[slot_id / kSlots] &= ~(std::uint64_t{1} << (slot_id % kSlots));
    }
    constexpr std::size_t kPrefetchDistance = 8;
    const std::size_t size = scratch_.size();
    for (std::size_t i = 0; i < size; ++i) {
      if (i + kPrefetchDistance < size) {
        __builtin_prefetch(&nodes_[scratch_[i + kPrefetchDistance]]);
      }
      Place(scratch_[i]);
    }
    scratch_.clear();
  }

  // The first tick after cur_ at which some slot (or the overflow slot) must be processed,
  // or kNever. Every occupied slot at level k has a digit greater than cur_'s digit k (slots
  // are processed when cur_ reaches their start), so the lowest set bit is the next one.
  std::uint64_t NextEventTick() const {
    std::uint64_t best = kNever;
    for (int level = 0; level < kLevels; ++level) {
      if (occupied_[level] == 0) continue;
      const int shift = kSlotBits * level;
      const std::uint64_t slot = static_cast<std::uint64_t>(std::countr_zero(occupied_[level]));
      const std::uint64_t rotation = (cur_ >> (shift + kSlotBits)) << (shift + kSlotBits);
      const std::uint64_t start = rotation | (slot << shift);
      assert(start > cur_);
      if (start < best) best = start;
    }
    if (!slots_[kOverflow].empty()) {
      constexpr int kTopShift = kSlotBits * kLevels;
      const std::uint64_t start = ((cur_ >> kTopShift) + 1) << kTopShift;
      if (start < best) best = start;
    }
    return best;
  }

  // Moves cur_ forward to `target`, stopping at each tick where a slot starts, and there
  // cascading that slot's timers down (to lower levels or the due heap).
  void AdvanceTo(std::uint64_t target) {
    while (cur_ < target) {
      const std::uint64_t event = NextEventTick();
      if (event > target) {
        cur_ = target;  // no slot starts in (cur_, target]: nothing moves
        return;
      }
      cur_ = event;
      // Highest level first, so timers cascaded down into a slot starting at the same tick
      // are handled in this same step.
      constexpr int kTopShift = kSlotBits * kLevels;
      if ((event & ((std::uint64_t{1} << kTopShift) - 1)) == 0 && !slots_[kOverflow].empty()) {
        Redistribute(kOverflow);
      }
      for (int level = kLevels - 1; level >= 0; --level) {
        const int shift = kSlotBits * level;
        if ((event & ((std::uint64_t{1} << shift) - 1)) != 0) continue;  // not a slot start
        const int slot = static_cast<int>((event >> shift) & (kSlots - 1));
        if ((occupied_[level] >> slot) & 1) {
          Redistribute(static_cast<std::uint32_t>(level * kSlots + slot));
        }
      }
    }
  }

  // --- the due heap: node indices ordered by (deadline, sequence) ---

  bool Before(std::uint32_t a, std::uint32_t b) const {
    const Node& x = nodes_[a];
    const Node& y = nodes_[b];
    return x.deadline < y.deadline || (x.deadline == y.deadline && x.sequence < y.sequence);
  }

  void DueSet(std::size_t pos, std::uint32_t node) {
    due_[pos] = node;
    nodes_[node].pos = static_cast<std::uint32_t>(pos);
  }

  void DuePush(std::uint32_t node) {
    nodes_[node].where = kDue;
    due_.push_back(node);
    DueSiftUp(due_.size() - 1);
  }

  void DueRemoveAt(std::size_t pos) {
    const std::uint32_t last = due_.back();
    due_.pop_back();
    if (pos == due_.size()) return;
    DueSet(pos, last);
    if (pos > 0 && Before(last, due_[(pos - 1) / 2])) {
      DueSiftUp(pos);
    } else {
      DueSiftDown(pos);
    }
  }

  void DueSiftUp(std::size_t pos) {
    const std::uint32_t node = due_[pos];
    while (pos > 0) {
      const std::size_t parent = (pos - 1) / 2;
      if (!Before(node, due_[parent])) break;
      DueSet(pos, due_[parent]);
      pos = parent;
    }
    DueSet(pos, node);
  }

  void DueSiftDown(std::size_t pos) {
    const std::uint32_t node = due_[pos];
    const std::size_t size = due_.size();
    while (true) {
      std::size_t child = 2 * pos + 1;
      if (child >= size) break;
      if (child + 1 < size && Before(due_[child + 1], due_[child])) ++child;
      if (!Before(due_[child], node)) break;
      DueSet(pos, due_[child]);
      pos = child;
    }
    DueSet(pos, node);
  }

  const std::uint64_t tick_ns_;
  std::uint64_t cur_;  // every tick <= cur_ has been processed
  std::vector<Node> nodes_;
  std::uint32_t free_ = kNil;                               // free node list, linked by Node::pos
  std::vector<std::uint32_t> slots_[kLevels * kSlots + 1];  // wheel slots, then overflow
  std::vector<std::uint32_t> scratch_;                      // Redistribute's buffer
  std::uint64_t occupied_[kLevels] = {};
  std::vector<std::uint32_t> due_;  // min-heap of due nodes
  std::vector<std::uint32_t> unbounded_;  // nodes without a deadline (unordered)
  std::uint64_t next_sequence_ = 0;
  std::size_t count_ = 0;
};

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_TIMER_WHEEL_H_
