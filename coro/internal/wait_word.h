// The wait word of a spawned coroutine: one atomic 64-bit word that holds the coroutine's
// current wait and its sticky flags, so that opening a wait, closing it, cancelling,
// finishing and letting go of the JoinHandle are each one atomic step. This header is the
// bit table and every transition of it, each a named function of WaitWord with its memory
// order and the race it prevents at the code. The coroutine state
// (coro/internal/coroutine_state.h) decides when to call them, and wakes the coroutine's
// scheduler task when a transition says it closed a wait. Tested directly under the
// interleaving explorer (tests/explore/wait_word_scenario.h).
//
// The bit table:
//   bit 0       kOpen: a wait is open (prepared, and not yet closed)
//   bits 1-3    the WakeReason of the last closed wait
//   bit 4       kCancellableWait: the open wait ends on Cancel/Stop
//   bit 5       kExternalWait: the open wait ends on CoroutineRef::Wakeup/Signal
//   bit 6       kCancelRequested (sticky)
//   bits 7, 8   kPendingWakeup, kPendingSignal: a CoroutineRef::Wakeup/Signal that came
//               while no external wait was open, kept for the next one
//   bit 9       kFinished: the coroutine is done (its result is written); nothing opens
//               again
//   bit 10      kDetached: the JoinHandle let go without taking the result
//   bit 11      kFinishDone: Finish touches the state no more (a join waits for it)
//   bit 12      kOwnRefHandedOver: with kFinishDone, Finish left the coroutine's own
//               reference to the JoinHandle, which drops both
//   bits 16-63  the epoch of the current (or last) wait; only the coroutine changes it
//
// Contract:
//   - Who calls what. The coroutine's own thread (whichever worker runs its task, one at a
//     time): Open, TakeClosed, OpenWaitIsCancellable, CloseOwn, MarkFinished, MarkFinishDone,
//     HandOverOwnReference. Any thread: CloseEpoch (a Waker), Notify (CoroutineRef::Wakeup/
//     Signal), SetCancelRequested (Cancel), Detach (the JoinHandle lets go), WaitFinishDone
//     (a join that took the result), IsFinished, LoadAcquire.
//   - Exactly one transition closes each wait: Open (the wait is born closed by a
//     cancellation or a remembered wakeup/signal), CloseEpoch, Notify, SetCancelRequested,
//     or CloseOwn (the coroutine itself, at the deadline or Stop). The transition that
//     closes it reports so (true) and no other does; a closer on another thread then wakes
//     the coroutine's task (the caller's part), so a wait that was open when the coroutine
//     suspended is never left without a wake.
//   - A closer's writes made before it closed the wait are visible to the coroutine once it
//     sees the wait closed (TakeClosed, LoadAcquire, a failed CloseOwn).
//   - A waker names its epoch: CloseEpoch of an earlier wait (stale) does nothing.
//   - Once kFinished is set no wait is open and none opens; Notify does nothing.
//   - Of MarkFinished + HandOverOwnReference and Detach, exactly one side drops the
//     coroutine's own reference: HandOverOwnReference returns false (drop it yourself) if
//     Detach came first; Detach's returned word has kOwnRefHandedOver (drop both) if the
//     hand-over came first.
#ifndef FAIRSCHED_CORO_INTERNAL_WAIT_WORD_H_
#define FAIRSCHED_CORO_INTERNAL_WAIT_WORD_H_

#include <cstdint>

#include "coro/runtime_types.h"
#include "sync/primitives.h"

namespace fairsched::coro::internal {

class WaitWord {
 public:
  static constexpr std::uint64_t kOpen = 1;
  static constexpr int kReasonShift = 1;
  static constexpr std::uint64_t kReasonMask = std::uint64_t{7} << kReasonShift;
  static constexpr std::uint64_t kCancellableWait = 1 << 4;
  static constexpr std::uint64_t kExternalWait = 1 << 5;
  static constexpr std::uint64_t kCancelRequested = 1 << 6;
  static constexpr std::uint64_t kPendingWakeup = 1 << 7;
  static constexpr std::uint64_t kPendingSignal = 1 << 8;
  static constexpr std::uint64_t kFinished = 1 << 9;
  static constexpr std::uint64_t kDetached = 1 << 10;
  static constexpr std::uint64_t kFinishDone = 1 << 11;
  static constexpr std::uint64_t kOwnRefHandedOver = 1 << 12;
  static constexpr int kEpochShift = 16;

  static WakeReason ReasonOf(std::uint64_t word) {
    return static_cast<WakeReason>((word & kReasonMask) >> kReasonShift);
  }
  static std::uint64_t EpochOf(std::uint64_t word) { return word >> kEpochShift; }
  // `word` with its open wait closed for `reason`.
  static std::uint64_t Closed(std::uint64_t word, WakeReason reason) {
    return (word & ~(kOpen | kReasonMask | kCancellableWait | kExternalWait)) |
           (static_cast<std::uint64_t>(reason) << kReasonShift);
  }

