// MpscQueue: the scheduler's front queue. Unbounded, intrusive, lock-free; any number of
// producers, one consumer, FIFO. Models the FrontQueue concept of queues/concepts.h.
//
// Contract
//   - `Push(item)`: any thread, wait-free (one exchange and two stores, never a retry).
//     Returns true if the queue was empty when the push took effect. It may also return true
//     while the consumer is taking what it believed was the last item (a harmless extra
//     "was empty"); it never returns false on an empty queue. False means: the item pushed
//     just before ours is still in the queue, and it cannot be popped before our push is
//     complete. So from the push that returned true until our item is popped, the queue is
//     never empty, and a consumer that keeps going while IsEmpty() is false takes our item
//     without being told about it. (The scheduler notifies its consumer only on true.)
//   - `Pop()`: one consumer at a time (consecutive consumers on different threads must
//     synchronise, e.g. through the lock that hands the consumer role around). Returns the
//     oldest item, or nullptr. O(1): at most four link/tail loads and one internal push.
//     Order: pushes are linearised by their exchange of `tail_`, and items come out in that
//     order. So if push X happens-before push Y (same thread, or any synchronisation between
//     the two threads), X is popped first; per producer, items come out in push order.
//     nullptr means "empty" OR "the next push is in flight": its producer has exchanged
//     `tail_` but not yet written the link to its item, which takes a few instructions (a
//     whole time slice if it is preempted right there). Pop never waits for it.
//   - `IsEmpty(order)`: false in that in-flight window. Called by the consumer, it is exact:
//     true iff every push whose exchange of `tail_` precedes this call (in `tail_`'s
//     modification order) has been popped. So the consumer must not go to sleep after
//     Pop() == nullptr unless IsEmpty() is true: otherwise it could sleep on an item whose
//     Push returned false and that nobody will announce. Called by other threads, it
//     combines the consumer's position as of the last consumer state the caller has
//     synchronised with and the current `tail_`: it may say "not empty" for items popped
//     since; if it says "empty" while an item whose exchange precedes its `tail_` load is
//     unpopped, then a consumer has appended the stub behind that item after that state,
//     i.e. a consumer is at work that will pop it. Relaxed by default; pass seq_cst to make
//     the `tail_` load one half of a Dekker pair with a producer's seq_cst exchange.
//   - The queue never owns items. An item must stay alive and must not be pushed again until
//     it has been popped. Pop does not touch an item after returning it, so the item may be
//     pushed again at once (into any queue).
//
// Algorithm: Dmitry Vyukov's intrusive MPSC queue. The items form a chain linked through
// `next`, oldest at `head_`, newest at `tail_`. A stub node keeps the chain from ever being
// without a node: the consumer may hand out an item only once it has a successor, because a
// producer that exchanged `tail_` may still be about to write that item's link. When the
// consumer reaches the last item, it pushes the stub behind it and can then hand it out.
// Deviation from the textbook version: the stub is not a T (T may be any type, e.g. a
// 64-byte Task); it is a bare link cell `stub_next_`, and the chain refers to it by the
// address of that cell, used only for comparisons. LinkOf(node) is node->next, or
// `stub_next_` when node is the stub.
//
//   State: tail_ (written by every push), head_ (consumer only), stub_next_.
//   Empty: head_ == tail_ == stub, stub_next_ == null. head_ is always the stub or the
//   oldest unpopped item.
//
//   Append(node), used by Push(item) and for the stub:
//     P1  LinkOf(node) = null                       relaxed
//     P2  prev = tail_.exchange(node)               seq_cst
//     P3  LinkOf(prev) = node                       release
//     Push returns prev == stub.
//   Pop():
//     C1  head = head_; next = LinkOf(head)         head_: relaxed; link: acquire
//     C2  if head == stub:
//           if next == null: return null            (empty, or the first push in flight)
//           head = next; next = LinkOf(head)        (skip the stub; acquire)
//     C3  if next != null: head_ = next; return head
//     C4  if tail_ != head: head_ = head; return null        relaxed: a push is in flight
//     C5  Append(stub)                              (head is the last item: put the stub
//                                                    behind it)
//     C6  next = LinkOf(head)                       acquire
//         if next != null: head_ = next; return head
//         head_ = head; return null                 (a push exchanged between C4 and C5 and
//                                                    has not linked yet)
//   IsEmpty(order):  head_ == stub (relaxed) && tail_.load(order) == stub
//
// The item type links itself through a member `T* next` (or the member named by `kNext`),
// declared as a plain pointer: the queue accesses it through AtomicRef.
#ifndef FAIRSCHED_QUEUES_MPSC_QUEUE_H_
#define FAIRSCHED_QUEUES_MPSC_QUEUE_H_

