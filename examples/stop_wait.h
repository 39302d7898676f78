// How the example server programs run until they are told to stop: the first SIGINT or
// SIGTERM (Windows: Ctrl-C, Ctrl-Break, closing the console) that io/signal_wait.h
// catches, or a time limit.
#ifndef FAIRSCHED_EXAMPLES_STOP_WAIT_H_
#define FAIRSCHED_EXAMPLES_STOP_WAIT_H_

#include <chrono>
#include <cstdio>

#include "io/signal_wait.h"

namespace fairsched::examples {

// A server program's main loop once its server listens: flushes stdout (so the line saying
// where it listens reaches a pipe at once), waits for a signal that `stop_signal` catches
// or, if `seconds` > 0, until that many seconds passed, then stops `server` and then
// `scheduler`; returns the server's final Stats(). Make `stop_signal` before printing that
// line, so a signal sent as soon as it is read is caught.
template <typename Server, typename Scheduler>
auto ServeUntilStop(SignalWait& stop_signal, Server& server, Scheduler& scheduler,
                    long seconds) {
  std::fflush(stdout);
  (void)stop_signal.WaitBlocking(std::chrono::seconds(seconds));
  server.Stop();
  scheduler.Stop();
  return server.Stats();
}

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_STOP_WAIT_H_
