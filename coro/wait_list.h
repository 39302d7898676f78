// The FIFO wait list shared by coro::Mutex, coro::Semaphore, coro::Event and coro::Channel,
// and the awaiter that puts a coroutine on it.
//
// Contract:
//   - A WaitList is a lock (a fairsched::Mutex, held only for a few pointer moves and the
//     wakeups) and an intrusive doubly-linked FIFO of WaitNodes. Each node lives in the
//     waiting coroutine's frame (inside its awaiter) and holds the Waker of its wait
//     (coro/wait.h: PrepareWait / WaitWoken).
//   - A primitive grants to a waiter only under the list lock: it pops the node, records the
//     grant (the mutex's new owner, the semaphore's count), then calls WakePopped(). True:
//     the waiter's wait ended with kWakeup and it owns the grant. False: the waiter had
//     already left (deadline, cancellation, shutdown): its grant must be undone and handed
//     to the next node. So a token is never lost to a waiter that is gone and never given
//     twice, whatever races with the wakeup (the wait word's epoch check decides, once).
//   - A waiter whose wait ends any other way than kWakeup takes the list lock; if its node
//     is still linked it unlinks it and lets the primitive react (WaiterLeftLocked: clear a
//     "has waiters" flag, or grant to the next node). If its node was already popped, the
//     granter saw WakePopped() return false and has moved on. Either way the node is not
//     referenced by anyone once the lock is released, so the frame may go.
//   - ListWaitAwaiter<Primitive> is the one awaiter behind Lock/TryLockUntil,
//     Acquire/AcquireUntil and Wait: lock-free fast path, then under the lock a second try
//     or PrepareWait + enqueue, then WaitWoken, then the clean-up above. The primitive
//     provides, as private members reachable by the awaiter:
//       bool TryAcquireFast(std::uint64_t request);    // no lock; true = acquired
//       bool TryAcquireLocked(std::uint64_t request);  // list lock held; true = acquired,
//                                                      // false = announce a waiter, it queues
//       void WaiterLeftLocked();                       // list lock held, a linked node left
//       WaitList wait_list_;
#ifndef FAIRSCHED_CORO_WAIT_LIST_H_
#define FAIRSCHED_CORO_WAIT_LIST_H_

#include <cstdint>
#include <optional>
#include <utility>

#include "coro/runtime_types.h"
#include "coro/wait.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro {

// How a wait on a Mutex, Semaphore or Event ended.
enum class WaitStatus : std::uint8_t {
  kOk,         // got the lock / the permits / the event is set
  kDeadline,   // the wait's deadline passed first
  kCancelled,  // the coroutine was cancelled (Cancel, its parent, its cancellation deadline)
  kShutdown,   // the scheduler is stopping
};

inline const char* ToString(WaitStatus status) {
  switch (status) {
    case WaitStatus::kOk:
      return "ok";
    case WaitStatus::kDeadline:
      return "deadline";
    case WaitStatus::kCancelled:
      return "cancelled";
    case WaitStatus::kShutdown:
      return "shutdown";
  }
  return "?";
}

namespace internal {

// One waiting coroutine. Owned by its awaiter; linked only under the list lock.
struct WaitNode {
  Waker waker;                // the wait this node ends
  std::uint64_t request = 0;  // what it waits for: the mutex owner word, a permit count
  WaitNode* prev = nullptr;
  WaitNode* next = nullptr;
  bool linked = false;
};

class WaitList {
 public:
  WaitList() = default;
  WaitList(const WaitList&) = delete;
  WaitList& operator=(const WaitList&) = delete;

  fairsched::Mutex& lock() { return mu_; }

