// How one socket operation runs on each kind of backend. SocketIo<Scheduler> is one of two
// specialisations, chosen at compile time by the scheduler's backend (kCompletionIo):
//   - readiness (epoll): the operation tries the non-blocking syscall; on EAGAIN it waits
//     for the next edge of its direction (SocketCore::WaitReady) and retries. After a
//     syscall that drained the socket (EAGAIN, or a short read/write) the next operation
//     waits for an edge first instead of making a syscall that would only fail
//     (edge-triggered epoll reports every later arrival).
//   - completion (io_uring, IOCP): the operation is one IoOp (Read, Send, ReadV, SendV,
//     Accept, Connect, Poll) run to its final completion (SocketCore::RunOp).
// The public socket classes (io/tcp.h, io/udp.h) call these operations and never branch on
// the backend kind. Each operation is one coroutine that the public method returns as its
// own (it has no frame of its own), so an operation costs the same frames on either path.
// UDP's datagram loop, TransferSyscall (below), is one template for both kinds.
//
// Every operation starts the same way: it holds a SocketUse of the core (the fd stays open
// until it returns), fails with kClosed when the socket was closed before it started, and
// with kCancelled / kShutdown when its coroutine is cancelled (CancellationError). Results
// and errors are the ones the public classes document (io/tcp.h). Internal.
//
// Before that, every operation but Connect spends one unit of its coroutine's cooperative
// budget (coro/budget.h): after a run of operations that completed without suspending,
// it yields once first, so a socket that always has data does not hold the worker.
#ifndef FAIRSCHED_IO_INTERNAL_SOCKET_IO_H_
#define FAIRSCHED_IO_INTERNAL_SOCKET_IO_H_

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include "coro/budget.h"
#include "coro/lazy.h"
#include "io/internal/multishot_acceptor.h"
#include "io/internal/socket_core.h"
#include "io/internal/socket_ops.h"
#include "io/io_error.h"
#include "io/io_op.h"
#include "io/socket_address.h"
#include "sched/task.h"

namespace fairsched::internal {

// Connect's first step on both backends, inside its coroutine: a TCP socket of `family`,
// attached to the scheduler's backend; its fd, or the error (cancelled, or the system's).
template <typename Scheduler>
IoResult<int> OpenConnectingSocket(Scheduler& scheduler, int family) {
  if (IoError cancelled = CancellationError(); !cancelled.ok()) return cancelled;
  const int fd = OpenTcpSocket(family);
  if (fd < 0) return IoError::FromErrno(-fd);
  if (const int attached = AttachSocket(scheduler.io(), fd); attached < 0) {
    CloseFd(fd);
    return IoError::FromErrno(-attached);
  }
  return fd;
}

// An operation's first step, after it joined the fd's users (`use`): kClosed when the
// socket was closed before, kCancelled / kShutdown when the coroutine is cancelled, else
// success (go on).
template <typename Core>
IoError Refusal(const SocketUse<Core>& use) {
  if (!use.ok()) return IoError(IoErrorCode::kClosed);
  return CancellationError();
}

template <typename Scheduler, bool kCompletions = kCompletionIo<Scheduler>>
class SocketIo;

// ---- readiness (epoll) ----
template <typename Scheduler>
class SocketIo<Scheduler, false> {
  using Core = SocketCore<Scheduler>;

 public:
  // TcpStream::Connect: a Stream (constructible from a Core*) connected to `address`.
  template <typename Stream>
  static coro::Lazy<IoResult<Stream>> Connect(Scheduler& scheduler, SocketAddress address,
                                              TaskDeadline deadline) {
    IoResult<int> opened = OpenConnectingSocket(scheduler, address.family());
    if (!opened.ok()) co_return opened.error();
    const int fd = opened.value();
    // connect(2) before the core registers the socket's watch: the role holder's epoll_ctl
    // then follows the connect (a Unix-domain connect completes inside the call; TSan's fd
    // model reports the two on different threads as a race otherwise). Edge-triggered
    // epoll reports the state at registration, so a connect that finishes later still
    // brings its edge.
    const int started = ConnectNow(fd, address);
    if (started != 0 && started != -EINPROGRESS) {
      CloseFd(fd);
      co_return IoError::FromErrno(-started);
    }
    Core* core = new Core(&scheduler, fd);
    Stream stream(core);
    if (started != 0) {
      while (true) {
        const int progress = ConnectProgress(fd);
        if (progress == 0) break;
        if (progress != -EINPROGRESS) co_return IoError::FromErrno(-progress);
        IoError waited = co_await core->WaitReady(Core::kWriteSide, deadline);
        if (!waited.ok()) co_return waited;
      }
    }
    co_return std::move(stream);
  }

