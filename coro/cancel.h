// Cancellation of spawned coroutines, seen from inside one: IsCancelled,
// CurrentCancelReason, CancelCallback. (Cancelling one from outside: JoinHandle::Cancel and
// CoroutineRef::Cancel, coro/spawn.h; one operation: CancelSource, coro/combinators.h.)
//
// Contract:
//   - Cooperative and typed: Cancel records a reason (CancelReason::kRequested, kDeadline,
//     kShutdown; the first one wins) and wakes the coroutine from a cancellable wait with
//     kCancelled; every later cancellable wait returns kCancelled at once (also one started
//     while the cancellation's callbacks still run), and IsCancelled() is true inside.
//   - Children: a coroutine spawned from inside another one (SpawnOptions::child_of_current,
//     the default) is its child: cancelling the parent cancels the child with the same
//     reason, and the child's cancellation deadline is at most the parent's.
//   - SpawnOptions::deadline cancels the coroutine (reason kDeadline) at that time: a
//     cancellable wait ends then with kCancelled and IsCancelled() turns true. It bounds
//     uncancellable waits too (a join, Mutex::Lock, an io_uring socket operation): at the
//     deadline the cancellation is requested (its callbacks run: the IO operation is
//     cancelled, children are cancelled) and the wait goes on until its event comes.
//   - CancelCallback registers a function that runs on the cancelling thread (or at once,
//     if the coroutine is already cancelled). Cancel runs every callback, children's
//     cancellation included, before it ends the coroutine's wait, so the woken coroutine
//     finds them done. Callbacks never run under a lock; a callback may cancel anything
//     (also its own coroutine again: Cancel is idempotent) and may deregister itself;
//     deregistering waits only for a callback that is running on another thread. A
//     callback must not wait for its own coroutine to make progress (that coroutine is not
//     woken until the callback returns), nor for a coroutine that joins it: a finishing
//     child deregisters from its parent's cancellation, which waits for a parent
//     cancellation that is running the child's callbacks, and the join waits for those
//     last steps of the child.
//   - Stop: when the scheduler stops, every coroutine in a cancellable wait (or starting
//     one) is cancelled with reason kShutdown and its wait returns kShutdown; IsCancelled()
//     turns true. Uncancellable waits are not woken by Stop: they end with their event,
//     which Stop's own effects bring (the cancelled coroutines release their locks and
//     finish, IO operations are cancelled), and Stop waits for them without spinning. Yield
//     still works, so coroutines can finish their cleanup. Stop returns once every
//     coroutine has finished: a coroutine that ignores shutdown (yields forever, or waits
//     without cancellation on something that never happens) keeps Stop from returning,
//     like a task that re-posts itself forever.
#ifndef FAIRSCHED_CORO_CANCEL_H_
#define FAIRSCHED_CORO_CANCEL_H_

#include <functional>
#include <utility>

#include "coro/internal/coroutine_state.h"
#include "coro/internal/state_extension.h"
#include "coro/runtime_types.h"

namespace fairsched::coro {

// Inside a spawned coroutine: whether it is cancelled (Cancel, a parent's cancellation, its
// cancellation deadline has passed, or the scheduler is stopping), and why.
inline CancelReason CurrentCancelReason() {
  return internal::RequireCurrentState("CurrentCancelReason outside a spawned coroutine")
      ->CancellationReason();
}
inline bool IsCancelled() { return CurrentCancelReason() != CancelReason::kNone; }

// Registers `callback(CancelReason)` to run when the current coroutine is cancelled, on
// the cancelling thread (at once, here, if it already is). The destructor deregisters; if
// the callback is running on another thread it waits for it to return. Create and destroy
// it inside the same spawned coroutine. Neither copyable nor movable.
class CancelCallback {
 public:
  template <typename F>
  explicit CancelCallback(F&& callback)
      : callback_(std::forward<F>(callback)),
        state_(internal::RequireCurrentState("CancelCallback outside a spawned coroutine")) {
    registration_.invoke = [](void* self, CancelReason reason) {
      static_cast<CancelCallback*>(self)->callback_(reason);
    };
    registration_.context = this;
    state_->AddCancelCallback(&registration_);
  }
  ~CancelCallback() { state_->RemoveCancelCallback(&registration_); }
  CancelCallback(const CancelCallback&) = delete;
  CancelCallback& operator=(const CancelCallback&) = delete;

 private:
  internal::CancelRegistration registration_;
  std::function<void(CancelReason)> callback_;
  internal::CoroutineState* state_;
};

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_CANCEL_H_
