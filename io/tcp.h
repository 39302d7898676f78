// Coroutine TCP sockets: TcpListener and TcpStream for coroutines spawned on a scheduler
// whose IO backend is EpollBackend or IoUringBackend (io/epoll_backend.h,
// io/io_uring_backend.h), or on Windows IocpBackend (io/iocp_backend.h). One template per
// socket type, parameterised by the scheduler; the backend it carries picks at compile
// time how each operation runs: readiness (epoll: the non-blocking syscall, and on EAGAIN a
// wait for the socket's next edge) or completion (io_uring, IOCP: one IoOp run to its
// final completion).
// How each operation runs on each backend kind is io/internal/socket_io.h; the socket's
// shared state, Close and the fd's lifetime are io/internal/socket_core.h; the plain
// socket calls are io/internal/socket_ops.h, implemented once per platform
// (io/socket_ops_posix.cc, io/socket_ops_windows.cc). This header also brings the socket
// layer's value types (io/io_error.h, io/socket_address.h, io/socket_options.h), so code
// that includes it needs nothing else.
//
// Contract, for users:
//   - Every operation is a coroutine: `co_await stream.Read(buffer, deadline)` inside a
//     coroutine spawned (coro::Spawn) on the socket's scheduler. Errors are values
//     (IoError, IoResult<T>); nothing here throws.
//   - Deadlines are absolute (coro::DeadlineAfter(...)); kTaskDeadlineInfinite: none. An
//     operation that times out returns IoErrorCode::kTimeout; what it transferred before is
//     lost for Read (nothing was read), and for Write some prefix may have been sent.
//   - Cancellation (JoinHandle::Cancel, a parent's cancellation, the coroutine's own
//     deadline) ends a blocked operation with kCancelled; the scheduler's Stop with
//     kShutdown. In both cases the IO operation is released before the call returns (io_uring:
//     the IoOp is cancelled and its final completion awaited; epoll: the wait is withdrawn).
//     Once the coroutine is cancelled, every further operation fails at once the same way.
//   - One reader and one writer may use a stream at the same time (two coroutines: one
//     Reads, one Writes); two concurrent Reads (or Writes, or Accepts) are misuse (checked
//     in debug builds).
//   - Close() may come from any thread or coroutine, also while another coroutine's Read,
//     Write, ReadSome, WriteSome or Accept is pending: that operation ends exactly once, with
//     kClosed (or with its real result, if it completed first), and every operation started
//     afterwards fails at once with kClosed. The fd itself is closed only when no operation
//     refers to it any more: each operation holds the socket's state until the backend has
//     handed its IoOp back (io_uring, IOCP: the op's final completion; epoll: the watch's),
//     so a new socket that reuses the fd number never sees an old operation's completion.
//     This takes up to one sched-role step after Close (at once if nothing was pending and,
//     with epoll, Stop already ended the watch). The calls that use the fd directly
//     (Shutdown, the options, SetIdleTimeout, the addresses, WithFd) return kClosed too,
//     also when they race with Close: each holds the fd open while it uses it. Only fd(),
//     the raw number, aborts on a closed socket, and any use of a moved-from object is
//     misuse (checked in debug builds; release builds return kClosed). The destructor
//     closes too; it may run while an operation of another
//     coroutine is still returning (the state lives until it has), but not while
//     another coroutine is still inside a call on the object (ReadExactly re-enters Read).
//   - Sockets must be closed before the scheduler is destroyed.
//   - Signals are left alone: every write is a send(2) with MSG_NOSIGNAL (io_uring's too),
//     so a write to a connection the peer reset fails with kResetByPeer and never raises
//     SIGPIPE, whatever the process's SIGPIPE disposition.
#ifndef FAIRSCHED_IO_TCP_H_
#define FAIRSCHED_IO_TCP_H_

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "coro/lazy.h"
#include "io/internal/multishot_acceptor.h"
#include "io/internal/socket_core.h"
#include "io/internal/socket_handle.h"
#include "io/internal/socket_io.h"
#include "io/internal/socket_ops.h"
#include "io/io_error.h"
#include "io/io_op.h"
#include "io/socket_address.h"
#include "io/socket_options.h"
#include "io/socket_platform.h"
#include "sched/task.h"