  // All below: with lock() held.
  bool empty() const { return head_ == nullptr; }
  WaitNode* front() const { return head_; }
  void PushBack(WaitNode* node) {
    node->prev = tail_;
    node->next = nullptr;
    if (tail_ != nullptr) {
      tail_->next = node;
    } else {
      head_ = node;
    }
    tail_ = node;
    node->linked = true;
  }
  void Remove(WaitNode* node) {
    if (node->prev != nullptr) {
      node->prev->next = node->next;
    } else {
      head_ = node->next;
    }
    if (node->next != nullptr) {
      node->next->prev = node->prev;
    } else {
      tail_ = node->prev;
    }
    node->prev = node->next = nullptr;
    node->linked = false;
  }
  WaitNode* PopFront() {
    WaitNode* node = head_;
    if (node != nullptr) Remove(node);
    return node;
  }
  // Ends the wait of a node just popped. True: it was still waiting and now wakes with
  // kWakeup (it owns what the caller granted it); false: it had already left. The waker is
  // moved out first: once the wait is closed the coroutine may run, leave the awaiter and
  // free the node, while the wakeup still touches the coroutine's state (kept alive by the
  // moved waker's reference).
  static bool WakePopped(WaitNode* node) {
    const Waker waker = std::move(node->waker);
    return waker.Wakeup();
  }

 private:
  fairsched::Mutex mu_;
  WaitNode* head_ = nullptr;  // oldest waiter
  WaitNode* tail_ = nullptr;  // newest waiter
};

inline WaitStatus StatusOf(WakeReason reason) {
  switch (reason) {
    case WakeReason::kWakeup:
    case WakeReason::kSignal:
      return WaitStatus::kOk;
    case WakeReason::kDeadline:
      return WaitStatus::kDeadline;
    case WakeReason::kCancelled:
      return WaitStatus::kCancelled;
    case WakeReason::kShutdown:
      return WaitStatus::kShutdown;
  }
  return WaitStatus::kCancelled;
}

// co_await -> WaitStatus. See the contract above. Lives in the coroutine frame for the whole
// wait (the node is linked from the list), so it is neither copied nor moved.
template <typename Primitive>
class ListWaitAwaiter {
 public:
  ListWaitAwaiter(Primitive* primitive, std::uint64_t request, WaitMode mode, TaskDeadline deadline)
      : primitive_(primitive), mode_(mode), deadline_(deadline) {
    node_.request = request;
  }
  ListWaitAwaiter(const ListWaitAwaiter&) = delete;
  ListWaitAwaiter& operator=(const ListWaitAwaiter&) = delete;

  bool await_ready() {
    if (primitive_->TryAcquireFast(node_.request)) return true;  // status_ is kOk
    // A deadline that has passed makes this a try: no wait, no trip through the scheduler.
    if (deadline_ != kTaskDeadlineInfinite && deadline_ <= TaskClock::now()) {
      status_ = WaitStatus::kDeadline;
      return true;
    }
    {
      MutexLock lock(primitive_->wait_list_.lock());
      if (primitive_->TryAcquireLocked(node_.request)) return true;
      // Under the lock, so that no grant can run between "not available" and "queued".
      node_.waker = PrepareWait(mode_);
      primitive_->wait_list_.PushBack(&node_);
    }
    wait_.emplace(WaitWoken(deadline_));
    if (!wait_->await_ready()) return false;  // suspend
    Finish(wait_->await_resume());            // closed before we suspended
    return true;
  }
  void await_suspend(std::coroutine_handle<> handle) { wait_->await_suspend(handle); }
  WaitStatus await_resume() {
    if (wait_.has_value() && !finished_) Finish(wait_->await_resume());
    return status_;
  }

 private:
  void Finish(WakeReason reason) {
    finished_ = true;
    // Only a granter calls Wakeup on our waker, and only after granting (the waits of
    // PrepareWait ignore CoroutineRef::Wakeup/Signal): kWakeup means we own the grant.
    if (reason == WakeReason::kWakeup) {
      status_ = WaitStatus::kOk;
      return;
    }
    status_ = StatusOf(reason);
    MutexLock lock(primitive_->wait_list_.lock());
    if (node_.linked) {
      primitive_->wait_list_.Remove(&node_);
      primitive_->WaiterLeftLocked();
    }
    // Not linked: a granter popped us, its WakePopped() returned false and it took the
    // grant back. Nothing refers to node_ any more either way.
    node_.waker = Waker();
  }

  Primitive* const primitive_;
  const WaitMode mode_;
  const TaskDeadline deadline_;
  WaitNode node_;
  std::optional<WaitAwaiter> wait_;
  WaitStatus status_ = WaitStatus::kOk;
  bool finished_ = false;
};

}  // namespace internal
}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_WAIT_LIST_H_
