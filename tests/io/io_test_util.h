// Helpers shared by the IO test suites (tests/io): the IO backends a typed suite runs over on
// this platform (the one place that chooses them) and the scheduler type over one of them,
// the process's open file descriptor count,
// which the IO tests compare before and after to catch leaks, and a bounded poll for a
// condition that another thread makes true.
#ifndef FAIRSCHED_TESTS_IO_IO_TEST_UTIL_H_
#define FAIRSCHED_TESTS_IO_IO_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <type_traits>

#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/io_backend.h"
#include "sched/task.h"
#include "sched/task_scheduler.h"

#ifdef _WIN32
#include "io/iocp_backend.h"
#else
#include <dirent.h>

#include "io/epoll_backend.h"
#include "io/io_uring_backend.h"
#endif

namespace fairsched::testing {

// The backends of this platform: a typed suite over IoBackends runs on each (Linux: epoll
// and io_uring; Windows: IOCP). IoBackendsAndNoIo adds NoIoBackend for the tests that need
// no IO (posts and timers).
#ifdef _WIN32
using IoBackends = ::testing::Types<IocpBackend>;
using IoBackendsAndNoIo = ::testing::Types<NoIoBackend, IocpBackend>;
#else
using IoBackends = ::testing::Types<EpollBackend, IoUringBackend>;
using IoBackendsAndNoIo = ::testing::Types<NoIoBackend, EpollBackend, IoUringBackend>;
#endif

template <typename Backend>
using IoTestScheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;

// Test names: "Epoll", "IoUring", "Iocp", "NoIo" instead of 0, 1, 2.
class BackendNames {
 public:
  template <typename Backend>
  static std::string GetName(int) {
#ifdef _WIN32
    if (std::is_same_v<Backend, IocpBackend>) return "Iocp";
#else
    if (std::is_same_v<Backend, EpollBackend>) return "Epoll";
    if (std::is_same_v<Backend, IoUringBackend>) return "IoUring";
#endif
    return "NoIo";
  }
};

// Entries of /proc/self/fd (including the one opendir itself uses), or -1 if it cannot be
// read. Compare two counts taken the same way. Windows: always -1 (not counted): the handle
// count (GetProcessHandleCount) is what would stand for it, and Wine reports 0 there, so
// under Wine the leak check could only pass; the suites' LiveCount checks still run.
inline int OpenFdCount() {
#ifdef _WIN32
  return -1;
#else
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count;
#endif
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
