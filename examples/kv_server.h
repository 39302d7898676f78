// KvServer: a tiny in-memory key-value server whose whole protocol is a few lines on the
// buffered stream (io/buffered_stream.h): ReadLine for commands, ReadExactly for values,
// buffered answers with one Flush per batch of pipelined commands.
//
// Protocol (memcached-like text; lines end with "\n" or "\r\n"):
//   GET <key>                   -> VALUE <n>\n<n bytes>\n   or   NOT_FOUND\n
//   SET <key> <n>\n<n bytes>\n  -> STORED\n
//   DEL <key>                   -> DELETED\n   or   NOT_FOUND\n
//   QUIT                        -> BYE\n, then the server closes the connection
//   anything else               -> ERROR unknown command\n (the connection stays open)
// Limits, each ending the connection (after an error answer where one applies):
//   - a line longer than `max_line`: "ERROR line too long" (the buffer never grows beyond
//     max_line + 1 bytes for it);
//   - a SET with a bad length or one above `max_value`, or a value not followed by its
//     line end: "ERROR bad value" (where the next command starts is unknown);
//   - idle deadline: a command (or a value) not complete within `idle_timeout`;
//   - write deadline: answers waiting `write_timeout` for a peer that does not read.
// Stop ends every connection (io/tcp_server.h).
#ifndef FAIRSCHED_EXAMPLES_KV_SERVER_H_
#define FAIRSCHED_EXAMPLES_KV_SERVER_H_

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "coro/lazy.h"
#include "examples/connection_end.h"
#include "io/buffered_stream.h"
#include "io/byte_stream.h"
#include "io/tcp.h"
#include "io/tcp_server.h"
#include "sync/primitives.h"

namespace fairsched::examples {

struct KvServerOptions {
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds(30);
  std::chrono::nanoseconds write_timeout = std::chrono::seconds(10);
  std::size_t max_line = 1024;
  std::size_t max_value = 1024 * 1024;
};

// Counters (monotonic; relaxed snapshots).
struct KvServerStats {
  std::int64_t accepted = 0;
  std::int64_t open = 0;
  std::int64_t commands = 0;             // command lines read (valid or not)
  std::int64_t closed = 0;               // the peer ended the connection, or QUIT
  std::int64_t dropped_bad_input = 0;    // line too long, bad value
  std::int64_t dropped_idle = 0;         // idle deadline
  std::int64_t dropped_slow_reader = 0;  // write deadline
  std::int64_t closed_by_stop = 0;
};

template <typename Scheduler>
class KvServer {
  using Stream = BufferedStream<TcpStream<Scheduler>>;
  using Counter = Atomic<std::int64_t>;

 public:
  KvServer(Scheduler& scheduler, KvServerOptions options)
      : options_(options), server_(scheduler, [this](TcpStream<Scheduler> stream) {
          return Serve(std::move(stream));
        }) {}
  ~KvServer() { Stop(); }

  IoResult<SocketAddress> Start(const SocketAddress& address) { return server_.Start(address); }
  void Stop() { server_.Stop(); }

  KvServerStats Stats() const {
    return KvServerStats{
        .accepted = server_.accepted(),
        .open = server_.open(),
        .commands = commands_.load(std::memory_order_relaxed),
        .closed = closed_.load(std::memory_order_relaxed),
        .dropped_bad_input = dropped_bad_input_.load(std::memory_order_relaxed),
        .dropped_idle = dropped_idle_.load(std::memory_order_relaxed),
        .dropped_slow_reader = dropped_slow_reader_.load(std::memory_order_relaxed),
        .closed_by_stop = closed_by_stop_.load(std::memory_order_relaxed),
    };
  }

  // Serves one connection's commands over `stream` until it ends and counts how it ended:
  // what each accepted connection gets (then a graceful close), over any ByteStream. The
  // fuzz target (tests/fuzz) drives the protocol in memory through it.
  template <ByteStream Inner>
  coro::Lazy<void> ServeStream(BufferedStream<Inner>& stream) {
    Counter* const outcome = co_await Session(stream);
    outcome->fetch_add(1, std::memory_order_relaxed);  // relaxed: statistics
  }

 private:
  coro::Lazy<void> Serve(TcpStream<Scheduler> tcp) {
    Stream stream(std::move(tcp));
    co_await ServeStream(stream);
    CloseGracefully(stream.stream());
  }

