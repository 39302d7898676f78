// EchoServer: the talk's coroutine server on io/tcp.h. An accept loop spawns one coroutine
// per connection that reads, processes (echo) and writes, with the limits a public server
// needs:
//   - idle deadline: a peer that sends nothing (or only part of a frame) for `idle_timeout`
//     is closed (slow-loris);
//   - write deadline: a peer that stops reading is dropped once a response has waited
//     `write_timeout` for socket buffer space; the server's per-connection buffer never
//     grows beyond one maximal frame, whatever the peer does;
//   - max frame size: a frame announcing more than `max_frame` bytes disconnects the peer;
//   - Stop: stops accepting, ends every connection (a response being written may be cut;
//     every response counted as answered has been written completely), and closes each
//     connection gracefully (FIN after the answers) so the peer reads all answers first.
// Protocol: a frame is a 4-byte little-endian payload length and the payload; the server
// sends every frame back unchanged. Frames may be pipelined; complete frames in the buffer
// are echoed with one write.
//
// Thread safety: Start and Stop from a plain thread (not a task of the scheduler); the
// counters from any thread.
#ifndef FAIRSCHED_EXAMPLES_ECHO_SERVER_H_
#define FAIRSCHED_EXAMPLES_ECHO_SERVER_H_

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "coro/runtime.h"
#include "coro/task.h"
#include "io/tcp.h"
#include "sync/primitives.h"

namespace fairsched::examples {

inline constexpr std::size_t kEchoHeaderSize = 4;

inline std::uint32_t DecodeFrameLength(const char* header) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(header);
  return std::uint32_t{bytes[0]} | std::uint32_t{bytes[1]} << 8 | std::uint32_t{bytes[2]} << 16 |
         std::uint32_t{bytes[3]} << 24;
}
inline void EncodeFrameLength(std::uint32_t length, char* header) {
  for (int i = 0; i < 4; ++i) header[i] = static_cast<char>((length >> (8 * i)) & 0xff);
}

struct EchoServerOptions {
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds(30);
  std::chrono::nanoseconds write_timeout = std::chrono::seconds(10);
  std::uint32_t max_frame = 64 * 1024;  // payload bytes
  int backlog = 4096;
};

// Counters (monotonic; relaxed snapshots).
struct EchoServerStats {
  std::int64_t accepted = 0;
  std::int64_t open = 0;
  std::int64_t answered = 0;             // frames echoed completely
  std::int64_t closed_by_peer = 0;       // end of stream or reset
  std::int64_t dropped_idle = 0;         // idle deadline
  std::int64_t dropped_slow_reader = 0;  // write deadline
  std::int64_t dropped_oversized = 0;    // frame larger than max_frame
  std::int64_t closed_by_stop = 0;       // cancelled by Stop
};

template <typename Scheduler>
class EchoServer {
 public:
  EchoServer(Scheduler& scheduler, EchoServerOptions options)
      : scheduler_(scheduler), options_(options) {}
  ~EchoServer() { Stop(); }
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  // Listens on `address` and starts accepting; returns the bound address (port 0 -> the
  // port picked). Once per server.
  IoResult<SocketAddress> Start(const SocketAddress& address) {
    IoResult<TcpListener<Scheduler>> listener =
        TcpListener<Scheduler>::Listen(scheduler_, address, options_.backlog);
    if (!listener.ok()) return listener.error();
    IoResult<SocketAddress> bound = listener.value().LocalAddress();
    if (!bound.ok()) return bound.error();
    acceptor_ = coro::Spawn(scheduler_, AcceptLoop(std::move(listener).value()));
    return bound;
  }

  // Stops accepting, ends every connection (see the file comment) and returns when all of
  // them are closed. Idempotent.
  void Stop() {
    if (!acceptor_.IsValid()) return;
    acceptor_.Cancel();  // its connections are its children: cancelled with it
    acceptor_.Get();
    MutexLock lock(mu_);
    all_closed_.wait(lock, [this] { return open_.load(std::memory_order_relaxed) == 0; });
  }

  EchoServerStats Stats() const {
    EchoServerStats stats;
    stats.accepted = accepted_.load(std::memory_order_relaxed);
    stats.open = open_.load(std::memory_order_relaxed);
    stats.answered = answered_.load(std::memory_order_relaxed);
    stats.closed_by_peer = closed_by_peer_.load(std::memory_order_relaxed);
    stats.dropped_idle = dropped_idle_.load(std::memory_order_relaxed);
    stats.dropped_slow_reader = dropped_slow_reader_.load(std::memory_order_relaxed);
    stats.dropped_oversized = dropped_oversized_.load(std::memory_order_relaxed);
    stats.closed_by_stop = closed_by_stop_.load(std::memory_order_relaxed);
    return stats;
  }

