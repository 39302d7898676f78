// IoOp: one IO registration or operation handed to an IO backend (io/epoll_backend.h,
// io/io_uring_backend.h, io/iocp_backend.h), and the task it wakes. The Task-level IO API;
// the coroutine sockets build on it.
//
// Like a Task, an IoOp is an intrusive object the user owns: the backend never allocates,
// copies or frees one. Kinds:
//   - Watch (both backends): a standing readiness registration on `fd` for `interest`
//     (kIoReadable / kIoWritable), edge-triggered: every time the fd BECOMES ready, the
//     readiness bits are added to the op and its task is woken as by Wakeup. The task reads
//     and clears the bits with TakeReadiness() and then does its non-blocking reads/writes
//     until EAGAIN (an edge is reported once). Wakeups that land while the task runs are
//     remembered (Task rules), so no edge is lost. A watch lasts until cancelled.
//   - Poll (both): one-shot readiness; completes with the ready bits as result.
//   - Read, Write, Send, Accept, Connect (io_uring, IOCP): the operation itself runs in the
//     kernel; it completes with the syscall's result (bytes, the accepted fd, 0) or -errno.
//     Accept returns a non-blocking, close-on-exec socket. An epoll backend completes them at once
//     with -EOPNOTSUPP (epoll reports readiness; use Watch and do the syscall in the task).
//   - ReadV, SendV (io_uring, IOCP; epoll completes them at once with -EOPNOTSUPP):
//     scatter/gather over an array of slices (IoSlice / ConstIoSlice, below). ReadV is
//     readv(2) (IORING_OP_READV; WSARecv with one WSABUF per slice): the bytes fill the
//     slices in order. SendV is one send of the slices' bytes in order with MSG_NOSIGNAL
//     (IORING_OP_SENDMSG; WSASend). The result is the byte count, as for Read and Send.
//   - SendTo, ReceiveFrom (IOCP only; epoll and io_uring complete them at once with
//     -EOPNOTSUPP): one datagram, sent to / received from an address (io/udp.h).
//   - AcceptMultishot, RecvMultishot (io_uring only; the others complete them at once with
//     -EOPNOTSUPP): one Submit, many results. Each result is an INTERMEDIATE completion: the
//     backend appends an IoEvent to the op's IoEventQueue and wakes the task as Wakeup (so
//     several may be drained by one run). AcceptMultishot's events are accepted sockets
//     (non-blocking, close-on-exec; the task owns and closes them) or -errno for one failed
//     accept; RecvMultishot's are byte counts in a buffer of an IoBufferRing
//     (io/io_uring_backend.h) that the task hands back with ReleaseBuffer when it is done
//     with the bytes. The op runs until cancelled, until the peer ends the stream
//     (RecvMultishot: final result 0) or until an error the backend cannot re-arm past
//     (final result -errno); the FINAL completion is then the usual Signal, once, after the
//     last event was queued. Events queued before the final Signal are still in the queue
//     when the task sees it: drain the queue at every run, the final one included.
//
// Lifecycle, the one rule to remember: every Submit ends with exactly ONE final completion,
// a Signal to the op's task (ReceiveSignal() true in its callback). Before it, the op (and
// any buffer or address it points at) belongs to the backend and must stay alive and
// unchanged; after it, the backend never touches the op or the task again, so the task may
// free both, or Prepare and Submit the op again. Result() is valid from then on: >= 0 on
// success, -errno on failure, -ECANCELED if it was cancelled first. So a task that waits for
// IO must not be Signalled by anyone else (use Wakeup or Cancel for that).
//
// Cancellation: Cancel(op) from any thread (typically the task itself, after the scheduler's
// Cancel(task) woke it with IsCancelled()). The final completion follows (with -ECANCELED,
// or with the real result if the operation finished first). The caller must know the op is
// alive (it has not yet seen the final completion). Stop cancels every registration too.
// So the task should wait with the scheduler's PostDeadlineThroughStop(task,
// kTaskDeadlineInfinite), not PostWait: Stop then leaves it waiting for the final
// completion instead of waking it (a woken task could only post itself again, and Stop
// would wake it again, in a loop, until the completion came).
//
// Handlers instead of a task. An op may name an IoOpHandler instead of a task (IoTarget
// takes either). The sched-role then calls the handler where it would wake the task: its
// OnIoEvent for each readiness edge of a Watch and each queued event of a multishot op, its
// OnIoFinished for the final completion (the same "last touch" rule: after it the backend
// never touches the op again). That saves a task run per event when all the event does is
// wake someone else, which is what the coroutine sockets (io/tcp.h) do: an edge or a
// completion readies the waiting coroutine directly. A handler runs on the sched-role holder
// in the middle of its IO delivery, so it must be short and must never wait: it may take a
// mutex that is only ever held for a few instructions, store flags, and wake tasks or
// coroutines. Both calls get the backend's IoReadySink: a wake made through it
// (sink.Wake(task, how), or coro::Waker::Wakeup(sink)) goes straight to the ready queue; a
// plain Wakeup/Signal works too, through the front queue.
// Stop: a task that waits for its op through Stop keeps the scheduler's Stop draining until
// the final completion; a handler is not a task and keeps nothing alive. So whoever uses
// one either keeps a task of its own posted through Stop until OnIoFinished (SocketCore:
// the coroutine waiting for its operation, and for the epoll watch its watch_end_ task), or
// cancels the op and sees OnIoFinished before the scheduler stops (else the backend is
// destroyed with the op still submitted, which aborts).
//
// Misuse caught in every build: submitting an op that is already submitted, destroying an
// op between Submit and its final completion (both abort with a message).
#ifndef FAIRSCHED_IO_IO_OP_H_
#define FAIRSCHED_IO_IO_OP_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#ifndef _WIN32
#include <sys/uio.h>  // struct iovec
#endif

