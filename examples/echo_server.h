// EchoServer: the talk's coroutine server on io/tcp.h. An accept loop spawns one coroutine
// per connection that reads, processes (echo) and writes, with the limits a public server
// needs, in both protocols:
//   - idle deadline: a peer that sends nothing (or, framed, only part of a frame) for
//     `idle_timeout` is closed (slow-loris);
//   - write deadline: a peer that stops reading is dropped once an answer has waited
//     `write_timeout` for socket buffer space. The server stops reading while it writes, so
//     the per-connection buffer never grows beyond `plain_buffer` bytes (plain) or one
//     maximal frame (framed), whatever the peer does: backpressure, not buffering;
//   - framed only, max frame size: a frame announcing more than `max_frame` bytes
//     disconnects the peer;
//   - Stop: stops accepting, ends every connection (an answer being written may be cut;
//     every answer counted as echoed has been written completely), and closes each
//     connection gracefully (FIN after the answers) so the peer reads all answers first.
// Protocols (EchoServerOptions::protocol):
//   - kPlain (default): whatever bytes arrive are sent back, as they come (each Read's
//     bytes with one Write): nc, socat or any standard echo client works.
//   - kFramed: a frame is a 4-byte little-endian payload length and the payload; the server
//     sends every frame back unchanged. Frames may be pipelined; complete frames in the
//     buffer are echoed with one write.
//
// Thread safety: Start and Stop from a plain thread (not a task of the scheduler); the
// counters from any thread.
#ifndef FAIRSCHED_EXAMPLES_ECHO_SERVER_H_
#define FAIRSCHED_EXAMPLES_ECHO_SERVER_H_

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "examples/connection_end.h"
#include "io/tcp.h"
#include "io/tcp_server.h"
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

enum class EchoProtocol { kPlain, kFramed };

struct EchoServerOptions {
  EchoProtocol protocol = EchoProtocol::kPlain;
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds(30);
  std::chrono::nanoseconds write_timeout = std::chrono::seconds(10);
  std::uint32_t max_frame = 64 * 1024;   // kFramed: payload bytes
  std::size_t plain_buffer = 16 * 1024;  // kPlain: the per-connection buffer (one Read's worth)
  int backlog = 4096;
};

// Counters (monotonic; relaxed snapshots).
struct EchoServerStats {
  std::int64_t accepted = 0;
  std::int64_t open = 0;
  std::int64_t answered = 0;             // frames (kFramed) or Reads (kPlain) echoed completely
  std::int64_t bytes_echoed = 0;         // bytes of those answers
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
      : options_(options),
        server_(
            scheduler, [this](TcpStream<Scheduler> stream) { return Serve(std::move(stream)); },
            TcpServerOptions{.backlog = options.backlog}) {
    FAIRSCHED_CHECK(options.plain_buffer > 0, "EchoServerOptions::plain_buffer must be > 0");
  }
  ~EchoServer() { Stop(); }
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  // Listens on `address` and starts accepting; returns the bound address (port 0 -> the
  // port picked). Once per server.
  IoResult<SocketAddress> Start(const SocketAddress& address) { return server_.Start(address); }

  // Stops accepting, ends every connection (see the file comment) and returns when all of
  // them are closed. Idempotent.
  void Stop() { server_.Stop(); }

  EchoServerStats Stats() const {
    EchoServerStats stats;
    stats.accepted = server_.accepted();
    stats.open = server_.open();
    stats.answered = answered_.load(std::memory_order_relaxed);
    stats.bytes_echoed = bytes_echoed_.load(std::memory_order_relaxed);
    stats.closed_by_peer = closed_by_peer_.load(std::memory_order_relaxed);
    stats.dropped_idle = dropped_idle_.load(std::memory_order_relaxed);
    stats.dropped_slow_reader = dropped_slow_reader_.load(std::memory_order_relaxed);
    stats.dropped_oversized = dropped_oversized_.load(std::memory_order_relaxed);
    stats.closed_by_stop = closed_by_stop_.load(std::memory_order_relaxed);
    return stats;
  }

  // Serves one connection over `stream` in the configured protocol until it ends, and
  // counts how it ended: what each accepted connection gets (then a graceful close). Any
  // type with TcpStream's Read and Write works; the fuzz target (tests/fuzz) drives the
  // protocol in memory through it.
  template <typename Stream>
  coro::Lazy<void> ServeStream(Stream& stream) {
    Atomic<std::int64_t>* outcome;
    if (options_.protocol == EchoProtocol::kFramed) {
      outcome = co_await EchoFrames(stream);
    } else {
      outcome = co_await EchoBytes(stream);
    }
    // Relaxed: statistics (counted before the connection stops counting as open).
    outcome->fetch_add(1, std::memory_order_relaxed);
  }

 private:
  coro::Lazy<void> Serve(TcpStream<Scheduler> stream) {
    // Answers are written as soon as they are complete: do not let Nagle hold a small one
    // back while an earlier one is unacknowledged (Asio's peer does the same).
    (void)stream.SetNoDelay(true);
    co_await ServeStream(stream);
    CloseGracefully(stream);
  }

  // kPlain: echoes each Read's bytes with one Write until the connection ends; returns the
  // counter of how it ended. The buffer is the whole per-connection state: while a Write
  // waits for the peer to read, nothing more is read.
  template <typename Stream>
  coro::Lazy<Atomic<std::int64_t>*> EchoBytes(Stream& stream) {
    std::vector<char> buffer(options_.plain_buffer);
    while (true) {
      IoResult<std::size_t> received =
          co_await stream.Read(buffer, coro::DeadlineAfter(options_.idle_timeout));
      if (!received.ok()) co_return OutcomeOf(received.error(), &dropped_idle_);
      const IoError written =
          co_await stream.Write(std::span<const char>(buffer.data(), received.value()),
                                coro::DeadlineAfter(options_.write_timeout));
      if (!written.ok()) co_return OutcomeOf(written, &dropped_slow_reader_);
      CountAnswers(1, received.value());
    }
  }

  // kFramed: echoes complete frames (see the file comment) until the connection ends or a
  // frame is too large; returns the counter of how it ended.
  template <typename Stream>
  coro::Lazy<Atomic<std::int64_t>*> EchoFrames(Stream& stream) {
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
        CountAnswers(frames, scan - begin);
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
    co_return outcome;
  }

  // Relaxed: statistics only.
  void CountAnswers(std::int64_t answers, std::size_t bytes) {
    answered_.fetch_add(answers, std::memory_order_relaxed);
    bytes_echoed_.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
  }

  // The counter for an error that ends a connection; `timeout_counter` for kTimeout.
  Atomic<std::int64_t>* OutcomeOf(const IoError& error, Atomic<std::int64_t>* timeout_counter) {
    return CounterOfEnd(error, timeout_counter, &closed_by_stop_, &closed_by_peer_);
  }

  const EchoServerOptions options_;
  Atomic<std::int64_t> answered_{0};
  Atomic<std::int64_t> bytes_echoed_{0};
  Atomic<std::int64_t> closed_by_peer_{0};
  Atomic<std::int64_t> dropped_idle_{0};
  Atomic<std::int64_t> dropped_slow_reader_{0};
  Atomic<std::int64_t> dropped_oversized_{0};
  Atomic<std::int64_t> closed_by_stop_{0};
  // Last: destroyed first, it stops every connection while the counters still exist.
  TcpServer<Scheduler> server_;
};

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_ECHO_SERVER_H_
