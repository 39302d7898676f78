// Scenarios that run the real BasicTaskScheduler (sched/task_scheduler.h, the standard
// TaskScheduler: McspQueue ready queue, BinaryHeap wait queue, NoIoBackend) under the
// interleaving explorer. Its workers are model threads (the scheduler spawns Thread, which
// the explore build makes explore::Thread), its atomics, mutexes and Signals (futex path,
// FAIRSCHED_EXPLORE_FUTEX) are the explorer's, and its clock is the logical one, which only
// timeouts move (sync/explore/futex.h). Shared by scheduler_explore_test.cc (the shipped
// code) and the scheduler_seeded_*_test.cc files (scratch copies with one seeded bug).
//
// Every scenario ends in WaitEmpty with a finite timeout. In the model a timed
// condition-variable wait times out only when no other thread can run (after every timed
// park), so reaching the deadline means every worker sleeps: a post has not finished (a
// lost task or wake-up), or WaitEmpty's notification was lost. The check's message says
// which, and how many runs had happened by then.
//
// spin_before_park is 0: a spin is a loop on the clock, which the logical clock never moves.
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

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_SCHEDULER_SCENARIOS_H_
