// examples/stop_wait.h on POSIX: SIGINT/SIGTERM, blocked in every thread and received by
// sigwait / sigtimedwait in the waiting thread.
#include <signal.h>

#include <cerrno>
#include <cstdint>
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
    // sigtimedwait returns early with EINTR when the thread is interrupted (io_uring's
    // task work does that to the thread that set up a ring): wait out the rest.
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const std::int64_t end_ns = (now.tv_sec + seconds) * 1'000'000'000LL + now.tv_nsec;
    while (true) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      const std::int64_t left_ns = end_ns - (now.tv_sec * 1'000'000'000LL + now.tv_nsec);
      if (left_ns <= 0) return;
      const timespec timeout{static_cast<time_t>(left_ns / 1'000'000'000LL),
                             static_cast<long>(left_ns % 1'000'000'000LL)};
      if (sigtimedwait(&signals, nullptr, &timeout) >= 0 || errno != EINTR) return;
    }
  } else {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
  }
}

}  // namespace fairsched::examples
