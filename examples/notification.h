// Notification: a one-shot "it happened" flag another thread can wait for. Notify() holds
// the mutex while it sets the flag and wakes the waiter, so the waiter may destroy the
// Notification as soon as WaitForNotification() returns (an AutoResetEvent is not meant for that:
// its Send may still be touching it after the receiver saw the bit).
#ifndef FAIRSCHED_EXAMPLES_NOTIFICATION_H_
#define FAIRSCHED_EXAMPLES_NOTIFICATION_H_

#include <chrono>

#include "sync/primitives.h"

namespace fairsched::examples {

class Notification {
 public:
  void Notify() {
    MutexLock lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  void WaitForNotification() {
    MutexLock lock(mu_);
    cv_.wait(lock, [this] { return notified_; });
  }
  // True if notified within `timeout`.
  bool WaitForNotificationWithTimeout(std::chrono::nanoseconds timeout) {
    MutexLock lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return notified_; });
  }

 private:
  Mutex mu_;
  ConditionVariable cv_;
  bool notified_ = false;  // guarded by mu_
};

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_NOTIFICATION_H_
