// examples/stop_wait.h on POSIX: SIGINT/SIGTERM, blocked in every thread and received by
// sigwait / sigtimedwait in the waiting thread.
#include <signal.h>

#include <ctime>

#include "examples/stop_wait.h"

namespace fairsched::examples {

namespace {
sigset_t StopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  return signals;
}
}  // namespace

void PrepareStopWait() {
  const sigset_t signals = StopSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

void WaitForStop(long seconds) {
  const sigset_t signals = StopSignals();
  if (seconds > 0) {
    timespec timeout{seconds, 0};
    sigtimedwait(&signals, nullptr, &timeout);
  } else {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
  }
}

}  // namespace fairsched::examples