  // Runs commands until the connection ends; returns the counter of how it ended.
  template <ByteStream Inner>
  coro::Lazy<Counter*> Session(BufferedStream<Inner>& stream) {
    while (true) {
      // Answers go out when every pipelined command that arrived has been answered.
      if (const IoError flushed = co_await FlushBeforeWaiting(stream, 0); !flushed.ok()) {
        co_return EndCounter(flushed, &dropped_slow_reader_);
      }
      const TaskDeadline idle = coro::DeadlineAfter(options_.idle_timeout);
      IoResult<std::string_view> line = co_await stream.ReadLine(options_.max_line, idle);
      if (!line.ok()) {
        if (IsTooLong(line.error())) co_return co_await LastAnswer(stream, "ERROR line too long\n");
        co_return EndCounter(line.error(), &dropped_idle_);
      }
      commands_.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistics
      std::string_view rest = line.value();
      const std::string_view command = NextWord(rest);
      // Copied: the line's view ends with the next read (SET reads its value).
      const std::string key(NextWord(rest));
      std::string answer;
      if (command == "GET" && !key.empty() && rest.empty()) {
        answer = Get(key);
      } else if (command == "SET" && !key.empty()) {
        std::size_t size = 0;
        const std::string_view length = NextWord(rest);
        const auto [end, error] =
            std::from_chars(length.data(), length.data() + length.size(), size);
        if (error != std::errc() || end != length.data() + length.size() || !rest.empty() ||
            size > options_.max_value) {
          co_return co_await LastAnswer(stream, "ERROR bad value\n");
        }
        if (const IoError flushed = co_await FlushBeforeWaiting(stream, size); !flushed.ok()) {
          co_return EndCounter(flushed, &dropped_slow_reader_);
        }
        std::string value(size, '\0');
        const IoError read = co_await stream.ReadExactly(value, idle);
        if (!read.ok()) co_return EndCounter(read, &dropped_idle_);
        IoResult<std::string_view> line_end = co_await stream.ReadLine(0, idle);  // empty
        if (!line_end.ok()) {
          if (!IsTooLong(line_end.error())) co_return EndCounter(line_end.error(), &dropped_idle_);
          co_return co_await LastAnswer(stream, "ERROR bad value\n");  // not followed by "\n"
        }
        answer = Set(key, std::move(value));
      } else if (command == "DEL" && !key.empty() && rest.empty()) {
        answer = Delete(key);
      } else if (command == "QUIT" && key.empty()) {
        co_return co_await LastAnswer(stream, "BYE\n", &closed_);
      } else {
        answer = "ERROR unknown command\n";
      }
      const IoError written = co_await stream.Write(answer, WriteDeadline());
      if (!written.ok()) co_return EndCounter(written, &dropped_slow_reader_);
    }
  }

  // Flushes the buffered answers unless the read buffer holds a line end at or after
  // `from` (the next line, or a SET's value and its line end, is complete): a read that
  // waits for the peer never holds answers back, and answers to the commands that arrived
  // before the stream ended are never lost.
  template <ByteStream Inner>
  coro::Lazy<IoError> FlushBeforeWaiting(BufferedStream<Inner>& stream, std::size_t from) {
    const std::string_view buffered = stream.Buffered();
    if (from < buffered.size() && buffered.find('\n', from) != std::string_view::npos) {
      co_return IoError();
    }
    co_return co_await stream.Flush(WriteDeadline());
  }

  // Sends a last answer (with everything buffered before it) and ends the connection.
  template <ByteStream Inner>
  coro::Lazy<Counter*> LastAnswer(BufferedStream<Inner>& stream, std::string_view answer,
                                  Counter* outcome = nullptr) {
    if (outcome == nullptr) outcome = &dropped_bad_input_;
    IoError written = co_await stream.Write(answer, WriteDeadline());
    if (written.ok()) written = co_await stream.Flush(WriteDeadline());
    if (!written.ok()) co_return EndCounter(written, &dropped_slow_reader_);
    co_return outcome;
  }

  std::string Get(const std::string& key) {
    MutexLock lock(mu_);
    auto found = store_.find(key);
    if (found == store_.end()) return "NOT_FOUND\n";
    return "VALUE " + std::to_string(found->second.size()) + "\n" + found->second + "\n";
  }
  std::string Set(const std::string& key, std::string value) {
    MutexLock lock(mu_);
    store_[key] = std::move(value);
    return "STORED\n";
  }
  std::string Delete(const std::string& key) {
    MutexLock lock(mu_);
    return store_.erase(key) > 0 ? "DELETED\n" : "NOT_FOUND\n";
  }

  // The next space-separated word of `text` (removed from it), or empty.
  static std::string_view NextWord(std::string_view& text) {
    const std::size_t start = text.find_first_not_of(' ');
    if (start == std::string_view::npos) {
      text = {};
      return {};
    }
    text.remove_prefix(start);
    const std::size_t end = std::min(text.find(' '), text.size());
    const std::string_view word = text.substr(0, end);
    text.remove_prefix(end);
    if (text.find_first_not_of(' ') == std::string_view::npos) text = {};
    return word;
  }

  TaskDeadline WriteDeadline() const { return coro::DeadlineAfter(options_.write_timeout); }
  Counter* EndCounter(const IoError& error, Counter* timeout) {
    return CounterOfEnd(error, timeout, &closed_by_stop_, &closed_);
  }

  const KvServerOptions options_;
  Mutex mu_;
  std::unordered_map<std::string, std::string> store_;  // guarded by mu_
  Counter commands_{0};
  Counter closed_{0};
  Counter dropped_bad_input_{0};
  Counter dropped_idle_{0};
  Counter dropped_slow_reader_{0};
  Counter closed_by_stop_{0};
  // Last: destroyed first, it stops every connection while the store and counters exist.
  TcpServer<Scheduler> server_;
};

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_KV_SERVER_H_
