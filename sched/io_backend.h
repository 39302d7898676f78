// The IO backend policy of the scheduler (how the sched-role holder sleeps, and how IO events
// become ready tasks), and NoIoBackend, the default that does no IO.
//
// The sched-role is a single-threaded "box" (docs/design.md): one worker at a time holds
// it, and only the holder touches the wait queue and the producer side of the ready queue.
// An IO backend lives inside that box. The holder polls it without blocking on every role
// take, and, when nothing is ready, sleeps in it until the nearest task deadline; IO that
// completed in the meantime is turned into ready tasks right there, in the same step that
// moves posts and expired timers (no round trip through the front queue). The backends that
// do real IO (epoll, io_uring) live in io/; the core only sees this concept.
//
// Contract. "Role" methods are called only by the sched-role holder, one thread at a time
// (the thread changes from one role take to the next: a backend must not assume a fixed
// thread); "any" methods are thread-safe.
//   - Poll(sink) [role]: non-blocking. Hands queued submissions to the kernel and delivers
//     the IO events the backend can see without sleeping, up to a batch of its own size
//     (epoll: 128 per call, io_uring: one completion queue), so that the holder gets back
//     to its tasks; the rest stay visible to EventsReady and the next call. Called at EVERY
//     role take, so a loaded scheduler whose role holder never sleeps still services IO: a
//     task whose fd became ready is made ready at the next role take. A worker takes the
//     role only between two tasks, when it finds no ready task or a timer is due; posts
//     reach the ready queue only through role takes (at most `batch_size` per take). So
//     under load a role take comes once the ready tasks of the previous take have all
//     started AND one worker has finished the task it was running: while every worker runs
//     a long task, IO (like a timer) waits for one of them to return. Keep tasks short, or
//     keep a worker to spare, where IO latency matters. Must be cheap when nothing is
//     registered (NoIoBackend: nothing at all; it inlines away).
//   - WaitUntil(deadline, sink) [role]: blocks until Notify was called since the previous
//     WaitUntil returned (a Notify is never lost: one that comes first makes it return at
//     once), or an IO event arrives (delivered into `sink` before returning), or
//     `deadline` (kNoDeadline: none) passes, or spuriously.
//   - Notify() [any]: wakes the holder sleeping in WaitUntil. Cheap when nobody sleeps (the
//     backends in io/ do one atomic read-modify-write and touch the kernel only when the
//     holder really sleeps); may be called any number of times.
//   - EventsReady() [role]: non-blocking and cheap: true if IO events (or a Notify) wait to
//     be delivered by the next Poll. The idle role holder calls it while it spins before
//     sleeping (spin_before_park), so IO that completes during the spin ends the spin at
//     once. May answer false for events it cannot see cheaply: the sleep catches those.
//   - CancelAll(sink) [role]: the shutdown hook. The scheduler calls it at every role take
//     while Stop drains. The backend requests cancellation of every registration it holds;
//     their final completions arrive through later Poll/WaitUntil calls, so tasks waiting
//     for IO finish and the drain ends. Idempotent; cheap when nothing is registered.
//   - The sink, IoReadySink::Wake(task, how) [role, only inside the calls above]: makes
//     `task` ready as if by Wakeup (IoWake::kWakeup) or Signal (IoWake::kSignal), with the
//     same state-machine rules (a task that is executing or not posted remembers the wakeup;
//     a waiting one is taken out of the wait queue and made ready at once). Everything the
//     backend wrote before Wake is visible in the task's callback. The backend must not
//     touch the task after a kSignal wake that ends a registration (the task may delete
//     itself once it sees the signal).
//   - Waking from inside the role: a backend may call code of its own in the middle of its
//     delivery (io/io_op.h's IoOpHandler). It hands that code the sink it was given, so a
//     wake made there takes the same direct path (no round trip through the front queue).
//     IoReadySink::Serves(scheduler) tells whether a task of `scheduler` may go through
//     this sink; a task of another scheduler must be woken through its own scheduler.
//
// Completion-based backends fit the same shape: io_uring (io/io_uring_backend.h) reaps its
// completion queue in Poll/WaitUntil; the Windows IOCP backend (io/iocp_backend.h) calls
// GetQueuedCompletionStatusEx with a zero timeout in Poll and with the deadline in
// WaitUntil, turns each completion packet into a Wake, implements Notify with
// PostQueuedCompletionStatus behind the same "is the holder asleep" flag, and CancelAll with
// CancelIoEx.
#ifndef FAIRSCHED_SCHED_IO_BACKEND_H_
#define FAIRSCHED_SCHED_IO_BACKEND_H_

#include <concepts>

#include "sched/task.h"
#include "sync/auto_reset_event.h"

namespace fairsched {

// How an IO event wakes its task: as Wakeup (IsExpired() false) or as Signal (also
// ReceiveSignal() true).
enum class IoWake { kWakeup, kSignal };

// The role-only door through which a backend makes tasks ready. The scheduler passes one to
// every role call; a backend must not keep it beyond the call. Wake only tasks posted to the
// scheduler it serves (Serves tells: the sink knows that scheduler's address).
class IoReadySink {
 public:
  virtual void Wake(Task* task, IoWake how) = 0;
  // Whether this sink belongs to `scheduler` (its address, as any pointer type).
  bool Serves(const void* scheduler) const {
    return scheduler_ != nullptr && scheduler_ == scheduler;
  }

 protected:
  explicit IoReadySink(const void* scheduler = nullptr) : scheduler_(scheduler) {}
  ~IoReadySink() = default;

 private:
  const void* scheduler_;
};

template <typename B>
concept IoBackend = requires(B& backend, TaskDeadline deadline, IoReadySink& sink) {
  { backend.Poll(sink) } -> std::same_as<void>;
  { backend.WaitUntil(deadline, sink) } -> std::same_as<void>;
  { backend.Notify() } -> std::same_as<void>;
  { backend.CancelAll(sink) } -> std::same_as<void>;
  { backend.EventsReady() } -> std::same_as<bool>;
};

// The default: an AutoResetEvent the role holder sleeps on (the "front event"). Poll and
// CancelAll are empty inline functions, so the scheduler's hot path is unchanged.
class NoIoBackend {
 public:
  void Poll(IoReadySink&) {}
  void WaitUntil(TaskDeadline deadline, IoReadySink&) { signal_.ReceiveUntil(deadline); }
  void Notify() { signal_.Send(); }
  void CancelAll(IoReadySink&) {}
  bool EventsReady() { return false; }  // a Notify is a post: the spin sees the front queue

 private:
  AutoResetEvent signal_;
};

static_assert(IoBackend<NoIoBackend>);

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_IO_BACKEND_H_
