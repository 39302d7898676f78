// io/signal_wait.h on Windows: a console control handler (Ctrl-C, Ctrl-Break, closing the
// console, logoff, shutdown), which runs on a thread the system starts, and C runtime
// handlers for SIGINT and SIGTERM (raise() in this process), which run on the thread that
// raised. Both deliver directly.
// The own header first: <windows.h> defines a Yield() macro that coro/wait.h must not see.
#include "io/signal_wait.h"

#include "io/socket_platform.h"  // <windows.h>, with Winsock 2 first

#include <csignal>

namespace fairsched {
namespace {

using CrtHandler = void (*)(int);

constexpr int kStopSignals[] = {SIGINT, SIGTERM};

Mutex instance_mu;
SignalWait* instance = nullptr;  // guarded by instance_mu: the one SignalWait
CrtHandler previous[2];          // guarded by instance_mu: what the destructor restores

BOOL WINAPI OnConsoleControl(DWORD event) {
  MutexLock lock(instance_mu);
  if (instance == nullptr) return FALSE;  // the next handler (the default one) decides
  instance->Deliver(event == CTRL_C_EVENT ? SIGINT : SIGTERM);
  return TRUE;  // handled: main stops the server
}

// The C runtime resets a signal to SIG_DFL before it calls the handler, so the handler puts
// itself back, under instance_mu: the destructor restores the previous handler under the
// same lock, and a handler call that comes after that restores nothing.
void OnCrtSignal(int signal_number) {
  MutexLock lock(instance_mu);
  if (instance == nullptr) return;
  std::signal(signal_number, &OnCrtSignal);
  instance->Deliver(signal_number);
}

}  // namespace

SignalWait::SignalWait() {
  {
    MutexLock lock(instance_mu);
    FAIRSCHED_CHECK(instance == nullptr, "a second SignalWait while one exists");
    instance = this;
    for (int i = 0; i < 2; ++i) previous[i] = std::signal(kStopSignals[i], &OnCrtSignal);
  }
  SetConsoleCtrlHandler(&OnConsoleControl, TRUE);
}

SignalWait::~SignalWait() {
  Cancel();
  SetConsoleCtrlHandler(&OnConsoleControl, FALSE);
  MutexLock lock(instance_mu);  // a handler call in progress has returned
  for (int i = 0; i < 2; ++i) {
    if (previous[i] != SIG_ERR) std::signal(kStopSignals[i], previous[i]);
  }
  instance = nullptr;
}

}  // namespace fairsched
