// A small Redis client for fairsched coroutines, written on io/: RESP2 (resp.h) over a
// BufferedStream of a TcpStream. RedisConnection is one connection (commands, pipelines);
// RedisPool hands out connections to concurrent coroutines and reconnects with backoff.
// The savegame job uses it as its blob store (examples/savegame/redis_store.h).
//
//   IoResult<RedisConnection<S>> c =
//       co_await RedisConnection<S>::Connect(scheduler, address, coro::DeadlineAfter(1s));
//   IoResult<Reply> r = co_await c.value().Call({"GET", "k"}, coro::DeadlineAfter(100ms));
//   IoResult<std::vector<Reply>> rs =                     // one write, replies in order
//       co_await c.value().Pipeline({{"SET", "a", "1"}, {"INCR", "a"}}, deadline);
//
// Contract:
//   - Every request (Call, Pipeline) has an absolute deadline that bounds it as a whole:
//     writing the commands, flushing, and reading every reply. When it passes the call
//     fails with kTimeout.
//   - A call either returns every reply, or fails; after ANY failure (timeout, IO error,
//     cancellation, a malformed reply, a reply over the limits) the connection is closed,
//     so a late reply can never be taken for the next request's, and every later call on
//     it fails with kClosed. IsOpen() says whether it is still usable. A failed command may
//     or may not have run on the server: the caller settles that (savegame: the fence).
//   - A reply that is not RESP2 fails with IsMalformedReply(error) (kSystem/EPROTO); one
//     over ReplyLimits (bulk length, array length, nesting depth, line, total bytes) with
//     IsReplyTooLarge(error) (kSystem/EMSGSIZE); neither buffers more than the limits allow.
//   - Redis' own errors ("-ERR ...", "-NOSCRIPT ...") are successful calls whose Reply has
//     type kError: the connection stays usable.
//   - One coroutine at a time uses a connection (it is one reader and one writer in turn).
//     Close() may come from any thread (BufferedStream::Close).
//   - RedisPool::Acquire returns an idle open connection or connects a new one; a failed
//     connect is retried after a backoff that doubles from `initial_backoff` to
//     `max_backoff`, until the deadline (then the last error, or kTimeout). Release keeps
//     the connection if it is still open (and the pool has room), else drops it, and if the
//     server ended or reset it, every idle connection too (they died with it). The pool
//     is thread-safe; connections must be released or destroyed before the scheduler stops
//     (Clear() drops the idle ones).
#ifndef FAIRSCHED_EXAMPLES_REDIS_REDIS_CLIENT_H_
#define FAIRSCHED_EXAMPLES_REDIS_REDIS_CLIENT_H_

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coro/lazy.h"
#include "coro/runtime.h"
#include "examples/redis/resp.h"
#include "io/buffered_stream.h"
#include "io/tcp.h"
#include "sync/primitives.h"

namespace fairsched::redis {

// One command: its arguments, the name first.
using Command = std::vector<std::string>;

inline IoError MalformedReplyError() { return IoError(IoErrorCode::kSystem, EPROTO); }
inline IoError ReplyTooLargeError() { return IoError(IoErrorCode::kSystem, EMSGSIZE); }
inline bool IsMalformedReply(const IoError& error) {
  return error.code() == IoErrorCode::kSystem && error.sys_errno() == EPROTO;
}
inline bool IsReplyTooLarge(const IoError& error) {
  return error.code() == IoErrorCode::kSystem && error.sys_errno() == EMSGSIZE;
}

struct RedisClientOptions {
  ReplyLimits limits;
  BufferedStreamOptions buffers;
  std::size_t read_chunk = 16 * 1024;  // bytes asked of the stream per read
};

template <typename Scheduler>
class RedisConnection {
  using Stream = TcpStream<Scheduler>;

 public:
  RedisConnection(Stream stream, RedisClientOptions options)
      : stream_(std::move(stream), options.buffers), options_(options) {}
  RedisConnection(RedisConnection&&) = default;
  RedisConnection& operator=(RedisConnection&&) = default;

  static coro::Lazy<IoResult<RedisConnection>> Connect(Scheduler& scheduler, SocketAddress address,
                                                       TaskDeadline deadline,
                                                       RedisClientOptions options = {}) {
    IoResult<Stream> connected = co_await Stream::Connect(scheduler, address, deadline);
    if (!connected.ok()) co_return connected.error();
    (void)connected.value().SetNoDelay(true);  // requests are small and waited for
    co_return RedisConnection(std::move(connected).value(), options);
  }

  // One command, one reply.
  coro::Lazy<IoResult<Reply>> Call(Command command, TaskDeadline deadline) {
    std::vector<Command> one;
    one.push_back(std::move(command));
    IoResult<std::vector<Reply>> replies = co_await Pipeline(one, deadline);
    if (!replies.ok()) co_return replies.error();
    co_return std::move(replies.value().front());
  }

  // Writes every command in one flush, then reads one reply per command, in order.
  coro::Lazy<IoResult<std::vector<Reply>>> Pipeline(std::span<const Command> commands,
                                                    TaskDeadline deadline) {
    FAIRSCHED_CHECK(!commands.empty(), "a Redis pipeline of no commands");
    if (!open_) co_return IoError(IoErrorCode::kClosed);
    std::string out;
    std::vector<std::string_view> args;
    for (const Command& command : commands) {
      args.assign(command.begin(), command.end());
      AppendCommand(args, &out);
    }
    IoError written = co_await stream_.Write(out, deadline);
    if (written.ok()) written = co_await stream_.Flush(deadline);
    if (!written.ok()) co_return Fail(written);
    std::vector<Reply> replies(commands.size());
    for (Reply& reply : replies) {
      const IoError read = co_await ReadReply(&reply, deadline);
      if (!read.ok()) co_return Fail(read);
    }
    co_return replies;
  }

