// README example 4: a long-lived task as a background executor, woken by Wakeup whenever
// a request is queued for it.
#include <cstdio>

#include "examples/fake_async_client.h"
#include "examples/readme_examples.h"

int main() {
  fairsched::examples::FakeAsyncClient client;
  fairsched::TaskScheduler sched;
  sched.Start(2);
  const auto outcome = fairsched::examples::RunLongLivedExecutor(sched, client, 100);
  std::printf("requests sent out: %zu of 100, in %d executions of the connection task\n",
              outcome.processed.size(), outcome.executions);
  sched.Stop();
  return outcome.processed.size() == 100 ? 0 : 1;
}
