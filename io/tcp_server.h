// TcpServer: the part every TCP server repeats around its protocol. An accept loop on
// io/tcp.h that runs one coroutine (a session) per connection with the protocol's handler,
// a connection limit, counters, and a graceful shutdown with a deadline that returns when
// every session has ended. CloseGracefully is the close a handler ends a connection with
// so that the peer reads every answer.
//
//   TcpServer<Sched> server(scheduler, [](TcpStream<Sched> stream) -> coro::Lazy<void> {
//     ... co_await stream.Read(...) until kEndOfStream ...; CloseGracefully(stream);
//   }, {.max_connections = 10'000});
//   IoResult<SocketAddress> bound = server.Start(SocketAddress::Parse("[::]:7000").value());
//   ...
//   server.Shutdown(std::chrono::seconds(5));  // then scheduler.Stop()
//
// Contract:
//   - The handler gets the connection's TcpStream and owns it (it may wrap it in a
//     BufferedStream or TlsStream). A session counts as open from its accept until the
//     handler's coroutine has returned. Sessions are not children of the accept loop or of
//     the caller of Start: only Shutdown / Stop (or the scheduler's Stop) ends them. An
//     exception escaping the handler aborts the process (a detached coroutine's rule).
//   - Connection limit (TcpServerOptions::max_connections > 0): while that many sessions
//     are open the server does not accept. A further connection waits in the kernel's
//     listen backlog (the kernel completes its handshake, so the peer's connect succeeds,
//     but nothing reads it) and is accepted, in order, when a session ends. Connections
//     beyond the backlog are handled by the kernel (Linux drops their SYN; the peer's
//     connect retries and times out). Nothing is refused by the server itself.
//   - Shutdown(grace), from a plain thread (not a task of the scheduler):
//       1. stops accepting (the listening socket is closed);
//       2. asks every session to finish: shuts down the read side of its socket, so a
//          pending or later Read returns kEndOfStream (a protocol handler then ends as it
//          does when the peer closes: after it wrote its last answer). Writes still work;
//       3. waits until every session has ended or `grace` has passed, whichever is first;
//       4. at that deadline cancels the sessions still open (their pending IO ends with
//          kCancelled, any cancellable wait ends at once; a session in an uncancellable
//          wait, e.g. a blocking call already running, ends when that wait does);
//       5. returns when every session has ended. After it returns nothing of the server
//          runs any more, so the scheduler's Stop does not wait for a session.
//     grace <= 0 skips steps 2 and 3 (Stop() is Shutdown(0)). Idempotent; the destructor
//     calls Stop(). A connection accepted while Shutdown runs is asked (or cancelled) at
//     once.
//   - To shut the read side down the server holds each session's socket open (a use of
//     its fd, like an operation in progress) until the handler returns. So a handler that
//     calls Close() and keeps running sees the stream closed at once, but the peer sees the
//     connection end (FIN) only when the handler returns, or at once if the handler shut
//     down the write side (CloseGracefully does). On the completion backends the ask also
//     ends a pending Read itself (internal::SocketCore::ShutdownReadSide): IOCP completes
//     no pending receive on SD_RECEIVE.
//   - ShutdownAsync(grace): the same inside a coroutine (co_await), see below.
//   - Start once, from any thread; the counters from any thread (relaxed snapshots).
#ifndef FAIRSCHED_IO_TCP_SERVER_H_
#define FAIRSCHED_IO_TCP_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_set>
#include <utility>

#include "coro/event.h"
#include "coro/lazy.h"
#include "coro/runtime.h"
#include "coro/semaphore.h"
#include "io/internal/socket_ops.h"
#include "io/tcp.h"
#include "sync/primitives.h"

namespace fairsched {

struct TcpServerOptions {
  int backlog = 4096;  // listen(2) backlog
  // At most this many open sessions; 0: no limit. See the file comment for what happens to
  // the connections beyond it.
  std::int64_t max_connections = 0;
};

// Ends a connection so that the peer reads every answer: shuts down the write side (FIN
// after the bytes written), then discards what the peer sent and the handler did not read,
// so that the close does not answer with a reset that could destroy answers the peer has
// not read yet, then closes. Never waits. A stream that is already closed is left as it is.
template <typename Scheduler>
void CloseGracefully(TcpStream<Scheduler>& stream) {
  if (!stream.IsOpen()) return;
  (void)stream.Shutdown(ShutdownHow::kWrite);
  // WithFd: another coroutine may close the stream meanwhile (then there is nothing to
  // drain, and the fd cannot be closed or reused under the drain).
  (void)stream.WithFd([](int fd) {
    char discard[4096];
    while (internal::RecvNow(fd, discard, sizeof(discard)) > 0) {
    }
    return IoError();
  });
  stream.Close();
}

template <typename Scheduler>
class TcpServer {
 public:
  using Handler = std::function<coro::Lazy<void>(TcpStream<Scheduler>)>;