#include "io/socket_platform.h"
#include "sched/io_backend.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched {

// Interest and readiness bits.
inline constexpr std::uint32_t kIoReadable = 1;
inline constexpr std::uint32_t kIoWritable = 2;
inline constexpr std::uint32_t kIoHangup = 4;  // readiness only: peer closed (or half-closed)
inline constexpr std::uint32_t kIoError = 8;   // readiness only: error pending on the fd

enum class IoOpKind : std::uint8_t {
  kWatch,
  kPoll,
  kRead,
  kWrite,
  kSend,
  kAccept,
  kConnect,
  kAcceptMultishot,
  kRecvMultishot,
  kReadV,
  kSendV,
  // Datagrams (IOCP: WSASendTo / WSARecvFrom; the others complete them with -EOPNOTSUPP).
  kSendTo,
  kReceiveFrom,
};

inline bool IsMultishot(IoOpKind kind) {
  return kind == IoOpKind::kAcceptMultishot || kind == IoOpKind::kRecvMultishot;
}

namespace internal {
class IoOpRegistry;
}  // namespace internal

class IoBufferRing;  // io/io_uring_backend.h

// One intermediate completion of a multishot op. `result`: AcceptMultishot: the accepted fd,
// or -errno; RecvMultishot: bytes (> 0) in buffer `buffer_id` of the op's IoBufferRing.
struct IoEvent {
  std::int32_t result = 0;
  std::uint16_t buffer_id = 0;
  bool has_buffer = false;  // RecvMultishot data: hand buffer_id back with ReleaseBuffer
};

// The queue a multishot op's intermediate completions go into, in kernel order. User-owned
// like the op; alive until the op's final completion. The sched-role appends, the op's task
// takes; a mutex (held for a push_back or a swap) keeps them apart, because the two run on
// different workers at the same time. Unbounded on purpose: dropping an accepted socket or a
// received buffer would lose data, and a RecvMultishot queue never holds more events than
// its ring has buffers (each data event holds one until it is released).
class IoEventQueue {
 public:
  // Sched-role.
  void Push(const IoEvent& event) {
    MutexLock lock(mutex_);
    events_.push_back(event);
  }
  // The task: moves every queued event to the end of `out` (cleared first) and returns how
  // many. Swapping keeps both vectors' capacity: no allocation once they have grown.
  std::size_t TakeAll(std::vector<IoEvent>& out) {
    out.clear();
    MutexLock lock(mutex_);
    out.swap(events_);
    return out.size();
  }

 private:
  Mutex mutex_;
  std::vector<IoEvent> events_;
};

// ---- Slices: the buffers of a vectored (scatter/gather) op ----
//
// A slice is a pointer and a size, laid out exactly as the platform's own buffer descriptor
// (struct iovec on POSIX, WSABUF on Windows; the member order differs, so it is chosen per
// platform and checked in Native). So an array of slices goes to the kernel as it is: no
// copy and no allocation per op. IoSlice points at writable memory (reads fill it),
// ConstIoSlice at data (writes send it); both convert implicitly from a std::span of chars.
// A slice does not own its memory.
//
// Limits: a vectored op takes at most kMaxIoSlices slices (IOV_MAX on Linux: the kernel
// refuses more with EINVAL; Windows has no such limit, the same number keeps the platforms
// alike) and is meant to move at most kMaxIoBytes (an op's result is an int32; Linux moves
// at most about 2 GiB per call anyway). TcpStream (io/tcp.h) cuts longer slice arrays into ops that keep
// both limits. On Windows a single slice longer than kMaxIoBytes aborts with a message
// (WSABUF's length is 32 bits, and a longer completion could not be reported).
inline constexpr std::size_t kMaxIoSlices = 1024;
inline constexpr std::size_t kMaxIoBytes = 0x7FFFFFFF;

