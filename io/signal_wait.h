// SignalWait: how a server learns that it should stop. It catches SIGINT and SIGTERM
// (Windows: Ctrl-C, Ctrl-Break and closing the console) and lets a coroutine co_await the
// first of them, or a plain thread (main) block for it.
//
//   SignalWait stop_signal;                              // in main, before or after Start
//   // in a coroutine:
//   IoResult<int> signal = co_await stop_signal.Wait();  // SIGINT or SIGTERM
//   server.Shutdown(...) from a plain thread, or any other reaction
//   // at the end: stop_signal.Cancel(), so a coroutine still waiting ends
//
// Contract:
//   - Constructing a SignalWait installs the handlers; destroying it restores what was
//     installed before. At most one SignalWait exists at a time in a process (a second
//     aborts with a message). While it exists the two signals do not terminate the process.
//   - How it waits, POSIX: the signal handler only writes the signal number to a pipe (an
//     async-signal-safe write(2); the handler is installed with SA_RESTART); one thread
//     owned by the SignalWait blocks in poll(2) on that pipe and, for the first signal,
//     sets a coro::Event that the waiters wait on. No signal mask is needed: the signal may
//     be delivered to any thread, a raise() included. Windows: two handlers, no thread of
//     ours. A console control handler (SetConsoleCtrlHandler) runs on a thread the system
//     makes and delivers itself, returning TRUE (handled). C runtime handlers for SIGINT
//     and SIGTERM (std::signal) catch raise() in the process, on the raising thread; the
//     runtime resets a handler before calling it, so it installs itself again. For
//     CTRL_CLOSE_EVENT (and logoff, shutdown) Windows ends the process soon after the
//     handler returned, so a graceful shutdown there is not guaranteed. Tested under Wine:
//     raise() of both signals, and Ctrl-C from GenerateConsoleCtrlEvent in a child process
//     that has a (headless) console; Wine generates no Ctrl-Break, close, logoff or
//     shutdown event, so those paths have run on no machine of the project.
//   - `co_await Wait(deadline)` (inside a spawned coroutine): the signal number (SIGINT or
//     SIGTERM; on Windows SIGINT for Ctrl-C, SIGTERM for the other console events), at once
//     if a signal came earlier. Else kTimeout at `deadline`, kCancelled when Cancel() was
//     called or the coroutine is cancelled, kShutdown when the scheduler stops. The wait
//     is an ordinary cancellable coroutine wait: it never holds up the scheduler's Stop.
//   - `WaitBlocking(timeout)` (a plain thread): the same results without kShutdown;
//     timeout <= 0: no limit.
//   - `Cancel()` (any thread, idempotent): every Wait, pending and later, returns
//     kCancelled, unless a signal arrived before. The handlers stay installed until the
//     destructor.
//   - `received()`: the signal number once one arrived, else 0 (acquire).
//   - The SignalWait must outlive every Wait on it (until the Wait has returned).
#ifndef FAIRSCHED_IO_SIGNAL_WAIT_H_
#define FAIRSCHED_IO_SIGNAL_WAIT_H_

#include <chrono>
#include <thread>

#include "coro/event.h"
#include "coro/lazy.h"
#include "io/io_error.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched {

class SignalWait {
 public:
  SignalWait();
  ~SignalWait();
  SignalWait(const SignalWait&) = delete;
  SignalWait& operator=(const SignalWait&) = delete;

  coro::Lazy<IoResult<int>> Wait(TaskDeadline deadline = kTaskDeadlineInfinite);
  IoResult<int> WaitBlocking(std::chrono::nanoseconds timeout);
  void Cancel();
  int received() const { return signal_.load(std::memory_order_acquire); }

  // The platform part (io/signal_wait_posix.cc, io/signal_wait_windows.cc) reports the
  // first signal here; later calls do nothing. Not for users.
  void Deliver(int signal_number);

 private:
  // The result for a wait that ended because the event was set.
  IoResult<int> Outcome() const;

  // Release on store: whoever reads the number with acquire (received(), a waiter after
  // the event) also sees that it was the first. Written once, under mu_.
  Atomic<int> signal_{0};
  Mutex mu_;
  ConditionVariable done_cv_;  // WaitBlocking's wait
  bool cancelled_ = false;     // guarded by mu_
  bool done_ = false;          // guarded by mu_: a signal arrived or Cancel ran
  coro::Event event_;          // set once done_ is
  std::thread watcher_;        // POSIX only: polls the signal pipe
};

}  // namespace fairsched

#endif  // FAIRSCHED_IO_SIGNAL_WAIT_H_
