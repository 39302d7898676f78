// TcpServer: the skeleton every example server shares (examples/echo_server.h,
// examples/kv_server.h): an accept loop on io/tcp.h that spawns one coroutine per connection
// running the protocol's handler, connection counters, and a Stop that ends every
// connection and returns when all are closed. CloseGracefully is the close a protocol
// handler ends with, so that the peer reads every answer.
//
// Contract:
//   - The handler gets the connection's TcpStream and owns it; the connection counts as
//     open until the handler's task has finished.
//   - Stop: stops accepting and cancels every connection's coroutine (they are children of
//     the accept loop: their pending IO ends with kCancelled), then waits until every
//     handler has finished. Idempotent; the destructor calls it.
//   - Start and Stop from a plain thread (not a task of the scheduler); the counters from
//     any thread.
#ifndef FAIRSCHED_EXAMPLES_TCP_SERVER_H_
#define FAIRSCHED_EXAMPLES_TCP_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/tcp.h"
#include "sync/primitives.h"

namespace fairsched::examples {

// Ends a connection so that the peer reads every answer: FIN after the answers, then
// discards what the peer sent but the server did not read, so that close() does not answer
// with a reset that could destroy answers still unread on the peer's side.
template <typename Scheduler>
void CloseGracefully(TcpStream<Scheduler>& stream) {
  (void)stream.Shutdown(ShutdownHow::kWrite);
  // WithFd: another coroutine may have closed the stream (then there is nothing to drain).
  (void)stream.WithFd([](int fd) {
    char discard[4096];
    while (internal::RecvNow(fd, discard, sizeof(discard)) > 0) {
    }
    return IoError();
  });
  stream.Close();
}

// Which of three counters an IO error that ended a connection belongs to: `timeout` for a
// deadline (kTimeout), `stopped` for Stop (kCancelled, kShutdown), `peer` for the rest (end
// of stream, reset, ...).
template <typename Counter>
Counter* CounterOfEnd(const IoError& error, Counter* timeout, Counter* stopped, Counter* peer) {
  switch (error.code()) {
    case IoErrorCode::kTimeout:
      return timeout;
    case IoErrorCode::kCancelled:
    case IoErrorCode::kShutdown:
      return stopped;
    default:
      return peer;
  }
}

template <typename Scheduler>
class TcpServer {
 public:
  using Handler = std::function<coro::Lazy<void>(TcpStream<Scheduler>)>;

  TcpServer(Scheduler& scheduler, Handler handler, int backlog = 4096)
      : scheduler_(scheduler), handler_(std::move(handler)), backlog_(backlog) {}
  ~TcpServer() { Stop(); }
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  // Listens on `address` and starts accepting; returns the bound address (port 0 -> the
  // port picked). Once per server.
  IoResult<SocketAddress> Start(const SocketAddress& address) {
    IoResult<TcpListener<Scheduler>> listener =
        TcpListener<Scheduler>::Listen(scheduler_, address, backlog_);
    if (!listener.ok()) return listener.error();
    IoResult<SocketAddress> bound = listener.value().LocalAddress();
    if (!bound.ok()) return bound.error();
    acceptor_ = coro::Spawn(scheduler_, AcceptLoop(std::move(listener).value()));
    return bound;
  }

  void Stop() {
    if (!acceptor_.IsValid()) return;
    acceptor_.Cancel();  // its connections are its children: cancelled with it
    acceptor_.Get();
    MutexLock lock(mu_);
    all_closed_.wait(lock, [this] { return open_.load(std::memory_order_relaxed) == 0; });
  }

  // Relaxed snapshots: statistics.
  std::int64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }
  std::int64_t open() const { return open_.load(std::memory_order_relaxed); }

 private:
  coro::Lazy<void> AcceptLoop(TcpListener<Scheduler> listener) {
    while (true) {
      IoResult<TcpStream<Scheduler>> accepted = co_await listener.Accept(kTaskDeadlineInfinite);
      if (!accepted.ok()) {
        const IoErrorCode code = accepted.error().code();
        if (code == IoErrorCode::kCancelled || code == IoErrorCode::kShutdown) break;
        // Out of fds, or a connection that died in the backlog: wait a little, go on.
        co_await coro::SleepFor(std::chrono::milliseconds(1));
        continue;
      }
      // Relaxed counters: statistics only. open_ is also the Stop condition, read under
      // mu_ after the acceptor finished; its decrement is made under mu_ (see Serve).
      accepted_.fetch_add(1, std::memory_order_relaxed);
      open_.fetch_add(1, std::memory_order_relaxed);
      // A child of this loop: Stop's cancellation of the loop reaches every connection.
      coro::Spawn(scheduler_, Serve(std::move(accepted).value())).Detach();
    }
  }

  coro::Lazy<void> Serve(TcpStream<Scheduler> stream) {
    co_await handler_(std::move(stream));
    // Under mu_, notify included: Stop may return (and the server be destroyed) as soon as
    // it sees zero.
    MutexLock lock(mu_);
    open_.fetch_sub(1, std::memory_order_relaxed);
    all_closed_.notify_all();
  }

  Scheduler& scheduler_;
  const Handler handler_;
  const int backlog_;
  coro::JoinHandle<void> acceptor_;
  Mutex mu_;
  ConditionVariable all_closed_;
  Atomic<std::int64_t> accepted_{0};
  Atomic<std::int64_t> open_{0};
};

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_TCP_SERVER_H_
