// README example 3: async work with a deadline. One request completes in time (the task
// wakes on its Signal); one is too slow (the task wakes on the deadline, cancels it and
// waits for the cancellation's Signal).
#include <cstdio>

#include "examples/fake_async_client.h"
#include "examples/readme_examples.h"

using namespace std::chrono_literals;

int main() {
  fairsched::examples::FakeAsyncClient client;
  fairsched::TaskScheduler sched;
  sched.Start(2);
  const auto fast = fairsched::examples::RunAsyncWithDeadline(sched, client, 2ms, 500ms);
  std::printf("fast request: result '%s', expirations %d, signaled %d\n", fast.result.c_str(),
              fast.expirations, fast.signaled);
  const auto slow = fairsched::examples::RunAsyncWithDeadline(sched, client, 10s, 20ms);
  std::printf("slow request: result '%s', expirations %d, signaled %d\n", slow.result.c_str(),
              slow.expirations, slow.signaled);
  sched.Stop();
  return (fast.expirations == 0 && !fast.cancelled && slow.expirations == 1 && slow.cancelled) ? 0
                                                                                               : 1;
}