namespace fairsched {

namespace internal {

// The slices one vectored receive or send takes from `slices`: its leading empty slices are
// skipped, then slices are taken up to kMaxIoSlices and while the total stays within
// kMaxIoBytes (a first slice that alone is longer is taken: the kernel moves less). Their
// total goes to `*bytes` (0: every slice is empty).
template <typename Char>
std::span<const BasicIoSlice<Char>> SliceWindow(std::span<const BasicIoSlice<Char>> slices,
                                                std::size_t* bytes) {
  while (!slices.empty() && slices.front().empty()) slices = slices.subspan(1);
  std::size_t count = 0;
  *bytes = 0;
  for (const BasicIoSlice<Char>& slice : slices) {
    if (count == kMaxIoSlices || (count > 0 && slice.size() > kMaxIoBytes - *bytes)) break;
    *bytes += slice.size();
    ++count;
  }
  return slices.first(count);
}
// WriteV's progress: `rest` without its first `sent` bytes. A send that ended inside a
// slice leaves that slice's tail to send; the caller's slices are const, so the unsent ones
// are copied into `own` the first time that happens (`own` empty), and shortened there.
std::span<const ConstIoSlice> DropSent(std::span<const ConstIoSlice> rest, std::size_t sent,
                                       std::vector<ConstIoSlice>& own);
}  // namespace internal

template <typename Scheduler>
class TcpServer;  // io/tcp_server.h

// A connected TCP socket. Move-only; the destructor closes it (and drops the object's
// reference: an operation still finishing in another coroutine keeps the socket's state
// alive until it returns).
template <typename Scheduler>
class TcpStream : public internal::SocketHandle<Scheduler, internal::kTcpStreamName> {
  using Handle = internal::SocketHandle<Scheduler, internal::kTcpStreamName>;
  using Core = internal::SocketCore<Scheduler>;
  using Io = internal::SocketIo<Scheduler>;

 public:
  TcpStream() = default;
  TcpStream(TcpStream&&) noexcept = default;
  TcpStream& operator=(TcpStream&&) noexcept = default;

  // (IsOpen(), fd() and WithFd() come from internal::SocketHandle.)

  // Connects to `address` (IPv4 or IPv6) from inside a coroutine on `scheduler`.
  static coro::Lazy<IoResult<TcpStream>> Connect(Scheduler& scheduler, SocketAddress address,
                                                 TaskDeadline deadline) {
    return Io::template Connect<TcpStream>(scheduler, address, deadline);
  }

  // Reads at least one byte into `buffer` (returns how many), or fails: kEndOfStream when
  // the peer closed its side, kTimeout, kResetByPeer, kCancelled, kShutdown, kSystem.
  coro::Lazy<IoResult<std::size_t>> Read(std::span<char> buffer, TaskDeadline deadline) {
    Core* core = this->Live();
    FAIRSCHED_DCHECK(!buffer.empty(), "Read into an empty buffer");
    return Io::Read(core, buffer, deadline);
  }
  // Reads exactly `buffer.size()` bytes; kEndOfStream if the stream ends first.
  coro::Lazy<IoError> ReadExactly(std::span<char> buffer, TaskDeadline deadline);
  // Writes all of `data`. On failure some prefix may have been sent: the error's
  // bytes_done() says how long it is.
  coro::Lazy<IoError> Write(std::span<const char> data, TaskDeadline deadline) {
    return Io::Transmit(this->Live(), data, deadline, /*all=*/true, nullptr);
  }

  // The ByteStream forms (io/byte_stream.h): TcpStream models ByteStream itself.
  // ReadSome is Read. WriteSome writes at least one byte of non-empty `data` and at most
  // all of it, in one send where the socket has room (returns how many), or fails as Write.
  // On the completion backends one WriteSome sends at most 256 KiB (an IOCP send completes
  // only when all it was given is buffered).
  coro::Lazy<IoResult<std::size_t>> ReadSome(std::span<char> buffer, TaskDeadline deadline) {
    return Read(buffer, deadline);
  }
  coro::Lazy<IoResult<std::size_t>> WriteSome(std::span<const char> data, TaskDeadline deadline);