#include <cassert>

#include "sync/primitives.h"

namespace fairsched {

template <typename T, T* T::*kNext = &T::next>
class MpscQueue {
 public:
  MpscQueue() = default;
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  // Appends `item`; returns true if the queue was empty before (see the contract above).
  // Thread-safe, wait-free.
  bool Push(T* item) {
    assert(item != nullptr && "MpscQueue::Push of nullptr");
    return Append(item) == Stub();
  }

  // Appends the chain first -> ... -> last, already linked through `next` by the caller
  // (plain writes: the caller owns the items until this call), as one push: the items come
  // out in chain order, together, after everything pushed before and before everything
  // pushed after. Returns what Push returns. Thread-safe, wait-free: one exchange for the
  // whole chain. The consumer reaches `first` through the release store of prev's link,
  // so the caller's plain writes of the inner links happen-before its acquire loads of them.
  bool PushChain(T* first, T* last) {
    assert(first != nullptr && last != nullptr && "MpscQueue::PushChain of an empty chain");
    // P1 for the chain's end, relaxed as in Append; P2 and P3 as in Append, with the chain's
    // first item linked behind the previous tail.
    LinkOf(last).store(nullptr, std::memory_order_relaxed);
    T* const prev = tail_.exchange(last, std::memory_order_seq_cst);
    LinkOf(prev).store(first, std::memory_order_release);
    return prev == Stub();
  }

  // Takes the oldest item, or returns nullptr (empty, or the next push is in flight: ask
  // IsEmpty). One consumer at a time.
  T* Pop() {
    ConsumerCheck check(this);
    // Relaxed: only the consumer writes head_ (and a new consumer is ordered after the
    // previous one by the caller's synchronisation).
    T* const first = head_.load(std::memory_order_relaxed);
    T* head = first;
    // Acquire (here and at every link load below): pairs with P3's release by the producer
    // that linked `next`, so the item's contents, written before its Push, and its P1 null
    // link are visible before we read or hand out the item.
    T* next = LinkOf(head).load(std::memory_order_acquire);
    if (head == Stub()) {
      if (next == nullptr) return nullptr;  // empty, or the first push is in flight
      head = next;                          // the stub leaves the chain
      next = LinkOf(head).load(std::memory_order_acquire);
    }
    if (next == nullptr) {
      // `head` is the last linked item. Relaxed: only a hint, validated by Append(stub)'s
      // exchange. It cannot return anything older than `head` (head's exchange
      // happens-before our acquire of the link to head), and it returns head only if no
      // later exchange is visible yet; a stale "== head" makes us push the stub behind a
      // later item, which C6 handles.
      if (tail_.load(std::memory_order_relaxed) != head) {
        // A producer has exchanged tail_ after `head` and will link it: keep head, retry
        // later. IsEmpty() is false meanwhile (head_ is not the stub).
        SetHead(first, head);
        return nullptr;
      }
      Append(Stub());
      next = LinkOf(head).load(std::memory_order_acquire);  // the stub, or a racing push
      if (next == nullptr) {
        SetHead(first, head);
        return nullptr;
      }
    }
    SetHead(first, next);
    return head;
  }

