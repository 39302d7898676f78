// The IO backend policy of the scheduler, and NoIoBackend, the default that does no IO.
//
// The sched-role holder, when nothing is ready and nothing is in the front queue, blocks in
// `WaitUntil(deadline)` (deadline = the nearest wait-queue deadline, or kNoDeadline); any
// thread that pushes into an empty front queue (Post, Wakeup, Signal) or needs the holder's
// attention (Stop) calls `Notify()`. Because only the sched-role holder ever waits, an
// epoll/io_uring backend can wait in epoll_wait/io_uring_enter instead and turn IO events
// into task wakeups: the sched-role is a single-threaded "box" (docs/io.md).
//
// Contract:
//   - WaitUntil returns when Notify was called since the previous WaitUntil returned (a
//     Notify is never lost: one that comes before WaitUntil makes it return at once), or at
//     `deadline`, or spuriously. It is called by one thread at a time (the role holder).
//   - Notify is thread-safe, cheap when nobody waits, and may be called any number of times.
#ifndef FAIRSCHED_SCHED_IO_BACKEND_H_
#define FAIRSCHED_SCHED_IO_BACKEND_H_

#include <concepts>

#include "sched/task.h"
#include "sync/signal.h"

namespace fairsched {

template <typename B>
concept IoBackend = requires(B& backend, TaskDeadline deadline) {
  backend.WaitUntil(deadline);
  { backend.Notify() } -> std::same_as<void>;
};

// The "front signal" of the original design: a Signal the role holder sleeps on.
class NoIoBackend {
 public:
  void WaitUntil(TaskDeadline deadline) { signal_.ReceiveUntil(deadline); }
  void Notify() { signal_.Send(); }

 private:
  Signal signal_;
};

static_assert(IoBackend<NoIoBackend>);

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_IO_BACKEND_H_
