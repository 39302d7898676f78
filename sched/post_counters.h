// PostCounters: whether a scheduler has finished every post (IsEmpty/WaitEmpty), counted
// without a shared read-modify-write on the hot path.
//
// A single shared "active posts" counter costs a locked instruction on a shared cache line
// per post and per execution batch; measured, that was half of what Post cost when tasks
// re-post themselves (bench/results/sched.md). Here each worker counts in its own slot (one
// cache line, single writer: a plain load and store), and only threads without a slot
// (posters outside the scheduler, workers beyond kSlots) use the shared slot's atomic adds.
//
// Contract:
//   - CountPost(slot) before the task is published (pushed into the front queue), by the
//     slot's owner thread; CountPost(nullptr) by any thread.
//   - CountFinished(slot, n) after n callbacks returned, by the slot's owner thread;
//     CountFinished(nullptr, n) by any thread.
//   - A slot has one owner at a time. It may pass to another thread if the next owner's
//     first access happens after the previous owner's last (thread join, then start).
//   - AllFinished() from any thread: true only if every post that happens-before the call,
//     and every post the resulting executions made in turn, has finished; and then their
//     effects are visible to the caller. Posts racing with the call may or may not count.
//
// Why reading the counters one by one is enough (they are never read as one snapshot):
// AllFinished first sums every `finished` (acquire), then every `posted`. An execution it
// counted was made possible by its post, whose count was stored before the task was
// published and reached the executor through the queues' release/acquire chain; the executor
// stored `finished` (release) after it. Our acquire load of that `finished` therefore
// synchronises with it, and the later load of the poster's `posted` sees that post. So
// posted >= finished, always. If they are equal, every post we counted has finished. A post
// we did not count is either concurrent with the call, or was made by a task whose execution
// we did not count either: then that task is still unfinished and its own post (or its
// ancestor's, up to a post from outside) is a post we counted and whose execution we did not,
// which would make posted > finished. Counter sums wrap modulo 2^64, so equality stays exact.
#ifndef FAIRSCHED_SCHED_POST_COUNTERS_H_
#define FAIRSCHED_SCHED_POST_COUNTERS_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "sync/primitives.h"

namespace fairsched {

class PostCounters {
 public:
  // Workers with an own slot; more are counted in the shared slot (correct, only slower).
  // Slots nobody uses are never written, so reading them stays a cache hit.
#ifndef FAIRSCHED_EXPLORE
  static constexpr std::size_t kSlots = 64;
#else
  // The interleaving explorer (sync/explore) makes every load of AllFinished a scheduling
  // point; its scenarios start at most two workers at a time, and four slots keep their
  // schedules short (the algorithm does not depend on the number).
  static constexpr std::size_t kSlots = 4;
#endif

  struct alignas(kCacheLineSize) Slot {
    Atomic<std::uint64_t> posted{0};
    Atomic<std::uint64_t> finished{0};
  };

  // The slot for a scheduler's worker number `index` (0-based in its Start), or nullptr.
  Slot* SlotFor(std::size_t index) { return index < kSlots ? &slots_[index] : nullptr; }

  void CountPost(Slot* slot) {
    if (slot != nullptr) {
      // Single writer: a load and a store, no locked instruction. Relaxed: AllFinished
      // learns of this post through the task's own hand-off chain (see the header), never
      // through this store alone.
      slot->posted.store(slot->posted.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
    } else {
      // Relaxed: the same reason; an RMW because any thread may post.
      shared_.posted.fetch_add(1, std::memory_order_relaxed);
    }
  }

  void CountFinished(Slot* slot, std::uint64_t n) {
    // seq_cst (release included): release publishes the finished callbacks' effects and the
    // posts they made to AllFinished's acquire loads; seq_cst makes this store the
    // finisher's half of the Dekker pair with a waiter (the scheduler's WaitEmpty registers,
    // then reads; a finisher stores, then reads the waiter count), and among several
    // finishers the last store in the total order is followed by loads that see all others.
    if (slot != nullptr) {
      slot->finished.store(slot->finished.load(std::memory_order_relaxed) + n,
                           std::memory_order_seq_cst);
    } else {
      shared_.finished.fetch_add(n, std::memory_order_seq_cst);
    }
  }

  bool AllFinished() const {
    // seq_cst loads (plain loads on x86 and acquire elsewhere, see CountFinished): every
    // `finished` first, then every `posted` (the order matters, see the header).
    std::uint64_t finished = shared_.finished.load(std::memory_order_seq_cst);
    for (const Slot& slot : slots_) finished += slot.finished.load(std::memory_order_seq_cst);
    std::uint64_t posted = shared_.posted.load(std::memory_order_seq_cst);
    for (const Slot& slot : slots_) posted += slot.posted.load(std::memory_order_seq_cst);
    return posted == finished;
  }

 private:
  Slot shared_;
  std::array<Slot, kSlots> slots_;
};

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_POST_COUNTERS_H_
