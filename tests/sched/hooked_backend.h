// A test IO backend that lets a test act at the scheduler's backend calls: NoIoBackend with
// a hook run before every Poll, one before every WaitUntil (the role holder's sleep), one
// after every Notify and one before every CancelAll, on the calling thread.
// Stop notifies the backend from its own thread after it sets stopping_ and again after it
// sets exit_, and the role holder calls CancelAll on every pass while stopping: tests use
// these points to make posts race with Stop's drain and the workers' exit on purpose
// (tests/sched/lifecycle_test.cc, tests/sched/held_post_test.cc); the randomized sequences
// (tests/sched/random_sequences.h) pause the role holder there at random.
//
// The hooks are static (the scheduler default-constructs its backend). Install them before
// Start and clear them after Stop: the workers read them, so changing them while workers
// run is a data race. A hook that must act only sometimes checks its own atomics.
#ifndef FAIRSCHED_TESTS_SCHED_HOOKED_BACKEND_H_
#define FAIRSCHED_TESTS_SCHED_HOOKED_BACKEND_H_

#include <functional>

#include "sched/io_backend.h"
#include "sched/task.h"

namespace fairsched::testing {

class HookedBackend {
 public:
  static inline std::function<void()> before_poll;
  static inline std::function<void()> before_wait;
  static inline std::function<void()> after_notify;
  static inline std::function<void()> before_cancel_all;

  void Poll(IoReadySink& sink) {
    if (before_poll) before_poll();
    inner_.Poll(sink);
  }
  void WaitUntil(TaskDeadline deadline, IoReadySink& sink) {
    if (before_wait) before_wait();
    inner_.WaitUntil(deadline, sink);
  }
  void CancelAll(IoReadySink& sink) {
    if (before_cancel_all) before_cancel_all();
    inner_.CancelAll(sink);
  }
  bool EventsReady() { return false; }
  void Notify() {
    inner_.Notify();
    if (after_notify) after_notify();
  }

 private:
  NoIoBackend inner_;
};

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_SCHED_HOOKED_BACKEND_H_
