// The coroutine wait word (coro/internal/wait_word.h) under the interleaving explorer,
// driven directly: the scenario plays the coroutine's thread (open a wait, look whether it
// is closed, suspend, run again at the deadline or when woken, finish) and the other
// threads play a Waker, a canceller, a CoroutineRef::Signal, and the JoinHandle. Shared by
// wait_word_explore_test.cc (the shipped header) and the wait_word_seeded_*_test.cc files
// (scratch copies with one seeded bug, included first).
//
// Checks, the promises of the bit table:
//   - exactly one closer per wait: at most one transition reports that it closed the wait,
//     and when none did, the wait was born closed (Open saw a cancellation or a remembered
//     signal); the reason the coroutine resumes with is that closer's;
//   - no lost wake: a closer on another thread wakes the coroutine's task exactly once, and
//     never while the wait is still open; a coroutine that suspended with no deadline
//     waits for that wake (a lost one shows as a livelock);
//   - a stale waker (of an earlier wait) never closes a later wait; a Signal that lands
//     between waits is remembered and ends the next external wait, once;
//   - publication: what a closer wrote before closing (an explore::Data) is read by the
//     coroutine after it sees the wait closed, so a closing step without release (or a
//     look without acquire) is reported as a data race;
//   - finish and the JoinHandle: of the hand-over and Detach exactly one side drops the
//     coroutine's own reference (the state is destroyed exactly once), and a join that
//     took the result drops the last reference itself (the state is gone when it returns),
//     after every touch of the finishing thread.
#ifndef FAIRSCHED_TESTS_EXPLORE_WAIT_WORD_SCENARIO_H_
#define FAIRSCHED_TESTS_EXPLORE_WAIT_WORD_SCENARIO_H_

#include <cstdint>
#include <string>

#include "coro/internal/wait_word.h"
#include "coro/runtime_types.h"
#include "sync/primitives.h"

namespace fairsched::coro::testing {

using internal::WaitWord;

inline std::string Name(WakeReason reason) { return ToString(reason); }

// One coroutine's wait word and a model of what the state around it does: WakeTask counts
// the scheduler wakeups of the coroutine's task.
class WaitWordHarness {
 public:
  // --- The coroutine's thread. ---

  // PrepareWait (or the external wait WaitSignal opens). The coroutine's cancel reason is
  // taken as not yet published, so a cancellation is seen through the word only.
  std::uint64_t Open(bool cancellable, bool external) {
    return word_.Open(cancellable, external, /*cancel_published=*/false,
                      [] { return WakeReason::kCancelled; });
  }

  // WaitWoken: the wait already closed (await_ready), or suspend; the task then runs at the
  // wait's deadline (`deadline`: FinishWait closes it itself unless a closer came first) or,
  // with no deadline, when a closer wakes it. Returns the reason the coroutine resumes with,
  // and reads what that closer published.
  WakeReason WaitWoken(bool deadline) {
    WakeReason reason;
    if (!word_.TakeClosed(&reason)) {
      if (deadline) {
        const std::uint64_t word = word_.LoadAcquire();
        if ((word & WaitWord::kOpen) == 0) {
          reason = WaitWord::ReasonOf(word);
        } else if (word_.CloseOwn(word, WakeReason::kDeadline, &reason)) {
          reason = WakeReason::kDeadline;
          closers_.fetch_add(1, std::memory_order_relaxed);
        }
      } else {
        // Run each time the task is woken; a wake that finds the wait still open is a
        // leftover of an earlier wait (its closer woke the task after the coroutine had
        // seen that wait closed) and is absorbed, as FinishWait does.
        for (;;) {
          while (task_wakes_.load(std::memory_order_acquire) <= wakes_absorbed_) CpuRelax();
          ++wakes_absorbed_;
          const std::uint64_t word = word_.LoadAcquire();
          if ((word & WaitWord::kOpen) == 0) {
            reason = WaitWord::ReasonOf(word);
            break;
          }
          ++leftover_wakes_;
        }
      }
    }
    ReadPublished(reason);
    return reason;
  }

  // --- Other threads. ---

