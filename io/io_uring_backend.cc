// IoUringBackend (see io_uring_backend.h): the kernel half: SQEs for the role's drain, the
// EXT_ARG wait with the nearest deadline, and completion handling.
#include "io/io_uring_backend.h"

#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "io/internal/socket_faults.h"

namespace fairsched {

namespace {

// user_data of the SQEs that are not IoOps (IoOp pointers are 8-aligned, so never 1 or 2).
constexpr std::uint64_t kWakeReadTag = 1;  // the eventfd read that Notify completes
constexpr std::uint64_t kIgnoreTag = 2;    // cancel requests: their own CQEs carry nothing

// CQEs handled per peek (Reap peeks again until the queue is empty or its limit is reached).
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
  // The fault seam (io/internal/socket_faults.h): a setup the kernel would refuse.
  if (SocketFaults* faults = InstalledSocketFaults(); faults != nullptr) {
    if (const int fault = faults->BeforeRingSetup(); fault != 0) return fault;
  }
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

bool IoUringBackend::Supported() {
  io_uring ring{};
  io_uring_params params{};
  if (internal::InitRing(&ring, 8, &io_uring_queue_init_params, &params) != 0) return false;
  io_uring_queue_exit(&ring);
  return (params.features & IORING_FEAT_EXT_ARG) != 0;
}

IoUringBackend::IoUringBackend(unsigned entries) : ring_(std::make_unique<io_uring>()) {
  io_uring_params params{};
  const int error = internal::InitRing(ring_.get(), std::max(entries, 8u),
                                       &io_uring_queue_init_params, &params);
  submit_all_ = (params.flags & IORING_SETUP_SUBMIT_ALL) != 0;
  if (error != 0) {
    // Said before the check aborts: which error the kernel gave (ENOMEM, EPERM, ENOSYS...).
    std::fprintf(stderr, "IoUringBackend: io_uring_queue_init: %s\n", std::strerror(-error));
  }
  FAIRSCHED_CHECK(error == 0,
                  "IoUringBackend: io_uring_queue_init failed (io_uring disabled "
                  "by the kernel or sandbox, or out of memory); ask IoBackendSupported first");
  FAIRSCHED_CHECK((params.features & IORING_FEAT_EXT_ARG) != 0,
                  "IoUringBackend: the kernel lacks IORING_FEAT_EXT_ARG (needs Linux 5.11+)");
  // Blocking eventfd on purpose: io_uring returns -EAGAIN for a read on an O_NONBLOCK file
  // instead of waiting for data.
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  FAIRSCHED_CHECK(wake_fd_ >= 0, "IoUringBackend: eventfd failed (out of file descriptors?)");
  ProbeMultishot();
  ArmWakeRead();
  SubmitPending();
}

IoUringBackend::~IoUringBackend() {
  FAIRSCHED_DCHECK(registry_.LiveCount() == 0,
                   "IoUringBackend destroyed with IoOps still submitted (cancel them and wait "
                   "for their final completion before destroying the scheduler)");
  for (const std::unique_ptr<IoBufferRing>& ring : rings_) {
    io_uring_unregister_buf_ring(ring_.get(), ring->group_);
  }
  // Cancels what is still in the ring (the eventfd read) and frees the ring.
  io_uring_queue_exit(ring_.get());
  close(wake_fd_);
}

void IoUringBackend::ProbeMultishot() {
  io_uring_probe* probe = io_uring_get_probe_ring(ring_.get());
  if (probe == nullptr) {
    multishot_note_ = "the kernel's opcode probe failed: single-shot fallbacks, no buffer rings";
    return;
  }
  // Multishot accept and buffer rings came with Linux 5.19 (as did IORING_OP_SOCKET),
  // multishot recv with 6.0 (as did IORING_OP_SEND_ZC); neither has a probe of its own.
  buffer_rings_ = multishot_accept_ = io_uring_opcode_supported(probe, IORING_OP_SOCKET) != 0;
  multishot_recv_ = io_uring_opcode_supported(probe, IORING_OP_SEND_ZC) != 0;
  io_uring_free_probe(probe);
  if (!multishot_accept_) {
    multishot_note_ = "kernel before 5.19: single-shot accept fallback, no buffer rings";
  } else if (!multishot_recv_) {
    multishot_note_ = "kernel before 6.0: single-shot buffer-select recv fallback";
  }
}

void IoUringBackend::SetMultishot(bool enabled) {
  if (enabled) {
    multishot_note_.clear();
    ProbeMultishot();
    return;
  }
  multishot_accept_ = multishot_recv_ = false;
  multishot_note_ = "multishot disabled by SetMultishot(false): single-shot fallbacks";
}

IoBufferRing::IoBufferRing(unsigned count, std::size_t buffer_size, std::uint16_t group)
    : count_(count),
      buffer_size_(buffer_size),
      group_(group),
      storage_(new char[std::size_t{count} * buffer_size]),
      user_owned_(new Atomic<std::uint64_t>[(count + kBitsPerWord - 1) / kBitsPerWord]{}),
      returned_(new Atomic<std::uint64_t>[(count + kBitsPerWord - 1) / kBitsPerWord]{}) {}

IoBufferRing::~IoBufferRing() { std::free(kernel_ring_); }

IoBufferRing* IoUringBackend::CreateBufferRing(unsigned count, std::size_t buffer_size,
                                               std::string* error) {
  const auto fail = [&](std::string why) -> IoBufferRing* {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  };
  if (!buffer_rings_) return fail("io_uring buffer rings need Linux 5.19+");
  if (count == 0 || count > 32768 || !std::has_single_bit(count)) {
    return fail("buffer ring count must be a power of two in [1, 32768]");
  }
  if (buffer_size == 0 || buffer_size > std::numeric_limits<std::int32_t>::max()) {
    return fail("buffer ring buffer size must be in [1, 2^31)");
  }
  MutexLock lock(rings_mutex_);
  if (rings_.size() > std::numeric_limits<std::uint16_t>::max()) {
    return fail("too many buffer rings");
  }
  std::unique_ptr<IoBufferRing> ring(new IoBufferRing(count, buffer_size, next_group_));
  // The kernel wants the ring's memory page-aligned.
  constexpr std::size_t kPage = 4096;
  const std::size_t bytes = (count * sizeof(io_uring_buf) + kPage - 1) / kPage * kPage;
  ring->kernel_ring_ = static_cast<io_uring_buf_ring*>(std::aligned_alloc(kPage, bytes));
  if (ring->kernel_ring_ == nullptr) return fail("out of memory for the buffer ring");
  std::memset(ring->kernel_ring_, 0, bytes);
  io_uring_buf_reg registration{};
  registration.ring_addr = reinterpret_cast<std::uintptr_t>(ring->kernel_ring_);
  registration.ring_entries = count;
  registration.bgid = ring->group_;
  const int result = io_uring_register_buf_ring(ring_.get(), &registration, 0);
  if (result < 0) {
    return fail(std::string("io_uring_register_buf_ring failed: ") + std::strerror(-result));
  }
  // Filled before any op can use it, so this thread is the ring's only producer now; the
  // role is from here on (ReturnToKernel).
  io_uring_buf_ring_init(ring->kernel_ring_);
  for (unsigned id = 0; id < count; ++id) {
    io_uring_buf_ring_add(ring->kernel_ring_, ring->Buffer(static_cast<std::uint16_t>(id)),
                          static_cast<unsigned>(buffer_size), static_cast<std::uint16_t>(id),
                          io_uring_buf_ring_mask(count), static_cast<int>(id));
  }
  io_uring_buf_ring_advance(ring->kernel_ring_, static_cast<int>(count));
  ring->available_ = count;
  ++next_group_;
  rings_.push_back(std::move(ring));
  // The op that names the ring is submitted after this returns: its Submit's push publishes
  // the ring (and available_) to the role.
  return rings_.back().get();
}

void IoUringBackend::ReleaseBuffer(IoBufferRing* ring, std::uint16_t id) {
  FAIRSCHED_CHECK(id < ring->count_, "ReleaseBuffer: buffer id out of range");
  const std::uint64_t bit = std::uint64_t{1} << (id % IoBufferRing::kBitsPerWord);
  // Relaxed: the check only; the bit was set by the role before the Wakeup that delivered
  // the event to us, which published it.
  const std::uint64_t owned =
      ring->user_owned_[id / IoBufferRing::kBitsPerWord].fetch_and(~bit,
                                                                   std::memory_order_relaxed);
  FAIRSCHED_CHECK((owned & bit) != 0,
                  "ReleaseBuffer: buffer released twice, or never delivered by an event");
  // Release: our reads of the buffer happen before the role's acquire exchange that gives it
  // back to the kernel, which may then overwrite it.
  ring->returned_[id / IoBufferRing::kBitsPerWord].fetch_or(bit, std::memory_order_release);
  // Release, after the bit: a role that takes the flag (acquire) then sees the bit; a role
  // that took it earlier finds it set again next time.
  returns_pending_.store(true, std::memory_order_release);
  Notify();  // a starved op may be waiting for this buffer while the holder sleeps
}

void IoUringBackend::ReturnToKernel(IoBufferRing* ring, std::uint16_t id) {
  io_uring_buf_ring_add(ring->kernel_ring_, ring->Buffer(id),
                        static_cast<unsigned>(ring->buffer_size_), id,
                        io_uring_buf_ring_mask(ring->count_), 0);
  // Publishes the entry to the kernel (liburing's store-release of the ring's tail).
  io_uring_buf_ring_advance(ring->kernel_ring_, 1);
  ++ring->available_;
}

void IoUringBackend::ReclaimReturnedBuffers() {
  // Acquire: pairs with ReleaseBuffer's release store (see there).
  if (!returns_pending_.exchange(false, std::memory_order_acquire)) return;
  MutexLock lock(rings_mutex_);
  for (const std::unique_ptr<IoBufferRing>& ring : rings_) {
    const unsigned words = (ring->count_ + IoBufferRing::kBitsPerWord - 1) /
                           IoBufferRing::kBitsPerWord;
    for (unsigned word = 0; word < words; ++word) {
      // Acquire: the releasing task's reads of these buffers come before the kernel's writes.
      std::uint64_t bits = ring->returned_[word].exchange(0, std::memory_order_acquire);
      while (bits != 0) {
        const unsigned bit = static_cast<unsigned>(std::countr_zero(bits));
        bits &= bits - 1;
        ReturnToKernel(ring.get(),
                       static_cast<std::uint16_t>(word * IoBufferRing::kBitsPerWord + bit));
      }
    }
    if (ring->available_ == 0 || ring->starved_.empty()) continue;
    ArmParked(ring->starved_);
  }
}

void IoUringBackend::ArmParked(std::vector<IoOp*>& parked) {
  std::vector<IoOp*> ops;
  ops.swap(parked);  // first: Arm may park an op again (a RecvMultishot with no buffer)
  for (IoOp* op : ops) {
    op->backend_parked = false;
    Arm(op);
  }
}

void IoUringBackend::Park(IoOp* op) {
  op->backend_parked = true;
  op->buffer_ring()->starved_.push_back(op);
}

bool IoUringBackend::EventsReady() {
  return io_uring_cq_ready(ring_.get()) > 0 || io_uring_cq_has_overflow(ring_.get());
}

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
  registry_.CancelAll([&](IoOp* op) { Disarm(op, sink); });
  SubmitPending();
}

void IoUringBackend::Drain(IoReadySink& sink) {
  ReclaimReturnedBuffers();
  registry_.Drain(
      sink, [&](IoOp* op) { Arm(op); }, [&](IoOp* op) { Disarm(op, sink); });
}

void IoUringBackend::Arm(IoOp* op) {
  if (op->kind() == IoOpKind::kRecvMultishot) {
    FAIRSCHED_CHECK(op->buffer_ring() != nullptr && op->events() != nullptr,
                    "RecvMultishot needs a buffer ring and an event queue");
    if (op->buffer_ring()->available_ == 0) {
      Park(op);  // the kernel would only answer -ENOBUFS
      return;
    }
  }
  FAIRSCHED_CHECK(!IsMultishot(op->kind()) || op->events() != nullptr,
                  "a multishot IoOp needs an event queue");
  io_uring_sqe* sqe = GetSqe();
  std::size_t capped_length = op->length();
  if (op->kind() == IoOpKind::kSend || op->kind() == IoOpKind::kWrite) {
    // The fault seam (io/internal/socket_faults.h) may cap a send: a short write.
    if (internal::SocketFaults* faults = internal::InstalledSocketFaults(); faults != nullptr) {
      faults->BeforeSend(op->fd(), &capped_length);
    }
  }
  const unsigned length = static_cast<unsigned>(
      std::min<std::size_t>(capped_length, std::numeric_limits<unsigned>::max()));
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
    case IoOpKind::kAcceptMultishot:
      if (multishot_accept_) {
        io_uring_prep_multishot_accept(sqe, op->fd(), nullptr, nullptr,
                                       SOCK_NONBLOCK | SOCK_CLOEXEC);
      } else {
        io_uring_prep_accept(sqe, op->fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      }
      break;
    case IoOpKind::kReadV:
      io_uring_prep_readv(sqe, op->fd(), op->slices(), static_cast<unsigned>(op->slice_count()),
                          static_cast<std::uint64_t>(-1));
      break;
    case IoOpKind::kSendV: {
      // SENDMSG, not WRITEV: only send flags carry MSG_NOSIGNAL. The msghdr stays with the
      // op until its CQE (freed in Handle), whenever the kernel reads it.
      auto* message = new msghdr{};
      message->msg_iov = op->slices();
      message->msg_iovlen = op->slice_count();
      op->backend_request = message;
      io_uring_prep_sendmsg(sqe, op->fd(), message, MSG_NOSIGNAL);
      break;
    }
    case IoOpKind::kRecvMultishot: {
      const IoBufferRing& ring = *op->buffer_ring();
      if (multishot_recv_) {
        io_uring_prep_recv_multishot(sqe, op->fd(), nullptr, 0, 0);
      } else {
        io_uring_prep_recv(sqe, op->fd(), nullptr, static_cast<std::size_t>(ring.buffer_size_),
                           0);
      }
      sqe->flags |= IOSQE_BUFFER_SELECT;  // the kernel takes a buffer from the ring
      sqe->buf_group = ring.group_;
      break;
    }
    case IoOpKind::kSendTo:
    case IoOpKind::kReceiveFrom:
      // Not supported here (io/udp.h polls on io_uring): a no-op whose completion Handle
      // turns into -EOPNOTSUPP.
      io_uring_prep_nop(sqe);
      break;
  }
  io_uring_sqe_set_data(sqe, op);
}

void IoUringBackend::Disarm(IoOp* op, IoReadySink& sink) {
  if (op->backend_parked) {
    // Not in the kernel (waiting for a re-arm, or starved of buffers): nothing to cancel
    // there.
    if (auto waiting = std::find(rearm_.begin(), rearm_.end(), op); waiting != rearm_.end()) {
      rearm_.erase(waiting);
    } else {
      std::vector<IoOp*>& starved = op->buffer_ring()->starved_;
      starved.erase(std::find(starved.begin(), starved.end(), op));
    }
    op->backend_parked = false;
    registry_.Complete(op, -ECANCELED, sink);
    return;
  }
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
        // The kernel ended the multishot poll on its own (CQ overflow): report the edge and
        // arm it again once the completions have caught up (RearmLater).
        registry_.Ready(op, FromPollMask(result), sink);
        RearmLater(op);
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
    case IoOpKind::kAcceptMultishot:
    case IoOpKind::kRecvMultishot:
      HandleMultishot(op, cqe, sink);
      return;
    case IoOpKind::kSendV:
      delete static_cast<msghdr*>(std::exchange(op->backend_request, nullptr));
      registry_.Complete(op, result, sink);
      return;
    case IoOpKind::kSendTo:
    case IoOpKind::kReceiveFrom:
      registry_.Complete(op, -EOPNOTSUPP, sink);  // the no-op Arm issued for them
      return;
    default:
      registry_.Complete(op, result, sink);
      return;
  }
}

