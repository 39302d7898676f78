// MultishotAcceptor: TcpListener's Accept on io_uring where the kernel has multishot accept
// (one standing AcceptMultishot op per listener, connections queued between Accepts).
// Internal: TcpListener (io/tcp.h) makes one when MultishotAcceptor::Usable says so, and
// its Accept takes connections from it (io/internal/socket_io.h).
#ifndef FAIRSCHED_IO_INTERNAL_MULTISHOT_ACCEPTOR_H_
#define FAIRSCHED_IO_INTERNAL_MULTISHOT_ACCEPTOR_H_

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/internal/socket_core.h"
#include "io/internal/socket_ops.h"
#include "io/io_error.h"
#include "io/io_op.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::internal {

// Whether `Scheduler`'s backend can run a kernel multishot accept (io_uring; the probe
// decides at run time, see MultishotAcceptor::Usable).
template <typename Scheduler>
constexpr bool kHasMultishotAccept = requires(BackendOf<Scheduler>& backend) {
  backend.multishot_accept();
};

// One standing AcceptMultishot op for a listener: armed by the first Accept, it stays armed
// between Accepts, so each connection costs one CQE and no SQE (single-shot: one SQE, one
// io_uring_enter slot and one CQE per connection). Accepted fds the relay has seen and no
// Accept has taken yet wait in `pending_`; at kMaxPending the relay cancels the op, so the
// listen backlog (not this queue) holds further connections, and the next Accept that finds
// the queue empty arms it again. The relay is a Task, not an IoOpHandler (io/io_op.h),
// because its work per event (moving fds, closing the extras at the end) does not belong on
// the sched-role: every intermediate completion moves the events to pending_ and wakes the
// waiting Accept; the final one (cancel, Stop, or an error that ended the multishot) disarms.
// Close and lifetime (the listener's socket follows SocketCore's "Close" rules): the armed
// op is a user of the listener's fd (AcquireUser when armed, ReleaseUser at its final
// completion), so the fd is closed only after the backend handed the op back. The
// listener's Close (any thread, after SocketCore::CloseSocket) calls CancelForClose: the op
// is cancelled, a waiting Accept wakes and returns kClosed (arming fails once the socket is
// closed), and the fds nobody accepted are closed at the final completion (or at once when
// not armed). This object is freed by the last of: its listener (Release), the armed op,
// an Accept inside Next.
template <typename Scheduler>
class MultishotAcceptor {
  using Core = SocketCore<Scheduler>;

 public:
  static constexpr std::size_t kMaxPending = 128;

  // The kernel has multishot accept (probed, after SetMultishot).
  static bool Usable(Scheduler& scheduler) { return scheduler.io().multishot_accept(); }

  explicit MultishotAcceptor(Core* core) : core_(core), relay_(this, &MultishotAcceptor::Run) {}
  MultishotAcceptor(const MultishotAcceptor&) = delete;
  MultishotAcceptor& operator=(const MultishotAcceptor&) = delete;

  // The next accepted fd (>= 0) or the error of one failed accept; arms the op if needed.
  // kClosed once the listener is closed. The caller (Accept) holds a SocketUse of the core.
  coro::Lazy<IoResult<int>> Next(TaskDeadline deadline) {
    const InNext in_next(this);
    while (true) {
      {
        MutexLock lock(mu_);
        FAIRSCHED_DCHECK(!accepting_, "two concurrent Accepts on one TcpListener");
        if (!pending_.empty()) {
          const std::int32_t result = pending_.front();
          pending_.pop_front();
          if (result < 0) co_return ErrorOfResult(result, false);
          co_return static_cast<int>(result);
        }
        if (ended_result_ < 0) {
          // The kernel ended the multishot with an error: report it once, like a
          // single-shot Accept would; the next Accept arms a fresh op.
          co_return ErrorOfResult(std::exchange(ended_result_, 0), false);
        }
        if (!armed_) {
          // Not while the scheduler stops (Stop's cancel just ended the op).
          if (IoError cancelled = CancellationError(); !cancelled.ok()) co_return cancelled;
          // The op's use of the fd; fails once CloseSocket ran. Armed and submitted under
          // mu_: CancelForClose (under mu_, after CloseSocket) then either sees the op
          // armed and submitted, and cancels it, or runs first, and this fails.
          if (!core_->AcquireUser()) co_return IoError(IoErrorCode::kClosed);
          armed_ = true;
          op_.PrepareAcceptMultishot(core_->fd(), &events_, &relay_);
          core_->scheduler()->PostDeadlineThroughStop(&relay_, kTaskDeadlineInfinite);
          core_->scheduler()->io().Submit(&op_);
        }
        accepting_ = true;
        waiter_ = coro::PrepareWait(coro::WaitMode::kCancellable);
      }
      // Cancellable: the op is the listener's, not this Accept's; a cancelled or timed-out
      // Accept leaves it armed and its connections queued for the next Accept.
      const coro::WakeReason why = co_await coro::WaitWoken(deadline);
      MutexLock lock(mu_);
      accepting_ = false;
      waiter_ = coro::Waker();  // drops a stale waker (the wait ended another way)
      if (why != coro::WakeReason::kWakeup) co_return ErrorOfWake(why);
    }
  }