  TcpServer(Scheduler& scheduler, Handler handler, TcpServerOptions options = {})
      : scheduler_(scheduler),
        handler_(std::move(handler)),
        options_(options),
        slots_(options.max_connections) {
    FAIRSCHED_CHECK(options.max_connections >= 0, "TcpServerOptions::max_connections < 0");
  }
  ~TcpServer() { Stop(); }
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  // Listens on `address` and starts accepting; returns the bound address (port 0 -> the
  // port picked). Once per server.
  IoResult<SocketAddress> Start(const SocketAddress& address) {
    FAIRSCHED_CHECK(!acceptor_.IsValid(), "TcpServer::Start called twice");
    IoResult<TcpListener<Scheduler>> listener =
        TcpListener<Scheduler>::Listen(scheduler_, address, options_.backlog);
    if (!listener.ok()) return listener.error();
    IoResult<SocketAddress> bound = listener.value().LocalAddress();
    if (!bound.ok()) return bound.error();
    acceptor_ = coro::Spawn(scheduler_, AcceptLoop(std::move(listener).value()),
                            coro::SpawnOptions{.child_of_current = false});
    return bound;
  }

  // See the file comment.
  void Shutdown(std::chrono::nanoseconds grace) {
    const auto give_up = std::chrono::steady_clock::now() + grace;
    if (acceptor_.IsValid()) {
      acceptor_.Cancel();
      acceptor_.Get();  // no session is spawned after this
    }
    MutexLock lock(mu_);
    if (grace > std::chrono::nanoseconds::zero()) {
      AskAllLocked();
      all_ended_.wait_until(lock, give_up, [this] { return OpenLocked() == 0; });
    }
    CancelAllLocked();
    all_ended_.wait(lock, [this] { return OpenLocked() == 0; });
  }
  // Shutdown for a coroutine (spawned on any scheduler, e.g. one that awaited a
  // SignalWait): the same steps, waiting without blocking its worker. If the awaiting
  // coroutine is cancelled, it stops waiting at once (the sessions are cancelled by then,
  // but may not have ended yet). Not at the same time as Shutdown or Stop.
  coro::Lazy<void> ShutdownAsync(std::chrono::nanoseconds grace) {
    const TaskDeadline give_up = coro::DeadlineAfter(grace);
    if (acceptor_.IsValid()) {
      acceptor_.Cancel();
      co_await std::move(acceptor_);  // no session is spawned after this
    }
    {
      MutexLock lock(mu_);
      if (grace > std::chrono::nanoseconds::zero()) AskAllLocked();
      if (OpenLocked() == 0) ended_event_.Set();
    }
    if (grace > std::chrono::nanoseconds::zero()) (void)co_await ended_event_.Wait(give_up);
    {
      MutexLock lock(mu_);
      CancelAllLocked();
    }
    (void)co_await ended_event_.Wait();
    // The session that set the event did so under mu_: once we hold mu_ it has let go of
    // it, so the caller may destroy the server when this returns.
    MutexLock lock(mu_);
  }
  void Stop() { Shutdown(std::chrono::nanoseconds::zero()); }

  // Relaxed snapshots: statistics.
  std::int64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }
  std::int64_t open() const { return open_.load(std::memory_order_relaxed); }
  // Sessions Shutdown / Stop cancelled (still open at the deadline).
  std::int64_t cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  enum class Phase { kServing, kAsking, kCancelling };

  using Core = internal::SocketCore<Scheduler>;

  // One open session; lives in Serve's frame, listed in sessions_ while the handler runs.
  struct Session {
    coro::CoroutineRef coroutine;
    // The socket's core, held as a user of its fd (SocketCore::AcquireUser) until the
    // handler returned; null if the socket was closed already (never asked, only cancelled).
    Core* core = nullptr;
    bool asked = false;
  };