  // True if nothing is queued and no push is in flight; see the contract above for what
  // it means outside the consumer's thread.
  bool IsEmpty(std::memory_order order = std::memory_order_relaxed) const {
    // head_ first, relaxed: exact for the consumer (its own writes); for another thread at
    // least as new as the consumer state it synchronised with. Cheap exit without touching
    // the producers' line while items wait. Then tail_ with the caller's order: tail_ ==
    // stub means no push has exchanged since the stub was last appended, and head_ == stub
    // means everything before the stub was popped.
    return IsStub(head_.load(std::memory_order_relaxed)) && IsStub(tail_.load(order));
  }

 private:
  // P1-P3 of the header comment; returns the previous tail.
  T* Append(T* node) {
    // P1. Relaxed: the only readers of this null are the consumer, which reaches `node`
    // through P3's release store below, and the next producer, which writes the link after
    // acquiring our exchange; both are ordered after this store.
    LinkOf(node).store(nullptr, std::memory_order_relaxed);
    // P2. The linearisation point of the push. Never fails, so no retry loop.
    //  - release: the next producer, which gets `node` as its `prev`, acquires this; its P3
    //    into node's link then comes after our P1 null in that link's modification order
    //    (otherwise our stale null could overwrite its link and lose every later item).
    //  - acquire: the same pairing one step back, for our P3 into prev's link (prev's P1,
    //    or for the stub the consumer's P1, happens-before our P3).
    //  - seq_cst: a place in the single total order, so a scheduler that pushes and then
    //    reads its "who is awake" flags with seq_cst forms a Dekker pair with a consumer or
    //    parker that writes those flags and then calls IsEmpty(seq_cst) (see
    //    sched/task_scheduler.h). Same instruction (xchg) on x86 as acq_rel.
    T* const prev = tail_.exchange(node, std::memory_order_seq_cst);
    // P3. Release: pairs with the consumer's acquire load of this link (C1/C2/C6), which
    // then sees the item's contents and its P1. Until this store the consumer cannot reach
    // `node` (the in-flight window, see IsEmpty).
    LinkOf(prev).store(node, std::memory_order_release);
    return prev;
  }

  AtomicRef<T*> LinkOf(T* node) {
    return AtomicRef<T*>(node == Stub() ? stub_next_ : node->*kNext);
  }

  // The stub's identity: the address of its link cell, never dereferenced as a T. The cell
  // is aligned for T (see stub_next_), so the converted pointer keeps that address.
  T* Stub() { return reinterpret_cast<T*>(&stub_next_); }
  bool IsStub(const T* node) const {
    return static_cast<const void*>(node) == static_cast<const void*>(&stub_next_);
  }

  // Writes head_ only when it moved: other threads read it in IsEmpty, so an unchanged
  // store would only pull the line away from them. Relaxed: see Pop.
  void SetHead(T* old_head, T* new_head) {
    if (new_head != old_head) head_.store(new_head, std::memory_order_relaxed);
  }

#ifndef NDEBUG
  // Debug builds: two threads inside Pop at once is API misuse that would corrupt the
  // chain; catch it with a clear message. Relaxed: only detects overlap, orders nothing.
  struct ConsumerCheck {
    explicit ConsumerCheck(MpscQueue* q) : queue(q) {
      const bool busy = queue->consumer_busy_.exchange(true, std::memory_order_relaxed);
      assert(!busy && "MpscQueue::Pop called by two consumers at the same time");
      (void)busy;
    }
    ~ConsumerCheck() { queue->consumer_busy_.store(false, std::memory_order_relaxed); }
    MpscQueue* queue;
  };
  Atomic<bool> consumer_busy_{false};
#else
  struct ConsumerCheck {
    explicit ConsumerCheck(MpscQueue*) {}
  };
#endif

  // Producers' line: every push exchanges it.
  alignas(kCacheLineSize) Atomic<T*> tail_{Stub()};
  // Consumer's line: head_ (read by IsEmpty elsewhere) and the stub's link, which a
  // producer writes only when it makes the queue non-empty.
  alignas(kCacheLineSize) Atomic<T*> head_{Stub()};
  // Aligned for T as well as for a pointer, so Stub() is a correctly aligned T* value.
  alignas(T) alignas(T*) T* stub_next_ = nullptr;
};

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_MPSC_QUEUE_H_
