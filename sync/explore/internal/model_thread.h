// The model threads' scheduling state (implementation only): what each thread does next,
// what it waits for (a mutex, a notification, a join, a futex wakeup, another thread's move
// while it spins), and so which threads may run, including the timeouts that fire when none
// can. The runtime (sync/explore/internal/runtime.h) keeps one per model thread.
#ifndef FAIRSCHED_SYNC_EXPLORE_INTERNAL_MODEL_THREAD_H_
#define FAIRSCHED_SYNC_EXPLORE_INTERNAL_MODEL_THREAD_H_

#include <condition_variable>
#include <cstdint>
#include <functional>

#include "sync/explore/internal/memory_model.h"
#include "sync/explore/internal/ops.h"

namespace fairsched::explore::internal {

// One model thread: its scheduling state (what it does next, what it waits for), and what
// the memory model keeps for it.
struct ModelThread : ThreadMemory {
  std::condition_variable wake;  // signalled when this thread gets the baton
  bool assigned = false;         // has a body in the current schedule
  std::function<void()> body;
  OpKind op = OpKind::kStart;  // the operation it will do when it runs next
  const void* object = nullptr;
  MutexState* mutex = nullptr;      // kLock / kWait / kReacquire
  int join_target = -1;             // kJoin
  bool yielding = false;            // kRelax, until another thread steps
  bool others_moved = false;        // another thread stepped since this one's last CpuRelax
  bool moved_before_relax = false;  // others_moved as of the current CpuRelax
  bool timed = false;               // kWait with a deadline
  bool timed_out = false;
  std::uint64_t wait_order = 0;
  bool futex_woken = false;         // kFutexWait: picked by a FutexWake
  std::int64_t futex_deadline = 0;  // kFutexWait with `timed`: logical clock
  SourceLocation where;
};

// Whether `thread` can take its next step (`slots`: every model thread, for a join).
inline bool Enabled(const ModelThread& thread, const ModelThread* slots) {
  switch (thread.op) {
    case OpKind::kFinish:
      return false;
    case OpKind::kLock:
    case OpKind::kReacquire:
      return thread.mutex->owner < 0;
    case OpKind::kWait:
      return false;
    case OpKind::kJoin:
      return slots[thread.join_target].op == OpKind::kFinish;
    case OpKind::kRelax:
      return !thread.yielding;
    case OpKind::kFutexWait:  // woken, or a timed sleeper free to time out
      return thread.futex_woken || (thread.timed && !thread.yielding);
    default:
      return true;
  }
}

inline std::uint32_t EnabledMask(const ModelThread* slots, int count) {
  std::uint32_t mask = 0;
  for (int i = 0; i < count; ++i) {
    if (Enabled(slots[i], slots)) mask |= 1u << i;
  }
  return mask;
}

// The threads of `slots` (the first `count`) that can run, as a bit per thread. When none
// can, the model's time passes first: a spinner gets one more look, then the earliest futex
// deadline expires, then the longest timed condition-variable wait times out. 0: none can
// run even so (a deadlock or a livelock).
inline std::uint32_t RunnableMask(ModelThread* slots, int count) {
  std::uint32_t enabled = EnabledMask(slots, count);
  if (enabled == 0) {
    // Nothing else can run: before time passes (the timeouts below), a spinner that has
    // not looked since others last moved gets one more round (its loop may have decided
    // to spin on a value that has since changed).
    for (int i = 0; i < count; ++i) {
      ModelThread& thread = slots[i];
      if (thread.op == OpKind::kRelax && thread.yielding && thread.moved_before_relax) {
        thread.yielding = false;
        thread.moved_before_relax = false;
        enabled = EnabledMask(slots, count);
        break;
      }
    }
  }
  if (enabled == 0) {
    // Nothing can run: time passes to the earliest futex deadline (before any timed
    // condition-variable wait, whose deadline the model does not know).
    ModelThread* earliest = nullptr;
    for (int i = 0; i < count; ++i) {
      ModelThread& thread = slots[i];
      if (thread.op == OpKind::kFutexWait && thread.timed && !thread.futex_woken &&
          (earliest == nullptr || thread.futex_deadline < earliest->futex_deadline ||
           (thread.futex_deadline == earliest->futex_deadline &&
            thread.wait_order < earliest->wait_order))) {
        earliest = &thread;
      }
    }
    if (earliest != nullptr) {
      earliest->yielding = false;
      enabled = EnabledMask(slots, count);
    }
  }
  if (enabled == 0) {
    // Nothing can run: time passes, and the earliest timed waiter times out.
    ModelThread* oldest = nullptr;
    for (int i = 0; i < count; ++i) {
      ModelThread& thread = slots[i];
      if (thread.op == OpKind::kWait && thread.timed &&
          (oldest == nullptr || thread.wait_order < oldest->wait_order)) {
        oldest = &thread;
      }
    }
    if (oldest != nullptr) {
      oldest->op = OpKind::kReacquire;
      oldest->object = oldest->mutex;
      oldest->timed_out = true;
      enabled = EnabledMask(slots, count);
    }
  }
  return enabled;
}

}  // namespace fairsched::explore::internal

#endif  // FAIRSCHED_SYNC_EXPLORE_INTERNAL_MODEL_THREAD_H_