  bool IsOpen() const { return open_; }
  // The error that closed the connection (kOk while open, or after a plain Close).
  const IoError& failure() const { return failure_; }
  void Close() {
    open_ = false;
    stream_.Close();
  }

 private:
  IoError Fail(IoError error) {
    failure_ = error;
    Close();
    return error;
  }

  // Parses the next reply out of in_, reading more until it is whole.
  coro::Lazy<IoError> ReadReply(Reply* reply, TaskDeadline deadline) {
    while (true) {
      const ParseResult parsed =
          ParseReply(std::string_view(in_).substr(begin_), options_.limits, reply);
      switch (parsed.status) {
        case ParseStatus::kComplete:
          begin_ += parsed.consumed;
          if (begin_ == in_.size()) {
            in_.clear();
            begin_ = 0;
          }
          co_return IoError();
        case ParseStatus::kMalformed:
          co_return MalformedReplyError();
        case ParseStatus::kTooLarge:
          co_return ReplyTooLargeError();
        case ParseStatus::kIncomplete:
          break;
      }
      if (begin_ > 0) {
        in_.erase(0, begin_);
        begin_ = 0;
      }
      const std::size_t old = in_.size();
      in_.resize(old + options_.read_chunk);
      IoResult<std::size_t> n = co_await stream_.ReadSome(
          std::span<char>(in_.data() + old, options_.read_chunk), deadline);
      in_.resize(old + (n.ok() ? n.value() : 0));
      if (!n.ok()) co_return n.error();
    }
  }

  BufferedStream<Stream> stream_;
  RedisClientOptions options_;
  bool open_ = true;
  IoError failure_;
  std::string in_;  // received bytes; in_[begin_..] not parsed yet
  std::size_t begin_ = 0;
};

struct RedisPoolOptions {
  RedisClientOptions client;
  std::chrono::nanoseconds initial_backoff = std::chrono::milliseconds(1);
  std::chrono::nanoseconds max_backoff = std::chrono::milliseconds(100);
  std::size_t max_idle = 1024;  // idle connections kept
};

template <typename Scheduler>
class RedisPool {
 public:
  using Connection = RedisConnection<Scheduler>;

  RedisPool(Scheduler& scheduler, SocketAddress address, RedisPoolOptions options = {})
      : scheduler_(scheduler), address_(address), options_(options) {}
  RedisPool(const RedisPool&) = delete;
  RedisPool& operator=(const RedisPool&) = delete;

  coro::Lazy<IoResult<std::unique_ptr<Connection>>> Acquire(TaskDeadline deadline) {
    {
      MutexLock lock(mu_);
      if (!idle_.empty()) {
        std::unique_ptr<Connection> connection = std::move(idle_.back());
        idle_.pop_back();
        co_return connection;
      }
    }
    std::chrono::nanoseconds backoff = options_.initial_backoff;
    while (true) {
      IoResult<Connection> connected =
          co_await Connection::Connect(scheduler_, address_, deadline, options_.client);
      if (connected.ok()) {
        connects_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
        co_return std::make_unique<Connection>(std::move(connected).value());
      }
      const IoErrorCode code = connected.error().code();
      if (code == IoErrorCode::kTimeout || code == IoErrorCode::kCancelled ||
          code == IoErrorCode::kShutdown) {
        co_return connected.error();
      }
      failed_connects_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
      const TaskDeadline retry = coro::DeadlineAfter(backoff);
      if (retry >= deadline) co_return connected.error();
      const coro::WakeReason slept = co_await coro::SleepUntil(retry);
      if (slept == coro::WakeReason::kCancelled) co_return IoError(IoErrorCode::kCancelled);
      if (slept == coro::WakeReason::kShutdown) co_return IoError(IoErrorCode::kShutdown);
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
  }

  void Release(std::unique_ptr<Connection> connection) {
    if (connection == nullptr) return;
    if (!connection->IsOpen()) {
      // The server closed or reset it: it went away (a restart, a crash), and its other
      // connections with it. Drop them, or the next calls fail on them at once instead of
      // reconnecting with backoff.
      const IoErrorCode code = connection->failure().code();
      if (code == IoErrorCode::kEndOfStream || code == IoErrorCode::kResetByPeer) Clear();
      return;
    }
    MutexLock lock(mu_);
    if (idle_.size() < options_.max_idle) idle_.push_back(std::move(connection));
  }

  // Drops every idle connection (closes them).
  void Clear() {
    MutexLock lock(mu_);
    idle_.clear();
  }

  std::int64_t connects() const { return connects_.load(std::memory_order_relaxed); }
  std::int64_t failed_connects() const { return failed_connects_.load(std::memory_order_relaxed); }

 private:
  Scheduler& scheduler_;
  const SocketAddress address_;
  const RedisPoolOptions options_;
  Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  Atomic<std::int64_t> connects_{0};
  Atomic<std::int64_t> failed_connects_{0};
};

}  // namespace fairsched::redis

#endif  // FAIRSCHED_EXAMPLES_REDIS_REDIS_CLIENT_H_