void IoUringBackend::HandleMultishot(IoOp* op, const io_uring_cqe& cqe, IoReadySink& sink) {
  const std::int32_t result = cqe.res;
  const bool more = (cqe.flags & IORING_CQE_F_MORE) != 0;
  bool delivered = false;
  if (op->kind() == IoOpKind::kRecvMultishot) {
    IoBufferRing* ring = op->buffer_ring();
    if ((cqe.flags & IORING_CQE_F_BUFFER) != 0) {
      const auto id = static_cast<std::uint16_t>(cqe.flags >> IORING_CQE_BUFFER_SHIFT);
      --ring->available_;
      if (result > 0) {
        // Relaxed: published to the task by the Wakeup below (see ReleaseBuffer).
        ring->user_owned_[id / IoBufferRing::kBitsPerWord].fetch_or(
            std::uint64_t{1} << (id % IoBufferRing::kBitsPerWord), std::memory_order_relaxed);
        op->events()->Push(IoEvent{result, id, true});
        delivered = true;
      } else {
        ReturnToKernel(ring, id);  // a buffer with no bytes in it goes straight back
      }
    }
  } else if (result >= 0 || more) {
    op->events()->Push(IoEvent{result, 0, false});  // an accepted fd, or one failed accept
    delivered = true;
  }
  if (delivered) registry_.Wake(op, sink);
  if (more) return;  // still armed in the kernel
  // The op's last CQE: finish it, or arm it again.
  const bool starved = op->kind() == IoOpKind::kRecvMultishot && result == -ENOBUFS;
  const bool ended = !delivered && !starved;  // end of stream (0) or an error
  if (ended) {
    registry_.Complete(op, result, sink);
  } else if (internal::IoOpRegistry::CancelSeen(op)) {
    registry_.Complete(op, -ECANCELED, sink);
  } else {
    RearmLater(op);  // Arm then parks a starved op until ReleaseBuffer returns a buffer
  }
}

