// The wakeup-versus-sched-role scenario for the interleaving explorer, shared by the test of
// the real Task (task_wake_explore_test.cc) and the planted-bug copies (planted_bugs_test.cc).
//
// One task is posted with a future deadline. The sched-role thread does what
// BasicTaskScheduler does with it: takes it from the front queue (ReceiveFromFront: already
// woken -> ready; else CAS PENDING -> WAITING, and if a waker won first -> ready), lets its
// deadline pass (CAS WAITING -> WAITING|WOKEN -> ready), drains the front queue (a waker that
// won the waiting task pushed it there: woken -> out of the wait queue -> ready) and runs the
// task if it is ready (BeginExecution). One or two wakers race with all of that: waker 0
// signals (kWoken|kSignaled), waker 1 wakes (kWoken); whoever turns WAITING into WOKEN
// pushes the task into the front queue. After the joins the sched-role drains the front
// queue once more and runs the task if it has not yet. Checked in every schedule:
//   - the task is made ready exactly once (never lost, never twice), and is no longer in
//     the wait queue once ready (never in two queues);
//   - at most one waker wins, and a waker wins only a task the sched-role has not readied;
//   - the signal is delivered exactly once: either the execution sees it (ReceiveSignal) or
//     it stays remembered in the state for the next post, never both, never neither.
//
// `Ops` adapts the task type: Object (with a `next` link), TryPendingToWaiting,
// TryWaitingToReady, TryWake(bits), IsWoken, BeginExecution (returns whether this
// execution saw a signal), StateBits, and the constants kWoken and kSignaled.
#ifndef FAIRSCHED_TESTS_EXPLORE_TASK_WAKE_SCENARIO_H_
#define FAIRSCHED_TESTS_EXPLORE_TASK_WAKE_SCENARIO_H_

#include <cstdint>
#include <optional>

#include "queues/mpsc_queue.h"
#include "sync/primitives.h"
#include "tests/explore/front_queue_scenario.h"

namespace fairsched::testing {

template <typename Ops>
void WakersRaceExpiry(int wakers) {
  using Object = typename Ops::Object;
  Object task;
  MpscQueue<Object> front;
  // Sched-role state (the sched-role thread, then the main thread after the joins).
  bool in_wait_queue = false;
  int readied = 0;
  bool readied_by_expiry = false;
  bool executed = false;
  bool execution_saw_signal = false;
  bool won[2] = {false, false};

  auto make_ready = [&] { ++readied; };
  auto receive_from_front = [&](Object* received) {
    if (Ops::IsWoken(*received)) {
      in_wait_queue = false;  // a waker won it while it waited: out of the wait queue
      make_ready();
    } else if (!Ops::TryPendingToWaiting(*received)) {
      make_ready();  // a waker got there between the load and the CAS
    } else {
      in_wait_queue = true;
    }
  };
  auto drain_front = [&] {
    // All links are read before any state changes hands (as the scheduler does).
    for (Object* item : TakeBatch<Object>(front)) receive_from_front(item);
  };
  auto execute_if_ready = [&] {
    if (readied == 1 && !executed) {
      executed = true;
      execution_saw_signal = Ops::BeginExecution(task);
    }
  };
  explore::Thread sched_role([&] {
    receive_from_front(&task);  // the post arrives through the front queue
    if (in_wait_queue && Ops::TryWaitingToReady(task)) {  // its deadline passes
      in_wait_queue = false;
      readied_by_expiry = true;
      make_ready();
    }
    drain_front();
    execute_if_ready();
  });
  std::optional<explore::Thread> waker[2];
  for (int k = 0; k < wakers; ++k) {
    waker[k].emplace([&, k] {
      const std::uint8_t bits = k == 0 ? (Ops::kWoken | Ops::kSignaled) : Ops::kWoken;
      won[k] = Ops::TryWake(task, bits);
      if (won[k]) front.Push(&task);
    });
  }
  sched_role.Join();
  for (int k = 0; k < wakers; ++k) waker[k]->Join();
  drain_front();
  execute_if_ready();
  explore::Check(readied == 1,
                 "the task was made ready " + std::to_string(readied) + " times for one post");
  explore::Check(!in_wait_queue, "the task is ready but still in the wait queue");
  explore::Check(!(won[0] && won[1]), "two wakers both won the waiting task");
  explore::Check(!((won[0] || won[1]) && readied_by_expiry),
                 "a waker won a task the expiry path had already readied");
  const bool remembered = (Ops::StateBits(task) & Ops::kSignaled) != 0;
  explore::Check(execution_saw_signal || remembered, "the signal was lost");
  explore::Check(!(execution_saw_signal && remembered), "the signal was delivered twice");
}

// A wakeup that lands on a task that is already woken is absorbed into the run the first
// wakeup causes (or, if it lands after that run began, remembered for the next run). The
// scheduler promises that whatever the waker wrote before its Wakeup happens-before the run
// that absorbs it. Here the task is woken before the threads start; a waker writes a plain
// variable (explore::Data, checked for data races by happens-before) and wakes it again,
// while the executor begins the run; if the waker's wakeup was absorbed into this run (it
// is done and left nothing behind in the state), the run reads the variable. A wakeup that
// absorbs with a plain load (no read-modify-write, so no release in the state's RMW chain)
// publishes nothing: the explorer reports the read as a data race. An SC-only explorer, and
// a stress test on x86, cannot see this (the old ContractStressTest passed with that bug).
template <typename Ops>
void AbsorbedWakeupPublishesTheWakersWrites() {
  typename Ops::Object task;
  Ops::TryWake(task, Ops::kWoken);  // the first wakeup: the run is due
  explore::Data<int> payload(0);
  Atomic<bool> waker_done{false};
  explore::Thread waker([&] {
    payload.Write(1);
    Ops::TryWake(task, Ops::kWoken);
    waker_done.store(true, std::memory_order_relaxed);  // tells nothing about order
  });
  explore::Thread executor([&] {
    Ops::BeginExecution(task);
    const bool absorbed = waker_done.load(std::memory_order_relaxed) &&
                          (Ops::StateBits(task) & Ops::kWoken) == 0;
    if (absorbed) {
      explore::Check(payload.Read() == 1, "the run absorbed the wakeup but not the waker's write");
    }
  });
  waker.Join();
  executor.Join();
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_TASK_WAKE_SCENARIO_H_
