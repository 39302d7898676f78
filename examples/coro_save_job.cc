// The top-level README's coroutine example, as a program: one multi-step job that locks a
// profile with a deadline, waits for its "download" with a deadline, and can be cancelled.
// tests/coro/readme_job_test.cc runs the same job with assertions.
#include <chrono>
#include <cstdio>
#include <string>

#include "coro/mutex.h"
#include "coro/runtime.h"
#include "sched/task_scheduler.h"

namespace {

using namespace fairsched;
using namespace std::chrono_literals;

coro::Mutex profile_lock;  // guards `saves`
int saves = 0;

// Lock the profile (give up after 50 ms), wait for the download to complete (someone calls
// Signal(); give up after 100 ms), change the profile, unlock. Reads like blocking code and
// never blocks a worker thread.
coro::Lazy<std::string> SaveJob() {
  const coro::WaitStatus locked = co_await profile_lock.TryLockUntil(coro::DeadlineAfter(50ms));
  if (locked != coro::WaitStatus::kOk) co_return coro::ToString(locked);  // deadline, cancelled
  coro::MutexGuard guard(profile_lock, std::adopt_lock);                  // unlocks at return
  const coro::WakeReason woke = co_await coro::WaitSignal(coro::DeadlineAfter(100ms));
  if (woke != coro::WakeReason::kSignal) co_return coro::ToString(woke);  // deadline, cancelled
  ++saves;
  co_return "saved";
}

}  // namespace

int main() {
  TaskScheduler sched;
  sched.Start(2);

  coro::JoinHandle<std::string> job = coro::Spawn(sched, SaveJob());
  job.Signal();                                         // the download completed
  std::printf("signalled job: %s\n", job.Get().c_str());  // "saved"

  coro::JoinHandle<std::string> late = coro::Spawn(sched, SaveJob());
  std::printf("unsignalled job: %s\n", late.Get().c_str());  // "deadline" after 100 ms

  coro::JoinHandle<std::string> gone = coro::Spawn(sched, SaveJob());
  gone.Cancel();                                        // wakes it from any wait
  std::printf("cancelled job: %s\n", gone.Get().c_str());  // "cancelled"

  sched.Stop();
  std::printf("saves: %d\n", saves);
  return saves == 1 ? 0 : 1;
}