void IoUringBackend::Reap(IoReadySink& sink) {
  io_uring_cqe* cqes[kReapBatch];
  // At most one completion queue's worth per call, so the holder gets back to the tasks it
  // made ready however fast completions come in; what is left waits in the queue, and the
  // holder's next Poll or WaitUntil (which does not block then) takes it.
  const unsigned limit = ring_->cq.ring_entries;
  unsigned handled = 0;
  while (handled < limit) {
    // Also flushes CQEs the kernel kept aside on overflow (it enters the kernel for that).
    const unsigned count = io_uring_peek_batch_cqe(ring_.get(), cqes, kReapBatch);
    if (count == 0) break;
    for (unsigned i = 0; i < count; ++i) Handle(*cqes[i], sink);
    io_uring_cq_advance(ring_.get(), count);
    handled += count;
  }
  // Multishots the kernel ended on overflow go back into the kernel only once it holds no
  // overflowed completion any more. Armed while it does, one that is ready at once (a
  // writable socket's watch) could not post its first CQE either: the kernel would end it
  // again, and with thousands of them the holder re-armed and reaped the same ops for ever
  // (IoUringBackendTest.OnePollHandlesAtMostAQueueOfCompletionsAndOverflowedWatchesSettle).
  // This way each round leaves at least a queue's worth of them armed and quiet. While any
  // wait here, an overflow backlog does too, so the next wait returns at once.
  if (!rearm_.empty() && !io_uring_cq_has_overflow(ring_.get())) ArmParked(rearm_);
  SubmitPending();  // re-armed ops and the eventfd read
}

void IoUringBackend::RearmLater(IoOp* op) {
  op->backend_parked = true;
  rearm_.push_back(op);
}

void IoUringBackend::SubmitPending() {
  if (io_uring_sq_ready(ring_.get()) == 0) return;
  // A refused submit (-EAGAIN: no memory for the requests; -EBUSY: completions overflowed)
  // leaves the entries queued; the next SubmitPending, at the latest after the next wait,
  // hands them over. The fault seam (io/internal/socket_faults.h) refuses some on purpose.
  if (internal::SocketFaults* faults = internal::InstalledSocketFaults();
      faults != nullptr && faults->BeforeRingSubmit() != 0) {
    return;
  }
  io_uring_submit(ring_.get());
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

void IoUringBackend::WakeHolder() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = write(wake_fd_, &one, sizeof(one));
}

}  // namespace fairsched