  // Scatter/gather (vectored) IO over slices (io/io_op.h: IoSlice for reads, ConstIoSlice
  // for writes; each a pointer and a size, implicitly from a std::span<char> / <const char>).
  // The slice array and the memory it points at must stay alive until the call returns.
  // One receive or send takes at most kMaxIoSlices (1024) slices and at most kMaxIoBytes
  // (2^31 - 1) bytes (see internal::SliceWindow): no slice count is an error, the *Some
  // forms move what one call can (they may always move less than everything), WriteV goes
  // on until all is sent. Zero-length slices are allowed anywhere and are skipped. Errors,
  // deadlines, the idle timeout and cancellation are as for Read / WriteSome / Write; one
  // system call or IoOp per transfer (epoll: recvmsg / sendmsg with MSG_NOSIGNAL; io_uring:
  // IORING_OP_READV / IORING_OP_SENDMSG; IOCP: WSARecv / WSASend with a WSABUF per slice).
  //   ReadSomeV: one receive that fills the slices in order (a slice is full before a byte
  // goes into the next); returns the byte count (>= 1), or fails as Read (kEndOfStream...).
  //   WriteSomeV: one send of the slices' bytes in order (at least one byte); the count.
  //   WriteV: all bytes of all slices, in order; a send that ends inside a slice resumes at
  // that byte. On failure, bytes_done() is how many leading bytes of the concatenated
  // slices the kernel accepted (as Write's).
  //   Slices with no bytes at all: WriteV succeeds at once; ReadSomeV and WriteSomeV are
  // misuse (debug builds abort with a message, like an empty Read; release builds return
  // kSystem / EINVAL).
  coro::Lazy<IoResult<std::size_t>> ReadSomeV(std::span<const IoSlice> buffers,
                                              TaskDeadline deadline) {
    return TransferSome(buffers, deadline);
  }
  coro::Lazy<IoResult<std::size_t>> WriteSomeV(std::span<const ConstIoSlice> data,
                                               TaskDeadline deadline) {
    return TransferSome(data, deadline);
  }
  coro::Lazy<IoError> WriteV(std::span<const ConstIoSlice> data, TaskDeadline deadline);

  // Closes the socket: any thread, idempotent, also while another coroutine's Read /
  // Write / ReadSome / WriteSome is pending: that operation then returns kClosed (or its
  // real result, if it completed first), exactly once. Operations started afterwards fail
  // at once with kClosed; the fd is closed once the backend has handed back every operation
  // that refers to it (see the file comment).
  void Close() { this->CloseCore(); }
  // The calls below use the socket at once (no coroutine). On a closed socket (Close, from
  // any thread, also one racing the call) each returns kClosed and does nothing; the fd is
  // held open while the call uses it (internal::SocketHandle::WithFd).
  // shutdown(2): kWrite sends FIN after the data already written; kRead makes this side's
  // reads (also one waiting in another coroutine) end with kEndOfStream.
  IoError Shutdown(ShutdownHow how);
  // TCP_NODELAY: `true` sends small writes at once instead of coalescing them (Nagle).
  IoError SetNoDelay(bool on) { return SetOption(internal::SocketOption::kNoDelay, on ? 1 : 0); }
  // Keepalive on with `settings` (see KeepAlive), or off. The first failing setsockopt's
  // error (e.g. a zero-or-negative timer the kernel refuses: kSystem, EINVAL).
  IoError EnableKeepAlive(const KeepAlive& settings = {});
  IoError DisableKeepAlive() { return SetOption(internal::SocketOption::kKeepAlive, 0); }
  // SO_RCVBUF / SO_SNDBUF in bytes (a request: Linux doubles it for its bookkeeping and
  // clamps it to net.core.rmem_max / wmem_max; setting it turns off autotuning).
  IoError SetReceiveBufferSize(int bytes) {
    return SetOption(internal::SocketOption::kReceiveBuffer, bytes);
  }
  IoError SetSendBufferSize(int bytes) {
    return SetOption(internal::SocketOption::kSendBuffer, bytes);
  }
  // A per-connection idle deadline: from now on every Read / Write / *Some also ends
  // (kTimeout) when no byte has moved in either direction for `idle` (counted from the last
  // bytes moved, or from this call), if that comes before its own deadline. Bytes moved by
  // any operation refresh it for every operation, also one already waiting: a Read that
  // waits while a Write keeps moving bytes is not ended (a listen-only peer stays
  // connected). A waiting operation notices a longer or removed timeout when its current
  // bound passes; a new or shorter one applies to waits that begin afterwards. 0 turns it
  // off. Any thread. kClosed on a closed socket.
  IoError SetIdleTimeout(std::chrono::nanoseconds idle);

