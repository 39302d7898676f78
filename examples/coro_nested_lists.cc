// Nested fork-join: 100 outer coroutines, each of which forks a list of 20 inner ones and
// co_awaits it (suspending, without blocking its worker) before it finishes.
#include <atomic>
#include <cstdio>

#include "coro/runtime.h"
#include "coro/task_list.h"
#include "sched/task_scheduler.h"

namespace {

using fairsched::coro::Lazy;
using fairsched::coro::TaskList;

Lazy<void> Inner(std::atomic<int>* inner_finished) {
  co_await fairsched::coro::Yield();
  inner_finished->fetch_add(1);
}

Lazy<int> Outer(int index, fairsched::TaskScheduler* sched, std::atomic<int>* inner_finished) {
  TaskList<void> inner(*sched);
  for (int j = 0; j < 20; ++j) inner.Add(Inner(inner_finished));
  co_await inner.Join();  // the 20 inner tasks run as children of this coroutine
  co_await fairsched::coro::Yield();
  co_return index;
}

}  // namespace

int main() {
  fairsched::TaskScheduler sched;
  sched.Start(3);
  std::atomic<int> inner_finished{0};
  TaskList<int> outer(sched);
  for (int i = 0; i < 100; ++i) outer.Add(Outer(i, &sched, &inner_finished));
  outer.Wait();
  long sum = 0;
  for (int index : outer.TakeResults()) sum += index;
  std::printf("outer finished: 100 (sum of indices %ld), inner finished: %d of 2000\n", sum,
              inner_finished.load());
  sched.Stop();
  return sum == 4950 && inner_finished.load() == 2000 ? 0 : 1;
}
