// SocketCore: the shared state of one socket (the fd, its IoOps, the coroutines waiting in
// each direction) and the backend traits the socket layer reads (BackendOf, kCompletionIo,
// AttachSocket). Every socket class (io/tcp.h, io/udp.h) owns one core through
// internal::SocketHandle (io/internal/socket_handle.h); how an operation runs on it is in
// io/internal/socket_io.h. The core offers each backend kind its primitive:
//   - readiness (epoll): WaitReady (the next edge of a direction) and the Drained flags;
//   - completion (io_uring, IOCP): RunOp (one prepared IoOp run to its final completion).
// Close and the fd's lifetime are the core's (see "Close" below). Internal.
#ifndef FAIRSCHED_IO_INTERNAL_SOCKET_CORE_H_
#define FAIRSCHED_IO_INTERNAL_SOCKET_CORE_H_

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/internal/socket_ops.h"
#include "io/io_error.h"
#include "io/io_op.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::internal {

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

// Whether the scheduler's backend runs SendTo / ReceiveFrom IoOps (IOCP declares
// kDatagramOps): UdpSocket then sends and receives with them (io/udp.h).
template <typename Scheduler>
constexpr bool HasDatagramOps() {
  if constexpr (requires { BackendOf<Scheduler>::kDatagramOps; }) {
    return BackendOf<Scheduler>::kDatagramOps;
  } else {
    return false;
  }
}

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
// After a wait that did not end with a wakeup: the error for how it ended.
IoError ErrorOfWake(coro::WakeReason reason);
// Inside a spawned coroutine: kCancelled / kShutdown if it is cancelled (or the scheduler is
// stopping), else success. Every operation checks it first, so a cancelled coroutine's
// socket operations fail at once on both backends, even those that would not wait.
IoError CancellationError();

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
  // cancelled, shutdown). `deadline` is the operation's own; the wait also ends at the idle
  // bound (IdleBound), unless bytes moved meanwhile (see IdleExtends).
  coro::Lazy<IoError> WaitReady(Direction side, TaskDeadline deadline) {
    static_assert(!kCompletions);
    drained_[side] = false;
    while (true) {
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
      const coro::WakeReason why = co_await coro::WaitWoken(IdleBound(deadline));
      MutexLock lock(mu_);
      waiting_[side] = false;
      waiter_[side] = coro::Waker();  // drops a stale waker (the wait ended another way)
      // The idle bound passed but bytes moved since it was computed: wait on (an edge that
      // came meanwhile is in ready_, checked at the top).
      if (why == coro::WakeReason::kDeadline && IdleExtends(deadline)) continue;
      if (why != coro::WakeReason::kWakeup) co_return ErrorOfWake(why);
      if (watch_ended_) co_return WatchEndedError();
      ready_[side] = false;
      co_return IoError();
    }
  }

  // ---- the idle deadline (TcpStream::SetIdleTimeout) ----
  // Every wait of an operation (WaitReady, RunOp) ends at IdleBound(its deadline). When that
  // bound passes before the operation's own deadline, the wait asks IdleExtends: if bytes
  // moved in either direction since (Touch), or the setting changed, the bound lies in the
  // future again and the wait goes on; otherwise the operation ends with kTimeout. So a
  // read that waits while a writer keeps moving bytes is not dropped. Cost: one relaxed
  // load per wait and per transfer when no timeout is set; a clock read per transfer only
  // when one is set; one more clock read when a bound passes.
  // Both atomics relaxed: a timestamp and a setting, read and written by the reader, the
  // writer and SetIdleTimeout's thread; each is a value by itself (no other data is
  // published through them). A stale one moves a bound by the age of the value: a Touch
  // that an expiring wait does not see yet (it happened in the last instant before the
  // bound) can still end that wait.
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
  // After a wait with `deadline` ended at its bound: whether the bound has moved into the
  // future since (activity, a longer or no idle timeout), so the wait should go on.
  bool IdleExtends(TaskDeadline deadline) const { return IdleBound(deadline) > TaskClock::now(); }
  // An operation moved bytes: the idle deadline starts again (a clock read only when set).
  void Touch() {
    if (idle_.load(std::memory_order_relaxed) <= 0) return;
    last_activity_.store(TaskClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }

  // ---- io_uring: run the op of `side` (prepared by the caller) to its final completion ----
  // Returns the op's result (>= 0, or -errno), or the error that ended the wait first
  // (cancelled, shutdown, timeout) once the op is released. `deadline` is the operation's
  // own; the wait also ends at the idle bound, unless bytes moved meanwhile (IdleExtends).
  coro::Lazy<IoResult<std::int32_t>> RunOp(Direction side, TaskDeadline deadline) {
    static_assert(kCompletions);
    IoOp& op = ops_[side];
    while (true) {
      {
        MutexLock lock(mu_);
        FAIRSCHED_DCHECK(!busy_[side], "two concurrent operations in one direction of a socket");
        // CloseSocket sets its bit before it takes mu_ to cancel the busy ops, and we submit
        // under mu_: either its critical section comes first, and we see the bit here, or
        // ours does, and it finds busy_ set with the op already submitted, and cancels it.
        if (IsClosed()) co_return IoError(IoErrorCode::kClosed);
        if (side == kReadSide && read_shut_) co_return 0;  // the end of the stream
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
        [[maybe_unused]] coro::WakeReason why = co_await coro::WaitWoken(IdleBound(deadline));
        while (true) {
          bool wait_on = false;
          {
            MutexLock lock(mu_);
            if (!busy_[side]) break;  // OnIoFinished saw the final completion
            // Only the deadline ends an uncancellable wait before the op. If it was the idle
            // bound and bytes moved since, wait on; else cancel the op and wait (without
            // deadline) for its final completion.
            FAIRSCHED_DCHECK(why == coro::WakeReason::kDeadline, "unexpected wake of an IO wait");
            wait_on = !timed_out && IdleExtends(deadline);
            timed_out = !wait_on;
            waiter_[side] = coro::PrepareWait(coro::WaitMode::kUncancellable);
          }
          if (wait_on) {
            why = co_await coro::WaitWoken(IdleBound(deadline));
            continue;
          }
          scheduler_->io().Cancel(&op);
          why = co_await coro::WaitWoken();
        }
      }
      const std::int32_t result = op.Result();
      if (result == -ECANCELED) {
        if (timed_out) co_return IoError(IoErrorCode::kTimeout);
        if (IsClosed()) co_return IoError(IoErrorCode::kClosed);  // CloseSocket cancelled it
        if (IoError cancelled = CancellationError(); !cancelled.ok()) co_return cancelled;
        MutexLock lock(mu_);
        if (side == kReadSide && read_shut_) co_return 0;  // ShutdownReadSide cancelled it
        co_return CancellationError();
      }
      // io_uring: a read or send on a non-blocking socket that a spurious wakeup (a state
      // change of the socket, such as this side's Shutdown) ran again and found not ready
      // is not an error: run it once more. (A connect's EAGAIN is a real answer.) It does
      // not spin: the kernels the backend accepts (IORING_FEAT_EXT_ARG, 5.11+) poll a
      // socket that is not ready, so an EAGAIN only follows a wakeup.
      if (result == -EAGAIN && op.kind() != IoOpKind::kConnect) {
        if (IoError cancelled = CancellationError(); !cancelled.ok()) co_return cancelled;
        continue;
      }
      co_return result;
    }
  }
  // io_uring, IOCP: the read side was shut down (shutdown(2) with SHUT_RD / SD_RECEIVE,
  // made by the caller): the read in progress, if any, is cancelled and returns 0 (the end
  // of the stream, unless its bytes came first), and every later read returns 0 at once.
  // IOCP needs this: Windows completes neither a pending overlapped receive nor fails a
  // later one with "end of stream" after SD_RECEIVE (a later WSARecv fails with
  // WSAESHUTDOWN). On io_uring the kernel would end the read by itself; this ends it the
  // same way. Any thread; the caller holds a user of the fd (AcquireUser).
  void ShutdownReadSide() {
    static_assert(kCompletions);
    MutexLock lock(mu_);
    read_shut_ = true;
    if (busy_[kReadSide]) scheduler_->io().Cancel(&ops_[kReadSide]);
  }
  IoOp& op(Direction side) { return ops_[side]; }
  // What the ops of this socket tell about their events: the core (see above).
  IoOpHandler* handler() { return this; }

  // ---- IoOpHandler: called by the sched-role holder (short, never waits) ----
  // epoll: a readiness edge of the watch.
  void OnIoEvent(IoOp&, std::uint32_t readiness, IoReadySink& sink) override {
    coro::Waker wake[2];
    {
      MutexLock lock(mu_);
      MarkReady(readiness, wake);
    }
    // Only locals from here on (see above).
    for (coro::Waker& waker : wake) {
      if (waker) waker.Wakeup(sink);
    }
  }
  // The final completion of an op: io_uring/IOCP: of one direction's operation; epoll: of
  // the watch.
  void OnIoFinished(IoOp& op, IoReadySink& sink) override {
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
      if (waker) waker.Wakeup(sink);
    }
    if constexpr (!kCompletions) sink.Wake(&watch_end_, IoWake::kSignal);
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
  // watch (a no-op if Stop already ended it; it is never submitted again).
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
  bool read_shut_ = false;      // io_uring, IOCP, guarded by mu_: see ShutdownReadSide
  Atomic<TaskClock::rep> idle_{0};           // the idle timeout (TaskClock ticks), 0: none
  Atomic<TaskClock::rep> last_activity_{0};  // TaskClock time of the last bytes moved
};

// One operation's (or one direct call's) use of a socket's fd (SocketCore::AcquireUser /
// ReleaseUser): while it is held the fd stays open and its number cannot be reused; ok()
// false when the socket was closed before.
template <typename Core>
class SocketUse {
 public:
  // `core` null (a moved-from socket in a release build): not ok, like a closed socket.
  explicit SocketUse(Core* core)
      : core_(core != nullptr && core->AcquireUser() ? core : nullptr) {}
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


}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_INTERNAL_SOCKET_CORE_H_
