// ChatRoom and ChatServer: a line-based chat server written on the public toolkit only
// (TcpServer, BufferedStream, coro::Channel; TLS in examples/chat_tls.h), as a team would
// write one. The binary is
// examples/chat_server.cc; tests/io/chat_server_test.cc drives it with a flooding client,
// a slow reader and a listen-only client.
//
// Protocol (one line = bytes up to '\n', a trailing '\r' dropped):
//   - Every line a client sends goes to every other client as "<name>: <line>\n". A new
//     client is named "guest<N>"; "/nick NAME" renames it (1-32 letters, digits, '_', '-'),
//     answered "* you are NAME\n" or "* bad name\n". "/quit" ends the session.
//   - A line longer than ChatOptions::max_line is answered "* line too long\n" and the
//     client is disconnected (the stream cannot find the next line start).
//
// How it is built (one reader and one writer coroutine per client, one broadcaster):
//   - The session's coroutine reads lines and sends each into the room's channel
//     (room_queue lines). When the broadcaster falls behind the channel is full and the
//     reader waits: a client that floods is slowed down by backpressure down to TCP, it is
//     not dropped, and every client gets its turn (the reads spend the coroutine's ready
//     budget, coro/budget.h, so a client whose lines are all buffered yields regularly).
//   - The broadcaster takes each line from the room channel and puts it into every other
//     client's outbox (a Channel of client_queue lines). When an outbox is full it waits
//     for room, at most slow_reader_grace: a client whose outbox stays full that long is
//     a slow reader and is dropped (its outbox closed, its writer cancelled), so a client
//     that does not read holds the room back at most once, for that long. (Dropping at the
//     first full outbox would also drop a client that reads but whose writer was not yet
//     run: a woken coroutine starts behind the tasks already ready.)
//   - The client's writer coroutine drains its outbox into the stream's write buffer and
//     flushes when the outbox is empty, each flush bounded by write_timeout. When the
//     outbox is closed (dropped, or the session ends) or a write fails it closes the
//     stream, which ends the reader's pending read (kClosed).
//   - idle_timeout (if set) drops a client when no bytes have moved in either direction
//     for that long: a client that only listens stays while the room talks.
#ifndef FAIRSCHED_EXAMPLES_CHAT_SERVER_H_
#define FAIRSCHED_EXAMPLES_CHAT_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coro/channel.h"
#include "coro/lazy.h"
#include "coro/spawn.h"
#include "io/buffered_stream.h"
#include "io/byte_stream.h"
#include "io/tcp.h"
#include "io/tcp_server.h"
#include "sync/primitives.h"

namespace fairsched {

struct ChatOptions {
  std::size_t max_line = 1024;     // bytes; longer: "* line too long" and disconnect
  std::size_t client_queue = 512;  // lines waiting for one client (see slow_reader_grace)
  // A client whose queue stays full this long is dropped as a slow reader; meanwhile the
  // room waits for it (so one slow client delays the room by at most this, once).
  std::chrono::nanoseconds slow_reader_grace = std::chrono::milliseconds(500);
  std::size_t room_queue = 1024;   // lines waiting for the broadcaster; full: readers wait
  std::chrono::nanoseconds write_timeout = std::chrono::seconds(5);  // one flush, at most
  std::chrono::nanoseconds idle_timeout{0};                          // 0: none
  // SO_SNDBUF per client (bytes; 0: the system's autotuning, up to megabytes per client).
  // With the outbox it bounds what one client that does not read can hold.
  int send_buffer = 0;
};

// Counters, from any thread (relaxed snapshots of monotonic counts).
struct ChatStats {
  std::int64_t open = 0;  // sessions running (joined - left)
  std::int64_t joined = 0;
  std::int64_t left = 0;
  std::int64_t lines_in = 0;             // chat lines received from clients
  std::int64_t lines_out = 0;            // lines queued to clients' outboxes
  std::int64_t dropped_slow_reader = 0;  // outbox full
  std::int64_t dropped_long_line = 0;
};

namespace internal {
// True for a name "/nick" accepts.
inline bool IsChatName(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}
}  // namespace internal

class ChatRoom {
 public:
  explicit ChatRoom(ChatOptions options = {}) : options_(options), room_(options.room_queue) {}
  ChatRoom(const ChatRoom&) = delete;
  ChatRoom& operator=(const ChatRoom&) = delete;

