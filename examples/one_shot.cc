// README example 1: the scheduler as a thread pool for one-shot tasks.
#include <cstdio>

#include "examples/readme_examples.h"

int main() {
  fairsched::TaskScheduler sched;
  sched.Start(2);
  sched.Post(new fairsched::Task([](fairsched::Task* self) {
    std::printf("Executed in scheduler!\n");
    delete self;
  }));
  const int ran = fairsched::examples::RunOneShot(sched, 1000);
  std::printf("one-shot tasks executed: %d of 1000\n", ran);
  sched.Stop();
  return ran == 1000 ? 0 : 1;
}
