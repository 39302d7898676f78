// IoUringBackend (see io_uring_backend.h): the kernel half: SQEs for the role's drain, the
// EXT_ARG wait with the nearest deadline, and completion handling.
#include "io/io_uring_backend.h"

#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <limits>

namespace fairsched {

namespace {

// user_data of the SQEs that are not IoOps (IoOp pointers are 8-aligned, so never 1 or 2).
constexpr std::uint64_t kWakeReadTag = 1;  // the eventfd read that Notify completes
constexpr std::uint64_t kIgnoreTag = 2;    // cancel requests: their own CQEs carry nothing

// CQEs handled per peek; the loop continues until the queue is empty.
constexpr unsigned kReapBatch = 64;

unsigned ToPollMask(std::uint32_t interest) {
  unsigned mask = 0;
  if ((interest & kIoReadable) != 0) mask |= POLLIN | POLLRDHUP;
  if ((interest & kIoWritable) != 0) mask |= POLLOUT;
  return mask;
}

std::uint32_t FromPollMask(std::int32_t revents) {
  std::uint32_t readiness = 0;
  if ((revents & POLLIN) != 0) readiness |= kIoReadable;
  if ((revents & POLLOUT) != 0) readiness |= kIoWritable;
  if ((revents & (POLLHUP | POLLRDHUP)) != 0) readiness |= kIoHangup;
  if ((revents & POLLERR) != 0) readiness |= kIoError;
  return readiness;
}

}  // namespace

namespace internal {
int InitRing(io_uring* ring, unsigned entries, RingInit init, io_uring_params* params) {
  *params = io_uring_params{};
  params->flags = IORING_SETUP_CLAMP | IORING_SETUP_SUBMIT_ALL;
  const int error = init(entries, ring, params);
  if (error != -EINVAL) return error;
  // Before Linux 5.18 the kernel refuses flags it does not know.
  *params = io_uring_params{};
  params->flags = IORING_SETUP_CLAMP;
  return init(entries, ring, params);
}
}  // namespace internal

IoUringBackend::IoUringBackend(unsigned entries) : ring_(std::make_unique<io_uring>()) {
  io_uring_params params{};
  const int error = internal::InitRing(ring_.get(), std::max(entries, 8u),
                                       &io_uring_queue_init_params, &params);
  submit_all_ = (params.flags & IORING_SETUP_SUBMIT_ALL) != 0;
  FAIRSCHED_CHECK(error == 0,
                  "IoUringBackend: io_uring_queue_init failed (io_uring disabled "
                  "by the kernel or sandbox, or out of memory)");
  FAIRSCHED_CHECK((params.features & IORING_FEAT_EXT_ARG) != 0,
                  "IoUringBackend: the kernel lacks IORING_FEAT_EXT_ARG (needs Linux 5.11+)");
  // Blocking eventfd on purpose: io_uring returns -EAGAIN for a read on an O_NONBLOCK file
  // instead of waiting for data.
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  FAIRSCHED_CHECK(wake_fd_ >= 0, "IoUringBackend: eventfd failed (out of file descriptors?)");
  ArmWakeRead();
  SubmitPending();
}

IoUringBackend::~IoUringBackend() {
  FAIRSCHED_DCHECK(registry_.LiveCount() == 0,
                   "IoUringBackend destroyed with IoOps still submitted (cancel them and wait "
                   "for their final completion before destroying the scheduler)");
  // Cancels what is still in the ring (the eventfd read) and frees the ring.
  io_uring_queue_exit(ring_.get());
  close(wake_fd_);
}

bool IoUringBackend::EventsReady() { return io_uring_cq_ready(ring_.get()) > 0; }

void IoUringBackend::Poll(IoReadySink& sink) {
  Drain(sink);
  SubmitPending();
  Reap(sink);
}

void IoUringBackend::WaitUntil(TaskDeadline deadline, IoReadySink& sink) {
  registry_.TakeWoken();
  Drain(sink);
  // Do not block when the drain woke a task (it waits for the holder to publish it) or a
  // Notify came in; still report what is already complete.
  if (registry_.TakeWoken() || !gate_.PrepareSleep()) {
    SubmitPending();
    Reap(sink);
    return;
  }
  if (deadline == kNoDeadline) {
    io_uring_submit_and_wait(ring_.get(), 1);
  } else {
    const auto left = std::max(deadline - TaskClock::now(), TaskClock::duration::zero());
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    __kernel_timespec timeout{};
    timeout.tv_sec = ns / 1'000'000'000;
    timeout.tv_nsec = ns % 1'000'000'000;
    io_uring_cqe* cqe = nullptr;
    // -ETIME at the deadline, -EINTR on a signal: both are allowed (spurious) returns.
    io_uring_submit_and_wait_timeout(ring_.get(), &cqe, 1, &timeout, nullptr);
  }
  gate_.FinishSleep();
  Reap(sink);
}

void IoUringBackend::CancelAll(IoReadySink& sink) {
  Drain(sink);
  registry_.CancelAll([&](IoOp* op) { Disarm(op); });
  SubmitPending();
}

void IoUringBackend::Drain(IoReadySink& sink) {
  registry_.Drain(
      sink, [&](IoOp* op) { Arm(op); }, [&](IoOp* op) { Disarm(op); });
}

void IoUringBackend::Arm(IoOp* op) {
  io_uring_sqe* sqe = GetSqe();
  const unsigned length = static_cast<unsigned>(
      std::min<std::size_t>(op->length(), std::numeric_limits<unsigned>::max()));
  switch (op->kind()) {
    case IoOpKind::kWatch:
      io_uring_prep_poll_multishot(sqe, op->fd(), ToPollMask(op->interest()));
      break;
    case IoOpKind::kPoll:
      io_uring_prep_poll_add(sqe, op->fd(), ToPollMask(op->interest()));
      break;
    case IoOpKind::kRead:
      // Offset -1: the file position, ignored by sockets and pipes.
      io_uring_prep_read(sqe, op->fd(), op->buffer(), length, static_cast<std::uint64_t>(-1));
      break;
    case IoOpKind::kWrite:
      io_uring_prep_write(sqe, op->fd(), op->buffer(), length, static_cast<std::uint64_t>(-1));
      break;
    case IoOpKind::kSend:
      io_uring_prep_send(sqe, op->fd(), op->buffer(), length, MSG_NOSIGNAL);
      break;
    case IoOpKind::kAccept:
      io_uring_prep_accept(sqe, op->fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      break;
    case IoOpKind::kConnect:
      io_uring_prep_connect(sqe, op->fd(), op->address(), op->address_length());
      break;
  }
  io_uring_sqe_set_data(sqe, op);
}

void IoUringBackend::Disarm(IoOp* op) {
  // Asynchronous: the op's own CQE (-ECANCELED, or its real result if it won the race)
  // brings the final completion.
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_cancel(sqe, op, 0);
  io_uring_sqe_set_data64(sqe, kIgnoreTag);
}

void IoUringBackend::ArmWakeRead() {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_read(sqe, wake_fd_, &wake_value_, sizeof(wake_value_), 0);
  io_uring_sqe_set_data64(sqe, kWakeReadTag);
}

void IoUringBackend::Handle(const io_uring_cqe& cqe, IoReadySink& sink) {
  const std::uint64_t tag = cqe.user_data;
  if (tag == kIgnoreTag) return;
  if (tag == kWakeReadTag) {
    ArmWakeRead();  // consumed the eventfd's counter; wait for the next Notify
    return;
  }
  auto* op = reinterpret_cast<IoOp*>(static_cast<std::uintptr_t>(tag));
  const std::int32_t result = cqe.res;
  switch (op->kind()) {
    case IoOpKind::kWatch:
      if ((cqe.flags & IORING_CQE_F_MORE) != 0) {
        // One edge of the multishot poll; it stays armed.
        registry_.Ready(op, FromPollMask(result), sink);
      } else if (result >= 0 && !internal::IoOpRegistry::CancelSeen(op)) {
        // The kernel ended the multishot poll on its own (e.g. CQ overflow): report the
        // edge and arm it again.
        registry_.Ready(op, FromPollMask(result), sink);
        Arm(op);
      } else {
        registry_.Complete(op, result >= 0 ? -ECANCELED : result, sink);
      }
      return;
    case IoOpKind::kPoll:
      if (result >= 0) {
        const std::uint32_t readiness = FromPollMask(result);
        internal::IoOpRegistry::AddReadiness(op, readiness);
        registry_.Complete(op, static_cast<std::int32_t>(readiness), sink);
      } else {
        registry_.Complete(op, result, sink);
      }
      return;
    default:
      registry_.Complete(op, result, sink);
      return;
  }
}

void IoUringBackend::Reap(IoReadySink& sink) {
  io_uring_cqe* cqes[kReapBatch];
  while (true) {
    // Also flushes CQEs the kernel kept aside on overflow (it enters the kernel for that).
    const unsigned count = io_uring_peek_batch_cqe(ring_.get(), cqes, kReapBatch);
    if (count == 0) break;
    for (unsigned i = 0; i < count; ++i) Handle(*cqes[i], sink);
    io_uring_cq_advance(ring_.get(), count);
  }
  SubmitPending();  // re-armed watches and the eventfd read
}

void IoUringBackend::SubmitPending() {
  if (io_uring_sq_ready(ring_.get()) > 0) io_uring_submit(ring_.get());
}

io_uring_sqe* IoUringBackend::GetSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (sqe == nullptr) {
    // Submission queue full: hand what is there to the kernel and take a fresh slot.
    io_uring_submit(ring_.get());
    sqe = io_uring_get_sqe(ring_.get());
  }
  FAIRSCHED_CHECK(sqe != nullptr, "IoUringBackend: no submission queue entry after a submit");
  return sqe;
}

void IoUringBackend::WriteWakeFd() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = write(wake_fd_, &one, sizeof(one));
}

}  // namespace fairsched
