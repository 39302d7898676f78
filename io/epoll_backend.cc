// EpollBackend (see epoll_backend.h): the kernel half: epoll_ctl on the role's drain,
// epoll_pwait2 (or epoll_pwait) with the nearest deadline, and the dispatch of events to
// tasks.
#include "io/epoll_backend.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>

#include "io/internal/socket_faults.h"

namespace fairsched {

namespace {

// Events per epoll_wait; more are picked up by the next call.
constexpr int kMaxEvents = 128;

std::uint32_t ToEpollEvents(std::uint32_t interest) {
  std::uint32_t events = 0;
  if ((interest & kIoReadable) != 0) events |= EPOLLIN | EPOLLRDHUP;
  if ((interest & kIoWritable) != 0) events |= EPOLLOUT;
  return events;
}

std::uint32_t FromEpollEvents(std::uint32_t events) {
  std::uint32_t readiness = 0;
  if ((events & EPOLLIN) != 0) readiness |= kIoReadable;
  if ((events & EPOLLOUT) != 0) readiness |= kIoWritable;
  if ((events & (EPOLLHUP | EPOLLRDHUP)) != 0) readiness |= kIoHangup;
  if ((events & EPOLLERR) != 0) readiness |= kIoError;
  return readiness;
}

timespec UntilDeadline(TaskDeadline deadline) {
  const auto left = std::max(deadline - TaskClock::now(), TaskClock::duration::zero());
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

}  // namespace

EpollBackend::EpollBackend(std::chrono::nanoseconds busy_poll_interval)
    : busy_poll_interval_(std::chrono::duration_cast<TaskClock::duration>(
          std::max(busy_poll_interval, std::chrono::nanoseconds::zero()))) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  FAIRSCHED_CHECK(epoll_fd_ >= 0, "EpollBackend: epoll_create1 failed (out of file descriptors?)");
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  FAIRSCHED_CHECK(wake_fd_ >= 0, "EpollBackend: eventfd failed (out of file descriptors?)");
  // Edge-triggered: every eventfd write wakes the epoll wait queue, and an edge-triggered
  // item is reported again on every wake-up, whatever the counter holds. So the holder never
  // reads the counter back (one syscall less per Notify); it cannot overflow in practice
  // (2^64 - 2 writes).
  epoll_event event{};
  event.events = EPOLLIN | EPOLLET;
  event.data.ptr = nullptr;  // nullptr marks the wake eventfd
  FAIRSCHED_CHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) == 0,
                  "EpollBackend: cannot add the eventfd to the epoll set");
  // Probe epoll_pwait2 once with a zero timeout (nothing is registered but the eventfd,
  // which holds no event yet): 0 means it exists.
  epoll_event probe[1];
  const timespec zero{0, 0};
  use_pwait2_ = epoll_pwait2(epoll_fd_, probe, 1, &zero, nullptr) >= 0 ||
                (errno != ENOSYS && errno != EPERM);
}

