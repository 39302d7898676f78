// The four examples of the original TaskScheduler README, written against fairsched, as
// functions the example binaries run and tests/examples checks:
//   1. RunOneShot           - a task that runs once and deletes itself.
//   2. RunMultiStep         - a callback-style coroutine: three steps, each started by the
//                             completion of an async call on another thread.
//   3. RunAsyncWithDeadline - async work with a timeout: the task waits for a Signal or its
//                             deadline, cancels the request on expiry and waits again.
//   4. RunLongLivedExecutor - a long-lived task that sleeps in PostWait and is woken by
//                             Wakeup whenever work is queued for it.
// Each function blocks until its example finished and reports what happened.
#ifndef FAIRSCHED_EXAMPLES_README_EXAMPLES_H_
#define FAIRSCHED_EXAMPLES_README_EXAMPLES_H_

#include <chrono>
#include <string>
#include <vector>

#include "examples/fake_async_client.h"
#include "sched/task_scheduler.h"

namespace fairsched::examples {

// Posts `count` one-shot tasks (`new Task(...)` that delete themselves, as in the README);
// returns how many ran.
int RunOneShot(TaskScheduler& sched, int count);

// Runs one multi-step coroutine: step 1 sends a GET, step 2 (woken by its completion)
// sends a HEAD, step 3 (woken by that) finishes and deletes the coroutine. Returns the log
// of what happened, in order.
std::vector<std::string> RunMultiStep(TaskScheduler& sched, FakeAsyncClient& client);

struct DeadlineOutcome {
  int expirations = 0;     // times the task woke because the deadline passed
  bool signaled = false;   // the task finished because the request's Signal arrived
  bool cancelled = false;  // the request was cancelled after the deadline
  std::string result;      // the request's result as the task saw it
};

// Sends a request that takes `request_latency` with a `timeout`: the task finishes when
// the request completes (Signal); on expiry it cancels the request and waits for the
// cancellation's Signal.
DeadlineOutcome RunAsyncWithDeadline(TaskScheduler& sched, FakeAsyncClient& client,
                                     std::chrono::nanoseconds request_latency,
                                     std::chrono::nanoseconds timeout);

struct ExecutorOutcome {
  std::vector<std::string> processed;  // request payloads in the order they were sent out
  int executions = 0;                  // times the connection task ran
};

// Creates a connection task, sends it `request_count` requests from the calling thread
// (each Send queues the request and wakes the task), closes it, and reports.
ExecutorOutcome RunLongLivedExecutor(TaskScheduler& sched, FakeAsyncClient& client,
                                     int request_count);

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_README_EXAMPLES_H_
