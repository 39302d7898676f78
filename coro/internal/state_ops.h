// The function tables behind the untyped coroutine state (coro/internal/coroutine_state.h):
// SchedulerOps, one per scheduler type, so that wakers, handles and primitives need not be
// templates on the scheduler; RootOps, one per result type, for the root frame whose
// promise type the state does not know.
//
// Contract:
//   - kSchedulerOps<Scheduler> works for any BasicTaskScheduler<...> (or anything with
//     PostDeadline, PostDeadlineThroughStop, Wakeup and IsStopping of the same meaning),
//     including the IO-backend configurations. `post` with `through_stop` is
//     PostDeadlineThroughStop (an uncancellable wait: Stop must not wake it).
//   - RootOpsFor<T>::kOps: `failed` tells whether the root body ended with an exception;
//     `report` prints that exception and aborts (a detached coroutine's exception that
//     nobody can see).
#ifndef FAIRSCHED_CORO_INTERNAL_STATE_OPS_H_
#define FAIRSCHED_CORO_INTERNAL_STATE_OPS_H_

#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "coro/lazy.h"
#include "sched/task.h"

namespace fairsched::coro::internal {

// The scheduler behind a coroutine, type-erased (see the contract above).
struct SchedulerOps {
  void (*post)(void* scheduler, fairsched::Task* task, TaskDeadline deadline, bool through_stop);
  void (*wakeup)(void* scheduler, fairsched::Task* task);
  bool (*is_stopping)(void* scheduler);
};
template <typename Scheduler>
inline constexpr SchedulerOps kSchedulerOps = {
    [](void* s, fairsched::Task* task, TaskDeadline deadline, bool through_stop) {
      if (through_stop) {
        static_cast<Scheduler*>(s)->PostDeadlineThroughStop(task, deadline);
      } else {
        static_cast<Scheduler*>(s)->PostDeadline(task, deadline);
      }
    },
    [](void* s, fairsched::Task* task) { static_cast<Scheduler*>(s)->Wakeup(task); },
    [](void* s) { return static_cast<Scheduler*>(s)->IsStopping(); },
};

// What the untyped state needs from its root frame, whose promise type depends on the
// result type: one static table per T.
struct RootOps {
  bool (*failed)(void* frame);                 // the body ended with an exception
  void (*report)(void* frame);                 // prints that exception and aborts
};
template <typename T>
struct RootOpsFor {
  static Promise<T>& PromiseOf(void* frame) {
    return std::coroutine_handle<Promise<T>>::from_address(frame).promise();
  }
  static bool Failed(void* frame) { return PromiseOf(frame).HasException(); }
  [[noreturn]] static void Report(void* frame) {
    try {
      (void)PromiseOf(frame).TakeResult();  // only to rethrow: T may be [[nodiscard]]
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fairsched: a detached coroutine threw: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "fairsched: a detached coroutine threw a non-std exception\n");
    }
    std::fflush(stderr);
    std::abort();
  }
  static constexpr RootOps kOps = {&Failed, &Report};
};

}  // namespace fairsched::coro::internal

#endif  // FAIRSCHED_CORO_INTERNAL_STATE_OPS_H_