  // The broadcaster: spawn it once on the scheduler before the first session; it returns
  // after Close().
  coro::Lazy<void> Broadcast() {
    while (true) {
      coro::Received<Line> line = co_await room_.Receive();
      if (!line.ok()) co_return;  // closed: the server is shutting down
      std::vector<std::shared_ptr<Member>> members;
      {
        MutexLock lock(mutex_);
        members.reserve(members_.size());
        for (const auto& [id, member] : members_) {
          if (id != line->from) members.push_back(member);
        }
      }
      for (const std::shared_ptr<Member>& member : members) {
        coro::ChannelStatus status = member->outbox.TrySend(line->text);
        if (status == coro::ChannelStatus::kFull) {
          // Full: wait for its writer, at most slow_reader_grace. Waiting (not dropping at
          // once) lets a writer that was only not scheduled yet catch up; it runs while
          // this wait has the broadcaster suspended.
          status = co_await member->outbox.Send(
              line->text, coro::DeadlineAfter(options_.slow_reader_grace));
        }
        if (status == coro::ChannelStatus::kOk) {
          Count(lines_out_);
        } else if (status == coro::ChannelStatus::kDeadline && !member->dropped.exchange(true)) {
          // Its writer ends without sending what is queued: the cancel ends a flush that
          // waits for the client to read, the close a wait for the next line.
          member->outbox.Close();
          member->writer.Cancel();
          Count(dropped_slow_reader_);
        }
      }
    }
  }

  // Ends the broadcaster (sessions still running end when their streams do).
  void Close() { room_.Close(); }

  // One client's session over a connected TCP stream: PrepareTcp, then Serve.
  template <typename Scheduler>
  coro::Lazy<void> ServeTcp(TcpStream<Scheduler> stream) {
    PrepareTcp(stream);
    return Serve(std::move(stream));
  }

  // The per-connection socket settings: the idle timeout (bytes in either direction
  // refresh it) and the send buffer. (A failure only means the socket is already closed;
  // the session then ends at its first read.)
  template <typename Scheduler>
  void PrepareTcp(TcpStream<Scheduler>& stream) const {
    if (options_.idle_timeout.count() > 0) (void)stream.SetIdleTimeout(options_.idle_timeout);
    if (options_.send_buffer > 0) (void)stream.SetSendBufferSize(options_.send_buffer);
  }

  // One client's session over a connected ByteStream (a TcpStream, or a TlsStream after
  // its handshake: PrepareTcp its TcpStream first); returns when the client has left or
  // was dropped.
  template <typename Stream>
  coro::Lazy<void> Serve(Stream stream) {
    auto member = std::make_shared<Member>(options_.client_queue);
    BufferedStream<Stream> buffered(std::move(stream));
    // The writer gets the member by pointer: this frame owns it until the writer is joined
    // (a shared_ptr in the writer's frame would form a cycle with member->writer).
    coro::JoinHandle<void> writer = coro::SpawnHere(Write(&buffered, member.get()));
    member->writer = writer.Ref();
    {
      MutexLock lock(mutex_);  // publishes the member, its writer included, to Broadcast
      member->id = next_id_++;
      member->name = "guest" + std::to_string(member->id);
      members_.emplace(member->id, member);
    }
    Count(joined_);
    co_await Read(&buffered, member.get());
    {
      MutexLock lock(mutex_);
      members_.erase(member->id);
    }
    member->outbox.Close();  // the writer sends what is queued, then closes the stream
    co_await std::move(writer);
    Count(left_);
  }

  ChatStats Stats() const {
    ChatStats stats;
    stats.joined = joined_.load(std::memory_order_relaxed);
    stats.left = left_.load(std::memory_order_relaxed);
    stats.open = stats.joined - stats.left;
    stats.lines_in = lines_in_.load(std::memory_order_relaxed);
    stats.lines_out = lines_out_.load(std::memory_order_relaxed);
    stats.dropped_slow_reader = dropped_slow_reader_.load(std::memory_order_relaxed);
    stats.dropped_long_line = dropped_long_line_.load(std::memory_order_relaxed);
    return stats;
  }

 private:
  using Text = std::shared_ptr<const std::string>;
  struct Line {
    std::uint64_t from;
    Text text;
  };
  struct Member {
    explicit Member(std::size_t queue) : outbox(queue) {}
    std::uint64_t id = 0;
    std::string name;  // the session's coroutine only
    coro::Channel<Text> outbox;
    coro::CoroutineRef writer;  // set before the member is published
    // Set once by the broadcaster, before it closes the outbox and cancels the writer; the
    // writer reads it to skip sending what is queued. Only a hint (a writer that misses it
    // still stops at the close or the cancel), so relaxed is enough.
    Atomic<bool> dropped{false};
  };

  static Text Say(std::string text) { return std::make_shared<const std::string>(std::move(text)); }

