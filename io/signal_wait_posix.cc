// io/signal_wait.h on POSIX: a SIGINT/SIGTERM handler that writes the signal number to a
// pipe, and the SignalWait's watcher thread that polls the pipe and delivers the first.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "io/signal_wait.h"

namespace fairsched {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM};
// What the destructor writes to end the watcher (no signal has the number 0).
constexpr unsigned char kEndWatcher = 0;

Mutex instance_mu;
SignalWait* instance = nullptr;  // guarded by instance_mu: the one SignalWait
// The signal pipe, made by the first SignalWait and kept for the process's lifetime, so a
// handler still running while a SignalWait goes away never writes to a closed (or reused)
// fd. Both ends non-blocking. Written under instance_mu.
int pipe_fds[2] = {-1, -1};
// The write end as the handler reads it. Relaxed: set before sigaction installs the
// handler (a system call, after which every thread that runs the handler sees it) and
// never changed afterwards; a lock-free atomic is what a handler may read.
Atomic<int> handler_fd{-1};
static_assert(Atomic<int>::is_always_lock_free);
struct sigaction previous[2];  // guarded by instance_mu: what Uninstall restores

void OnStopSignal(int signal_number) {
  const int saved_errno = errno;
  const int fd = handler_fd.load(std::memory_order_relaxed);
  const auto byte = static_cast<unsigned char>(signal_number);
  if (fd >= 0 && ::write(fd, &byte, 1) < 0) {
    // A full pipe (signals came faster than the watcher reads): the first is in it already.
  }
  errno = saved_errno;
}

// The watcher thread: delivers each signal number it reads (the first one counts) until it
// reads kEndWatcher.
void WatchSignalPipe(SignalWait* wait, int read_fd) {
  while (true) {
    pollfd entry{read_fd, POLLIN, 0};
    if (::poll(&entry, 1, -1) < 0) continue;  // EINTR: a signal ran a handler on this thread
    unsigned char bytes[64];
    const ssize_t count = ::read(read_fd, bytes, sizeof(bytes));
    for (ssize_t i = 0; i < count; ++i) {
      if (bytes[i] == kEndWatcher) return;
      wait->Deliver(bytes[i]);
    }
  }
}

}  // namespace

SignalWait::SignalWait() {
  MutexLock lock(instance_mu);
  FAIRSCHED_CHECK(instance == nullptr, "a second SignalWait while one exists");
  instance = this;
  if (pipe_fds[0] < 0) {
    FAIRSCHED_CHECK(::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) == 0,
                    "SignalWait: pipe2 failed (out of file descriptors?)");
    handler_fd.store(pipe_fds[1], std::memory_order_relaxed);
  }
  // Bytes a handler wrote after the previous SignalWait's watcher ended are stale.
  unsigned char stale[64];
  while (::read(pipe_fds[0], stale, sizeof(stale)) > 0) {
  }
  watcher_ = std::thread(&WatchSignalPipe, this, pipe_fds[0]);
  struct sigaction action = {};
  action.sa_handler = &OnStopSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 2; ++i) ::sigaction(kStopSignals[i], &action, &previous[i]);
}

SignalWait::~SignalWait() {
  Cancel();
  MutexLock lock(instance_mu);
  for (int i = 0; i < 2; ++i) ::sigaction(kStopSignals[i], &previous[i], nullptr);
  // The watcher drains the pipe as bytes come, so there is room for this one.
  [[maybe_unused]] const ssize_t written = ::write(pipe_fds[1], &kEndWatcher, 1);
  watcher_.join();
  instance = nullptr;
}

}  // namespace fairsched
