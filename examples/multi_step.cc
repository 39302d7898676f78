// README example 2: a multi-step task (callback-style coroutine) that sends two requests
// one after the other, each step woken by the previous request's completion.
#include <cstdio>

#include "examples/fake_async_client.h"
#include "examples/readme_examples.h"

int main() {
  fairsched::examples::FakeAsyncClient client;
  fairsched::TaskScheduler sched;
  sched.Start(2);
  const auto log = fairsched::examples::RunMultiStep(sched, client);
  for (const auto& line : log) std::printf("%s\n", line.c_str());
  sched.Stop();
  return log.size() == 3 ? 0 : 1;
}