#ifdef _WIN32
using NativeIoSlice = WSABUF;
#else
using NativeIoSlice = iovec;
#endif

template <typename Char>
class BasicIoSlice {
  static_assert(std::is_same_v<std::remove_const_t<Char>, char>, "a slice is of char or const char");

 public:
  BasicIoSlice() = default;
  BasicIoSlice(Char* data, std::size_t size) {
    // Assigned in the body: the members' order is the platform's.
    data_ = const_cast<char*>(data);  // a ConstIoSlice is never written through
#ifdef _WIN32
    FAIRSCHED_CHECK(size <= kMaxIoBytes, "an IoSlice longer than 2^31 - 1 bytes (Windows)");
    size_ = static_cast<ULONG>(size);
#else
    size_ = size;
#endif
  }
  BasicIoSlice(std::span<Char> bytes)  // NOLINT: implicit on purpose
      : BasicIoSlice(bytes.data(), bytes.size()) {}

  Char* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The platform's descriptors for an array of slices: the same memory. For the backends
  // and the epoll path's syscalls; the kernel never writes through a ConstIoSlice's.
  static NativeIoSlice* Native(const BasicIoSlice* slices) {
    static_assert(std::is_standard_layout_v<BasicIoSlice> &&
                  sizeof(BasicIoSlice) == sizeof(NativeIoSlice));
#ifdef _WIN32
    static_assert(offsetof(BasicIoSlice, data_) == offsetof(WSABUF, buf) &&
                  offsetof(BasicIoSlice, size_) == offsetof(WSABUF, len));
#else
    static_assert(offsetof(BasicIoSlice, data_) == offsetof(iovec, iov_base) &&
                  offsetof(BasicIoSlice, size_) == offsetof(iovec, iov_len));
#endif
    return reinterpret_cast<NativeIoSlice*>(const_cast<BasicIoSlice*>(slices));
  }

 private:
#ifdef _WIN32
  ULONG size_ = 0;
  char* data_ = nullptr;
#else
  char* data_ = nullptr;
  std::size_t size_ = 0;
#endif
};

using IoSlice = BasicIoSlice<char>;
using ConstIoSlice = BasicIoSlice<const char>;

class IoOp;

// The handler of an op (see "Handlers instead of a task"). Both calls come from the
// sched-role holder, never concurrently for one op.
class IoOpHandler {
 public:
  // In place of a Wakeup of the task: a Watch's readiness edge (`readiness`: its kIo* bits),
  // or an intermediate completion of a multishot op (readiness 0; the event is in the op's
  // IoEventQueue).
  // `sink`: the backend's door into the ready queue, for this call only.
  virtual void OnIoEvent(IoOp& op, std::uint32_t readiness, IoReadySink& sink) = 0;
  // In place of the final Signal: op.Result() is valid. The backend's last touch of `op`.
  virtual void OnIoFinished(IoOp& op, IoReadySink& sink) = 0;

 protected:
  ~IoOpHandler() = default;
};

// Whom an op tells about its events: a task (woken) or a handler (called). Converts from
// either.
class IoTarget {
 public:
  IoTarget(Task* task) : task_(task) {}                  // NOLINT: implicit on purpose
  IoTarget(IoOpHandler* handler) : handler_(handler) {}  // NOLINT: implicit on purpose
  Task* task() const { return task_; }
  IoOpHandler* handler() const { return handler_; }

 private:
  Task* task_ = nullptr;
  IoOpHandler* handler_ = nullptr;
};

class IoOp {
 public:
  IoOp() = default;
  ~IoOp() {
    // Relaxed: the owner destroying its op is ordered after the final completion by the
    // task hand-off; a racing destruction is a bug.
    FAIRSCHED_CHECK(state_.load(std::memory_order_relaxed) == kIdle,
                    "an IoOp was destroyed while submitted (Cancel it and wait for its final "
                    "completion)");
  }
  IoOp(const IoOp&) = delete;
  IoOp& operator=(const IoOp&) = delete;

