// How a server program waits to be told to stop: SIGINT/SIGTERM on POSIX, Ctrl-C /
// Ctrl-Break / closing the console on Windows, or a time limit. One implementation per
// platform (stop_wait_posix.cc, stop_wait_windows.cc), chosen in examples/BUILD.
#ifndef FAIRSCHED_EXAMPLES_STOP_WAIT_H_
#define FAIRSCHED_EXAMPLES_STOP_WAIT_H_

#include <cstdio>

namespace fairsched::examples {

// Call once, before starting any thread (POSIX: blocks the stop signals, so every thread
// inherits the mask and only WaitForStop receives them).
void PrepareStopWait();

// Blocks until a stop request arrives or, if `seconds` > 0, until that many seconds pass.
void WaitForStop(long seconds);

// A server program's main loop once its server listens: flushes stdout (so the line saying
// where it listens reaches a pipe at once), waits as WaitForStop(seconds), then stops
// `server` and then `scheduler`; returns the server's final Stats().
template <typename Server, typename Scheduler>
auto ServeUntilStop(Server& server, Scheduler& scheduler, long seconds) {
  std::fflush(stdout);
  WaitForStop(seconds);
  server.Stop();
  scheduler.Stop();
  return server.Stats();
}

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_STOP_WAIT_H_