  IoResult<SocketAddress> LocalAddress() const;
  IoResult<SocketAddress> PeerAddress() const;

 private:
  template <typename, bool>
  friend class internal::SocketIo;  // Connect and Accept make streams
  template <typename>
  friend class TcpServer;  // holds each session's core to shut its read side down
  explicit TcpStream(Core* core) : Handle(core) {}
  // One setsockopt on the held fd (see WithFd).
  IoError SetOption(internal::SocketOption option, int value);
  // The vectored forms' one transfer of `window` (from internal::SliceWindow, `bytes` > 0 in
  // it): a receive (IoSlice) or a send (ConstIoSlice). Bytes moved (a receive's 0: end of
  // stream), or the error.
  template <typename Char>
  coro::Lazy<IoResult<std::size_t>> TransferOnce(std::span<const BasicIoSlice<Char>> window,
                                                 std::size_t bytes, TaskDeadline deadline) {
    return Io::TransferOnce(this->Live(), window, bytes, deadline);
  }
  // ReadSomeV (IoSlice) and WriteSomeV (ConstIoSlice): one TransferOnce of the slices'
  // window; an empty window is misuse, a receive's 0 is kEndOfStream.
  template <typename Char>
  coro::Lazy<IoResult<std::size_t>> TransferSome(std::span<const BasicIoSlice<Char>> slices,
                                                 TaskDeadline deadline);
};

// What TcpListener::AcceptWithPeer returns: the new connection and its peer's address.
template <typename Scheduler>
struct AcceptedConnection {
  TcpStream<Scheduler> stream;
  SocketAddress peer;
};

// A listening TCP socket. Move-only; the destructor closes it.
template <typename Scheduler>
class TcpListener : public internal::SocketHandle<Scheduler, internal::kTcpListenerName> {
  using Handle = internal::SocketHandle<Scheduler, internal::kTcpListenerName>;
  using Core = internal::SocketCore<Scheduler>;
  using Acceptor = internal::MultishotAcceptor<Scheduler>;

 public:
  TcpListener() = default;
  TcpListener(TcpListener&& other) noexcept
      : Handle(std::move(other)), multishot_(std::exchange(other.multishot_, nullptr)) {}
  TcpListener& operator=(TcpListener&& other) noexcept {
    if (this != &other) {
      ReleaseAcceptor();
      Handle::operator=(std::move(other));
      multishot_ = std::exchange(other.multishot_, nullptr);
    }
    return *this;
  }
  ~TcpListener() { ReleaseAcceptor(); }  // then the handle drops the core

  // Binds and listens (any thread; port 0 picks a free port, see LocalAddress).
  static IoResult<TcpListener> Listen(Scheduler& scheduler, const SocketAddress& address,
                                      int backlog = 1024) {
    ListenOptions options;
    options.backlog = backlog;
    return Listen(scheduler, address, options);
  }
  static IoResult<TcpListener> Listen(Scheduler& scheduler, const SocketAddress& address,
                                      const ListenOptions& options);

  // Waits for the next connection (inside a coroutine on the listener's scheduler). On
  // io_uring with multishot accept (IoUringBackend::multishot_accept()) the first Accept
  // arms one multishot accept that stays armed until Close (internal::MultishotAcceptor):
  // connections may then be accepted before an Accept asks for them (at most
  // about MultishotAcceptor::kMaxPending; the rest wait in the backlog), and a cancelled or
  // timed-out Accept leaves them queued for the next one. Elsewhere one accept per call.
  coro::Lazy<IoResult<TcpStream<Scheduler>>> Accept(TaskDeadline deadline) {
    return internal::SocketIo<Scheduler>::template Accept<TcpStream<Scheduler>>(
        this->Live(), multishot_, deadline);
  }
  // Accept, and the peer's address (one getpeername after the accept, on every backend).
  // A connection the peer reset before that fails with kSystem (ENOTCONN) and is closed;
  // like any Accept failure, it does not end the listener.
  coro::Lazy<IoResult<AcceptedConnection<Scheduler>>> AcceptWithPeer(TaskDeadline deadline);

