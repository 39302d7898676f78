// examples/stop_wait.h on Windows: a console control handler (Ctrl-C, Ctrl-Break, console
// close) sets an event that WaitForStop waits on.
#ifndef NOMINMAX
#define NOMINMAX
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include "examples/stop_wait.h"

namespace fairsched::examples {

namespace {
// Manual-reset: once set, every later wait returns at once. Made by PrepareStopWait.
HANDLE stop_event = nullptr;

BOOL WINAPI OnConsoleControl(DWORD) {
  SetEvent(stop_event);
  return TRUE;  // handled: the process is not terminated; main stops the server
}
}  // namespace

void PrepareStopWait() {
  stop_event = CreateEventW(nullptr, TRUE, FALSE, nullptr);
  SetConsoleCtrlHandler(&OnConsoleControl, TRUE);
}

void WaitForStop(long seconds) {
  WaitForSingleObject(stop_event, seconds > 0 ? static_cast<DWORD>(seconds) * 1000 : INFINITE);
}

}  // namespace fairsched::examples
