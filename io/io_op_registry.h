// IoOpRegistry: the bookkeeping every IO backend shares: the submission queue that lets any
// worker hand IoOps to the sched-role, the role's list of armed ops, and the op state
// machine that makes cancellation race-free and ends every op with exactly one final
// completion. A backend adds only the kernel part (arm, disarm, harvest events).
//
// Why a submission queue: a backend's kernel object is driven by whoever holds the
// sched-role (io_uring's submission ring is single-producer; epoll registrations must not
// change while the holder dispatches a batch of events that still point at them). So Submit
// and Cancel, from any thread, push the op into a lock-free MPSC queue (the same one the
// scheduler's front queue uses) and notify the holder; the holder drains it at every Poll
// and WaitUntil, in submission order.
//
// Op state (IoOp::state_, one atomic byte):
//   kIdle -> kQueued              Submit (any thread), then push.
//   kQueued -> kActive            role, popping a submission; then arms it in the kernel.
//   kQueued -> kQueued|kCancel    Cancel before the role saw it: the role finishes it with
//                                 -ECANCELED when it pops it, without arming.
//   kActive -> kActive|kCancel    Cancel (any thread) of an armed op: the canceller pushes
//                                 the op again (it owns the link now); the role pops it as a
//                                 cancellation request and disarms it. Or CancelAll (role),
//                                 which disarms it directly.
//   kActive -> kIdle              role, the kernel finished it: final completion.
//   kActive|kCancel, finished     role: if the role already popped the cancel request
//                                 (cancel_seen_), final completion; else it waits for that
//                                 request (completed_), because the canceller may still be
//                                 pushing the op, and only then completes.
// The final completion stores the result, sets kIdle and Signals the task: the last touch.
#ifndef FAIRSCHED_IO_IO_OP_REGISTRY_H_
#define FAIRSCHED_IO_IO_OP_REGISTRY_H_

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "io/io_op.h"
#include "queues/mpsc_queue.h"
#include "sched/io_backend.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::internal {

class IoOpRegistry {
 public:
  IoOpRegistry() = default;
  IoOpRegistry(const IoOpRegistry&) = delete;
  IoOpRegistry& operator=(const IoOpRegistry&) = delete;

  // --- Any thread. Each returns true if the caller must Notify the role holder. ---

  bool Submit(IoOp* op) {
    FAIRSCHED_DCHECK(op->task_ != nullptr || op->handler_ != nullptr,
                     "IoOp submitted without a task or handler (Prepare it first)");
    // Relaxed: a double submit is misuse; the RMW makes two racing submitters disagree.
    FAIRSCHED_CHECK(op->state_.exchange(IoOp::kQueued, std::memory_order_relaxed) == IoOp::kIdle,
                    "IoOp submitted while already submitted (wait for its final completion)");
    op->cancel_seen_ = false;
    op->completed_ = false;
    op->readiness_.store(0, std::memory_order_relaxed);
    // Relaxed: counts ops between Submit and the final completion, for tests and the
    // destructor's leak check; nothing synchronises through it.
    live_.fetch_add(1, std::memory_order_relaxed);
    // The push (a seq_cst exchange + release link, see MpscQueue) publishes the op's fields
    // to the role's Pop. Notify only when the queue was empty: a non-empty queue is already
    // due to be drained by someone who notified (Drain never stops at an in-flight push).
    return queue_.Push(op);
  }

