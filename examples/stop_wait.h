// How a server program waits to be told to stop: SIGINT/SIGTERM on POSIX, Ctrl-C /
// Ctrl-Break / closing the console on Windows, or a time limit. One implementation per
// platform (stop_wait_posix.cc, stop_wait_windows.cc), chosen in examples/BUILD.
#ifndef FAIRSCHED_EXAMPLES_STOP_WAIT_H_
#define FAIRSCHED_EXAMPLES_STOP_WAIT_H_

namespace fairsched::examples {

// Call once, before starting any thread (POSIX: blocks the stop signals, so every thread
// inherits the mask and only WaitForStop receives them).
void PrepareStopWait();

// Blocks until a stop request arrives or, if `seconds` > 0, until that many seconds pass.
void WaitForStop(long seconds);

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_STOP_WAIT_H_
