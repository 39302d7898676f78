// The real fairsched::Task as the `Ops` of tests/explore/task_wake_scenario.h: the test-only
// door into Task's private state transitions (internal::TaskStateAccess, a friend declared
// in sched/task.h) and the adapter the scenarios call. Shared by task_wake_explore_test.cc
// (sequential consistency) and memory_order_test.cc (the C++20 model).
#ifndef FAIRSCHED_TESTS_EXPLORE_REAL_TASK_OPS_H_
#define FAIRSCHED_TESTS_EXPLORE_REAL_TASK_OPS_H_

#include <atomic>
#include <cstdint>

#include "sched/task.h"

namespace fairsched {
namespace internal {

struct TaskStateAccess {
  static bool TryPendingToWaiting(Task& task) { return task.TryPendingToWaiting(); }
  static bool TryWaitingToReady(Task& task) { return task.TryWaitingToReady(); }
  static bool TryWake(Task& task, std::uint8_t bits) { return task.TryWake(bits); }
  static bool IsWoken(const Task& task) { return task.IsWoken(); }
  static void BeginExecution(Task& task) { task.BeginExecution(); }
  // The scenarios' probe of the state after the fact. A relaxed read-modify-write (of 0):
  // it reads the newest state even under kCpp20 (a load could read an older one and
  // misjudge whether a wakeup was absorbed), and acquires nothing, so it cannot hide a
  // missing acquire in the code under test.
  static std::uint8_t StateBits(const Task& task) {
    return const_cast<Task&>(task).state_.fetch_or(0, std::memory_order_relaxed);
  }
  static constexpr std::uint8_t kWoken = Task::kWoken;
  static constexpr std::uint8_t kSignaled = Task::kSignaled;
};

}  // namespace internal

namespace testing {

struct RealTaskOps {
  // The deadline and callback play no part in these transitions; a default Task will do.
  using Object = Task;
  using Access = internal::TaskStateAccess;
  static bool TryPendingToWaiting(Task& task) { return Access::TryPendingToWaiting(task); }
  static bool TryWaitingToReady(Task& task) { return Access::TryWaitingToReady(task); }
  static bool TryWake(Task& task, std::uint8_t bits) { return Access::TryWake(task, bits); }
  static bool IsWoken(const Task& task) { return Access::IsWoken(task); }
  static bool BeginExecution(Task& task) {
    Access::BeginExecution(task);
    return task.ReceiveSignal();
  }
  static std::uint8_t StateBits(const Task& task) { return Access::StateBits(task); }
  static constexpr std::uint8_t kWoken = Access::kWoken;
  static constexpr std::uint8_t kSignaled = Access::kSignaled;
};

}  // namespace testing
}  // namespace fairsched

#endif  // FAIRSCHED_TESTS_EXPLORE_REAL_TASK_OPS_H_