  // TcpStream::Read: at least one byte into `buffer`, or kEndOfStream / the error.
  static coro::Lazy<IoResult<std::size_t>> Read(Core* core, std::span<char> buffer,
                                                TaskDeadline deadline) {
    co_await coro::ConsumeBudget();  // may yield first (coro/budget.h)
    const SocketUse<Core> use(core);  // the fd stays open until we return
    if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
    while (true) {
      if (core->Drained(Core::kReadSide)) {
        IoError waited = co_await core->WaitReady(Core::kReadSide, deadline);
        if (!waited.ok()) co_return waited;
      }
      const std::ptrdiff_t n = RecvNow(core->fd(), buffer.data(), buffer.size());
      if (n > 0) {
        core->Touch();
        if (static_cast<std::size_t>(n) < buffer.size()) core->SetDrainedAfterShortRead();
        co_return static_cast<std::size_t>(n);
      }
      if (n == 0) co_return IoError(IoErrorCode::kEndOfStream);
      if (n == -EINTR) continue;
      if (n != -EAGAIN && n != -EWOULDBLOCK) co_return IoError::FromErrno(static_cast<int>(-n));
      core->SetDrained(Core::kReadSide);
    }
  }

  // TcpStream's Write and WriteSome: sends `data` until all of it went (`all`) or at least
  // one byte did; on success stores the count in `*moved` (if not null), a failure carries
  // it as bytes_done().
  static coro::Lazy<IoError> Transmit(Core* core, std::span<const char> data,
                                      TaskDeadline deadline, bool all, std::size_t* moved) {
    co_await coro::ConsumeBudget();  // may yield first (coro/budget.h)
    const SocketUse<Core> use(core);  // the fd stays open until we return
    if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
    std::size_t done = 0;
    while (done < data.size() && (all || done == 0)) {
      if (core->Drained(Core::kWriteSide)) {
        IoError waited = co_await core->WaitReady(Core::kWriteSide, deadline);
        if (!waited.ok()) co_return waited.WithBytesDone(done);
      }
      const std::ptrdiff_t n = SendNow(core->fd(), data.data() + done, data.size() - done);
      if (n >= 0) {
        // A short send is tried again at once, not taken as a full buffer: only EAGAIN
        // says the next writable edge is coming (a send cut short for another reason, say
        // a signal, would otherwise wait for an edge that never comes).
        done += static_cast<std::size_t>(n);
        core->Touch();
        continue;
      }
      if (n == -EINTR) continue;
      if (n != -EAGAIN && n != -EWOULDBLOCK) {
        co_return IoError::FromErrno(static_cast<int>(-n)).WithBytesDone(done);
      }
      core->SetDrained(Core::kWriteSide);
    }
    if (moved != nullptr) *moved = done;  // (a failure carries it as bytes_done())
    co_return IoError();
  }

  // The vectored forms' one transfer of `window` (from SliceWindow, `bytes` > 0 in it): a
  // receive (IoSlice: recvmsg) or a send (ConstIoSlice: sendmsg), retried until it does not
  // return EAGAIN. Bytes moved (a receive's 0: end of stream), or the error.
  template <typename Char>
  static coro::Lazy<IoResult<std::size_t>> TransferOnce(
      Core* core, std::span<const BasicIoSlice<Char>> window, std::size_t bytes,
      TaskDeadline deadline) {
    constexpr bool kSend = std::is_const_v<Char>;
    constexpr typename Core::Direction kSide = kSend ? Core::kWriteSide : Core::kReadSide;
    co_await coro::ConsumeBudget();  // may yield first (coro/budget.h)
    const SocketUse<Core> use(core);  // the fd stays open until we return
    if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
    while (true) {
      if (core->Drained(kSide)) {
        IoError waited = co_await core->WaitReady(kSide, deadline);
        if (!waited.ok()) co_return waited;
      }
      std::ptrdiff_t n;
      if constexpr (kSend) {
        n = SendVNow(core->fd(), window.data(), window.size());
      } else {
        n = RecvVNow(core->fd(), window.data(), window.size());
      }
      if (n > 0) {
        core->Touch();
        // A short receive: the socket's buffer is empty for now. A short send is not taken
        // as a full buffer (see Transmit): the next send finds out, with EAGAIN.
        if constexpr (!kSend) {
          if (static_cast<std::size_t>(n) < bytes) core->SetDrainedAfterShortRead();
        }
      }
      if (n >= 0) co_return static_cast<std::size_t>(n);
      if (n == -EINTR) continue;
      if (n != -EAGAIN && n != -EWOULDBLOCK) co_return IoError::FromErrno(static_cast<int>(-n));
      core->SetDrained(kSide);
    }
  }