  // --- Waits. ---

  // Coroutine thread: opens a new wait and returns its epoch. A cancellable wait is born
  // closed with `cancelled_reason()` when the coroutine is cancelled (`cancel_published`:
  // the caller saw the cancel reason already published, or kCancelRequested is set); an
  // external wait is born closed with a remembered signal (or wakeup), which it consumes.
  template <typename CancelledReason>
  std::uint64_t Open(bool cancellable, bool external, bool cancel_published,
                     CancelledReason cancelled_reason) {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    // Only this thread changes the epoch bits (the others' CASes keep them).
    const std::uint64_t epoch = EpochOf(old) + 1;
    std::uint64_t desired;
    do {
      desired = (epoch << kEpochShift) |
                (old & (kCancelRequested | kPendingWakeup | kPendingSignal | kReasonMask |
                        kDetached));
      if (cancellable && (cancel_published || (old & kCancelRequested) != 0)) {
        desired = Closed(desired, cancelled_reason());
      } else if (external && (old & (kPendingWakeup | kPendingSignal)) != 0) {
        const WakeReason reason =
            (old & kPendingSignal) != 0 ? WakeReason::kSignal : WakeReason::kWakeup;
        desired = Closed(desired & ~(kPendingWakeup | kPendingSignal), reason);
      } else {
        desired |= kOpen | (cancellable ? kCancellableWait : 0) | (external ? kExternalWait : 0);
      }
      // Acquire: a canceller's or signaller's writes made before its release CAS (which we
      // read here) are visible once we report its reason. Other threads only CAS this word
      // when they see an open wait, and learn nothing else from us: no release needed.
    } while (!word_.compare_exchange_weak(old, desired, std::memory_order_acquire,
                                          std::memory_order_relaxed));
    return epoch;
  }

  // Coroutine thread, after Open: if the wait is already closed, sets `*reason` and returns
  // true. Acquire: pairs with the closer's release CAS (its writes are visible).
  bool TakeClosed(WakeReason* reason) const {
    const std::uint64_t word = word_.load(std::memory_order_acquire);
    if ((word & kOpen) != 0) return false;
    *reason = ReasonOf(word);
    return true;
  }

  // Coroutine thread: whether the open wait ends on Cancel/Stop. Relaxed: only this thread
  // changes that bit.
  bool OpenWaitIsCancellable() const {
    return (word_.load(std::memory_order_relaxed) & kCancellableWait) != 0;
  }

  // Any thread (a Waker): closes wait `epoch` for `reason` if it is still the open wait.
  // Returns false for a stale or already closed wait; true: the caller wakes the task.
  bool CloseEpoch(std::uint64_t epoch, WakeReason reason) {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    do {
      if ((old & kOpen) == 0 || EpochOf(old) != epoch) return false;
      // Release: what the waker wrote before waking is visible to the coroutine, which
      // reads this word with acquire before it reports the reason.
    } while (!word_.compare_exchange_weak(old, Closed(old, reason), std::memory_order_release,
                                          std::memory_order_relaxed));
    return true;
  }

  // Any thread: CoroutineRef::Wakeup/Signal. Ends an open external wait (returns true: the
  // caller wakes the task), else is remembered for the next one; after kFinished does
  // nothing. Release: as in CloseEpoch.
  bool Notify(WakeReason reason) {
    const std::uint64_t pending = reason == WakeReason::kSignal ? kPendingSignal : kPendingWakeup;
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    std::uint64_t desired;
    bool closes;
    do {
      if ((old & kFinished) != 0) return false;
      closes = (old & kOpen) != 0 && (old & kExternalWait) != 0;
      desired = closes ? Closed(old, reason) : old | pending;
    } while (!word_.compare_exchange_weak(old, desired, std::memory_order_release,
                                          std::memory_order_relaxed));
    return closes;
  }

  // Any thread, after the cancel reason is published and the cancel callbacks ran: sets
  // the sticky kCancelRequested and ends an open cancellable wait with `reason` (returns
  // true: the caller wakes the task).
  bool SetCancelRequested(WakeReason reason) {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    std::uint64_t desired;
    bool closes;
    do {
      closes = (old & kOpen) != 0 && (old & kCancellableWait) != 0;
      desired = (closes ? Closed(old, reason) : old) | kCancelRequested;
      // Release, as in CloseEpoch: the callbacks' effects are visible to the coroutine.
    } while (!word_.compare_exchange_weak(old, desired, std::memory_order_release,
                                          std::memory_order_relaxed));
    return closes;
  }