  // Waker::Wakeup of wait `epoch`: publishes, then closes; wakes the task if it closed it.
  bool Wake(std::uint64_t epoch) {
    wakeup_payload_.Write(1);
    if (!word_.CloseEpoch(epoch, WakeReason::kWakeup)) return false;
    Closed();
    return true;
  }
  // CoroutineRef::Signal.
  bool Signal() {
    signal_payload_.Write(1);
    if (!word_.Notify(WakeReason::kSignal)) return false;
    Closed();
    return true;
  }
  // Cancel (after the cancel callbacks, whose effects it publishes).
  bool Cancel() {
    cancel_payload_.Write(1);
    if (!word_.SetCancelRequested(WakeReason::kCancelled)) return false;
    Closed();
    return true;
  }

  // After every thread joined: how many transitions reported a close, how many wakes.
  int closers() { return closers_.load(std::memory_order_relaxed); }
  int task_wakes() { return task_wakes_.load(std::memory_order_relaxed); }
  std::uint64_t word() { return word_.LoadAcquire(); }
  // Wakes the coroutine's thread ran on while its wait was still open.
  int leftover_wakes() const { return leftover_wakes_; }

  WaitWord& wait_word() { return word_; }

 private:
  // A closer on another thread: the close is counted, and WakeTask wakes the task.
  void Closed() {
    closers_.fetch_add(1, std::memory_order_relaxed);
    // Release, and acquire where the coroutine's thread sees the wake: the scheduler's
    // Wakeup and the run of the task order memory as well (a task state RMW and a queue).
    task_wakes_.fetch_add(1, std::memory_order_release);
  }
  void ReadPublished(WakeReason reason) {
    if (reason == WakeReason::kWakeup) {
      explore::Check(wakeup_payload_.Read() == 1, "resumed with kWakeup before the waker wrote");
    } else if (reason == WakeReason::kSignal) {
      explore::Check(signal_payload_.Read() == 1, "resumed with kSignal before the signal");
    } else if (reason == WakeReason::kCancelled) {
      explore::Check(cancel_payload_.Read() == 1, "resumed with kCancelled before the cancel");
    }
  }