  bool Cancel(IoOp* op) {
    // Acquire on the first load and on the CAS: pairs with the role's release CAS
    // kQueued -> kActive, which comes after Pop's last touch of op->next (Pop is done with
    // an item before returning it); our push below rewrites `next`, and must come after.
    std::uint8_t state = op->state_.load(std::memory_order_acquire);
    while (true) {
      if (state == IoOp::kIdle || (state & IoOp::kCancel) != 0) return false;  // nothing to do
      if (op->state_.compare_exchange_weak(state, state | IoOp::kCancel, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
        break;
      }
    }
    // Still queued: the role sees kCancel when it pops the submission; nothing to push.
    if (state == IoOp::kQueued) return false;
    // Armed: hand the cancellation request to the role through the queue.
    return queue_.Push(op);
  }

  // Ops submitted and not yet finally completed (a snapshot).
  std::int64_t LiveCount() const { return live_.load(std::memory_order_relaxed); }

  // --- Sched-role only. ---

  // Pops every submission and cancellation request. `arm(op)` puts a new op into the
  // kernel; `disarm(op)` asks the kernel to cancel an armed one. Both may call Complete.
  template <typename Arm, typename Disarm>
  void Drain(IoReadySink& sink, Arm&& arm, Disarm&& disarm) {
    while (true) {
      IoOp* const op = queue_.Pop();
      if (op == nullptr) {
        if (queue_.IsEmpty()) break;
        // A push is in flight (its tail exchange is done, its link not yet): Pop cannot take
        // it, and its submitter, whose Push returned false, sends no Notify. Returning now
        // could let the holder sleep with the op queued, so give the submitter the core and
        // look again; it links the op within a few instructions unless it was preempted.
        std::this_thread::yield();
        continue;
      }
      // Pop is done with the op's link before returning it, so a canceller may push the op
      // again as soon as the CAS below makes it kActive.
      std::uint8_t state = IoOp::kQueued;
      // Release on success: pairs with a canceller's acquire (it then sees kActive and hands
      // its request through the queue).
      if (op->state_.compare_exchange_strong(state, IoOp::kActive, std::memory_order_release,
                                             std::memory_order_relaxed)) {
        LinkInFlight(op);
        arm(op);
      } else if (state == (IoOp::kQueued | IoOp::kCancel)) {
        Finish(op, -ECANCELED, sink);  // cancelled before it was ever armed
      } else {
        // kActive|kCancel: a cancellation request for an armed op.
        op->cancel_seen_ = true;
        if (op->completed_) {
          Finish(op, op->result_, sink);
        } else {
          disarm(op);
        }
      }
    }
  }

  // The kernel finished `op` (its last event): final completion, unless a canceller is still
  // pushing the op (then at the pop of its request).
  void Complete(IoOp* op, std::int32_t result, IoReadySink& sink) {
    if (op->cancel_seen_) {
      Finish(op, result, sink);
      return;
    }
    std::uint8_t state = IoOp::kActive;
    // Relaxed: the only data that crosses is the result, which Finish publishes through the
    // task's Signal; a canceller that later reads kIdle does nothing.
    if (op->state_.compare_exchange_strong(state, IoOp::kIdle, std::memory_order_relaxed)) {
      Finish(op, result, sink);
      return;
    }
    op->result_ = result;
    op->completed_ = true;
  }

  // Readiness for a Watch or a Poll: adds the bits. Relaxed fetch_or: the wake that follows
  // (its release) publishes them (see IoOp::TakeReadiness).
  static void AddReadiness(IoOp* op, std::uint32_t readiness) {
    op->readiness_.fetch_or(readiness, std::memory_order_relaxed);
  }
  // A Watch's edge: adds the bits for the task to take, or hands them to the handler; then
  // as Wake.
  void Ready(IoOp* op, std::uint32_t readiness, IoReadySink& sink) {
    if (op->handler_ == nullptr) AddReadiness(op, readiness);
    Wake(op, sink, readiness);
  }
  // An intermediate completion (a Watch's edge, a multishot op's queued event): wakes the
  // task as Wakeup, or calls the handler's OnIoEvent with `readiness`. The op stays armed.
  void Wake(IoOp* op, IoReadySink& sink, std::uint32_t readiness = 0) {
    ++woken_;
    if (op->handler_ != nullptr) {
      op->handler_->OnIoEvent(*op, readiness, sink);
      return;
    }
    sink.Wake(op->task_, IoWake::kWakeup);
  }

  // Whether tasks were woken (or handlers called, which may have woken some) since the last
  // call. A backend's WaitUntil must not block after its drain woke a task: that task sits
  // unpublished until the holder returns.
  bool TakeWoken() {
    const bool woken = woken_ != 0;
    woken_ = 0;
    return woken;
  }

  // Shutdown: marks every armed op cancelled and disarms it (no queue round trip: we are the
  // role). Ops whose cancellation was already requested are left to that request.
  template <typename Disarm>
  void CancelAll(Disarm&& disarm) {
    IoOp* op = in_flight_;
    while (op != nullptr) {
      IoOp* const following = op->in_flight_next_;  // disarm may finish (unlink) op
      std::uint8_t state = IoOp::kActive;
      // Relaxed: the role is the only one that reads what it writes next (cancel_seen_); a
      // racing canceller's CAS then fails and it pushes nothing.
      if (op->state_.compare_exchange_strong(state, IoOp::kActive | IoOp::kCancel,
                                             std::memory_order_relaxed)) {
        op->cancel_seen_ = true;
        disarm(op);
      }
      op = following;
    }
  }

  // Whether the role has handled a cancellation of `op` (it is being disarmed).
  static bool CancelSeen(const IoOp* op) { return op->cancel_seen_; }

  bool HasInFlight() const { return in_flight_ != nullptr; }
  bool HasQueued() const { return !queue_.IsEmpty(); }

 private:
  void LinkInFlight(IoOp* op) {
    op->in_flight_prev_ = nullptr;
    op->in_flight_next_ = in_flight_;
    if (in_flight_ != nullptr) in_flight_->in_flight_prev_ = op;
    in_flight_ = op;
  }
  void UnlinkInFlight(IoOp* op) {
    if (op->in_flight_prev_ != nullptr) {
      op->in_flight_prev_->in_flight_next_ = op->in_flight_next_;
    } else if (in_flight_ == op) {
      in_flight_ = op->in_flight_next_;
    }
    if (op->in_flight_next_ != nullptr) op->in_flight_next_->in_flight_prev_ = op->in_flight_prev_;
    op->in_flight_prev_ = op->in_flight_next_ = nullptr;
  }

  // The final completion: the last time the backend touches `op` or its task.
  void Finish(IoOp* op, std::int32_t result, IoReadySink& sink) {
    UnlinkInFlight(op);
    op->result_ = result;
    Task* const task = op->task_;
    IoOpHandler* const handler = op->handler_;
    live_.fetch_sub(1, std::memory_order_relaxed);
    // Relaxed: published with result_ by the Signal below (its release), which is what the
    // task waits for; a handler runs on this thread, and whatever it wakes is published by
    // that wake.
    op->state_.store(IoOp::kIdle, std::memory_order_relaxed);
    ++woken_;
    if (handler != nullptr) {
      handler->OnIoFinished(*op, sink);  // may free the op: nothing touches it after this
      return;
    }
    sink.Wake(task, IoWake::kSignal);
  }

  MpscQueue<IoOp> queue_;
  IoOp* in_flight_ = nullptr;  // armed ops (role-only, doubly linked)
  std::uint64_t woken_ = 0;    // wakes since the last TakeWoken (role-only)
  Atomic<std::int64_t> live_{0};
};

}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_IO_OP_REGISTRY_H_