  // Coroutine thread, whose task ran while `word` (read with LoadAcquire) showed the wait
  // open: closes it itself for `reason` (its deadline passed, or Stop). Returns true if it
  // did; false if another closer came first, whose reason is then in `*closer_reason` (its
  // scheduler wakeup is still coming and is absorbed later).
  bool CloseOwn(std::uint64_t word, WakeReason reason, WakeReason* closer_reason) {
    // Acquire on failure: a waker closed it first; we report its reason and need its
    // writes. The CAS also fails when only a flag changed while the wait stayed open (a
    // CoroutineRef::Wakeup/Signal remembered as pending, a cancel request during an
    // uncancellable wait): then the wait is still ours to close, so retry. (Reporting the
    // word's reason bits there would return the previous wait's reason, e.g. a bogus
    // kWakeup that a mutex waiter would take for the lock.)
    while (!word_.compare_exchange_weak(word, Closed(word, reason), std::memory_order_acquire,
                                        std::memory_order_acquire)) {
      if ((word & kOpen) == 0) {
        *closer_reason = ReasonOf(word);
        return false;
      }
    }
    return true;
  }

  // Any thread. Acquire: pairs with a closer's release CAS (and with MarkFinished's).
  std::uint64_t LoadAcquire() const { return word_.load(std::memory_order_acquire); }

  // --- Completion and the JoinHandle. ---

  // Acquire: pairs with MarkFinished's release; the result is written.
  bool IsFinished() const { return (word_.load(std::memory_order_acquire) & kFinished) != 0; }
  // seq_cst: the waiters' half of the Dekker pair with MarkFinished (they install the
  // state's extension, seq_cst, then look at kFinished).
  bool IsFinishedSeqCst() const {
    return (word_.load(std::memory_order_seq_cst) & kFinished) != 0;
  }

  // Coroutine thread, when the coroutine is done: closes any wait left prepared and sets
  // kFinished, so that a later waker, Cancel or Wakeup/Signal never calls into the
  // scheduler, and a JoinHandle sees the result. Returns the word before. seq_cst (release
  // at least): the root frame's result is written before it; seq_cst for the Dekker pair
  // with the waiters (WaitDone, SetJoinWaker: they install the extension, then look at
  // kFinished; we set it, then look for the extension).
  std::uint64_t MarkFinished() {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    while (!word_.compare_exchange_weak(
        old, (old & ~(kOpen | kCancellableWait | kExternalWait)) | kFinished,
        std::memory_order_seq_cst, std::memory_order_relaxed)) {
    }
    return old;
  }

  // Coroutine thread, the last step of Finish with a continuation helper (which keeps the
  // plain rule: the coroutine drops its own reference). Release: a join waiting for
  // kFinishDone may drop its reference after it; ours keeps the state alive meanwhile.
  void MarkFinishDone() { word_.fetch_or(kFinishDone, std::memory_order_release); }

  // Coroutine thread, the last step of Finish: hands the coroutine's own reference to the
  // attached JoinHandle (true), or returns false when the handle is gone (kDetached): the
  // caller then drops the reference itself. After true nothing of the state may be touched.
  bool HandOverOwnReference() {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    for (;;) {
      if ((old & kDetached) != 0) return false;
      // Release: every touch of the state above happens-before the joiner's (or
      // ReleaseHandle's) acquire of this bit and the Destroy that may follow. A CAS rather
      // than an OR: a concurrent ReleaseHandle (kDetached) must make us drop the reference
      // ourselves, since the handle is gone. Nothing of the state may be touched after it.
      if (word_.compare_exchange_weak(old, old | kFinishDone | kOwnRefHandedOver,
                                      std::memory_order_release, std::memory_order_relaxed)) {
        return true;
      }
    }
  }

  // Any thread: the JoinHandle lets go without taking the result. Returns the word before
  // (kFinished: the coroutine is done; kOwnRefHandedOver: drop its own reference too).
  // Acq_rel: the RMW decides which of this and HandOverOwnReference sees the other
  // (exactly one of them drops the coroutine's own reference); acquire also orders
  // Finish's last touches before a Destroy by the caller.
  std::uint64_t Detach() { return word_.fetch_or(kDetached, std::memory_order_acq_rel); }

  // Any thread, a join that took the result: waits until Finish is done with the state (a
  // few steps on the coroutine's thread, which never wait for the joiner). Returns the word
  // (kOwnRefHandedOver: drop the coroutine's own reference too). Acquire: pairs with
  // HandOverOwnReference's (and MarkFinishDone's) release, so Finish's touches of the state
  // happen-before its destruction by the caller.
  std::uint64_t WaitFinishDone() const {
    std::uint64_t word = word_.load(std::memory_order_acquire);
    for (int spins = 0; (word & kFinishDone) == 0; ++spins) {
      if (spins < 64) {
        CpuRelax();
      } else {
        YieldThread();  // the finishing thread was preempted in its last few steps
      }
      word = word_.load(std::memory_order_acquire);
    }
    return word;
  }

 private:
  Atomic<std::uint64_t> word_{0};
};

}  // namespace fairsched::coro::internal

#endif  // FAIRSCHED_CORO_INTERNAL_WAIT_WORD_H_
