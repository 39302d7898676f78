// Fork-join with a coro::TaskList: 100 lazy coroutines, each of which does a step, yields
// to the scheduler and does a second step. main() waits for the list and, while it waits,
// runs tasks of the list on its own thread. Prints how many tasks each thread started.
#include <atomic>
#include <cstdio>
#include <thread>

#include "coro/runtime.h"
#include "coro/task_list.h"
#include "sched/task_scheduler.h"

namespace {

using fairsched::coro::Lazy;

Lazy<void> Step(int index, std::thread::id main_thread, std::atomic<int>* started_on_main,
                std::atomic<int>* finished) {
  if (std::this_thread::get_id() == main_thread) started_on_main->fetch_add(1);
  co_await fairsched::coro::Yield();  // back of the ready queue; may resume on another thread
  if (index % 25 == 0) std::printf("task %d finished its second step\n", index);
  finished->fetch_add(1);
}

}  // namespace

int main() {
  fairsched::TaskScheduler sched;
  sched.Start(3);
  std::atomic<int> started_on_main{0}, finished{0};
  fairsched::coro::TaskList<void> tasks(sched);
  for (int i = 0; i < 100; ++i) {
    tasks.Add(Step(i, std::this_thread::get_id(), &started_on_main, &finished));
  }
  tasks.Wait();  // runs tasks here too; returns when all 100 have finished
  std::printf("finished: %d of 100; started by the waiting thread: %d\n", finished.load(),
              started_on_main.load());
  sched.Stop();
  return finished.load() == 100 ? 0 : 1;
}