  // TcpListener::Accept: the next connection as a Stream (accept4 until it does not return
  // EAGAIN). Readiness backends have no multishot accept: `multishot` is always null.
  template <typename Stream>
  static coro::Lazy<IoResult<Stream>> Accept(Core* core, MultishotAcceptor<Scheduler>*,
                                             TaskDeadline deadline) {
    co_await coro::ConsumeBudget();  // may yield first (coro/budget.h)
    const SocketUse<Core> use(core);  // the fd stays open until we return
    if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
    while (true) {
      if (core->Drained(Core::kReadSide)) {
        IoError waited = co_await core->WaitReady(Core::kReadSide, deadline);
        if (!waited.ok()) co_return waited;
      }
      const int fd = AcceptNow(core->fd());
      if (fd < 0) {
        if (fd == -EINTR) continue;
        if (fd != -EAGAIN && fd != -EWOULDBLOCK) co_return IoError::FromErrno(-fd);
        core->SetDrained(Core::kReadSide);
        continue;
      }
      co_return Stream(new Core(core->scheduler(), fd));
    }
  }
};

// ---- completion (io_uring, IOCP) ----
template <typename Scheduler>
class SocketIo<Scheduler, true> {
  using Core = SocketCore<Scheduler>;
  static constexpr std::size_t kMaxSendSome = 256 * 1024;  // see Transmit

 public:
  // The connect is the write side's IoOp (ConnectEx on IOCP), so the core comes first.
  template <typename Stream>
  static coro::Lazy<IoResult<Stream>> Connect(Scheduler& scheduler, SocketAddress address,
                                              TaskDeadline deadline) {
    IoResult<int> opened = OpenConnectingSocket(scheduler, address.family());
    if (!opened.ok()) co_return opened.error();
    const int fd = opened.value();
    Core* core = new Core(&scheduler, fd);
    Stream stream(core);
    // `address` lives in this frame until the final completion.
    core->op(Core::kWriteSide).PrepareConnect(fd, address.get(), address.length(), core->handler());
    IoResult<std::int32_t> result = co_await core->RunOp(Core::kWriteSide, deadline);
    if (!result.ok()) co_return result.error();
    if (result.value() < 0) co_return ErrorOfResult(result.value(), false);
    co_return std::move(stream);
  }

  static coro::Lazy<IoResult<std::size_t>> Read(Core* core, std::span<char> buffer,
                                                TaskDeadline deadline) {
    co_await coro::ConsumeBudget();  // may yield first (coro/budget.h)
    const SocketUse<Core> use(core);  // the fd stays open until we return
    if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
    core->op(Core::kReadSide).PrepareRead(core->fd(), buffer.data(), buffer.size(), core->handler());
    IoResult<std::int32_t> result =
        co_await core->RunOp(Core::kReadSide, deadline);
    if (!result.ok()) co_return result.error();
    if (result.value() == 0) co_return IoError(IoErrorCode::kEndOfStream);
    if (result.value() < 0) co_return ErrorOfResult(result.value(), false);
    core->Touch();
    co_return static_cast<std::size_t>(result.value());
  }

  static coro::Lazy<IoError> Transmit(Core* core, std::span<const char> data,
                                      TaskDeadline deadline, bool all, std::size_t* moved) {
    co_await coro::ConsumeBudget();  // may yield first (coro/budget.h)
    const SocketUse<Core> use(core);  // the fd stays open until we return
    if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
    std::size_t done = 0;
    while (done < data.size() && (all || done == 0)) {
      // WriteSome sends at most kMaxSendSome per call: an overlapped send (IOCP) completes
      // only when all it was given is buffered, so a large one to a peer that does not read
      // would wait for the whole of it instead of returning a partial count.
      const std::size_t left = data.size() - done;
      const std::size_t length = all ? left : std::min(left, kMaxSendSome);
      core->op(Core::kWriteSide)
          .PrepareSend(core->fd(), data.data() + done, length, core->handler());
      IoResult<std::int32_t> result =
          co_await core->RunOp(Core::kWriteSide, deadline);
      if (!result.ok()) co_return result.error().WithBytesDone(done);
      if (result.value() < 0) {
        co_return ErrorOfResult(result.value(), false).WithBytesDone(done);
      }
      done += static_cast<std::size_t>(result.value());
      core->Touch();
    }
    if (moved != nullptr) *moved = done;  // (a failure carries it as bytes_done())
    co_return IoError();
  }

