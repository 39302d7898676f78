// The terminate handler that names a task callback's exception: an exception that escapes a
// callback aborts the process with "fairsched: a task callback threw: <what()>" on stderr
// (the contract is in sched/task_scheduler.h, "Lifecycle").
//
// Nothing between a worker's entry and the callback catches (BasicTaskScheduler::Execute),
// so the C++ runtime calls std::terminate before unwinding anything and the throw site stays
// on the stack for a core dump or debugger. TaskTerminateHandler prints which task-level
// failure it was and then hands over to the handler it replaced (by default the runtime's,
// which names the exception type and aborts).
//
//   - t_running_task: true on a worker thread while a callback runs (set by the executor).
//   - InstallTaskExceptionReporter(): installs the handler once per process; the scheduler
//     calls it each time it starts workers.
#ifndef FAIRSCHED_SCHED_INTERNAL_TASK_EXCEPTION_REPORTER_H_
#define FAIRSCHED_SCHED_INTERNAL_TASK_EXCEPTION_REPORTER_H_

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>

namespace fairsched {
namespace internal {

inline thread_local bool t_running_task = false;

inline std::terminate_handler g_previous_terminate_handler = nullptr;

[[noreturn]] inline void TaskTerminateHandler() {
  if (t_running_task) {
    if (const std::exception_ptr thrown = std::current_exception()) {
      try {
        std::rethrow_exception(thrown);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "fairsched: a task callback threw: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "fairsched: a task callback threw a non-std exception\n");
      }
      std::fflush(stderr);
    }
  }
  if (g_previous_terminate_handler != nullptr) g_previous_terminate_handler();
  std::abort();
}

inline void InstallTaskExceptionReporter() {
  static std::once_flag once;
  std::call_once(once,
                 [] { g_previous_terminate_handler = std::set_terminate(&TaskTerminateHandler); });
}

}  // namespace internal
}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_INTERNAL_TASK_EXCEPTION_REPORTER_H_