  // kClosed on a closed listener (also one that races with Close).
  IoResult<SocketAddress> LocalAddress() const;
  // (IsOpen(), fd() and WithFd() come from internal::SocketHandle.)
  // As TcpStream::Close: a pending Accept in another coroutine returns kClosed. With a
  // multishot accept armed, the socket and the connections accepted but not taken are
  // closed when the backend hands the op back, within one sched-role step.
  void Close() {
    if (this->core() == nullptr) return;
    this->CloseCore();
    if (multishot_ != nullptr) multishot_->CancelForClose();
  }

 private:
  explicit TcpListener(Core* core) : Handle(core), multishot_(internal::MakeMultishotAcceptor(core)) {}
  // The destructor and move-assignment, before the handle drops the core: Close, then let
  // go of the acceptor (it lives on while an operation still uses it).
  void ReleaseAcceptor() {
    Close();
    if (multishot_ != nullptr) std::exchange(multishot_, nullptr)->Release();
  }
  // io_uring: the standing multishot accept where usable, made with the listener (so a
  // Close from another coroutine reads a pointer no Accept writes); armed by the first
  // Accept.
  Acceptor* multishot_ = nullptr;
};

// ---------------------------------------------------------------------------------------
// Implementation.
template <typename Scheduler>
coro::Lazy<IoError> TcpStream<Scheduler>::ReadExactly(std::span<char> buffer,
                                                      TaskDeadline deadline) {
  std::size_t done = 0;
  while (done < buffer.size()) {
    IoResult<std::size_t> n = co_await Read(buffer.subspan(done), deadline);
    if (!n.ok()) co_return n.error();
    done += n.value();
  }
  co_return IoError();
}

template <typename Scheduler>
coro::Lazy<IoResult<std::size_t>> TcpStream<Scheduler>::WriteSome(std::span<const char> data,
                                                                  TaskDeadline deadline) {
  FAIRSCHED_DCHECK(!data.empty(), "WriteSome of no data");
  std::size_t moved = 0;
  const IoError error = co_await Io::Transmit(this->Live(), data, deadline, /*all=*/false, &moved);
  if (!error.ok()) co_return error;
  co_return moved;
}

template <typename Scheduler>
template <typename Char>
coro::Lazy<IoResult<std::size_t>> TcpStream<Scheduler>::TransferSome(
    std::span<const BasicIoSlice<Char>> slices, TaskDeadline deadline) {
  constexpr bool kSend = std::is_const_v<Char>;
  std::size_t bytes = 0;
  const std::span<const BasicIoSlice<Char>> window = internal::SliceWindow(slices, &bytes);
  FAIRSCHED_DCHECK(bytes > 0, kSend ? "WriteSomeV of slices with no bytes"
                                    : "ReadSomeV into slices of no bytes");
  if (bytes == 0) co_return IoError(IoErrorCode::kSystem, EINVAL);
  IoResult<std::size_t> n = co_await TransferOnce(window, bytes, deadline);
  if (!kSend && n.ok() && n.value() == 0) co_return IoError(IoErrorCode::kEndOfStream);
  co_return n;
}

template <typename Scheduler>
coro::Lazy<IoError> TcpStream<Scheduler>::WriteV(std::span<const ConstIoSlice> data,
                                                 TaskDeadline deadline) {
  if (IoError cancelled = internal::CancellationError(); !cancelled.ok()) co_return cancelled;
  std::vector<ConstIoSlice> own;  // see internal::DropSent
  std::size_t done = 0;
  while (true) {
    std::size_t bytes = 0;
    const std::span<const ConstIoSlice> window = internal::SliceWindow(data, &bytes);
    if (bytes == 0) co_return IoError();  // nothing (more) to send
    IoResult<std::size_t> sent = co_await TransferOnce(window, bytes, deadline);
    if (!sent.ok()) co_return sent.error().WithBytesDone(done);
    done += sent.value();
    // From the window's start: the empty slices SliceWindow skipped are dropped with it.
    data = internal::DropSent(data.subspan(static_cast<std::size_t>(window.data() - data.data())),
                              sent.value(), own);
  }
}

template <typename Scheduler>
IoError TcpStream<Scheduler>::Shutdown(ShutdownHow how) {
  return this->WithFd([how](int fd) {
    const int result = internal::ShutdownSocket(fd, how);
    return result < 0 ? IoError::FromErrno(-result) : IoError();
  });
}

template <typename Scheduler>
IoError TcpStream<Scheduler>::SetOption(internal::SocketOption option, int value) {
  return this->WithFd([option, value](int fd) {
    return internal::ErrorOfStatus(internal::SetSocketOption(fd, option, value));
  });
}

template <typename Scheduler>
IoError TcpStream<Scheduler>::EnableKeepAlive(const KeepAlive& settings) {
  using internal::SocketOption;
  return this->WithFd([&settings](int fd) {
    const struct {
      SocketOption option;
      long long value;
    } steps[] = {{SocketOption::kKeepIdleSeconds, settings.idle.count()},
                 {SocketOption::kKeepIntervalSeconds, settings.interval.count()},
                 {SocketOption::kKeepProbes, settings.probes}};
    for (const auto& step : steps) {
      const long long value = step.value;
      if (value == 0) continue;  // the system default
      if (value < 0 || value > INT32_MAX) return IoError(IoErrorCode::kSystem, EINVAL);
      const int status = internal::SetSocketOption(fd, step.option, static_cast<int>(value));
      if (status < 0) return IoError::FromErrno(-status);
    }
    return internal::ErrorOfStatus(internal::SetSocketOption(fd, SocketOption::kKeepAlive, 1));
  });
}

template <typename Scheduler>
IoError TcpStream<Scheduler>::SetIdleTimeout(std::chrono::nanoseconds idle) {
  Core* core = this->Live();
  if (core == nullptr || core->IsClosed()) return IoError(IoErrorCode::kClosed);
  core->SetIdleTimeout(idle);
  return IoError();
}

template <typename Scheduler>
IoResult<SocketAddress> TcpStream<Scheduler>::LocalAddress() const {
  return this->WithFd([](int fd) { return internal::LocalAddressOf(fd); });
}
template <typename Scheduler>
IoResult<SocketAddress> TcpStream<Scheduler>::PeerAddress() const {
  return this->WithFd([](int fd) { return internal::PeerAddressOf(fd); });
}

template <typename Scheduler>
IoResult<TcpListener<Scheduler>> TcpListener<Scheduler>::Listen(Scheduler& scheduler,
                                                                const SocketAddress& address,
                                                                const ListenOptions& options) {
  const int fd = internal::OpenListeningSocket(address, options);
  if (fd < 0) return IoError::FromErrno(-fd);
  if (const int attached = internal::AttachSocket(scheduler.io(), fd); attached < 0) {
    internal::CloseFd(fd);
    return IoError::FromErrno(-attached);
  }
  return TcpListener(new Core(&scheduler, fd));
}

template <typename Scheduler>
coro::Lazy<IoResult<AcceptedConnection<Scheduler>>> TcpListener<Scheduler>::AcceptWithPeer(
    TaskDeadline deadline) {
  IoResult<TcpStream<Scheduler>> accepted = co_await Accept(deadline);
  if (!accepted.ok()) co_return accepted.error();
  IoResult<SocketAddress> peer = accepted.value().PeerAddress();
  if (!peer.ok()) co_return peer.error();
  co_return AcceptedConnection<Scheduler>{std::move(accepted).value(), peer.value()};
}

template <typename Scheduler>
IoResult<SocketAddress> TcpListener<Scheduler>::LocalAddress() const {
  return this->WithFd([](int fd) { return internal::LocalAddressOf(fd); });
}

}  // namespace fairsched

#endif  // FAIRSCHED_IO_TCP_H_