  template <typename Char>
  static coro::Lazy<IoResult<std::size_t>> TransferOnce(
      Core* core, std::span<const BasicIoSlice<Char>> window, std::size_t,
      TaskDeadline deadline) {
    constexpr bool kSend = std::is_const_v<Char>;
    constexpr typename Core::Direction kSide = kSend ? Core::kWriteSide : Core::kReadSide;
    co_await coro::ConsumeBudget();  // may yield first (coro/budget.h)
    const SocketUse<Core> use(core);  // the fd stays open until we return
    if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
    if constexpr (kSend) {
      core->op(kSide).PrepareSendV(core->fd(), window.data(), window.size(), core->handler());
    } else {
      core->op(kSide).PrepareReadV(core->fd(), window.data(), window.size(), core->handler());
    }
    IoResult<std::int32_t> result = co_await core->RunOp(kSide, deadline);
    if (!result.ok()) co_return result.error();
    if (result.value() < 0) co_return ErrorOfResult(result.value(), false);
    if (result.value() > 0) core->Touch();
    co_return static_cast<std::size_t>(result.value());
  }

  // With `multishot` (io_uring with multishot accept) the next connection the standing op
  // accepted; otherwise one Accept op.
  template <typename Stream>
  static coro::Lazy<IoResult<Stream>> Accept(Core* core, MultishotAcceptor<Scheduler>* multishot,
                                             TaskDeadline deadline) {
    co_await coro::ConsumeBudget();  // may yield first (coro/budget.h)
    const SocketUse<Core> use(core);  // the fd stays open until we return
    if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
    if constexpr (kHasMultishotAccept<Scheduler>) {
      if (multishot != nullptr) {
        IoResult<int> fd = co_await multishot->Next(deadline);
        if (!fd.ok()) co_return fd.error();
        co_return Stream(new Core(core->scheduler(), fd.value()));
      }
    }
    core->op(Core::kReadSide).PrepareAccept(core->fd(), core->handler());
    IoResult<std::int32_t> result = co_await core->RunOp(Core::kReadSide, deadline);
    if (!result.ok()) co_return result.error();
    const int fd = result.value();
    if (fd < 0) {
      // A connection that died in the backlog, or a transient resource shortage: not
      // fatal for the listener (the caller decides whether to go on).
      co_return ErrorOfResult(fd, false);
    }
    co_return Stream(new Core(core->scheduler(), fd));
  }
};

// io_uring: one-shot readiness of `side` (a Poll IoOp run to its final completion).
template <typename Core>
coro::Lazy<IoError> PollReady(Core* core, typename Core::Direction side, TaskDeadline deadline) {
  const std::uint32_t interest = side == Core::kReadSide ? kIoReadable : kIoWritable;
  core->op(side).PreparePoll(core->fd(), interest, core->handler());
  IoResult<std::int32_t> result = co_await core->RunOp(side, deadline);
  if (!result.ok()) co_return result.error();
  // An error or hangup bit is a success here: the retried syscall reports the error.
  if (result.value() < 0) co_return ErrorOfResult(result.value(), false);
  co_return IoError();
}

// UdpSocket's datagram transfers on epoll and io_uring: runs `syscall(fd)` (a non-blocking
// recvfrom / sendto: a length or -errno) in direction `side` until it does not report
// EAGAIN; its length, or the error that ended it. On EAGAIN, epoll waits for the socket's
// next edge (and the next call waits first if the socket was drained); io_uring runs a
// one-shot Poll IoOp (IORING_OP_POLL_ADD) to its final completion, then retries.
template <typename Core, typename Syscall>
coro::Lazy<IoResult<std::size_t>> TransferSyscall(Core* core, typename Core::Direction side,
                                                  TaskDeadline deadline, Syscall syscall) {
  co_await coro::ConsumeBudget();  // may yield first (coro/budget.h)
  const SocketUse<Core> use(core);  // the fd stays open until we return
  if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
  while (true) {
    if constexpr (!Core::kCompletions) {
      if (core->Drained(side)) {
        IoError waited = co_await core->WaitReady(side, deadline);
        if (!waited.ok()) co_return waited;
      }
    }
    const std::ptrdiff_t n = syscall(core->fd());
    if (n >= 0) co_return static_cast<std::size_t>(n);
    if (n == -EINTR) continue;
    if (n != -EAGAIN && n != -EWOULDBLOCK) co_return IoError::FromErrno(static_cast<int>(-n));
    if constexpr (Core::kCompletions) {
      IoError waited = co_await PollReady(core, side, deadline);
      if (!waited.ok()) co_return waited;
    } else {
      core->SetDrained(side);  // the next round waits for an edge first
    }
  }
}

}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_INTERNAL_SOCKET_IO_H_