 private:
  coro::Task<void> AcceptLoop(TcpListener<Scheduler> listener) {
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

  coro::Task<void> Serve(TcpStream<Scheduler> stream) {
    std::vector<char> buffer(kEchoHeaderSize + 4096);
    std::size_t begin = 0;  // first byte not yet answered
    std::size_t end = 0;    // end of the received bytes
    const std::size_t limit = kEchoHeaderSize + options_.max_frame;
    Atomic<std::int64_t>* outcome = nullptr;
    while (outcome == nullptr) {
      // Echo every complete frame in the buffer with one write.
      std::size_t scan = begin;
      std::int64_t frames = 0;
      std::size_t need = 0;  // bytes the next incomplete frame needs from `scan`
      while (true) {
        if (end - scan < kEchoHeaderSize) {
          need = kEchoHeaderSize;
          break;
        }
        const std::uint32_t length = DecodeFrameLength(buffer.data() + scan);
        if (length > options_.max_frame) break;
        if (end - scan < kEchoHeaderSize + length) {
          need = kEchoHeaderSize + length;
          break;
        }
        scan += kEchoHeaderSize + length;
        ++frames;
      }
      if (need == 0) {  // a frame over the limit follows the complete ones
        outcome = &dropped_oversized_;
      }
      if (frames > 0) {
        const IoError written =
            co_await stream.Write(std::span<const char>(buffer.data() + begin, scan - begin),
                                  coro::DeadlineAfter(options_.write_timeout));
        if (!written.ok()) {
          outcome = OutcomeOf(written, &dropped_slow_reader_);
          break;
        }
        answered_.fetch_add(frames, std::memory_order_relaxed);
        begin = scan;
      }
      if (outcome != nullptr) break;
      // Make room for the next frame: move the unanswered tail to the front, and grow the
      // buffer to the frame's size (bounded by max_frame).
      if (begin > 0) {
        std::memmove(buffer.data(), buffer.data() + begin, end - begin);
        end -= begin;
        begin = 0;
      }
      if (need > buffer.size()) buffer.resize(std::min(limit, std::max(need, buffer.size() * 2)));
      IoResult<std::size_t> received =
          co_await stream.Read(std::span<char>(buffer.data() + end, buffer.size() - end),
                               coro::DeadlineAfter(options_.idle_timeout));
      if (!received.ok()) {
        outcome = OutcomeOf(received.error(), &dropped_idle_);
        break;
      }
      end += received.value();
    }
    outcome->fetch_add(1, std::memory_order_relaxed);
    // Graceful close: FIN after the answers, and discard what the peer sent but we did not
    // read, so that close() does not answer with a reset that could destroy answers still
    // unread on the peer's side.
    (void)stream.Shutdown(ShutdownHow::kWrite);
    char discard[4096];
    while (internal::RecvNow(stream.fd(), discard, sizeof(discard)) > 0) {
    }
    stream.Close();
    // Under mu_, notify included: Stop may return (and the server be destroyed) as soon as
    // it sees zero.
    MutexLock lock(mu_);
    open_.fetch_sub(1, std::memory_order_relaxed);
    all_closed_.notify_all();
  }

  // The counter for an error that ends a connection; `timeout_counter` for kTimeout.
  Atomic<std::int64_t>* OutcomeOf(const IoError& error, Atomic<std::int64_t>* timeout_counter) {
    switch (error.code()) {
      case IoErrorCode::kTimeout:
        return timeout_counter;
      case IoErrorCode::kCancelled:
      case IoErrorCode::kShutdown:
        return &closed_by_stop_;
      default:
        return &closed_by_peer_;
    }
  }

  Scheduler& scheduler_;
  const EchoServerOptions options_;
  coro::JoinHandle<void> acceptor_;
  Mutex mu_;
  ConditionVariable all_closed_;
  Atomic<std::int64_t> accepted_{0};
  Atomic<std::int64_t> open_{0};
  Atomic<std::int64_t> answered_{0};
  Atomic<std::int64_t> closed_by_peer_{0};
  Atomic<std::int64_t> dropped_idle_{0};
  Atomic<std::int64_t> dropped_slow_reader_{0};
  Atomic<std::int64_t> dropped_oversized_{0};
  Atomic<std::int64_t> closed_by_stop_{0};
};

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_ECHO_SERVER_H_
