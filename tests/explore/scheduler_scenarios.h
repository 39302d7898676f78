// Scenarios that run the real BasicTaskScheduler (sched/task_scheduler.h, the standard
// TaskScheduler: McspQueue ready queue, BinaryHeap wait queue, NoIoBackend) under the
// interleaving explorer. Its workers are model threads (the scheduler spawns Thread, which
// the explore build makes explore::Thread), its atomics, mutexes and Signals (futex path,
// FAIRSCHED_EXPLORE_FUTEX) are the explorer's, and its clock is the logical one, which only
// timeouts move (sync/explore/futex.h). Shared by scheduler_explore_test.cc (the shipped
// code) and the scheduler_seeded_*_test.cc files (scratch copies with one seeded bug).
//
// Every scenario ends in WaitEmpty with a finite timeout (the Stop race in a timed wait for
// Stop to return, see StopRacesPost). In the model a timed condition-variable wait times
// out only when no other thread can run (after every timed park), so reaching the deadline
// means every worker sleeps: a post has not finished (a lost task or wake-up), or
// WaitEmpty's notification was lost. The check's message says which, and how many runs had
// happened by then.
//
// spin_before_park is 0: a spin is a loop on the clock, which the logical clock never moves.
// yields_before_park is 0: its looks come before Park registers, like the spin's, and
// would only multiply the interleavings without a new state of the protocol.
#ifndef FAIRSCHED_TESTS_EXPLORE_SCHEDULER_SCENARIOS_H_
#define FAIRSCHED_TESTS_EXPLORE_SCHEDULER_SCENARIOS_H_

#include <chrono>
#include <string>

#include "sched/task.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"