  // Setters: before Submit, or after the final completion. `target` is the task this op
  // wakes, or the handler it calls (see "Handlers instead of a task").
  void PrepareWatch(int fd, std::uint32_t interest, IoTarget target) {
    Prepare(IoOpKind::kWatch, fd, target);
    interest_ = interest;
  }
  void PreparePoll(int fd, std::uint32_t interest, IoTarget target) {
    Prepare(IoOpKind::kPoll, fd, target);
    interest_ = interest;
  }
  void PrepareRead(int fd, void* buffer, std::size_t length, IoTarget target) {
    Prepare(IoOpKind::kRead, fd, target);
    buffer_ = buffer;
    length_ = length;
  }
  void PrepareWrite(int fd, const void* buffer, std::size_t length, IoTarget target) {
    Prepare(IoOpKind::kWrite, fd, target);
    buffer_ = const_cast<void*>(buffer);  // never written through for kWrite
    length_ = length;
  }
  // send(2) on a socket with MSG_NOSIGNAL: a write to a connection the peer reset fails
  // with -EPIPE instead of raising SIGPIPE (which kills a process that did not ignore it).
  void PrepareSend(int fd, const void* buffer, std::size_t length, IoTarget target) {
    Prepare(IoOpKind::kSend, fd, target);
    buffer_ = const_cast<void*>(buffer);  // never written through for kSend
    length_ = length;
  }
  void PrepareAccept(int listen_fd, IoTarget target) {
    Prepare(IoOpKind::kAccept, listen_fd, target);
  }
  // `address` must stay alive until the final completion.
  void PrepareConnect(int fd, const sockaddr* address, socklen_t length, IoTarget target) {
    Prepare(IoOpKind::kConnect, fd, target);
    address_ = address;
    address_length_ = length;
  }

  // One datagram to `address` (null: the connected peer), sent whole or not at all; result:
  // bytes, or -errno (-EMSGSIZE: too large). `address` must stay alive until the final
  // completion.
  void PrepareSendTo(int fd, const void* buffer, std::size_t length, const sockaddr* address,
                     socklen_t address_length, IoTarget target) {
    Prepare(IoOpKind::kSendTo, fd, target);
    buffer_ = const_cast<void*>(buffer);  // never written through for kSendTo
    length_ = length;
    address_ = address;
    address_length_ = address_length;
  }
  // One datagram into `buffer`, its sender into `*from` (an IPv4 or IPv6 address: its
  // family gives its length); result: bytes, or -EMSGSIZE when the datagram was longer than
  // `length` (the buffer then holds its first `length` bytes and `*from` is set; the rest
  // is discarded), or another -errno.
  void PrepareReceiveFrom(int fd, void* buffer, std::size_t length, sockaddr_storage* from,
                          IoTarget target) {
    Prepare(IoOpKind::kReceiveFrom, fd, target);
    buffer_ = buffer;
    length_ = length;
    address_ = reinterpret_cast<const sockaddr*>(from);  // written through for kReceiveFrom
    address_length_ = sizeof(*from);
  }

  // Multishot (io_uring): every accepted socket of `listen_fd` becomes an event in `events`.
  void PrepareAcceptMultishot(int listen_fd, IoEventQueue* events, IoTarget target) {
    Prepare(IoOpKind::kAcceptMultishot, listen_fd, target);
    events_ = events;
  }
  // Multishot (io_uring): every chunk of bytes received on `fd` lands in a buffer of `ring`
  // chosen by the kernel and becomes an event in `events`.
  void PrepareRecvMultishot(int fd, IoBufferRing* ring, IoEventQueue* events, IoTarget target) {
    Prepare(IoOpKind::kRecvMultishot, fd, target);
    buffer_ring_ = ring;
    events_ = events;
  }

  // Vectored: `count` (1..kMaxIoSlices) slices; the array and the memory it points at must
  // stay alive and unchanged until the final completion.
  void PrepareReadV(int fd, const IoSlice* slices, std::size_t count, IoTarget target) {
    PrepareVectored(IoOpKind::kReadV, fd, IoSlice::Native(slices), count, target);
  }
  void PrepareSendV(int fd, const ConstIoSlice* slices, std::size_t count, IoTarget target) {
    PrepareVectored(IoOpKind::kSendV, fd, ConstIoSlice::Native(slices), count, target);
  }