  template <typename Stream>
  coro::Lazy<void> Read(BufferedStream<Stream>* stream, Member* member) {
    while (true) {
      IoResult<std::string_view> line = co_await stream->ReadLine(options_.max_line, kTaskDeadlineInfinite);
      if (!line.ok()) {
        if (IsTooLong(line.error())) {
          Count(dropped_long_line_);
          member->outbox.TrySend(Say("* line too long\n"));
        }
        co_return;  // the end of the stream, an error, the idle timeout or a drop
      }
      const std::string_view text = line.value();
      if (text == "/quit") co_return;
      if (text.starts_with("/nick ")) {
        const std::string_view name = text.substr(6);
        if (internal::IsChatName(name)) member->name = std::string(name);
        member->outbox.TrySend(Say(internal::IsChatName(name) ? "* you are " + member->name + "\n"
                                                               : std::string("* bad name\n")));
        continue;
      }
      Count(lines_in_);
      Line said{member->id, Say(member->name + ": " + std::string(text) + "\n")};
      // Backpressure: waits while the broadcaster is behind. Fails only when the room is
      // closed or the session cancelled (the server's shutdown deadline).
      const coro::ChannelStatus sent = co_await room_.Send(std::move(said));
      if (sent != coro::ChannelStatus::kOk) co_return;
    }
  }

  template <typename Stream>
  coro::Lazy<void> Write(BufferedStream<Stream>* stream, Member* member) {
    while (true) {
      coro::Received<Text> text = member->outbox.TryReceive();
      if (!text.ok() && text.status() == coro::ChannelStatus::kEmpty) {
        // Nothing more queued: send what is buffered, then wait for the next line.
        if (stream->Unflushed() > 0) {
          const IoError flushed = co_await stream->Flush(coro::DeadlineAfter(options_.write_timeout));
          if (!flushed.ok()) break;
        }
        text = co_await member->outbox.Receive();
      }
      if (!text.ok() || member->dropped.load(std::memory_order_relaxed)) break;
      const IoError written = co_await stream->Write(**text, coro::DeadlineAfter(options_.write_timeout));
      if (!written.ok()) break;
    }
    if (stream->Unflushed() > 0 && !member->dropped.load(std::memory_order_relaxed)) {
      (void)co_await stream->Flush(coro::DeadlineAfter(options_.write_timeout));
    }
    member->outbox.Close();
    stream->Close();  // ends the reader's pending read, if the session is still reading
  }

  static void Count(Atomic<std::int64_t>& counter) {
    counter.fetch_add(1, std::memory_order_relaxed);  // a statistic: no ordering needed
  }

  const ChatOptions options_;
  coro::Channel<Line> room_;
  Mutex mutex_;  // members_ and next_id_
  std::unordered_map<std::uint64_t, std::shared_ptr<Member>> members_;
  std::uint64_t next_id_ = 1;
  Atomic<std::int64_t> joined_{0};
  Atomic<std::int64_t> left_{0};
  Atomic<std::int64_t> lines_in_{0};
  Atomic<std::int64_t> lines_out_{0};
  Atomic<std::int64_t> dropped_slow_reader_{0};
  Atomic<std::int64_t> dropped_long_line_{0};
};

// The room served over TCP: a TcpServer whose sessions are the room's, and the room's
// broadcaster. Shutdown(grace) from a plain thread ends every session (TcpServer's
// graceful shutdown: the read sides are shut, so each session leaves as if its client had
// closed) and then the broadcaster. `session` runs each connection; the default serves it
// in plain text (ChatRoom::ServeTcp); examples/chat_tls.h has one that runs TLS first.
template <typename Scheduler>
class ChatServer {
 public:
  using Session = std::function<coro::Lazy<void>(ChatRoom&, TcpStream<Scheduler>)>;

  explicit ChatServer(Scheduler& scheduler, ChatOptions options = {},
                      TcpServerOptions server_options = {}, Session session = PlainSession())
      : room_(options),
        session_(std::move(session)),
        server_(
            scheduler,
            [this](TcpStream<Scheduler> stream) { return session_(room_, std::move(stream)); },
            server_options),
        broadcaster_(coro::Spawn(scheduler, room_.Broadcast(),
                                 coro::SpawnOptions{.child_of_current = false})) {}
  ~ChatServer() { Shutdown(std::chrono::seconds(0)); }
  ChatServer(const ChatServer&) = delete;
  ChatServer& operator=(const ChatServer&) = delete;

  static Session PlainSession() {
    return [](ChatRoom& room, TcpStream<Scheduler> stream) {
      return room.ServeTcp(std::move(stream));
    };
  }

  IoResult<SocketAddress> Start(const SocketAddress& address) { return server_.Start(address); }

  void Shutdown(std::chrono::nanoseconds grace) {
    server_.Shutdown(grace);
    room_.Close();
    if (broadcaster_.IsValid()) broadcaster_.Get();
  }
  // Shutdown with a grace of two seconds (what the example program does at a signal).
  void Stop() { Shutdown(std::chrono::seconds(2)); }

  ChatStats Stats() const { return room_.Stats(); }

 private:
  ChatRoom room_;
  const Session session_;
  TcpServer<Scheduler> server_;
  coro::JoinHandle<void> broadcaster_;
};

}  // namespace fairsched

#endif  // FAIRSCHED_EXAMPLES_CHAT_SERVER_H_