int EpollBackend::Wait(epoll_event* events, const timespec* timeout) {
  if (use_pwait2_) {
    const int count = epoll_pwait2(epoll_fd_, events, kMaxEvents, timeout, nullptr);
    // Refused after the probe (a seccomp filter installed later): fall back for good.
    if (count >= 0 || (errno != ENOSYS && errno != EPERM)) return count;
    use_pwait2_ = false;
  }
  int timeout_ms = -1;
  if (timeout != nullptr) {
    // Rounded up: a wait never ends before the deadline it was asked for (and a sub-ms
    // timeout does not become a zero-timeout poll that spins).
    const std::int64_t ns = std::int64_t{timeout->tv_sec} * 1'000'000'000 + timeout->tv_nsec;
    timeout_ms = static_cast<int>(std::min<std::int64_t>((ns + 999'999) / 1'000'000, INT32_MAX));
  }
  return epoll_pwait(epoll_fd_, events, kMaxEvents, timeout_ms, nullptr);
}

EpollBackend::~EpollBackend() {
  FAIRSCHED_DCHECK(registry_.LiveCount() == 0,
                   "EpollBackend destroyed with IoOps still submitted (cancel them and wait "
                   "for their final completion before destroying the scheduler)");
  close(wake_fd_);
  close(epoll_fd_);
}

bool EpollBackend::EventsReady() {
  if (!registry_.HasInFlight()) return false;
  const TaskDeadline now = TaskClock::now();
  if (now < next_ready_check_) return false;
  next_ready_check_ = now + std::chrono::microseconds(1);
  pollfd entry{epoll_fd_, POLLIN, 0};
  if (::poll(&entry, 1, 0) <= 0) return false;
  next_busy_poll_ = TaskDeadline{};  // the Poll that follows must not be rate-limited
  return true;
}

void EpollBackend::Poll(IoReadySink& sink) {
  Drain(sink);
  // Nothing registered: no syscall (a Notify needs no poll: it only ends a sleep).
  if (!registry_.HasInFlight()) return;
  // Rate-limited on a busy scheduler (see busy_poll_interval in the header).
  if (busy_poll_interval_ > TaskClock::duration::zero()) {
    const TaskDeadline now = TaskClock::now();
    if (now < next_busy_poll_) return;
    next_busy_poll_ = now + busy_poll_interval_;
  }
  const timespec zero{0, 0};
  WaitAndDispatch(&zero, /*sleeping=*/false, sink);
}

void EpollBackend::WaitUntil(TaskDeadline deadline, IoReadySink& sink) {
  registry_.TakeWoken();
  Drain(sink);
  // Do not block when the drain woke a task (it waits for the holder to publish it) or a
  // Notify came in; still report IO that is already there.
  if (registry_.TakeWoken() || !gate_.PrepareSleep()) {
    Poll(sink);
    return;
  }
  if (deadline == kNoDeadline) {
    WaitAndDispatch(nullptr, /*sleeping=*/true, sink);
  } else {
    const timespec timeout = UntilDeadline(deadline);
    WaitAndDispatch(&timeout, /*sleeping=*/true, sink);
  }
}

void EpollBackend::CancelAll(IoReadySink& sink) {
  Drain(sink);
  registry_.CancelAll([&](IoOp* op) { Disarm(op, sink); });
}

void EpollBackend::Drain(IoReadySink& sink) {
  registry_.Drain(
      sink, [&](IoOp* op) { Arm(op, sink); }, [&](IoOp* op) { Disarm(op, sink); });
}

void EpollBackend::Arm(IoOp* op, IoReadySink& sink) {
  epoll_event event{};
  event.data.ptr = op;
  switch (op->kind()) {
    case IoOpKind::kWatch:
      event.events = ToEpollEvents(op->interest()) | EPOLLET;
      break;
    case IoOpKind::kPoll:
      event.events = ToEpollEvents(op->interest()) | EPOLLONESHOT;
      break;
    default:
      registry_.Complete(op, -EOPNOTSUPP, sink);
      return;
  }
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, op->fd(), &event) != 0) {
    registry_.Complete(op, -errno, sink);
  }
}

void EpollBackend::Disarm(IoOp* op, IoReadySink& sink) {
  // Synchronous: after the DEL no later epoll_wait reports the fd, and events of earlier
  // calls were dispatched already (we are between two epoll_wait calls).
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, op->fd(), nullptr);
  registry_.Complete(op, -ECANCELED, sink);
}

void EpollBackend::WaitAndDispatch(const timespec* timeout, bool sleeping, IoReadySink& sink) {
  epoll_event events[kMaxEvents];
  // EINTR (count -1) is a spurious wakeup, which the contract allows.
  const int count = Wait(events, timeout);
  if (sleeping) gate_.FinishSleep();
  for (int i = 0; i < count; ++i) {
    auto* op = static_cast<IoOp*>(events[i].data.ptr);
    if (op == nullptr) continue;  // the wake eventfd: its only job was to end the wait
    std::uint32_t readiness = FromEpollEvents(events[i].events);
    if (internal::SocketFaults* faults = internal::InstalledSocketFaults();
        faults != nullptr && op->kind() == IoOpKind::kWatch && faults->FalseReadiness(op->fd())) {
      readiness |= kIoReadable | kIoWritable;  // the fault seam: a side that is not ready
    }
    if (op->kind() == IoOpKind::kWatch) {
      registry_.Ready(op, readiness, sink);
    } else {
      // One-shot Poll: remove the (now disabled) registration and complete.
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, op->fd(), nullptr);
      internal::IoOpRegistry::AddReadiness(op, readiness);
      registry_.Complete(op, static_cast<std::int32_t>(readiness), sink);
    }
  }
}

void EpollBackend::WakeHolder() {
  const std::uint64_t one = 1;
  // EAGAIN (counter saturated) still leaves it readable: the holder wakes either way.
  [[maybe_unused]] const ssize_t written = write(wake_fd_, &one, sizeof(one));
}

}  // namespace fairsched