  IoOpKind kind() const { return kind_; }
  int fd() const { return fd_; }
  Task* task() const { return task_; }
  IoOpHandler* handler() const { return handler_; }
  std::uint32_t interest() const { return interest_; }
  void* buffer() const { return buffer_; }
  std::size_t length() const { return length_; }
  const sockaddr* address() const { return address_; }
  socklen_t address_length() const { return address_length_; }
  IoEventQueue* events() const { return events_; }
  IoBufferRing* buffer_ring() const { return buffer_ring_; }
  NativeIoSlice* slices() const { return slices_; }
  std::size_t slice_count() const { return slice_count_; }

  // After the final completion: >= 0 success, -errno failure (-ECANCELED: cancelled).
  std::int32_t Result() const { return result_; }
  // Whether the op is between Submit and its final completion. Relaxed: a snapshot; the
  // task's own view is exact (the final Signal publishes the state change).
  bool IsSubmitted() const { return state_.load(std::memory_order_relaxed) != kIdle; }
  // Watch/Poll with a task (a handler gets a Watch's bits as OnIoEvent's argument): the
  // readiness bits (kIo*) reported since the last call, cleared. Relaxed:
  // the bits are the only data; the Wakeup that follows the backend's fetch_or publishes
  // them to the run it causes, and a later run reads them with the same RMW chain.
  std::uint32_t TakeReadiness() { return readiness_.exchange(0, std::memory_order_relaxed); }

  // Submission queue link (intrusive; not for users).
  IoOp* next = nullptr;
  // The backend's per-operation kernel state while the op is armed (IocpBackend: its
  // OVERLAPPED request, which CancelIoEx names); sched-role only, not for users.
  void* backend_request = nullptr;
  // A multishot op the backend holds out of the kernel until it can re-arm it (IoUring: a
  // RecvMultishot that ran out of ring buffers, or a multishot the kernel ended on
  // completion-queue overflow); sched-role only, not for users.
  bool backend_parked = false;

 private:
  friend class internal::IoOpRegistry;

  // State (one atomic byte; see internal::IoOpRegistry for the transitions).
  static constexpr std::uint8_t kIdle = 0;    // not submitted, or finished
  static constexpr std::uint8_t kQueued = 1;  // in the submission queue, not yet seen
  static constexpr std::uint8_t kActive = 2;  // armed in the kernel by the sched-role
  static constexpr std::uint8_t kCancel = 4;  // cancellation requested (with kQueued/kActive)

  void Prepare(IoOpKind kind, int fd, IoTarget target) {
    FAIRSCHED_DCHECK(!IsSubmitted(), "IoOp prepared while submitted");
    kind_ = kind;
    fd_ = fd;
    task_ = target.task();
    handler_ = target.handler();
    interest_ = 0;
    buffer_ = nullptr;
    length_ = 0;
    address_ = nullptr;
    address_length_ = 0;
    events_ = nullptr;
    buffer_ring_ = nullptr;
    slices_ = nullptr;
    slice_count_ = 0;
  }
  void PrepareVectored(IoOpKind kind, int fd, NativeIoSlice* slices, std::size_t count,
                       IoTarget target) {
    FAIRSCHED_DCHECK(count >= 1 && count <= kMaxIoSlices,
                     "a vectored IoOp takes 1 to kMaxIoSlices (1024) slices");
    Prepare(kind, fd, target);
    slices_ = slices;
    slice_count_ = count;
  }

  // Inputs (written by the owner before Submit; read by the sched-role).
  IoOpKind kind_ = IoOpKind::kWatch;
  int fd_ = -1;
  Task* task_ = nullptr;            // woken, or
  IoOpHandler* handler_ = nullptr;  // called (exactly one of the two is set)
  std::uint32_t interest_ = 0;
  void* buffer_ = nullptr;
  std::size_t length_ = 0;
  const sockaddr* address_ = nullptr;
  socklen_t address_length_ = 0;
  IoEventQueue* events_ = nullptr;
  IoBufferRing* buffer_ring_ = nullptr;
  NativeIoSlice* slices_ = nullptr;
  std::size_t slice_count_ = 0;
  // Outputs.
  std::int32_t result_ = 0;
  Atomic<std::uint32_t> readiness_{0};
  Atomic<std::uint8_t> state_{kIdle};
  // Sched-role-only bookkeeping.
  bool cancel_seen_ = false;  // the role has handled this op's cancellation request
  bool completed_ = false;    // the kernel finished it; the final completion waits for the
                              // cancel request that a canceller is pushing
  IoOp* in_flight_prev_ = nullptr;
  IoOp* in_flight_next_ = nullptr;
};

}  // namespace fairsched

#endif  // FAIRSCHED_IO_IO_OP_H_
