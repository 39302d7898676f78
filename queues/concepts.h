// The three queue roles of the scheduler pipeline, written down as C++20 concepts.
//
//   any thread --Push--> [FrontQueue] --Pop--> sched-role --> [WaitQueue] (by deadline)
//                                                         \-> [ReadyQueue] --Pop--> workers
//
// The scheduler takes one type per role as a policy template parameter; every queue in
// //queues models exactly one role, and the trivial locked baselines (//queues:locked_queue)
// model the same concepts, so any of them can be swapped in. The concepts state the syntax;
// the comments state the contract each implementation must keep (and its tests check).
//
// All queues are intrusive or pointer-based: they never own, copy or free the items.
#ifndef FAIRSCHED_QUEUES_CONCEPTS_H_
#define FAIRSCHED_QUEUES_CONCEPTS_H_

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "sync/primitives.h"

namespace fairsched {

// Time key of the wait queues: a point on the monotonic clock. `kNoDeadline` means "never".
using WaitClock = SteadyClock;  // std::chrono::steady_clock (sync/primitives.h)
using WaitDeadline = WaitClock::time_point;
inline constexpr WaitDeadline kNoDeadline = WaitDeadline::max();

// Front queue: unbounded, many producers, one consumer, FIFO.
//  - `Push(item)` may be called from any thread at any time; it returns true when the queue
//    was empty before the push (so the producer knows the consumer must be woken). It may
//    return true spuriously, never false on an empty queue.
//  - `Pop()` is called by one consumer at a time and returns the oldest item, or nullptr.
//    Items come out in the order the pushes took effect: if push X happens-before push Y,
//    X comes out first (so, per producer, in push order). nullptr does not prove the queue
//    empty: a lock-free queue may have a push in flight that Pop cannot take yet.
//  - `IsEmpty()`: called by the consumer, false while anything is queued or a push is in
//    flight; a consumer may sleep only after Pop() returned nullptr AND IsEmpty() is true
//    (a push that returned false sends no wake-up). From other threads, a snapshot.
template <typename Q, typename T>
concept FrontQueue = requires(Q q, T* item) {
  { q.Push(item) } -> std::same_as<bool>;
  { q.Pop() } -> std::same_as<T*>;
  { q.IsEmpty() } -> std::same_as<bool>;
};

// Ready queue: unbounded, one producer, many consumers.
//  - `Push(item)` (producer only) makes the item visible to consumers at once.
//  - `PushPending(item)` (producer only) stages the item; `FlushPending()` makes every
//    staged item visible in one step, in staging order. Items pushed with `Push` after
//    staged ones are published together with them, keeping the order.
//  - Each consuming thread owns a `Q::Consumer`, attached to one queue by its constructor
//    `Q::Consumer(Q&)` and used by one thread at a time. `consumer.Pop()` returns the oldest
//    published item not yet taken by any consumer, or nullptr if none is visible. Every
//    published item is returned by exactly one Pop.
//  - `Count()` is the number of published, not yet popped items (a snapshot).
//  - A queue must outlive its consumers.
template <typename Q, typename T>
concept ReadyQueue = requires(Q q, const Q cq, T* item, typename Q::Consumer consumer) {
  typename Q::Consumer;
  requires std::constructible_from<typename Q::Consumer, Q&>;
  { q.Push(item) } -> std::same_as<void>;
  { q.PushPending(item) } -> std::same_as<void>;
  { q.FlushPending() } -> std::same_as<void>;
  { consumer.Pop() } -> std::same_as<T*>;
  { cq.Count() } -> std::convertible_to<std::size_t>;
};

// Wait queue: single-threaded (the sched-role owns it), items ordered by deadline.
//  - `Push(item, deadline)` inserts; the item must not already be in the queue.
//  - `PopExpired(now)` removes and returns an item whose deadline is <= now, or nullptr.
//    Items with earlier deadlines come out first; items with equal deadlines come out in
//    push order (fairness: equal deadlines keep post order). `now` is a time the clock has
//    reached, never kNoDeadline: an item pushed with kNoDeadline never expires.
//  - `PopAny()` removes and returns some queued item whatever its deadline, or nullptr when
//    empty, without moving the queue's notion of time (the scheduler's Stop empties the
//    queue this way; PopExpired(kNoDeadline) would make a timer wheel walk to the end of
//    time). The heap returns the earliest item; a wheel may return any.
//  - `Remove(item)` takes a queued item out (an explicit wakeup); O(log n) or better.
//  - `NextDeadline()` is a time at or before the earliest deadline in the queue (exact for
//    the heap; a timer wheel may answer a slot boundary), or kNoDeadline when empty. The
//    sched-role sleeps until then.
//  - `Contains(item)` tells whether the item is queued here (uses the item's stored index).
template <typename Q, typename T>
concept WaitQueue = requires(Q q, const Q cq, T* item, WaitDeadline deadline) {
  { q.Push(item, deadline) } -> std::same_as<void>;
  { q.PopExpired(deadline) } -> std::same_as<T*>;
  { q.PopAny() } -> std::same_as<T*>;
  { q.Remove(item) } -> std::same_as<void>;
  { cq.NextDeadline() } -> std::same_as<WaitDeadline>;
  { cq.Contains(item) } -> std::same_as<bool>;
  { cq.Count() } -> std::convertible_to<std::size_t>;
  { cq.IsEmpty() } -> std::same_as<bool>;
};

// Hooks the intrusive queues use, by default members of these names on the item type:
//   T* next;                  // FrontQueue link (and any singly linked list)
//   uint32_t wait_index;      // WaitQueue position; kNotInWaitQueue when not queued
inline constexpr std::uint32_t kNotInWaitQueue = UINT32_MAX;

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_CONCEPTS_H_
