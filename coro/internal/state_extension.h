// The parts of a spawned coroutine's state that most coroutines never use: the cancel
// callback list, the parent link, the cancellation deadline, the joiner and plain-thread
// waiters, and the continuation helper (a plain thread that runs ready continuations
// itself, coro/task_list.h). The coroutine state (coro/internal/coroutine_state.h)
// allocates a StateExtension on first use and keeps it until it is destroyed.
//
// Contract:
//   - StateExtension's fields are guarded as marked: fixed at spawn, the coroutine's thread,
//     the helper's lock, or `mu`.
//   - The cancel callback list: each registration is invoked at most once, with the
//     cancellation's reason, never under `mu`. RunCallbacksOnce runs the list once, whoever
//     calls it first; Remove returns once the registration will not be invoked any more and
//     is not running on another thread (a callback removing itself does not wait for
//     itself).
//   - ContinuationHelper's hooks are called as documented at the class, under the helper's
//     own lock; HelpState is guarded by that lock.
#ifndef FAIRSCHED_CORO_INTERNAL_STATE_EXTENSION_H_
#define FAIRSCHED_CORO_INTERNAL_STATE_EXTENSION_H_

#include <cstddef>
#include <cstdint>
#include <thread>

#include "coro/frame_allocator.h"
#include "coro/runtime_types.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro::internal {

class CoroutineState;

// A node in a coroutine's list of things to do when it is cancelled.
struct CancelRegistration {
  void (*invoke)(void* context, CancelReason reason) = nullptr;
  void* context = nullptr;
  CancelRegistration* prev = nullptr;
  CancelRegistration* next = nullptr;
  bool linked = false;
};

// A plain thread that runs some coroutines' ready continuations itself while it waits for
// them, as well as the scheduler's workers (TaskList::Wait on a saturated scheduler). A
// coroutine with a helper reports to it, under the helper's own lock:
//   - Suspended(state, yielded) after a step (on whichever thread ran it): a Yield is a
//     ready continuation, which the helper may offer to its thread. Returns whether the
//     state must post its task: not when a post of it is still pending (its run serves).
//   - Woken(state) when a waker closed its wait (before the scheduler wakeup): ready too.
//   - BeforeTaskRun(state) at the start of the task's callback: kRun, or kSkip when the
//     helper thread is running the coroutine right now (its Suspended posts again), or
//     kRelease when the coroutine finished on the helper thread while this run was pending
//     (the run drops the coroutine's own reference, which Finish left to it).
//   - Finished(state): the coroutine is done; the helper forgets it. Returns true if a task
//     run is still pending (it will release the coroutine's own reference).
// The per-coroutine bookkeeping (HelpState) lives with the coroutine state, guarded by the
// helper's lock. The helper thread runs a continuation it claimed with RunClaimedStep.
class ContinuationHelper {
 public:
  enum class TaskRun : std::uint8_t { kRun, kSkip, kRelease };
  virtual bool Suspended(CoroutineState* state, bool yielded) = 0;
  virtual void Woken(CoroutineState* state) = 0;
  virtual TaskRun BeforeTaskRun(CoroutineState* state) = 0;
  virtual bool Finished(CoroutineState* state) = 0;

 protected:
  ~ContinuationHelper() = default;
};
struct HelpState {
  bool offered = false;       // a ready continuation is offered to the helper thread
  bool running = false;       // a step runs (on a worker or on the helper thread)
  bool task_pending = false;  // the task is posted and its callback has not started
  bool finished = false;      // finished on the helper thread with a task run pending
};

// The parts of a coroutine's state that most coroutines never use, allocated on first use
// (and at spawn when the coroutine has a parent, a cancellation deadline or a helper), so
// that the state itself fits in two cache lines in front of the root frame. Once installed
// it stays until the state is destroyed.
struct StateExtension {
  static void* operator new(std::size_t size) { return FrameAllocator::Allocate(size); }
  static void operator delete(void* pointer, std::size_t size) {
    FrameAllocator::Deallocate(pointer, size);
  }

  // Under `mu`: puts `registration` at the head of the cancel callbacks.
  void Link(CancelRegistration* registration) {
    registration->next = callbacks;
    registration->prev = nullptr;
    if (callbacks != nullptr) callbacks->prev = registration;
    callbacks = registration;
    registration->linked = true;
  }
  // Under `mu`: takes `registration` out of the cancel callbacks.
  void Unlink(CancelRegistration* registration) {
    if (registration->prev != nullptr) registration->prev->next = registration->next;
    if (registration->next != nullptr) registration->next->prev = registration->prev;
    if (callbacks == registration) callbacks = registration->next;
    registration->prev = registration->next = nullptr;
    registration->linked = false;
  }
  // Returns once `registration` will not be invoked any more and is not running on another
  // thread (a callback deregistering itself does not wait for itself).
  void Remove(CancelRegistration* registration) {
    MutexLock lock(mu);
    if (registration->linked) {
      Unlink(registration);
      return;
    }
    while (running_callback == registration &&
           running_callback_thread != std::this_thread::get_id()) {
      cv.wait(lock);
    }
  }
  // Runs the callbacks once, whoever calls first (RequestCancel, or AddCancelCallback when
  // it raced with the cancellation).
  void RunCallbacksOnce(CancelReason reason) {
    MutexLock lock(mu);
    if (cancel_callbacks_started) return;
    cancel_callbacks_started = true;
    while (callbacks != nullptr) {
      CancelRegistration* registration = callbacks;
      Unlink(registration);
      running_callback = registration;
      running_callback_thread = std::this_thread::get_id();
      lock.unlock();
      // May destroy the registration: only our own fields are touched afterwards.
      registration->invoke(registration->context, reason);
      lock.lock();
      running_callback = nullptr;
      cv.notify_all();
    }
  }

  // Fixed at spawn (coroutine-thread reads).
  TaskDeadline cancel_deadline = kTaskDeadlineInfinite;  // SpawnOptions::deadline, parent's
  CoroutineState* parent = nullptr;                      // holds a reference
  CancelRegistration parent_link;                        // in the parent's callbacks
  ContinuationHelper* helper = nullptr;
  // Coroutine thread: the open wait's own deadline (needed only beside a cancel deadline).
  TaskDeadline wait_deadline = kTaskDeadlineInfinite;
  HelpState help;  // guarded by the helper's lock
  // Guarded by mu: cancel callbacks, the joiner, plain-thread waiters.
  fairsched::Mutex mu;
  ConditionVariable cv;
  CancelRegistration* callbacks = nullptr;
  bool cancel_callbacks_started = false;
  CancelRegistration* running_callback = nullptr;
  std::thread::id running_callback_thread;
  CoroutineState* joiner = nullptr;  // holds a reference
  std::uint64_t join_epoch = 0;
};

}  // namespace fairsched::coro::internal

#endif  // FAIRSCHED_CORO_INTERNAL_STATE_EXTENSION_H_
