// io/signal_wait.h on Windows: a console control handler (Ctrl-C, Ctrl-Break, closing the
// console, logoff, shutdown). It runs on a thread the system starts and delivers directly.
// The own header first: <windows.h> defines a Yield() macro that coro/wait.h must not see.
#include "io/signal_wait.h"

#include "io/socket_platform.h"  // <windows.h>, with Winsock 2 first

#include <csignal>

namespace fairsched {
namespace {

Mutex instance_mu;
SignalWait* instance = nullptr;  // guarded by instance_mu: the one SignalWait

BOOL WINAPI OnConsoleControl(DWORD event) {
  MutexLock lock(instance_mu);
  if (instance == nullptr) return FALSE;  // the next handler (the default one) decides
  instance->Deliver(event == CTRL_C_EVENT ? SIGINT : SIGTERM);
  return TRUE;  // handled: main stops the server
}

}  // namespace

SignalWait::SignalWait() {
  {
    MutexLock lock(instance_mu);
    FAIRSCHED_CHECK(instance == nullptr, "a second SignalWait while one exists");
    instance = this;
  }
  SetConsoleCtrlHandler(&OnConsoleControl, TRUE);
}

SignalWait::~SignalWait() {
  Cancel();
  SetConsoleCtrlHandler(&OnConsoleControl, FALSE);
  MutexLock lock(instance_mu);  // a handler call in progress has returned
  instance = nullptr;
}

}  // namespace fairsched