  coro::Lazy<void> AcceptLoop(TcpListener<Scheduler> listener) {
    const bool limited = options_.max_connections > 0;
    while (true) {
      if (limited) {
        // Cancellable: Shutdown's cancel of this loop ends the wait for a free slot.
        const coro::WaitStatus slot = co_await slots_.AcquireUntil(kTaskDeadlineInfinite);
        if (slot != coro::WaitStatus::kOk) break;
      }
      IoResult<TcpStream<Scheduler>> accepted = co_await listener.Accept(kTaskDeadlineInfinite);
      if (!accepted.ok()) {
        if (limited) slots_.Release(1);
        const IoErrorCode code = accepted.error().code();
        if (code == IoErrorCode::kCancelled || code == IoErrorCode::kShutdown) break;
        // Out of fds, or a connection that died in the backlog: wait a little, go on.
        co_await coro::SleepFor(std::chrono::milliseconds(1));
        continue;
      }
      // Relaxed: accepted_ is a statistic. open_ is also Shutdown's condition, but it is
      // only decremented under mu_ and read there after this loop was joined.
      accepted_.fetch_add(1, std::memory_order_relaxed);
      open_.fetch_add(1, std::memory_order_relaxed);
      // Not a child of this loop: stopping to accept must not end the sessions.
      coro::Spawn(scheduler_, Serve(std::move(accepted).value()),
                  coro::SpawnOptions{.child_of_current = false})
          .Detach();
    }
    // The listener closes here: new connections are refused by the kernel.
  }

  coro::Lazy<void> Serve(TcpStream<Scheduler> stream) {
    Session session;
    session.coroutine = coro::ThisCoroutine();
    if (Core* core = stream.core(); core != nullptr && core->AcquireUser()) session.core = core;
    bool run_handler = true;
    {
      MutexLock lock(mu_);
      sessions_.insert(&session);
      if (phase_ == Phase::kAsking) AskLocked(&session);
      if (phase_ == Phase::kCancelling) run_handler = false;  // Shutdown is past its deadline
    }
    if (run_handler) co_await handler_(std::move(stream));
    {
      // Out of Shutdown's reach first (it asks the listed sessions through their core),
      // then give up the core, which may free it: the other order let a Shutdown running
      // in between use a freed core.
      MutexLock lock(mu_);
      sessions_.erase(&session);
    }
    if (session.core != nullptr) session.core->ReleaseUser();  // may close the fd
    // Under mu_, notify included: Shutdown may return (and the server be destroyed) as
    // soon as it sees zero, so nothing touches `this` after the unlock.
    MutexLock lock(mu_);
    if (options_.max_connections > 0) slots_.Release(1);
    open_.fetch_sub(1, std::memory_order_relaxed);
    all_ended_.notify_all();
    if (phase_ != Phase::kServing && OpenLocked() == 0) ended_event_.Set();
  }

  // Shutdown's steps 2 and 4 (under mu_): every session, and those spawned later, are asked
  // / cancelled.
  void AskAllLocked() {
    if (phase_ != Phase::kServing) return;
    phase_ = Phase::kAsking;
    for (Session* session : sessions_) AskLocked(session);
  }
  void CancelAllLocked() {
    phase_ = Phase::kCancelling;
    for (Session* session : sessions_) CancelLocked(session);
  }
  void AskLocked(Session* session) {
    if (session->asked || session->core == nullptr) return;
    session->asked = true;
    // The fd is open: the session holds a use of it.
    (void)internal::ShutdownSocket(session->core->fd(), ShutdownHow::kRead);
    if constexpr (Core::kCompletions) session->core->ShutdownReadSide();
  }
  void CancelLocked(Session* session) {
    // Relaxed: a statistic.
    if (session->coroutine.Cancel()) cancelled_.fetch_add(1, std::memory_order_relaxed);
  }
  // Under mu_: every decrement of open_ is made under mu_.
  std::int64_t OpenLocked() const { return open_.load(std::memory_order_relaxed); }

  Scheduler& scheduler_;
  const Handler handler_;
  const TcpServerOptions options_;
  coro::Semaphore slots_;  // free session slots (max_connections > 0 only)
  coro::JoinHandle<void> acceptor_;
  Mutex mu_;
  ConditionVariable all_ended_;  // Shutdown's wait for open_ == 0
  coro::Event ended_event_;      // ShutdownAsync's: set once shutting down and open_ == 0
  Phase phase_ = Phase::kServing;           // guarded by mu_
  std::unordered_set<Session*> sessions_;  // guarded by mu_
  Atomic<std::int64_t> accepted_{0};
  Atomic<std::int64_t> open_{0};
  Atomic<std::int64_t> cancelled_{0};
};

}  // namespace fairsched

#endif  // FAIRSCHED_IO_TCP_SERVER_H_