  // The listener's Close, after core_->CloseSocket() (any thread): ends the armed op (its
  // final completion wakes a waiting Accept, which then finds the socket closed) and closes
  // the connections nobody accepted, now or at that final completion.
  void CancelForClose() {
    MutexLock lock(mu_);
    // Under mu_: the relay handles the final completion only after it took mu_, so the op
    // is still ours to cancel while armed_ says so.
    if (armed_) {
      core_->scheduler()->io().Cancel(&op_);
    } else {
      ClosePending();
    }
  }

  // The listener lets go (its destructor or move-assignment, after CancelForClose).
  void Release() {
    bool last;
    {
      MutexLock lock(mu_);
      owned_ = false;
      last = Unused();
    }
    if (last) delete this;
  }

 private:
  // An Accept inside Next keeps the acceptor alive (the listener may be destroyed meanwhile:
  // see TcpStream's destructor contract).
  class InNext {
   public:
    explicit InNext(MultishotAcceptor* acceptor) : acceptor_(acceptor) {
      MutexLock lock(acceptor_->mu_);
      ++acceptor_->in_next_;
    }
    InNext(const InNext&) = delete;
    InNext& operator=(const InNext&) = delete;
    ~InNext() {
      bool last;
      {
        MutexLock lock(acceptor_->mu_);
        --acceptor_->in_next_;
        last = acceptor_->Unused();
      }
      if (last) delete acceptor_;
    }

   private:
    MultishotAcceptor* const acceptor_;
  };

  ~MultishotAcceptor() { ClosePending(); }

  // mu_ held (or the last reference): nothing can reach this object any more.
  bool Unused() const { return !owned_ && !armed_ && in_next_ == 0; }

  // mu_ held: closes the accepted fds no Accept took.
  void ClosePending() {
    for (const std::int32_t result : pending_) {
      if (result >= 0) CloseFd(result);
    }
    pending_.clear();
  }

  void Run(Task* task) {
    const bool final_completion = task->ReceiveSignal();
    events_.TakeAll(batch_);
    coro::Waker wake;
    bool last = false;
    Core* const core = core_;  // read while armed_ keeps this object alive (Unused)
    {
      MutexLock lock(mu_);
      for (const IoEvent& event : batch_) pending_.push_back(event.result);
      if (final_completion) {
        armed_ = false;
        // Acquire (IsClosed): a CloseSocket that ran before is ordered before what follows.
        if (core_->IsClosed()) ClosePending();
        last = Unused();
        // -ECANCELED: our own cancel (queue full, Close) or Stop's; not an Accept error.
        if (op_.Result() < 0 && op_.Result() != -ECANCELED) ended_result_ = op_.Result();
      } else if (pending_.size() >= kMaxPending && !cancelling_full_) {
        cancelling_full_ = true;  // once per arming (the final completion follows)
        core_->scheduler()->io().Cancel(&op_);
      }
      if (final_completion) cancelling_full_ = false;
      wake = std::move(waiter_);
      if (!final_completion) {
        core_->scheduler()->PostDeadlineThroughStop(task, kTaskDeadlineInfinite);
      }
    }
    // Only locals from here on (as in SocketCore's handler): once mu_ is released with
    // armed_ false, the listener's Release or an Accept's InNext may free this object.
    if (final_completion) {
      if (last) delete this;
      // The op no longer uses the fd (which may be closed now). Its user reference kept the
      // core alive up to here, whether or not this object is gone.
      core->ReleaseUser();
    }
    if (wake) wake.Wakeup();
  }

  Core* const core_;
  Task relay_;
  IoOp op_;
  IoEventQueue events_;         // the backend's queue, drained by the relay
  std::vector<IoEvent> batch_;  // the relay's scratch
  Mutex mu_;
  std::deque<std::int32_t> pending_;  // guarded by mu_: fds (or -errno) not yet taken
  coro::Waker waiter_;                // guarded by mu_: the waiting Accept
  bool accepting_ = false;            // guarded by mu_: an Accept waits (misuse check)
  bool armed_ = false;                // guarded by mu_: between Submit and the final completion
  bool cancelling_full_ = false;      // guarded by mu_: the relay cancelled a full queue's op
  bool owned_ = true;                 // guarded by mu_: the listener has not let go
  int in_next_ = 0;                   // guarded by mu_: Accepts inside Next
  std::int32_t ended_result_ = 0;     // guarded by mu_: -errno that ended the op, unreported
};

// A listener's acceptor, made with the listener: a MultishotAcceptor where the backend has
// multishot accept and the kernel supports it, else null (one accept per call).
template <typename Scheduler>
MultishotAcceptor<Scheduler>* MakeMultishotAcceptor(SocketCore<Scheduler>* core) {
  if constexpr (kHasMultishotAccept<Scheduler>) {
    if (MultishotAcceptor<Scheduler>::Usable(*core->scheduler())) {
      return new MultishotAcceptor<Scheduler>(core);
    }
  }
  return nullptr;
}

}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_INTERNAL_MULTISHOT_ACCEPTOR_H_