  WaitWord word_;
  Atomic<int> closers_{0};
  Atomic<int> task_wakes_{0};
  int wakes_absorbed_ = 0;  // the coroutine's thread only
  int leftover_wakes_ = 0;  // the coroutine's thread only
  explore::Data<int> wakeup_payload_{0};
  explore::Data<int> signal_payload_{0};
  explore::Data<int> cancel_payload_{0};
};

// A Waker races the coroutine's suspension (the wake between PrepareWait and WaitWoken, or
// after), and a Cancel races both (before the wait opens: born cancelled; while it is
// open: it closes it; after: it only sets the sticky bit). With `deadline`, the wait's
// deadline races them too (the task runs right after the suspension and closes the wait
// itself unless someone came first).
inline void WakeRacesSuspendAndCancel(bool deadline) {
  WaitWordHarness h;
  bool cancel_closed = false;
  bool wake_closed = false;
  explore::Thread canceller([&] { cancel_closed = h.Cancel(); });
  const std::uint64_t epoch = h.Open(/*cancellable=*/true, /*external=*/false);
  explore::Thread waker([&] { wake_closed = h.Wake(epoch); });
  const WakeReason reason = h.WaitWoken(deadline);
  canceller.Join();
  waker.Join();
  explore::Check(h.closers() <= 1, "a wait was closed " + std::to_string(h.closers()) + " times");
  explore::Check(h.task_wakes() == (cancel_closed ? 1 : 0) + (wake_closed ? 1 : 0),
                 "a closer on another thread did not wake the task exactly once");
  if (wake_closed) {
    explore::Check(reason == WakeReason::kWakeup,
                   "the waker closed the wait, the coroutine saw " + Name(reason));
  } else if (cancel_closed) {
    explore::Check(reason == WakeReason::kCancelled,
                   "the cancel closed the wait, the coroutine saw " + Name(reason));
  } else if (h.closers() == 0) {
    // Nobody reported a close: the wait was born closed by the cancellation.
    explore::Check(reason == WakeReason::kCancelled,
                   "no transition closed the wait, yet the coroutine resumed with " + Name(reason));
  } else {
    explore::Check(deadline && reason == WakeReason::kDeadline,
                   "the deadline closed the wait, the coroutine saw " + Name(reason));
  }
  explore::Check(h.leftover_wakes() == 0, "the task was woken while its only wait was open");
  explore::Check((h.word() & WaitWord::kCancelRequested) != 0, "the cancel request was lost");
}

// Two waits in a row: wait 1 (a PrepareWait wait) ends at its deadline unless its waker
// comes first; wait 2 is an external wait (WaitSignal). A waker of wait 1 that comes late
// (stale) must not end wait 2, and a CoroutineRef::Signal sent at any time ends wait 2:
// remembered if it lands while wait 1 (not external) is open or between the waits.
inline void StaleWakerAndSignal() {
  WaitWordHarness h;
  bool signal_closed = false;
  const std::uint64_t epoch1 = h.Open(/*cancellable=*/true, /*external=*/false);
  bool stale_closed = false;
  explore::Thread waker([&] { stale_closed = h.Wake(epoch1); });
  explore::Thread signaller([&] { signal_closed = h.Signal(); });
  const WakeReason first = h.WaitWoken(/*deadline=*/true);
  h.Open(/*cancellable=*/true, /*external=*/true);
  const WakeReason second = h.WaitWoken(/*deadline=*/false);
  waker.Join();
  signaller.Join();
  explore::Check(
      first == (stale_closed ? WakeReason::kWakeup : WakeReason::kDeadline),
      "wait 1 ended with " + Name(first) + (stale_closed ? ", its waker closed it" : ""));
  explore::Check(second == WakeReason::kSignal, "wait 2 (WaitSignal) ended with " + Name(second));
  explore::Check((h.word() & (WaitWord::kPendingSignal | WaitWord::kPendingWakeup)) == 0,
                 "a remembered signal was left after the wait it ended");
  explore::Check(h.task_wakes() == (stale_closed ? 1 : 0) + (signal_closed ? 1 : 0),
                 "a closer on another thread did not wake the task exactly once");
  explore::Check(h.leftover_wakes() <= (stale_closed ? 1 : 0),
                 "wait 2 absorbed a wake that no earlier wait left");
}

// The coroutine finishes (MarkFinished, then hands its own reference to the JoinHandle)
// while the handle lets go (`join` false: Detach) or joins (`join` true: it waits for the
// coroutine to be finished, takes the result, waits for Finish's last step and drops its
// reference and the handed-over one). The state's two references (the coroutine's own
// and the handle's) are counted as in CoroutineState::Unref; the last one destroys it,
// after reading what Finish wrote last.
inline void FinishRacesHandle(bool join) {
  WaitWordHarness h;
  WaitWord& word = h.wait_word();
  Atomic<int> refs{2};
  explore::Data<int> result{0};
  explore::Data<int> finish_touch{0};
  explore::Data<int> destroyed{0};
  auto unref = [&](int count) {
    if (refs.fetch_sub(count, std::memory_order_acq_rel) == count) {
      explore::Check(finish_touch.Read() == 1, "destroyed before Finish's last touch");
      destroyed.Write(destroyed.Read() + 1);
    }
  };
  explore::Thread handle([&] {
    if (join) {
      while (!word.IsFinished()) CpuRelax();  // the join wait, ended by Finish
      explore::Check(result.Read() == 7, "the join took the result before it was written");
      const std::uint64_t seen = word.WaitFinishDone();
      unref((seen & WaitWord::kOwnRefHandedOver) != 0 ? 2 : 1);
      explore::Check(destroyed.Read() == 1, "the join returned before the state was destroyed");
    } else {
      const std::uint64_t seen = word.Detach();
      unref((seen & WaitWord::kOwnRefHandedOver) != 0 ? 2 : 1);
    }
  });
  result.Write(7);
  word.MarkFinished();
  finish_touch.Write(1);  // Finish's touches of the state after kFinished (the joiner, ...)
  if (!word.HandOverOwnReference()) unref(1);
  handle.Join();
  explore::Check(destroyed.Read() == 1,
                 "the state was destroyed " + std::to_string(destroyed.Read()) + " times");
}

}  // namespace fairsched::coro::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_WAIT_WORD_SCENARIO_H_
