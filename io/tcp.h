// Coroutine TCP sockets: TcpListener and TcpStream for coroutines spawned on a scheduler
// whose IO backend is EpollBackend or IoUringBackend (io/epoll_backend.h,
// io/io_uring_backend.h), or on Windows IocpBackend (io/iocp_backend.h). One template per
// socket type, parameterised by the scheduler; the backend it carries picks the strategy at
// compile time:
//   - epoll (readiness): each socket has ONE standing edge-triggered Watch for both
//     directions. An operation tries the non-blocking syscall; on EAGAIN it waits for the
//     next readiness edge and retries. After a syscall that drained the socket (EAGAIN, or a
//     short read/write) the next operation waits for an edge first instead of making a
//     syscall that would only fail (edge-triggered epoll reports every later arrival).
//   - io_uring and IOCP (completions): an operation is one IoOp (Read, Write, Accept,
//     Connect) that runs in the kernel; the coroutine waits for its final completion.
// The plain socket calls (open, bind, close, shutdown, addresses, and epoll's non-blocking
// syscalls) sit behind the internal:: functions declared here, implemented once per
// platform (io/socket_ops_posix.cc, io/socket_ops_windows.cc).
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
//     (Shutdown, the options, LocalAddress, fd()) abort on a closed socket, as before: they
//     must not race with Close. The destructor closes too; it may run while an operation of
//     another coroutine is still returning (the state lives until it has), but not while
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
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "coro/runtime.h"
#include "coro/task.h"
#include "io/io_op.h"
#include "io/socket_platform.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched {

// What went wrong. kOk only inside a successful IoError.
enum class IoErrorCode : std::uint8_t {
  kOk,
  kTimeout,         // the operation's deadline passed
  kEndOfStream,     // the peer closed its side (or Shutdown(kRead) here): no more data
  kResetByPeer,     // ECONNRESET / EPIPE: the peer reset the connection or stopped reading
  kRefused,         // ECONNREFUSED: nobody listens at the address
  kCancelled,       // the coroutine was cancelled while it waited
  kShutdown,        // the scheduler is stopping
  kInvalidAddress,  // an address that does not parse
  kSystem,          // any other errno (see IoError::sys_errno())
  kClosed,          // the socket was closed (Close(), maybe by another coroutine) before or
                    // while the operation ran
};

const char* ToString(IoErrorCode code);

// An error value: a code and, when the system reported one, its errno. Cheap to copy.
class IoError {
 public:
  IoError() = default;  // success
  explicit IoError(IoErrorCode code, int sys_errno = 0) : code_(code), sys_errno_(sys_errno) {}
  // Maps an errno to its code (ECONNRESET -> kResetByPeer, ECANCELED -> kCancelled, ...).
  static IoError FromErrno(int sys_errno);

  bool ok() const { return code_ == IoErrorCode::kOk; }
  IoErrorCode code() const { return code_; }
  int sys_errno() const { return sys_errno_; }
  // Of a failed TcpStream::Write: how many bytes of its data the kernel accepted before the
  // failure (a prefix; whether they reached the peer is unknown). 0 for other errors.
  std::size_t bytes_done() const { return bytes_done_; }
  IoError WithBytesDone(std::size_t bytes) const {
    IoError copy = *this;
    copy.bytes_done_ = bytes;
    return copy;
  }
  // "timed out", "connection refused (errno 111: Connection refused)", ...
  std::string Message() const;

 private:
  IoErrorCode code_ = IoErrorCode::kOk;
  int sys_errno_ = 0;
  std::size_t bytes_done_ = 0;
};