namespace fairsched::testing {

inline TaskSchedulerOptions ExploreSchedulerOptions() {
  TaskSchedulerOptions options;
  options.spin_before_park = std::chrono::nanoseconds::zero();
  options.yields_before_park = 0;  // looks before the registration: no state of the protocol
  options.latency_sample_period = 0;  // no clock reads for the histogram
  options.ready_block_size = 4;
  return options;
}

// A task that counts its runs (an atomic, so a failed WaitEmpty can still report it) and
// writes `data` (checked for races: its runs must be ordered before the scenario's reads).
struct CountingTask {
  Atomic<int> runs{0};
  explore::Data<int> data{0};
  Atomic<bool> expired{false};
  Task task{[this](Task* self) {
    runs.fetch_add(1, std::memory_order_relaxed);
    data.Write(data.Read() + 1);
    expired.store(self->IsExpired(), std::memory_order_relaxed);
  }};
};

// WaitEmpty must return true, and before its deadline: in the model, reaching it means every
// other thread slept (a lost task, or a lost notification of the last finish).
template <typename Scheduler>
void ExpectEmpty(Scheduler& scheduler, CountingTask* tasks, int count) {
  const SteadyClock::time_point deadline = SteadyClock::now() + std::chrono::seconds(1);
  const bool empty = scheduler.WaitEmpty(std::chrono::seconds(1));
  int ran = 0;
  for (int i = 0; i < count; ++i) ran += tasks[i].runs.load(std::memory_order_relaxed);
  explore::Check(empty && SteadyClock::now() < deadline,
                 std::string(empty ? "WaitEmpty was not woken: it returned at its deadline"
                                   : "WaitEmpty timed out") +
                     " with every worker asleep, after " + std::to_string(ran) + " of " +
                     std::to_string(count) + " runs");
  for (int i = 0; i < count; ++i) {
    explore::Check(tasks[i].data.Read() == 1,
                   "task " + std::to_string(i) + " ran " + std::to_string(tasks[i].data.Read()) +
                       " times for one post");
  }
}

// The workers start while the owner posts two tasks from outside; another thread's
// WaitEmpty races the workers' finishing; then Stop.
template <typename Scheduler = TaskScheduler>
void PostFromOutside(int workers) {
  CountingTask tasks[2];
  Scheduler scheduler(ExploreSchedulerOptions());
  scheduler.Start(workers);
  scheduler.Post(&tasks[0].task);
  scheduler.Post(&tasks[1].task);
  explore::Thread watcher([&] { ExpectEmpty(scheduler, tasks, 2); });
  watcher.Join();
  scheduler.Stop();
}

// A task waits (PostWait, or a deadline) while another thread wakes it: the wakeup races
// the sched-role receiving the task, and, with a deadline, its expiry. It runs exactly once.
template <typename Scheduler = TaskScheduler>
void WakeupRacesWait(bool with_deadline, int workers) {
  CountingTask tasks[1];
  Scheduler scheduler(ExploreSchedulerOptions());
  scheduler.Start(workers);
  if (with_deadline) {
    scheduler.PostDelay(&tasks[0].task, std::chrono::microseconds(100));
  } else {
    scheduler.PostWait(&tasks[0].task);
  }
  explore::Thread waker([&] { scheduler.Wakeup(&tasks[0].task); });
  waker.Join();
  ExpectEmpty(scheduler, tasks, 1);
  scheduler.Stop();
}

// Posts before Start, Stop (drains), a post while stopped, Start again, Stop.
template <typename Scheduler = TaskScheduler>
void StopAndRestart() {
  CountingTask tasks[2];
  Scheduler scheduler(ExploreSchedulerOptions());
  scheduler.Post(&tasks[0].task);
  scheduler.Start(2);
  scheduler.Stop();
  explore::Check(tasks[0].data.Read() == 1, "Stop returned before the queued task ran");
  scheduler.Post(&tasks[1].task);
  explore::Check(tasks[1].runs.load() == 0, "a task ran while the scheduler was stopped");
  scheduler.Start(2);
  ExpectEmpty(scheduler, tasks, 2);
  scheduler.Stop();
}

// Stop racing an outside post. One worker, execute_batch_size 1; the
// owner calls Stop while another thread posts from outside. The posts may land before Stop,
// inside Stop before WaitEmpty looks (WaitEmpty waits for them), between WaitEmpty's look
// and the exit_ store (the race: the worker may run them after exit_ is set, or leave them
// for Stop's restart loop), or after Stop returned (then the second Stop drains them on a
// temporary worker).
//   - kHeldPost: a one-shot A that posts B (a run-now post from a task while every worker
//     executes: into the worker's local batch), then a plain task C. When the worker takes
//     A and C together (one worker claims every ready task), A's batch ends after A (batch
//     size 1) with B in the local batch and C claimed. When it takes A alone and C arrives
//     while A runs, the batch ends with B in the local batch and nothing claimed (a lone
//     worker runs its local batch in place, ClaimLocalInPlace, only while the front queue
//     is empty). When C comes later still, B is claimed in place.
//   - kClaimed: two plain posts; taken together, the batch ends after the first with the
//     second claimed.
// A worker that leaves at exit_ with work held (in its local batch, or claimed) loses it:
// the worker is destroyed, Stop's restart loop starts a fresh worker, which finds nothing
// of it, and Stop's WaitEmpty, which has no timeout, is never woken. The poster is also the
// watchdog that reports this: after its posts it waits for Stop to return with a timed
// wait, which in the model times out only when every other thread sleeps for good (after
// every timed park), so its check fails instead of the search ending in a bare "deadlock:
// every thread is blocked".
// Checks: Stop returns, every counted task (B and C; or both) ran exactly once, IsEmpty()
// after Stop.
//
// The race needs two preemptions: the owner switched away between WaitEmpty's look and the
// exit_ store, and the worker between its sched-role's last exit_ check (before it receives
// the posts) and its loop-top exit_ check (after the first task ran); B left in the local
// batch with nothing claimed (C in the front queue) needs the poster switched away between
// its posts as well, a third. (A YieldThread in the task would make the worker's switch
// free, but the explorer takes a thread that yields twice with nobody else moving in
// between for a spin loop that cannot progress, and times the watchdog out: a false
// report. The scenario uses no yields.)
//
// Under PostOrder::kHome (`order`) the same posts go into the role holder's own queue
// (B into its poster's), and a worker that sees exit_ runs only what it claimed: what is
// left in the queues Stop takes after the workers left (TakeHomeLeftovers) and
// hands to the fresh worker that finishes the drain. With
// `workers` 2 the other worker may be inside an execution batch across the exit, taking
// from the holder's queue (a look, or an idle take) while the holder leaves, and either
// worker may be the holder that received A and C: Stop must drain every queue, whoever
// holds what.
enum class StopRace { kHeldPost, kClaimed };

template <typename Scheduler = TaskScheduler>
void StopRacesPost(StopRace race, PostOrder order = PostOrder::kBatched, int workers = 1) {
  TaskSchedulerOptions options = ExploreSchedulerOptions();
  options.execute_batch_size = 1;
  options.post_order = order;
  CountingTask tasks[2];  // kHeldPost: B, C; kClaimed: the two posts
  constexpr int kCount = 2;
  Scheduler scheduler(options);
  scheduler.Start(workers);
  Mutex mu;
  ConditionVariable stop_returned_cv;
  bool stop_returned = false;  // under mu
  explore::Thread poster([&] {
    if (race == StopRace::kHeldPost) {
      scheduler.PostOneShot([&scheduler, &tasks] {
        scheduler.Post(&tasks[0].task);  // B: into the worker's local batch
      });
      scheduler.Post(&tasks[1].task);  // C
    } else {
      scheduler.Post(&tasks[0].task);
      scheduler.Post(&tasks[1].task);
    }
    // The watchdog (see above).
    bool returned;
    {
      MutexLock lock(mu);
      returned = stop_returned_cv.wait_until(lock, SteadyClock::now() + std::chrono::seconds(1),
                                             [&] { return stop_returned; });
    }
    if (returned) return;
    int ran = 0;
    for (int i = 0; i < kCount; ++i) ran += tasks[i].runs.load(std::memory_order_relaxed);
    explore::Check(false, "Stop did not return: its WaitEmpty was never woken, with every "
                          "worker asleep, after " +
                              std::to_string(ran) + " of " + std::to_string(kCount) + " runs");
  });
  scheduler.Stop();
  {
    MutexLock lock(mu);
    stop_returned = true;
  }
  stop_returned_cv.notify_all();
  poster.Join();
  scheduler.Stop();  // drains posts that landed after the first Stop returned
  for (int i = 0; i < kCount; ++i) {
    explore::Check(tasks[i].data.Read() == 1,
                   "task " + std::to_string(i) + " ran " + std::to_string(tasks[i].data.Read()) +
                       " times for one post (after Stop)");
  }
  explore::Check(scheduler.IsEmpty(), "the scheduler is not empty after Stop");
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_SCHEDULER_SCENARIOS_H_
