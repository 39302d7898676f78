// EpollBackend: the sched-role holder sleeps in epoll_wait, and fd readiness wakes tasks.
// Models the IoBackend concept of sched/io_backend.h:
//   using EpollTaskScheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>,
//                                                 EpollBackend>;
//
// Readiness model: supports IoOp Watch (edge-triggered, EPOLLET: one wake per edge) and
// Poll (one-shot, EPOLLONESHOT). Read/Write/Accept/Connect (and ReadV/SendV, the multishot
// kinds) complete at once with
// -EOPNOTSUPP: with epoll the task does the non-blocking syscall itself after a readiness
// wake. epoll keeps one registration per fd, so a second Watch/Poll of an fd that is still
// registered completes with -EEXIST (watch an fd once, for both directions if needed).
//
// Inside the box: registrations are applied (epoll_ctl) only by the sched-role holder, when
// it drains the submission queue at the start of every Poll/WaitUntil, before epoll_wait.
// So an epoll_event can never point at an op whose final completion was delivered: the
// removal (EPOLL_CTL_DEL) and the final completion happen in the role, between two
// epoll_wait calls, and each batch of events is dispatched before the next drain.
//
// Notify writes an eventfd that sits in the epoll set, and only when the holder really
// sleeps (internal::RoleSleepGate); the eventfd is edge-triggered and never read back (every
// write is a new edge), so a wake costs no extra syscall. A non-blocking Poll makes no
// syscall when nothing is registered, and at most one epoll_wait(0) per busy_poll_interval
// otherwise (see the constructor).
//
// Thread safety: Submit, Cancel, Notify and LiveCount from any thread; the concept's role
// methods only from the sched-role holder (the scheduler does that).
#ifndef FAIRSCHED_IO_EPOLL_BACKEND_H_
#define FAIRSCHED_IO_EPOLL_BACKEND_H_

#include <sys/epoll.h>
#include <time.h>

#include <chrono>
#include <cstdint>

#include "io/internal/backend_facade.h"
#include "io/io_op.h"
#include "io/io_op_registry.h"
#include "io/role_sleep_gate.h"
#include "sched/io_backend.h"
#include "sched/task.h"

namespace fairsched {

class EpollBackend : public internal::BackendFacade<EpollBackend> {
 public:
  // `busy_poll_interval`: while registrations exist, the non-blocking Poll of a role take
  // makes its epoll_wait(0) syscall at most once per this interval (the other role takes
  // only apply submissions). A syscall at every role take cut a loaded scheduler's
  // throughput by about 6x (bench/results/io.md); with the interval, IO on a loaded
  // scheduler is seen within this time plus one execution batch. Zero: every role take.
  // Aborts with a message if the kernel refuses an epoll instance or an eventfd (out of fds).
  // Waits use epoll_pwait2 (Linux 5.11+: a nanosecond timeout) when the kernel has it; the
  // constructor probes it once, and where it is missing (older kernels, or a seccomp
  // profile that refuses it with ENOSYS or EPERM) every wait uses epoll_pwait with the
  // timeout rounded up to whole milliseconds (never early, at most 1 ms late).
  explicit EpollBackend(
      std::chrono::nanoseconds busy_poll_interval = std::chrono::microseconds(50));
  // Closes the epoll fd and the eventfd. Ops still submitted are a bug (checked in debug
  // builds): they point at the backend. Stop cancels all of them first.
  ~EpollBackend();
  EpollBackend(const EpollBackend&) = delete;
  EpollBackend& operator=(const EpollBackend&) = delete;

  // IoBackend concept (see sched/io_backend.h).
  void Poll(IoReadySink& sink);
  void WaitUntil(TaskDeadline deadline, IoReadySink& sink);
  // Notify: internal::BackendFacade.
  void CancelAll(IoReadySink& sink);
  // Role: whether the epoll set has an event ready, without taking it (a zero-timeout poll
  // of the epoll fd itself, which reports readable while its ready list is not empty; an
  // epoll_wait would consume edge-triggered events). A syscall, so made at most once per
  // microsecond; false without asking when nothing is registered. True lifts the busy-poll
  // rate limit for the next Poll, which delivers the events.
  bool EventsReady();

  // Task-level IO (see io/io_op.h), any thread: Submit, Cancel and LiveCount come from
  // internal::BackendFacade.

 private:
  void Drain(IoReadySink& sink);
  void Arm(IoOp* op, IoReadySink& sink);
  void Disarm(IoOp* op, IoReadySink& sink);
  // `sleeping`: PrepareSleep let us block (FinishSleep follows).
  void WaitAndDispatch(const timespec* timeout, bool sleeping, IoReadySink& sink);
  friend class internal::BackendFacade<EpollBackend>;
  // Wakes the holder out of its kernel sleep (BackendFacade::Notify calls it).
  void WakeHolder();

  // Waits for events: epoll_pwait2, or epoll_pwait when it is missing. -1 with errno set on
  // failure (EINTR: a signal, a spurious wake).
  int Wait(epoll_event* events, const timespec* timeout);

  const TaskClock::duration busy_poll_interval_;
  bool use_pwait2_ = true;  // role-only after the constructor's probe
  TaskDeadline next_busy_poll_{};  // role-only: earliest time of the next epoll_wait(0)
  TaskDeadline next_ready_check_{};  // role-only: earliest time of the next EventsReady poll
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  internal::RoleSleepGate gate_;
  internal::IoOpRegistry registry_;
};

static_assert(IoBackend<EpollBackend>);

}  // namespace fairsched

#endif  // FAIRSCHED_IO_EPOLL_BACKEND_H_