// A value or an error.
template <typename T>
class [[nodiscard]] IoResult {
 public:
  IoResult(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  IoResult(IoError error) : error_(error) {        // NOLINT: implicit on purpose
    FAIRSCHED_DCHECK(!error.ok(), "an IoResult built from a success IoError has no value");
  }
  bool ok() const { return value_.has_value(); }
  const IoError& error() const { return error_; }
  T& value() & {
    FAIRSCHED_CHECK(ok(), "value() of a failed IoResult (check ok() first)");
    return *value_;
  }
  T&& value() && {
    FAIRSCHED_CHECK(ok(), "value() of a failed IoResult (check ok() first)");
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
  IoError error_;
};

// An IPv4 or IPv6 socket address.
class SocketAddress {
 public:
  SocketAddress() = default;
  // "127.0.0.1:8080", "[::1]:8080", "0.0.0.0:0" (port 0: any free port when listening).
  static IoResult<SocketAddress> Parse(std::string_view text);
  // Host without brackets ("127.0.0.1", "::1") and a port.
  static IoResult<SocketAddress> FromHostPort(std::string_view host, std::uint16_t port);
  static SocketAddress FromSockaddr(const sockaddr* address, socklen_t length);

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t length() const { return length_; }
  int family() const { return storage_.ss_family; }
  std::uint16_t port() const;
  std::string ToString() const;  // same format Parse reads

 private:
  sockaddr_storage storage_{};
  socklen_t length_ = 0;
};

// How TcpListener::Listen sets up its socket (options set before bind).
struct ListenOptions {
  int backlog = 1024;
  // SO_REUSEADDR: bind a port whose old connections are still in TIME_WAIT (a restarted
  // server). POSIX only; Windows ignores it (there SO_REUSEADDR would let another socket
  // take the port, and a TIME_WAIT port can be bound anyway).
  bool reuse_address = true;
  // SO_REUSEPORT (Linux): several listeners on one port, the kernel spreading connections
  // among them; each must set it. Windows has none: Listen fails with kSystem
  // (ENOPROTOOPT).
  bool reuse_port = false;
  // IPV6_V6ONLY for an IPv6 address: true accepts IPv6 only, false IPv4 (mapped) too;
  // unset keeps the system default (Linux: net.ipv6.bindv6only, usually false). Set on an
  // IPv4 address it is an error (Listen fails).
  std::optional<bool> v6_only;
};

// TCP keepalive (SO_KEEPALIVE and its timers): probes an idle connection, so a peer that
// vanished without a FIN or reset ends it with an error instead of a silent forever. Zero
// fields keep the system's default (Linux: 7200 s idle, 75 s interval, 9 probes).
struct KeepAlive {
  std::chrono::seconds idle{0};      // TCP_KEEPIDLE: silence before the first probe
  std::chrono::seconds interval{0};  // TCP_KEEPINTVL: between unanswered probes
  int probes = 0;                    // TCP_KEEPCNT: unanswered probes that end the connection
};

namespace internal {

// The socket options TcpStream and TcpListener set; io/socket_ops_*.cc map each to its
// platform's level and name.
enum class SocketOption : std::uint8_t {
  kNoDelay,           // IPPROTO_TCP TCP_NODELAY (0/1)
  kKeepAlive,         // SOL_SOCKET SO_KEEPALIVE (0/1)
  kKeepIdleSeconds,   // IPPROTO_TCP TCP_KEEPIDLE
  kKeepIntervalSeconds,  // IPPROTO_TCP TCP_KEEPINTVL
  kKeepProbes,        // IPPROTO_TCP TCP_KEEPCNT
  kReceiveBuffer,     // SOL_SOCKET SO_RCVBUF (bytes)
  kSendBuffer,        // SOL_SOCKET SO_SNDBUF (bytes)
  kReuseAddress,      // SOL_SOCKET SO_REUSEADDR (0/1)
  kReusePort,         // SOL_SOCKET SO_REUSEPORT (0/1), Linux only
  kV6Only,            // IPPROTO_IPV6 IPV6_V6ONLY (0/1)
};
// setsockopt / getsockopt of an int-valued option: 0 or -errno (-ENOPROTOOPT: the platform
// has no such option).
int SetSocketOption(int fd, SocketOption option, int value);
int GetSocketOption(int fd, SocketOption option, int* value);
// The text of an errno for IoError::Message: strerror on POSIX; on Windows also the socket
// errnos msvcrt's strerror calls "Unknown error".
const char* ErrnoText(int sys_errno);
inline IoError ErrorOfStatus(int status) {
  return status < 0 ? IoError::FromErrno(-status) : IoError();
}

template <typename Scheduler>
using BackendOf = std::remove_reference_t<decltype(std::declval<Scheduler&>().io())>;

// Whether the scheduler's backend runs operations to completion (io_uring, IOCP: they
// declare kCompletionBased) rather than reporting readiness (epoll).
template <typename Backend>
constexpr bool IsCompletionBased() {
  if constexpr (requires { Backend::kCompletionBased; }) {
    return Backend::kCompletionBased;
  } else {
    return false;
  }
}
template <typename Scheduler>
inline constexpr bool kCompletionIo = IsCompletionBased<BackendOf<Scheduler>>();

// Registers a new socket with the backend where the backend wants that (IOCP: Attach, to
// its completion port). 0 or -errno.
template <typename Backend>
int AttachSocket(Backend& backend, int fd) {
  if constexpr (requires { backend.Attach(fd); }) {
    return backend.Attach(fd);
  } else {
    return 0;
  }
}

// Plain-socket helpers (io/tcp.cc).
// A non-blocking, close-on-exec TCP socket of `family`, or -errno.
int OpenTcpSocket(int family);
// socket + the options + bind + listen; a non-blocking fd or -errno.
int OpenListeningSocket(const SocketAddress& address, const ListenOptions& options);
inline int OpenListeningSocket(const SocketAddress& address, int backlog) {
  ListenOptions options;
  options.backlog = backlog;
  return OpenListeningSocket(address, options);
}
// One recv that does not block: bytes (0: end of stream) or -errno (-EWOULDBLOCK: nothing
// buffered; on Windows also at the end of stream: only what FIONREAD reports is received).
std::ptrdiff_t RecvNow(int fd, char* buffer, std::size_t size);
// Readiness (epoll) path only, POSIX: one non-blocking send (MSG_NOSIGNAL) / accept4
// (non-blocking, close-on-exec) / connect. Bytes, an fd or 0; -errno on failure.
std::ptrdiff_t SendNow(int fd, const char* data, std::size_t size);
// Vectored twins (epoll path, POSIX): one non-blocking recvmsg into `count` slices / one
// sendmsg (MSG_NOSIGNAL) of them. Bytes or -errno.
std::ptrdiff_t RecvVNow(int fd, const IoSlice* slices, std::size_t count);
std::ptrdiff_t SendVNow(int fd, const ConstIoSlice* slices, std::size_t count);
int AcceptNow(int listen_fd);
int ConnectNow(int fd, const SocketAddress& address);
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
// After a failed operation: the error for `result` (-errno), given how the wait ended.
IoError ErrorOfResult(int result, bool timed_out);
IoError ErrorOfWake(coro::WakeReason reason);
// Inside a spawned coroutine: kCancelled / kShutdown if it is cancelled (or the scheduler is
// stopping), else success. Every operation checks it first, so a cancelled coroutine's
// socket operations fail at once on both backends, even those that would not wait.
IoError CancellationError();
// close(2) / closesocket.
void CloseFd(int fd);

// The shared state of one socket: the fd, the IoOps, and the waiting coroutines.
// Heap-allocated and reference-counted, because with epoll the backend hands the standing
// watch back asynchronously after Close.
//
// The core is its ops' IoOpHandler (io/io_op.h): the sched-role calls it where it would
// wake a task, and it turns the op's events into Waker::Wakeup of the coroutine waiting in
// that direction, so one event costs one run of that coroutine and nothing else:
//   - epoll: one standing watch. Each readiness edge (OnIoEvent) marks the directions ready
//     and wakes their waiters. The final completion (OnIoFinished: Close or Stop cancelled
//     the watch, or the kernel refused to register it) ends the watch for good, and
//     Signals watch_end_, a task posted (through Stop) when the watch was submitted: while
//     it waits, the scheduler's Stop keeps draining, so it does not end with the watch still
//     in the backend; when it runs, on a worker, it releases the watch's use of the fd.
//   - io_uring, IOCP: one op per direction; its final completion marks the direction no
//     longer busy and wakes its waiter.
// Ordering between a direction's coroutine and the handler goes through mu_. The handler's
// last touch of the core is before the mutex release (or, for the watch's end, its
// ReleaseUser); after that it only wakes a Waker it moved into a local. So the woken
// coroutine (which submits its next operation, or frees the core) never races with it.
template <typename Scheduler>
class SocketCore final : public IoOpHandler {
 public:
  static constexpr bool kCompletions = kCompletionIo<Scheduler>;
  enum Direction : int { kReadSide = 0, kWriteSide = 1 };

  SocketCore(Scheduler* scheduler, int fd) : scheduler_(scheduler), fd_(fd) {
    if constexpr (!kCompletions) {
      // The watch is a user of the fd until its final completion (see "Close").
      state_.store(kOwnerBit + kUser, std::memory_order_relaxed);
      watch_end_.SetCallback([this](Task* task) {
        if (!task->ReceiveSignal()) {
          // Not the watch's end (nothing else should wake it): wait on.
          scheduler_->PostDeadlineThroughStop(task, kTaskDeadlineInfinite);
          return;
        }
        ReleaseUser();  // the watch no longer uses the fd; may free the core
      });
      scheduler_->PostDeadlineThroughStop(&watch_end_, kTaskDeadlineInfinite);
      ops_[kReadSide].PrepareWatch(fd_, kIoReadable | kIoWritable, this);
      scheduler_->io().Submit(&ops_[kReadSide]);
    }
  }
  SocketCore(const SocketCore&) = delete;
  SocketCore& operator=(const SocketCore&) = delete;

  int fd() const { return fd_; }
  Scheduler* scheduler() const { return scheduler_; }

  // ---- Close, and the fd's and the core's lifetime ----
  // state_ is one word: kClosedBit, kOwnerBit (the TcpStream/TcpListener/UdpSocket object
  // that owns the core) and a count of USERS of the fd in units of kUser: every operation
  // in progress (Read, Write, Accept, ... from its start until it returns), the epoll watch
  // (from the constructor to its final completion), and a CloseSocket in progress. So:
  //   - the fd is closed exactly once, by whoever moves the word to "closed, no user": no
  //     backend op refers to it any more (each op's user waits for the op's final
  //     completion before it leaves; the watch leaves at its final completion), so a new
  //     socket that gets the same fd number can never receive an old op's completion or have
  //     its epoll registration removed by an old cancel;
  //   - the core is freed by whoever moves the word to "no owner, no user";
  //   - once kClosedBit is set no user can join (AcquireUser fails: kClosed at once), so the
  //     count only falls and "closed, no user" is reached once.
  //
  // CloseSocket: any thread, any time, concurrently with operations of other coroutines;
  // idempotent. Ends the operations in progress: it cancels them (io_uring, IOCP: the
  // submitted IoOps; epoll: the watch, whose final completion wakes the waiters), and they
  // return kClosed (or their real result, if it won the race), each exactly once.
  void CloseSocket() {
    // Closing and joining as a user in one step: the core then stays alive (and the fd
    // open) until this call has finished cancelling, even if the operations end and the
    // owner releases the core meanwhile. Acq_rel on success: release, so that whichever
    // user closes the fd later (its acquire RMW reads this one's result) comes after the
    // owner's uses of the fd before this call (options, Shutdown); acquire, so that this thread,
    // if its ReleaseUser below closes the fd, and a destructor that frees the object after
    // this call, come after every operation that joined before (AcquireUser's release:
    // those read the object). The load and a failed CAS acquire too: when the socket is
    // closed already, the caller (a destructor) is then still ordered after that earlier
    // CloseSocket and so after the operations it saw.
    std::uint32_t state = state_.load(std::memory_order_acquire);
    do {
      if ((state & kClosedBit) != 0) return;  // closed already
    } while (!state_.compare_exchange_weak(state, (state | kClosedBit) + kUser,
                                           std::memory_order_acq_rel, std::memory_order_acquire));
    CancelPending();
    ReleaseUser();
  }
  // Owner, once: gives up the socket: CloseSocket, then drops the owner's reference. The
  // core lives on while users remain (the last one frees it).
  void Close() {
    CloseSocket();
    // Acq_rel: release publishes the owner's last uses to whoever frees the core; acquire,
    // if we free it, makes every user's uses (their releasing decrements) visible first.
    const std::uint32_t before = state_.fetch_sub(kOwnerBit, std::memory_order_acq_rel);
    if (Users(before) == 0) delete this;
  }
  bool IsClosed() const {
    // Acquire: pairs with the release of CloseSocket's RMW, so a caller that sees the
    // socket closed is ordered after that call (IsOpen() and then destroying the object).
    // Where the answer decides an operation's result (RunOp, WaitReady, WatchEndedError)
    // mu_, or the final completion that the cancellation caused, already orders the read
    // after CloseSocket's RMW.
    return (state_.load(std::memory_order_acquire) & kClosedBit) != 0;
  }
  // An operation starts using the fd: false (and nothing joined) once the socket is closed.
  bool AcquireUser() {
    // Release on success: the operation's reads of its socket object (which core it uses)
    // come before this, so a destructor of the object that finds us joined (the acquire
    // RMW of its CloseSocket reads our count) may free the object while we still run. Nothing needs
    // acquiring: fd_ is const, the rest of the core is guarded by mu_. Relaxed on failure:
    // a closed socket is all the answer says.
    std::uint32_t state = state_.load(std::memory_order_relaxed);
    do {
      if ((state & kClosedBit) != 0) return false;
    } while (!state_.compare_exchange_weak(state, state + kUser, std::memory_order_release,
                                           std::memory_order_relaxed));
    return true;
  }
  // The user is done with the fd (its ops all had their final completion).
  void ReleaseUser() {
    const int fd = fd_;  // read before the decrement: the core may be freed right after it
    // Acq_rel: release publishes this user's uses of the fd and of the core to the thread
    // that closes or frees them; acquire, if that is us, makes every other user's visible.
    const std::uint32_t after = state_.fetch_sub(kUser, std::memory_order_acq_rel) - kUser;
    if (Users(after) != 0 || (after & kClosedBit) == 0) return;
    CloseFd(fd);
    if ((after & kOwnerBit) == 0) delete this;
  }

  // ---- epoll: readiness of `side` ----
  // Drained(side): the last syscall in that direction found the socket drained (EAGAIN, or
  // a short read / short write). Edge-triggered epoll reports every later arrival of data
  // (or buffer space) as a new edge, so the next operation skips the syscall that would only
  // return EAGAIN and goes straight to WaitReady. Owned by the coroutine operating in that
  // direction (one at a time).
  //   One exception: edges coalesce, so a single edge may stand for data AND the peer's FIN
  // (or a reset). A short read then returns the data and leaves the end of stream pending
  // with no edge to come; so once the watch reported a hangup or an error, a short read does
  // not count as drained (the next Read makes the syscall, which reports the end).
  bool Drained(Direction side) const { return drained_[side]; }
  void SetDrained(Direction side) { drained_[side] = true; }
  void SetDrainedAfterShortRead() {
    // Relaxed: a hangup that matters here came in the same edge whose ready_ flag this
    // coroutine consumed under mu_ (after OnIoEvent stored this flag), so it is visible; a
    // later hangup comes with its own edge, which sets ready_ again.
    if (!hangup_.load(std::memory_order_relaxed)) drained_[kReadSide] = true;
  }

  // Waits for the next readiness edge of `side` unless one came since the last wait.
  // Returns ok to try the syscall, or the error that ends the operation (timeout,
  // cancelled, shutdown).
  coro::Task<IoError> WaitReady(Direction side, TaskDeadline deadline) {
    static_assert(!kCompletions);
    drained_[side] = false;
    {
      MutexLock lock(mu_);
      FAIRSCHED_DCHECK(!waiting_[side], "two concurrent operations in one direction of a socket");
      if (watch_ended_ || IsClosed()) co_return WatchEndedError();
      // An edge since the last wait: the syscall may succeed now. (An edge that came after
      // the syscall that drained the socket is recorded here, not lost.)
      if (ready_[side]) {
        ready_[side] = false;
        co_return IoError();
      }
      waiter_[side] = coro::PrepareWait(coro::WaitMode::kCancellable);
      waiting_[side] = true;
    }
    const coro::WakeReason why = co_await coro::WaitWoken(deadline);
    MutexLock lock(mu_);
    waiting_[side] = false;
    waiter_[side] = coro::Waker();  // drops a stale waker (the wait ended another way)
    if (why != coro::WakeReason::kWakeup) co_return ErrorOfWake(why);
    if (watch_ended_) co_return WatchEndedError();
    ready_[side] = false;
    co_return IoError();
  }

  // ---- the idle deadline (TcpStream::SetIdleTimeout) ----
  // Both atomics relaxed: a timestamp and a setting, read and written by the reader, the
  // writer and SetIdleTimeout's thread; each is a value by itself (no other data is
  // published through them), and a slightly stale one only moves a deadline by that much.
  void SetIdleTimeout(std::chrono::nanoseconds idle) {
    last_activity_.store(TaskClock::now().time_since_epoch().count(), std::memory_order_relaxed);
    idle_.store(std::chrono::duration_cast<TaskClock::duration>(idle).count(),
                std::memory_order_relaxed);
  }
  // `deadline`, or the last activity + the idle timeout if that is earlier.
  TaskDeadline IdleBound(TaskDeadline deadline) const {
    const TaskClock::rep idle = idle_.load(std::memory_order_relaxed);
    if (idle <= 0) return deadline;
    const TaskClock::rep last = last_activity_.load(std::memory_order_relaxed);
    if (idle > TaskClock::duration::max().count() - last) return deadline;  // never
    const TaskDeadline bound(TaskClock::duration(last + idle));
    return bound < deadline ? bound : deadline;
  }
  // An operation moved bytes: the idle deadline starts again (a clock read only when set).
  void Touch() {
    if (idle_.load(std::memory_order_relaxed) <= 0) return;
    last_activity_.store(TaskClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }

  // ---- io_uring: run the op of `side` (prepared by the caller) to its final completion ----
  // Returns the op's result (>= 0, or -errno), or the error that ended the wait first
  // (cancelled, shutdown, timeout) once the op is released.
  coro::Task<IoResult<std::int32_t>> RunOp(Direction side, TaskDeadline deadline) {
    static_assert(kCompletions);
    IoOp& op = ops_[side];
    {
      MutexLock lock(mu_);
      FAIRSCHED_DCHECK(!busy_[side], "two concurrent operations in one direction of a socket");
      // CloseSocket sets its bit before it takes mu_ to cancel the busy ops, and we submit
      // under mu_: either its critical section comes first, and we see the bit here, or
      // ours does, and it finds busy_ set with the op already submitted, and cancels it.
      if (IsClosed()) co_return IoError(IoErrorCode::kClosed);
      busy_[side] = true;
      // Uncancellable: the wait must see the final completion; cancellation reaches the op
      // through the callback below, the deadline through io().Cancel after the wait.
      waiter_[side] = coro::PrepareWait(coro::WaitMode::kUncancellable);
      scheduler_->io().Submit(&op);
    }
    bool timed_out = false;
    {
      auto cancel_op = [this, &op](coro::CancelReason) { scheduler_->io().Cancel(&op); };
      coro::CancelCallback on_cancel(cancel_op);
      [[maybe_unused]] coro::WakeReason why = co_await coro::WaitWoken(deadline);
      while (true) {
        {
          MutexLock lock(mu_);
          if (!busy_[side]) break;  // OnIoFinished saw the final completion
          // Only the deadline ends an uncancellable wait before the op: cancel it
          // and wait (without deadline) for its final completion.
          FAIRSCHED_DCHECK(why == coro::WakeReason::kDeadline, "unexpected wake of an IO wait");
          timed_out = true;
          waiter_[side] = coro::PrepareWait(coro::WaitMode::kUncancellable);
        }
        scheduler_->io().Cancel(&op);
        why = co_await coro::WaitWoken();
      }
    }
    const std::int32_t result = op.Result();
    if (result == -ECANCELED) {
      if (timed_out) co_return IoError(IoErrorCode::kTimeout);
      if (IsClosed()) co_return IoError(IoErrorCode::kClosed);  // CloseSocket cancelled it
      co_return CancellationError();
    }
    co_return result;
  }
  IoOp& op(Direction side) { return ops_[side]; }
  // What the ops of this socket tell about their events: the core (see above).
  IoOpHandler* handler() { return this; }

  // ---- IoOpHandler: called by the sched-role holder (short, never waits) ----
  // epoll: a readiness edge of the watch.
  void OnIoEvent(IoOp&, std::uint32_t readiness) override {
    coro::Waker wake[2];
    {
      MutexLock lock(mu_);
      MarkReady(readiness, wake);
    }
    // Only locals from here on (see above).
    for (coro::Waker& waker : wake) {
      if (waker) waker.Wakeup();
    }
  }
  // The final completion of an op: io_uring/IOCP: of one direction's operation; epoll: of
  // the watch.
  void OnIoFinished(IoOp& op) override {
    coro::Waker wake[2];
    if constexpr (kCompletions) {
      const Direction side = &op == &ops_[kReadSide] ? kReadSide : kWriteSide;
      MutexLock lock(mu_);
      busy_[side] = false;
      wake[side] = std::move(waiter_[side]);
    } else {
      MutexLock lock(mu_);
      watch_ended_ = true;
      watch_result_ = op.Result();
      MarkReady(kIoReadable | kIoWritable, wake);
    }
    // Only locals from here on (see above); watch_end_ is not run before the Signal, and
    // the core lives until it ran.
    for (coro::Waker& waker : wake) {
      if (waker) waker.Wakeup();
    }
    if constexpr (!kCompletions) scheduler_->Signal(&watch_end_);
  }

 private:
  ~SocketCore() = default;

  static constexpr std::uint32_t kClosedBit = 1;
  static constexpr std::uint32_t kOwnerBit = 2;
  static constexpr std::uint32_t kUser = 4;
  static std::uint32_t Users(std::uint32_t state) { return state / kUser; }

  // CloseSocket: ends what is in progress (see there). io_uring/IOCP: under mu_, so that an
  // op is either submitted before (busy_, cancelled here) or sees kClosedBit (RunOp). Cancel
  // of an op whose final completion already came is a no-op (IoOp state kIdle), and busy_
  // cannot name a later submission: RunOp refuses to submit once the bit is set. epoll: the
  // watch, as before (a no-op if Stop already ended it; it is never submitted again).
  void CancelPending() {
    if constexpr (kCompletions) {
      MutexLock lock(mu_);
      for (int side : {kReadSide, kWriteSide}) {
        if (busy_[side]) scheduler_->io().Cancel(&ops_[side]);
      }
    } else {
      scheduler_->io().Cancel(&ops_[kReadSide]);
    }
  }

  // epoll, mu_ held, after the watch's final completion: why operations cannot wait. A
  // watch that Close or Stop cancelled is a shutdown; one the kernel refused to register
  // (epoll_ctl failed: out of memory, max_user_watches, an fd epoll cannot watch) keeps
  // its errno.
  IoError WatchEndedError() const {
    if (IsClosed()) return IoError(IoErrorCode::kClosed);
    if (watch_result_ == -ECANCELED || watch_result_ >= 0) return IoError(IoErrorCode::kShutdown);
    return IoError::FromErrno(-watch_result_);
  }

  // epoll, mu_ held: an edge with `bits` (or the watch's end: both bits) makes the directions
  // it concerns ready and takes their waiters into `wake`.
  void MarkReady(std::uint32_t bits, coro::Waker (&wake)[2]) {
    // Relaxed: published by mu_ to the coroutine that consumes ready_ (see
    // SetDrainedAfterShortRead).
    if ((bits & (kIoHangup | kIoError)) != 0) hangup_.store(true, std::memory_order_relaxed);
    if ((bits & (kIoReadable | kIoHangup | kIoError)) != 0) {
      ready_[kReadSide] = true;
      wake[kReadSide] = std::move(waiter_[kReadSide]);
    }
    if ((bits & (kIoWritable | kIoHangup | kIoError)) != 0) {
      ready_[kWriteSide] = true;
      wake[kWriteSide] = std::move(waiter_[kWriteSide]);
    }
  }

  Scheduler* const scheduler_;
  const int fd_;
  // kClosedBit | kOwnerBit | users * kUser (see "Close"); epoll starts with the watch's user.
  Atomic<std::uint32_t> state_{kOwnerBit};
  // epoll: ops_[kReadSide] is the watch. io_uring, IOCP: one op per direction.
  IoOp ops_[2];
  // epoll: waits for the watch's final completion (see above); nothing on the completion
  // backends, which have no watch.
  struct NoWatchEnd {};
  [[no_unique_address]] std::conditional_t<kCompletions, NoWatchEnd, Task> watch_end_;
  Mutex mu_;
  coro::Waker waiter_[2];       // guarded by mu_: the coroutine waiting in each direction
  bool waiting_[2] = {};        // epoll, guarded by mu_: a coroutine waits in WaitReady
  bool ready_[2] = {};          // epoll, guarded by mu_: an edge came since the last check
  bool watch_ended_ = false;    // epoll, guarded by mu_: the watch had its final completion
  std::int32_t watch_result_ = 0;  // epoll, guarded by mu_: ... and its result (-errno)
  bool drained_[2] = {};        // epoll, owned by the operating coroutine (see Drained)
  Atomic<bool> hangup_{false};  // epoll: the watch reported a hangup or an error (sticky)
  bool busy_[2] = {};           // io_uring, guarded by mu_: the op is submitted
  Atomic<TaskClock::rep> idle_{0};           // the idle timeout (TaskClock ticks), 0: none
  Atomic<TaskClock::rep> last_activity_{0};  // TaskClock time of the last bytes moved
};

// One operation's use of a socket's fd (SocketCore::AcquireUser / ReleaseUser): ok() false
// when the socket was closed before the operation started.
template <typename Core>
class SocketUse {
 public:
  explicit SocketUse(Core* core) : core_(core->AcquireUser() ? core : nullptr) {}
  SocketUse(const SocketUse&) = delete;
  SocketUse& operator=(const SocketUse&) = delete;
  ~SocketUse() {
    if (core_ != nullptr) core_->ReleaseUser();
  }
  bool ok() const { return core_ != nullptr; }

 private:
  Core* const core_;
};

// The owning object's destructor and move-assignment: closes the socket, drops the owner's
// reference and nulls `core`.
template <typename Core>
void DropCore(Core*& core) {
  if (core == nullptr) return;
  // CloseSocket first: its acquire orders the write of `core` below after the operations of
  // other coroutines that read it (see SocketCore::AcquireUser).
  core->CloseSocket();
  std::exchange(core, nullptr)->Close();
}

}  // namespace internal

// How Shutdown ends a direction.
enum class ShutdownHow { kRead, kWrite, kBoth };

namespace internal {
// shutdown(2) / Winsock shutdown: 0 or -errno.
int ShutdownSocket(int fd, ShutdownHow how);
}  // namespace internal

// A connected TCP socket. Move-only; the destructor closes it.
template <typename Scheduler>
class TcpStream {
  using Core = internal::SocketCore<Scheduler>;

 public:
  TcpStream() = default;
  TcpStream(TcpStream&& other) noexcept : core_(std::exchange(other.core_, nullptr)) {}
  TcpStream& operator=(TcpStream&& other) noexcept {
    if (this != &other) {
      internal::DropCore(core_);
      core_ = std::exchange(other.core_, nullptr);
    }
    return *this;
  }
  // Closes (see Close) and drops the object's reference; an operation still finishing in
  // another coroutine keeps the socket's state alive until it returns.
  ~TcpStream() { internal::DropCore(core_); }

  bool IsOpen() const { return core_ != nullptr && !core_->IsClosed(); }
  int fd() const { return Checked()->fd(); }

  // Connects to `address` (IPv4 or IPv6) from inside a coroutine on `scheduler`.
  static coro::Task<IoResult<TcpStream>> Connect(Scheduler& scheduler, SocketAddress address,
                                                 TaskDeadline deadline);

  // Reads at least one byte into `buffer` (returns how many), or fails: kEndOfStream when
  // the peer closed its side, kTimeout, kResetByPeer, kCancelled, kShutdown, kSystem.
  coro::Task<IoResult<std::size_t>> Read(std::span<char> buffer, TaskDeadline deadline);
  // Reads exactly `buffer.size()` bytes; kEndOfStream if the stream ends first.
  coro::Task<IoError> ReadExactly(std::span<char> buffer, TaskDeadline deadline);
  // Writes all of `data`. On failure some prefix may have been sent: the error's
  // bytes_done() says how long it is.
  coro::Task<IoError> Write(std::span<const char> data, TaskDeadline deadline) {
    return Transmit(data, deadline, /*all=*/true, nullptr);
  }

  // The ByteStream forms (io/byte_stream.h): TcpStream models ByteStream itself.
  // ReadSome is Read. WriteSome writes at least one byte of non-empty `data` and at most
  // all of it, in one send where the socket has room (returns how many), or fails as Write.
  coro::Task<IoResult<std::size_t>> ReadSome(std::span<char> buffer, TaskDeadline deadline) {
    return Read(buffer, deadline);
  }
  coro::Task<IoResult<std::size_t>> WriteSome(std::span<const char> data, TaskDeadline deadline);

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
  coro::Task<IoResult<std::size_t>> ReadSomeV(std::span<const IoSlice> buffers,
                                              TaskDeadline deadline);
  coro::Task<IoResult<std::size_t>> WriteSomeV(std::span<const ConstIoSlice> data,
                                               TaskDeadline deadline);
  coro::Task<IoError> WriteV(std::span<const ConstIoSlice> data, TaskDeadline deadline);

  // shutdown(2): kWrite sends FIN after the data already written; kRead makes this side's
  // reads (also one waiting in another coroutine) end with kEndOfStream.
  IoError Shutdown(ShutdownHow how);
  // TCP_NODELAY: `true` sends small writes at once instead of coalescing them (Nagle).
  IoError SetNoDelay(bool on);
  // Keepalive on with `settings` (see KeepAlive), or off. The first failing setsockopt's
  // error (e.g. a zero-or-negative timer the kernel refuses: kSystem, EINVAL).
  IoError EnableKeepAlive(const KeepAlive& settings = {});
  IoError DisableKeepAlive();
  // SO_RCVBUF / SO_SNDBUF in bytes (a request: Linux doubles it for its bookkeeping and
  // clamps it to net.core.rmem_max / wmem_max; setting it turns off autotuning).
  IoError SetReceiveBufferSize(int bytes);
  IoError SetSendBufferSize(int bytes);
  // Closes the socket: any thread, idempotent, also while another coroutine's Read /
  // Write / ReadSome / WriteSome is pending: that operation then returns kClosed (or its
  // real result, if it completed first), exactly once. Operations started afterwards fail
  // at once with kClosed; the fd is closed once the backend has handed back every operation
  // that refers to it (see the file comment).
  void Close() {
    if (core_ != nullptr) core_->CloseSocket();
  }
  // A per-connection idle deadline: from now on every Read / Write / *Some also ends
  // (kTimeout) at the time of the last bytes moved in either direction (or of this call)
  // plus `idle`, when that comes before its own deadline. Each operation that moves bytes
  // starts the idle time again (a long Write that keeps moving never idles out). A wait
  // already in progress keeps the bound it computed when it began. 0 turns it off. Any
  // thread.
  void SetIdleTimeout(std::chrono::nanoseconds idle) { Checked()->SetIdleTimeout(idle); }

  IoResult<SocketAddress> LocalAddress() const;
  IoResult<SocketAddress> PeerAddress() const;

 private:
  template <typename>
  friend class TcpListener;
  explicit TcpStream(Core* core) : core_(core) {}
  // Write's and WriteSome's body: sends `data` until all of it went (`all`) or at least one
  // byte did; on success stores the count in `*moved` (if not null), a failure carries it
  // as bytes_done().
  coro::Task<IoError> Transmit(std::span<const char> data, TaskDeadline deadline, bool all,
                               std::size_t* moved);
  // The vectored forms' one transfer of `window` (from internal::SliceWindow, `bytes` > 0 in
  // it): a receive (IoSlice) or a send (ConstIoSlice), waiting for readiness (epoll, then
  // recvmsg / sendmsg until it does not return EAGAIN) or for the op's final completion
  // (io_uring, IOCP). Bytes moved (a receive's 0: end of stream), or the error.
  template <typename Char>
  coro::Task<IoResult<std::size_t>> TransferOnce(std::span<const BasicIoSlice<Char>> window,
                                                 std::size_t bytes, TaskDeadline deadline);
  // For the calls that use the fd at once (Shutdown, options, addresses).
  Core* Checked() const {
    FAIRSCHED_CHECK(core_ != nullptr && !core_->IsClosed(),
                    "use of a closed or moved-from TcpStream");
    return core_;
  }
  // For the operations: a closed stream is an error value there (kClosed), not misuse.
  Core* Live() const {
    FAIRSCHED_CHECK(core_ != nullptr, "use of a moved-from TcpStream");
    return core_;
  }
  Core* core_ = nullptr;
};

// ---- io_uring multishot accept (TcpListener's Accept where the backend has it) ----
namespace internal {

// Whether `Scheduler`'s backend can run a kernel multishot accept (io_uring; the probe
// decides at run time, see MultishotAcceptor::Usable).
template <typename Scheduler>
constexpr bool kHasMultishotAccept = requires(BackendOf<Scheduler>& backend) {
  backend.multishot_accept();
};

// One standing AcceptMultishot op for a listener: armed by the first Accept, it stays armed
// between Accepts, so each connection costs one CQE and no SQE (single-shot: one SQE, one
// io_uring_enter slot and one CQE per connection). Accepted fds the relay has seen and no
// Accept has taken yet wait in `pending_`; at kMaxPending the relay cancels the op, so the
// listen backlog (not this queue) holds further connections, and the next Accept that finds
// the queue empty arms it again. The relay is a Task, not an IoOpHandler (io/io_op.h),
// because its work per event (moving fds, closing the extras at the end) does not belong on
// the sched-role: every intermediate completion moves the events to pending_ and wakes the
// waiting Accept; the final one (cancel, Stop, or an error that ended the multishot) disarms.
// Close and lifetime (the listener's socket follows SocketCore's "Close" rules): the armed
// op is a user of the listener's fd (AcquireUser when armed, ReleaseUser at its final
// completion), so the fd is closed only after the backend handed the op back. The
// listener's Close (any thread, after SocketCore::CloseSocket) calls CancelForClose: the op
// is cancelled, a waiting Accept wakes and returns kClosed (arming fails once the socket is
// closed), and the fds nobody accepted are closed at the final completion (or at once when
// not armed). This object is freed by the last of: its listener (Release), the armed op,
// an Accept inside Next.
template <typename Scheduler>
class MultishotAcceptor {
  using Core = SocketCore<Scheduler>;

 public:
  static constexpr std::size_t kMaxPending = 128;

  // The kernel has multishot accept (probed, after SetMultishot).
  static bool Usable(Scheduler& scheduler) { return scheduler.io().multishot_accept(); }

  explicit MultishotAcceptor(Core* core) : core_(core), relay_(this, &MultishotAcceptor::Run) {}
  MultishotAcceptor(const MultishotAcceptor&) = delete;
  MultishotAcceptor& operator=(const MultishotAcceptor&) = delete;

  // The next accepted fd (>= 0) or the error of one failed accept; arms the op if needed.
  // kClosed once the listener is closed. The caller (Accept) holds a SocketUse of the core.
  coro::Task<IoResult<int>> Next(TaskDeadline deadline) {
    const InNext in_next(this);
    while (true) {
      {
        MutexLock lock(mu_);
        FAIRSCHED_DCHECK(!accepting_, "two concurrent Accepts on one TcpListener");
        if (!pending_.empty()) {
          const std::int32_t result = pending_.front();
          pending_.pop_front();
          if (result < 0) co_return ErrorOfResult(result, false);
          co_return static_cast<int>(result);
        }
        if (ended_result_ < 0) {
          // The kernel ended the multishot with an error: report it once, like a
          // single-shot Accept would; the next Accept arms a fresh op.
          co_return ErrorOfResult(std::exchange(ended_result_, 0), false);
        }
        if (!armed_) {
          // Not while the scheduler stops (Stop's cancel just ended the op).
          if (IoError cancelled = CancellationError(); !cancelled.ok()) co_return cancelled;
          // The op's use of the fd; fails once CloseSocket ran. Armed and submitted under
          // mu_: CancelForClose (under mu_, after CloseSocket) then either sees the op
          // armed and submitted, and cancels it, or runs first, and this fails.
          if (!core_->AcquireUser()) co_return IoError(IoErrorCode::kClosed);
          armed_ = true;
          op_.PrepareAcceptMultishot(core_->fd(), &events_, &relay_);
          core_->scheduler()->PostDeadlineThroughStop(&relay_, kTaskDeadlineInfinite);
          core_->scheduler()->io().Submit(&op_);
        }
        accepting_ = true;
        waiter_ = coro::PrepareWait(coro::WaitMode::kCancellable);
      }
      // Cancellable: the op is the listener's, not this Accept's; a cancelled or timed-out
      // Accept leaves it armed and its connections queued for the next Accept.
      const coro::WakeReason why = co_await coro::WaitWoken(deadline);
      MutexLock lock(mu_);
      accepting_ = false;
      waiter_ = coro::Waker();  // drops a stale waker (the wait ended another way)
      if (why != coro::WakeReason::kWakeup) co_return ErrorOfWake(why);
    }
  }

  // The listener's Close, after core_->CloseSocket() (any thread): ends the armed op (its
  // final completion wakes a waiting Accept, which then finds the socket closed) and closes
  // the connections nobody accepted, now or at that final completion.
  void CancelForClose() {
    MutexLock lock(mu_);
    // Under mu_: the relay handles the final completion only after it took mu_, so the op
    // is still ours to cancel while armed_ says so.
    if (armed_) {
      core_->scheduler()->io().Cancel(&op_);
    } else {
      ClosePending();
    }
  }

  // The listener lets go (its destructor or move-assignment, after CancelForClose).
  void Release() {
    bool last;
    {
      MutexLock lock(mu_);
      owned_ = false;
      last = Unused();
    }
    if (last) delete this;
  }

 private:
  // An Accept inside Next keeps the acceptor alive (the listener may be destroyed meanwhile:
  // see TcpStream's destructor contract).
  class InNext {
   public:
    explicit InNext(MultishotAcceptor* acceptor) : acceptor_(acceptor) {
      MutexLock lock(acceptor_->mu_);
      ++acceptor_->in_next_;
    }
    InNext(const InNext&) = delete;
    InNext& operator=(const InNext&) = delete;
    ~InNext() {
      bool last;
      {
        MutexLock lock(acceptor_->mu_);
        --acceptor_->in_next_;
        last = acceptor_->Unused();
      }
      if (last) delete acceptor_;
    }

   private:
    MultishotAcceptor* const acceptor_;
  };

  ~MultishotAcceptor() { ClosePending(); }

  // mu_ held (or the last reference): nothing can reach this object any more.
  bool Unused() const { return !owned_ && !armed_ && in_next_ == 0; }

  // mu_ held: closes the accepted fds no Accept took.
  void ClosePending() {
    for (const std::int32_t result : pending_) {
      if (result >= 0) CloseFd(result);
    }
    pending_.clear();
  }

  void Run(Task* task) {
    const bool final_completion = task->ReceiveSignal();
    events_.TakeAll(batch_);
    coro::Waker wake;
    bool last = false;
    Core* const core = core_;  // read while armed_ keeps this object alive (Unused)
    {
      MutexLock lock(mu_);
      for (const IoEvent& event : batch_) pending_.push_back(event.result);
      if (final_completion) {
        armed_ = false;
        // Acquire (IsClosed): a CloseSocket that ran before is ordered before what follows.
        if (core_->IsClosed()) ClosePending();
        last = Unused();
        // -ECANCELED: our own cancel (queue full, Close) or Stop's; not an Accept error.
        if (op_.Result() < 0 && op_.Result() != -ECANCELED) ended_result_ = op_.Result();
      } else if (pending_.size() >= kMaxPending && !cancelling_full_) {
        cancelling_full_ = true;  // once per arming (the final completion follows)
        core_->scheduler()->io().Cancel(&op_);
      }
      if (final_completion) cancelling_full_ = false;
      wake = std::move(waiter_);
      if (!final_completion) {
        core_->scheduler()->PostDeadlineThroughStop(task, kTaskDeadlineInfinite);
      }
    }
    // Only locals from here on (as in SocketCore's handler): once mu_ is released with
    // armed_ false, the listener's Release or an Accept's InNext may free this object.
    if (final_completion) {
      if (last) delete this;
      // The op no longer uses the fd (which may be closed now). Its user reference kept the
      // core alive up to here, whether or not this object is gone.
      core->ReleaseUser();
    }
    if (wake) wake.Wakeup();
  }

  Core* const core_;
  Task relay_;
  IoOp op_;
  IoEventQueue events_;         // the backend's queue, drained by the relay
  std::vector<IoEvent> batch_;  // the relay's scratch
  Mutex mu_;
  std::deque<std::int32_t> pending_;  // guarded by mu_: fds (or -errno) not yet taken
  coro::Waker waiter_;                // guarded by mu_: the waiting Accept
  bool accepting_ = false;            // guarded by mu_: an Accept waits (misuse check)
  bool armed_ = false;                // guarded by mu_: between Submit and the final completion
  bool cancelling_full_ = false;      // guarded by mu_: the relay cancelled a full queue's op
  bool owned_ = true;                 // guarded by mu_: the listener has not let go
  int in_next_ = 0;                   // guarded by mu_: Accepts inside Next
  std::int32_t ended_result_ = 0;     // guarded by mu_: -errno that ended the op, unreported
};

}  // namespace internal

// What TcpListener::AcceptWithPeer returns: the new connection and its peer's address.
template <typename Scheduler>
struct AcceptedConnection {
  TcpStream<Scheduler> stream;
  SocketAddress peer;
};

// A listening TCP socket. Move-only; the destructor closes it.
template <typename Scheduler>
class TcpListener {
  using Core = internal::SocketCore<Scheduler>;

 public:
  TcpListener() = default;
  TcpListener(TcpListener&& other) noexcept
      : core_(std::exchange(other.core_, nullptr)),
        multishot_(std::exchange(other.multishot_, nullptr)) {}
  TcpListener& operator=(TcpListener&& other) noexcept {
    if (this != &other) {
      Drop();
      core_ = std::exchange(other.core_, nullptr);
      multishot_ = std::exchange(other.multishot_, nullptr);
    }
    return *this;
  }
  ~TcpListener() { Drop(); }

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
  coro::Task<IoResult<TcpStream<Scheduler>>> Accept(TaskDeadline deadline);
  // Accept, and the peer's address (one getpeername after the accept, on every backend).
  // A connection the peer reset before that fails with kSystem (ENOTCONN) and is closed;
  // like any Accept failure, it does not end the listener.
  coro::Task<IoResult<AcceptedConnection<Scheduler>>> AcceptWithPeer(TaskDeadline deadline);

  IoResult<SocketAddress> LocalAddress() const;
  bool IsOpen() const { return core_ != nullptr && !core_->IsClosed(); }
  int fd() const { return Checked()->fd(); }
  // As TcpStream::Close: a pending Accept in another coroutine returns kClosed. With a
  // multishot accept armed, the socket and the connections accepted but not taken are
  // closed when the backend hands the op back, within one sched-role step.
  void Close() {
    if (core_ == nullptr) return;
    core_->CloseSocket();
    if (multishot_ != nullptr) multishot_->CancelForClose();
  }

 private:
  Core* Checked() const {
    FAIRSCHED_CHECK(core_ != nullptr && !core_->IsClosed(),
                    "use of a closed or moved-from TcpListener");
    return core_;
  }
  Core* Live() const {
    FAIRSCHED_CHECK(core_ != nullptr, "use of a moved-from TcpListener");
    return core_;
  }
  explicit TcpListener(Core* core) : core_(core) {
    if constexpr (internal::kHasMultishotAccept<Scheduler>) {
      if (internal::MultishotAcceptor<Scheduler>::Usable(*core->scheduler())) {
        multishot_ = new internal::MultishotAcceptor<Scheduler>(core);
      }
    }
  }
  // The destructor and move-assignment: Close, then let go of the acceptor and the core
  // (each lives on while an operation still uses it).
  void Drop() {
    Close();
    if (multishot_ != nullptr) std::exchange(multishot_, nullptr)->Release();
    internal::DropCore(core_);
  }
  Core* core_ = nullptr;
  // io_uring: the standing multishot accept where usable, made with the listener (so a
  // Close from another coroutine reads a pointer no Accept writes); armed by the first
  // Accept.
  internal::MultishotAcceptor<Scheduler>* multishot_ = nullptr;
};

// ---------------------------------------------------------------------------------------
// Implementation.

namespace internal {
IoResult<SocketAddress> LocalAddressOf(int fd);
IoResult<SocketAddress> PeerAddressOf(int fd);
// getsockname (peer false) / getpeername (peer true) into `*storage`: 0 or -errno.
int SocketName(int fd, bool peer, sockaddr_storage* storage, socklen_t* length);
// Non-blocking: whether a connect in progress on `fd` has finished; 0 (done, connected),
// -EINPROGRESS (not yet) or -errno (failed).
int ConnectProgress(int fd);
}  // namespace internal

template <typename Scheduler>
coro::Task<IoResult<TcpStream<Scheduler>>> TcpStream<Scheduler>::Connect(Scheduler& scheduler,
                                                                         SocketAddress address,
                                                                         TaskDeadline deadline) {
  if (IoError cancelled = internal::CancellationError(); !cancelled.ok()) co_return cancelled;
  const int fd = internal::OpenTcpSocket(address.family());
  if (fd < 0) co_return IoError::FromErrno(-fd);
  if (const int attached = internal::AttachSocket(scheduler.io(), fd); attached < 0) {
    internal::CloseFd(fd);
    co_return IoError::FromErrno(-attached);
  }
  if constexpr (Core::kCompletions) {
    TcpStream stream(new Core(&scheduler, fd));
    Core* core = stream.core_;
    // `address` lives in this frame until the final completion.
    core->op(Core::kWriteSide).PrepareConnect(fd, address.get(), address.length(), core->handler());
    IoResult<std::int32_t> result = co_await core->RunOp(Core::kWriteSide, deadline);
    if (!result.ok()) co_return result.error();
    if (result.value() < 0) co_return internal::ErrorOfResult(result.value(), false);
    co_return std::move(stream);
  } else {
    // connect(2) before the core registers the socket's watch: the role holder's epoll_ctl
    // then follows the connect (a Unix-domain connect completes inside the call; TSan's fd
    // model reports the two on different threads as a race otherwise). Edge-triggered
    // epoll reports the state at registration, so a connect that finishes later still
    // brings its edge.
    const int started = internal::ConnectNow(fd, address);
    if (started != 0 && started != -EINPROGRESS) {
      internal::CloseFd(fd);
      co_return IoError::FromErrno(-started);
    }
    TcpStream stream(new Core(&scheduler, fd));
    Core* core = stream.core_;
    if (started != 0) {
      while (true) {
        const int progress = internal::ConnectProgress(fd);
        if (progress == 0) break;
        if (progress != -EINPROGRESS) co_return IoError::FromErrno(-progress);
        IoError waited = co_await core->WaitReady(Core::kWriteSide, deadline);
        if (!waited.ok()) co_return waited;
      }
    }
    co_return std::move(stream);
  }
}

template <typename Scheduler>
coro::Task<IoResult<std::size_t>> TcpStream<Scheduler>::Read(std::span<char> buffer,
                                                             TaskDeadline deadline) {
  Core* core = Live();
  FAIRSCHED_DCHECK(!buffer.empty(), "Read into an empty buffer");
  const internal::SocketUse<Core> use(core);  // the fd stays open until we return
  if (!use.ok()) co_return IoError(IoErrorCode::kClosed);
  if (IoError cancelled = internal::CancellationError(); !cancelled.ok()) co_return cancelled;
  if constexpr (Core::kCompletions) {
    core->op(Core::kReadSide).PrepareRead(core->fd(), buffer.data(), buffer.size(), core->handler());
    IoResult<std::int32_t> result =
        co_await core->RunOp(Core::kReadSide, core->IdleBound(deadline));
    if (!result.ok()) co_return result.error();
    if (result.value() == 0) co_return IoError(IoErrorCode::kEndOfStream);
    if (result.value() < 0) co_return internal::ErrorOfResult(result.value(), false);
    core->Touch();
    co_return static_cast<std::size_t>(result.value());
  } else {
    while (true) {
      if (core->Drained(Core::kReadSide)) {
        IoError waited = co_await core->WaitReady(Core::kReadSide, core->IdleBound(deadline));
        if (!waited.ok()) co_return waited;
      }
      const std::ptrdiff_t n = internal::RecvNow(core->fd(), buffer.data(), buffer.size());
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
}

template <typename Scheduler>
coro::Task<IoError> TcpStream<Scheduler>::ReadExactly(std::span<char> buffer,
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
coro::Task<IoResult<std::size_t>> TcpStream<Scheduler>::WriteSome(std::span<const char> data,
                                                                  TaskDeadline deadline) {
  FAIRSCHED_DCHECK(!data.empty(), "WriteSome of no data");
  std::size_t moved = 0;
  const IoError error = co_await Transmit(data, deadline, /*all=*/false, &moved);
  if (!error.ok()) co_return error;
  co_return moved;
}

template <typename Scheduler>
coro::Task<IoError> TcpStream<Scheduler>::Transmit(std::span<const char> data,
                                                   TaskDeadline deadline, bool all,
                                                   std::size_t* moved) {
  Core* core = Live();
  const internal::SocketUse<Core> use(core);  // the fd stays open until we return
  if (!use.ok()) co_return IoError(IoErrorCode::kClosed);
  if (IoError cancelled = internal::CancellationError(); !cancelled.ok()) co_return cancelled;
  std::size_t done = 0;
  while (done < data.size() && (all || done == 0)) {
    if constexpr (Core::kCompletions) {
      core->op(Core::kWriteSide)
          .PrepareSend(core->fd(), data.data() + done, data.size() - done, core->handler());
      IoResult<std::int32_t> result =
          co_await core->RunOp(Core::kWriteSide, core->IdleBound(deadline));
      if (!result.ok()) co_return result.error().WithBytesDone(done);
      if (result.value() < 0) {
        co_return internal::ErrorOfResult(result.value(), false).WithBytesDone(done);
      }
      done += static_cast<std::size_t>(result.value());
      core->Touch();
    } else {
      if (core->Drained(Core::kWriteSide)) {
        IoError waited = co_await core->WaitReady(Core::kWriteSide, core->IdleBound(deadline));
        if (!waited.ok()) co_return waited.WithBytesDone(done);
      }
      const std::ptrdiff_t n =
          internal::SendNow(core->fd(), data.data() + done, data.size() - done);
      if (n >= 0) {
        done += static_cast<std::size_t>(n);
        core->Touch();
        if (done < data.size()) core->SetDrained(Core::kWriteSide);  // the buffer is full
        continue;
      }
      if (n == -EINTR) continue;
      if (n != -EAGAIN && n != -EWOULDBLOCK) {
        co_return IoError::FromErrno(static_cast<int>(-n)).WithBytesDone(done);
      }
      core->SetDrained(Core::kWriteSide);
    }
  }
  if (moved != nullptr) *moved = done;  // (a failure carries it as bytes_done())
  co_return IoError();
}

template <typename Scheduler>
template <typename Char>
coro::Task<IoResult<std::size_t>> TcpStream<Scheduler>::TransferOnce(
    std::span<const BasicIoSlice<Char>> window, std::size_t bytes, TaskDeadline deadline) {
  constexpr bool kSend = std::is_const_v<Char>;
  constexpr typename Core::Direction kSide = kSend ? Core::kWriteSide : Core::kReadSide;
  Core* core = Live();
  const internal::SocketUse<Core> use(core);  // the fd stays open until we return
  if (!use.ok()) co_return IoError(IoErrorCode::kClosed);
  if (IoError cancelled = internal::CancellationError(); !cancelled.ok()) co_return cancelled;
  if constexpr (Core::kCompletions) {
    if constexpr (kSend) {
      core->op(kSide).PrepareSendV(core->fd(), window.data(), window.size(), core->handler());
    } else {
      core->op(kSide).PrepareReadV(core->fd(), window.data(), window.size(), core->handler());
    }
    IoResult<std::int32_t> result = co_await core->RunOp(kSide, core->IdleBound(deadline));
    if (!result.ok()) co_return result.error();
    if (result.value() < 0) co_return internal::ErrorOfResult(result.value(), false);
    if (result.value() > 0) core->Touch();
    co_return static_cast<std::size_t>(result.value());
  } else {
    while (true) {
      if (core->Drained(kSide)) {
        IoError waited = co_await core->WaitReady(kSide, core->IdleBound(deadline));
        if (!waited.ok()) co_return waited;
      }
      std::ptrdiff_t n;
      if constexpr (kSend) {
        n = internal::SendVNow(core->fd(), window.data(), window.size());
      } else {
        n = internal::RecvVNow(core->fd(), window.data(), window.size());
      }
      if (n > 0) {
        core->Touch();
        // Short: the socket's buffer is full (send) or empty (receive) for now.
        if (static_cast<std::size_t>(n) < bytes) {
          if constexpr (kSend) {
            core->SetDrained(kSide);
          } else {
            core->SetDrainedAfterShortRead();
          }
        }
      }
      if (n >= 0) co_return static_cast<std::size_t>(n);
      if (n == -EINTR) continue;
      if (n != -EAGAIN && n != -EWOULDBLOCK) co_return IoError::FromErrno(static_cast<int>(-n));
      core->SetDrained(kSide);
    }
  }
}

template <typename Scheduler>
coro::Task<IoResult<std::size_t>> TcpStream<Scheduler>::ReadSomeV(
    std::span<const IoSlice> buffers, TaskDeadline deadline) {
  std::size_t bytes = 0;
  const std::span<const IoSlice> window = internal::SliceWindow(buffers, &bytes);
  FAIRSCHED_DCHECK(bytes > 0, "ReadSomeV into slices of no bytes");
  if (bytes == 0) co_return IoError(IoErrorCode::kSystem, EINVAL);
  IoResult<std::size_t> n = co_await TransferOnce(window, bytes, deadline);
  if (n.ok() && n.value() == 0) co_return IoError(IoErrorCode::kEndOfStream);
  co_return n;
}

template <typename Scheduler>
coro::Task<IoResult<std::size_t>> TcpStream<Scheduler>::WriteSomeV(
    std::span<const ConstIoSlice> data, TaskDeadline deadline) {
  std::size_t bytes = 0;
  const std::span<const ConstIoSlice> window = internal::SliceWindow(data, &bytes);
  FAIRSCHED_DCHECK(bytes > 0, "WriteSomeV of slices with no bytes");
  if (bytes == 0) co_return IoError(IoErrorCode::kSystem, EINVAL);
  co_return co_await TransferOnce(window, bytes, deadline);
}

template <typename Scheduler>
coro::Task<IoError> TcpStream<Scheduler>::WriteV(std::span<const ConstIoSlice> data,
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
  const int result = internal::ShutdownSocket(Checked()->fd(), how);
  return result < 0 ? IoError::FromErrno(-result) : IoError();
}

template <typename Scheduler>
IoError TcpStream<Scheduler>::SetNoDelay(bool on) {
  return internal::ErrorOfStatus(
      internal::SetSocketOption(Checked()->fd(), internal::SocketOption::kNoDelay, on ? 1 : 0));
}

template <typename Scheduler>
IoError TcpStream<Scheduler>::EnableKeepAlive(const KeepAlive& settings) {
  using internal::SocketOption;
  const int fd = Checked()->fd();
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
}

template <typename Scheduler>
IoError TcpStream<Scheduler>::DisableKeepAlive() {
  return internal::ErrorOfStatus(
      internal::SetSocketOption(Checked()->fd(), internal::SocketOption::kKeepAlive, 0));
}

template <typename Scheduler>
IoError TcpStream<Scheduler>::SetReceiveBufferSize(int bytes) {
  return internal::ErrorOfStatus(
      internal::SetSocketOption(Checked()->fd(), internal::SocketOption::kReceiveBuffer, bytes));
}

template <typename Scheduler>
IoError TcpStream<Scheduler>::SetSendBufferSize(int bytes) {
  return internal::ErrorOfStatus(
      internal::SetSocketOption(Checked()->fd(), internal::SocketOption::kSendBuffer, bytes));
}

template <typename Scheduler>
IoResult<SocketAddress> TcpStream<Scheduler>::LocalAddress() const {
  return internal::LocalAddressOf(Checked()->fd());
}
template <typename Scheduler>
IoResult<SocketAddress> TcpStream<Scheduler>::PeerAddress() const {
  return internal::PeerAddressOf(Checked()->fd());
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
coro::Task<IoResult<TcpStream<Scheduler>>> TcpListener<Scheduler>::Accept(TaskDeadline deadline) {
  Core* core = Live();
  const internal::SocketUse<Core> use(core);  // the fd stays open until we return
  if (!use.ok()) co_return IoError(IoErrorCode::kClosed);
  if (IoError cancelled = internal::CancellationError(); !cancelled.ok()) co_return cancelled;
  if constexpr (internal::kHasMultishotAccept<Scheduler>) {
    if (multishot_ != nullptr) {
      IoResult<int> fd = co_await multishot_->Next(deadline);
      if (!fd.ok()) co_return fd.error();
      co_return TcpStream<Scheduler>(new Core(core->scheduler(), fd.value()));
    }
  }
  while (true) {
    int fd;
    if constexpr (Core::kCompletions) {
      core->op(Core::kReadSide).PrepareAccept(core->fd(), core->handler());
      IoResult<std::int32_t> result = co_await core->RunOp(Core::kReadSide, deadline);
      if (!result.ok()) co_return result.error();
      fd = result.value();
      if (fd < 0) {
        // A connection that died in the backlog, or a transient resource shortage: not
        // fatal for the listener (the caller decides whether to go on).
        co_return internal::ErrorOfResult(fd, false);
      }
    } else {
      if (core->Drained(Core::kReadSide)) {
        IoError waited = co_await core->WaitReady(Core::kReadSide, deadline);
        if (!waited.ok()) co_return waited;
      }
      fd = internal::AcceptNow(core->fd());
      if (fd < 0) {
        if (fd == -EINTR) continue;
        if (fd != -EAGAIN && fd != -EWOULDBLOCK) co_return IoError::FromErrno(-fd);
        core->SetDrained(Core::kReadSide);
        continue;
      }
    }
    co_return TcpStream<Scheduler>(new Core(core->scheduler(), fd));
  }
}

template <typename Scheduler>
coro::Task<IoResult<AcceptedConnection<Scheduler>>> TcpListener<Scheduler>::AcceptWithPeer(
    TaskDeadline deadline) {
  IoResult<TcpStream<Scheduler>> accepted = co_await Accept(deadline);
  if (!accepted.ok()) co_return accepted.error();
  IoResult<SocketAddress> peer = accepted.value().PeerAddress();
  if (!peer.ok()) co_return peer.error();
  co_return AcceptedConnection<Scheduler>{std::move(accepted).value(), peer.value()};
}

template <typename Scheduler>
IoResult<SocketAddress> TcpListener<Scheduler>::LocalAddress() const {
  return internal::LocalAddressOf(Checked()->fd());
}

}  // namespace fairsched

#endif  // FAIRSCHED_IO_TCP_H_
