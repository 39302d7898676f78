// Helpers shared by the IO test suites (tests/io): the process's open file descriptor count,
// which every IO test compares before and after to catch leaks, and a bounded poll for a
// condition that another thread makes true.
#ifndef FAIRSCHED_TESTS_IO_IO_TEST_UTIL_H_
#define FAIRSCHED_TESTS_IO_IO_TEST_UTIL_H_

#include <dirent.h>

#include <chrono>
#include <thread>

#include "sched/task.h"

namespace fairsched::testing {

// Entries of /proc/self/fd (including the one opendir itself uses), or -1 if it cannot be
// read. Compare two counts taken the same way.
inline int OpenFdCount() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count;
}

// Polls `done` every 200 µs until it holds or `timeout` passes; returns whether it held.
template <typename Predicate>
bool WaitUntilTrue(Predicate done,
                   std::chrono::nanoseconds timeout = std::chrono::seconds(20)) {
  const auto give_up = TaskClock::now() + timeout;
  while (!done()) {
    if (TaskClock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_IO_TEST_UTIL_H_
