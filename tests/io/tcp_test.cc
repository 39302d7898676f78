// The typed suite for the coroutine TCP sockets (io/tcp.h) and the framed echo server built
// on them (examples/echo_server.h) that runs on every platform: EpollBackend and
// IoUringBackend on Linux, IocpBackend as a Windows executable (`--config=mingw`, under
// Wine); the list is chosen in tests/io/io_test_util.h.
//
// Only io/tcp.h's public API on both sides. The misbehaving peers run on a second scheduler
// of their own (peers()), so the scheduler under test counts only its own operations: they
// disconnect mid-message, half-close, never read, never send, send an oversized frame. After
// each scenario the server must still serve a new client. Where the process's fds can be
// counted (Linux), they are back to where they started once the schedulers are gone.
// Linux-only cases (5,000 raw clients, SIGPIPE, a refused epoll watch) are in
// tcp_linux_test.cc. Loopback only; every wait is bounded.
#include "io/tcp.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "examples/echo_server.h"
#include "sched/task_scheduler.h"
#include "tests/io/echo_frames.h"
#include "tests/io/io_test_util.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using examples::EchoServer;
using examples::EchoServerOptions;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Frame;
using testing::OpenFdCount;
using testing::WaitUntilTrue;

// A coroutine client: connects, sends `rounds` frames of `size` bytes and checks each echo.
template <typename Sched>
coro::Lazy<IoError> EchoClient(Sched* scheduler, SocketAddress address, int rounds,
                               std::size_t size) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return connected.error();
  TcpStream<Sched> stream = std::move(connected).value();
  std::string reply;
  for (int i = 0; i < rounds; ++i) {
    const std::string frame = Frame(std::string(size, static_cast<char>('a' + i % 26)));
    IoError written = co_await stream.Write(frame, coro::DeadlineAfter(seconds(10)));
    if (!written.ok()) co_return written;
    reply.assign(frame.size(), '\0');
    IoError read = co_await stream.ReadExactly(reply, coro::DeadlineAfter(seconds(10)));
    if (!read.ok()) co_return read;
    if (reply != frame) co_return IoError(IoErrorCode::kSystem, EBADMSG);
  }
  co_return IoError();
}

template <typename Backend>
class TcpTest : public ::testing::Test {
 protected:
  using Sched = testing::IoTestScheduler<Backend>;

  void SetUp() override { fds_at_start_ = OpenFdCount(); }
  void TearDown() override {
    server_.reset();
    scheduler_.reset();
    peers_.reset();
    EXPECT_EQ(OpenFdCount(), fds_at_start_) << "a file descriptor leaked";
  }

  // The scheduler under test (the server, the coroutine clients under test).
  Sched& scheduler() { return Started(scheduler_, 2); }
  // The peers' scheduler (misbehaving clients, listeners that never accept).
  Sched& peers() { return Started(peers_, 1); }

  SocketAddress StartServer(EchoServerOptions options = {}, const char* host = "127.0.0.1") {
    // This suite's peers speak frames; the plain byte echo is tested in echo_server_test.cc.
    options.protocol = examples::EchoProtocol::kFramed;
    server_ = std::make_unique<EchoServer<Sched>>(scheduler(), options);
    IoResult<SocketAddress> listen_at = SocketAddress::FromHostPort(host, 0);
    EXPECT_TRUE(listen_at.ok());
    IoResult<SocketAddress> bound = server_->Start(listen_at.value());
    EXPECT_TRUE(bound.ok()) << bound.error().Message();
    return bound.value();
  }

  // The server's open connections drop to zero, and a new client is served.
  void ExpectServerHealthy(const SocketAddress& address) {
    EXPECT_TRUE(WaitUntilTrue([&] { return server_->Stats().open == 0; }))
        << "open connections: " << server_->Stats().open;
    const IoError result = coro::Spawn(peers(), EchoClient(&peers(), address, 1, 13)).Get();
    EXPECT_TRUE(result.ok()) << "no longer serving: " << result.Message();
  }

  // A listener on the peers' scheduler that never accepts: connections to it complete in
  // the kernel's backlog and then never see a byte.
  TcpListener<Sched> SilentListener() {
    IoResult<TcpListener<Sched>> listener =
        TcpListener<Sched>::Listen(peers(), SocketAddress::Parse("127.0.0.1:0").value());
    EXPECT_TRUE(listener.ok()) << listener.error().Message();
    return std::move(listener).value();
  }

  std::unique_ptr<Sched> scheduler_;
  std::unique_ptr<Sched> peers_;
  std::unique_ptr<EchoServer<Sched>> server_;
  int fds_at_start_ = 0;

 private:
  static Sched& Started(std::unique_ptr<Sched>& scheduler, int workers) {
    if (scheduler == nullptr) {
      scheduler = std::make_unique<Sched>();
      scheduler->Start(workers);
    }
    return *scheduler;
  }
};

TYPED_TEST_SUITE(TcpTest, testing::IoBackends, testing::BackendNames);

TEST(SocketAddressTest, AddressesParseAndBadOnesAreRejected) {
  IoResult<SocketAddress> v4 = SocketAddress::Parse("127.0.0.1:8080");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4.value().port(), 8080);
  EXPECT_EQ(v4.value().ToString(), "127.0.0.1:8080");
  IoResult<SocketAddress> v6 = SocketAddress::Parse("[::1]:9");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6.value().family(), AF_INET6);
  EXPECT_EQ(v6.value().ToString(), "[::1]:9");
  for (const char* bad :
       {"", "127.0.0.1", "::1:80", "[::1]80", "1.2.3.4:99999", "x:1", "127.0.0.1:", "[::1]:"}) {
    IoResult<SocketAddress> parsed = SocketAddress::Parse(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.error().code(), IoErrorCode::kInvalidAddress);
    }
  }
}

TYPED_TEST(TcpTest, CoroutineClientEchoesOverIpv4AndIpv6) {
  for (const char* host : {"127.0.0.1", "::1"}) {
    SCOPED_TRACE(host);
    const SocketAddress address = this->StartServer({}, host);
    EXPECT_EQ(address.family(), std::string(host) == "::1" ? AF_INET6 : AF_INET);
    std::vector<coro::JoinHandle<IoError>> clients;
    for (int i = 0; i < 8; ++i) {
      clients.push_back(
          coro::Spawn(this->scheduler(), EchoClient(&this->scheduler(), address, 50, 1 + i * 700)));
    }
    for (auto& client : clients) {
      const IoError result = client.Get();
      EXPECT_TRUE(result.ok()) << result.Message();
    }
    // The server counts an answer after its write completes, which may be after the client
    // read it.
    EXPECT_TRUE(WaitUntilTrue([&] { return this->server_->Stats().answered == 8 * 50; }));
    this->ExpectServerHealthy(address);
    this->server_.reset();
  }
}

TYPED_TEST(TcpTest, ConnectRefusedIsAClearError) {
  // A port nobody listens on: listen on a free one, note it, close it. (A plain socket of
  // the seam: a TcpListener's close is asynchronous on epoll, so a connect right after it
  // could still reach the closing listener's backlog and be reset instead of refused.)
  const int probe = internal::OpenListeningSocket(SocketAddress::Parse("127.0.0.1:0").value(), 1);
  ASSERT_GE(probe, 0) << "errno " << -probe;
  IoResult<SocketAddress> address = internal::LocalAddressOf(probe);
  internal::CloseFd(probe);
  ASSERT_TRUE(address.ok()) << address.error().Message();
  const IoError result =
      coro::Spawn(this->scheduler(), EchoClient(&this->scheduler(), address.value(), 1, 1)).Get();
  EXPECT_EQ(result.code(), IoErrorCode::kRefused) << result.Message();
  EXPECT_NE(result.Message().find("refused"), std::string::npos) << result.Message();
}

// A scripted peer: connects, gets `first` echoed as a frame (unless it is empty), sends
// `then_send` as it is, and then either closes at once or waits (10 s at most) for the
// server to close the connection: ok if the server did (end of stream or reset).
template <typename Sched>
coro::Lazy<IoError> ScriptedPeer(Sched* scheduler, SocketAddress address, std::string first,
                                 std::string then_send, bool wait_for_close) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return connected.error();
  TcpStream<Sched> stream = std::move(connected).value();
  if (!first.empty()) {
    const std::string frame = Frame(first);
    IoError written = co_await stream.Write(frame, coro::DeadlineAfter(seconds(10)));
    if (!written.ok()) co_return written;
    std::string reply(frame.size(), '\0');
    IoError read = co_await stream.ReadExactly(reply, coro::DeadlineAfter(seconds(10)));
    if (!read.ok()) co_return read;
    if (reply != frame) co_return IoError(IoErrorCode::kSystem, EBADMSG);
  }
  if (!then_send.empty()) {
    IoError written = co_await stream.Write(then_send, coro::DeadlineAfter(seconds(10)));
    if (!written.ok()) co_return written;
  }
  if (!wait_for_close) co_return IoError();
  char byte;
  IoResult<std::size_t> read =
      co_await stream.Read(std::span<char>(&byte, 1), coro::DeadlineAfter(seconds(10)));
  if (read.ok()) co_return IoError(IoErrorCode::kSystem, EBADMSG);  // data, not a close
  const IoErrorCode code = read.error().code();
  co_return code == IoErrorCode::kEndOfStream || code == IoErrorCode::kResetByPeer
      ? IoError()
      : read.error();
}

TYPED_TEST(TcpTest, PeerDisconnectingMidMessageIsClosed) {
  const SocketAddress address = this->StartServer();
  auto& peers = this->peers();
  for (int cut : {2, 4, 100}) {  // inside the header, after it, inside the payload
    const std::string partial = Frame(std::string(1000, 'x')).substr(0, cut);
    const IoError result =
        coro::Spawn(peers, ScriptedPeer(&peers, address, "first", partial, false)).Get();
    EXPECT_TRUE(result.ok()) << result.Message();
  }
  EXPECT_TRUE(WaitUntilTrue([&] { return this->server_->Stats().closed_by_peer == 3; }));
  this->ExpectServerHealthy(address);
}

// Sends three frames, shuts its sending side down, and must still get every answer, then
// the end of the stream.
template <typename Sched>
coro::Lazy<IoError> HalfClosingPeer(Sched* scheduler, SocketAddress address) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return connected.error();
  TcpStream<Sched> stream = std::move(connected).value();
  std::string frames;
  for (int i = 0; i < 3; ++i) frames += Frame(std::string(100 + i, 'h'));
  IoError written = co_await stream.Write(frames, coro::DeadlineAfter(seconds(10)));
  if (!written.ok()) co_return written;
  IoError shut = stream.Shutdown(ShutdownHow::kWrite);
  if (!shut.ok()) co_return shut;
  std::string reply(frames.size(), '\0');
  IoError read = co_await stream.ReadExactly(reply, coro::DeadlineAfter(seconds(10)));
  if (!read.ok()) co_return read;
  if (reply != frames) co_return IoError(IoErrorCode::kSystem, EBADMSG);
  char byte;
  IoResult<std::size_t> end =
      co_await stream.Read(std::span<char>(&byte, 1), coro::DeadlineAfter(seconds(10)));
  if (end.ok()) co_return IoError(IoErrorCode::kSystem, EBADMSG);
  co_return end.error().code() == IoErrorCode::kEndOfStream ? IoError() : end.error();
}

TYPED_TEST(TcpTest, HalfClosedPeerGetsEveryAnswer) {
  const SocketAddress address = this->StartServer();
  const IoError result =
      coro::Spawn(this->peers(), HalfClosingPeer(&this->peers(), address)).Get();
  EXPECT_TRUE(result.ok()) << result.Message();
  EXPECT_TRUE(WaitUntilTrue([&] { return this->server_->Stats().closed_by_peer == 1; }));
  this->ExpectServerHealthy(address);
}

// Sends large frames without ever reading the answers, until the server drops it (or 20 s
// pass): once the peer's receive buffer and the server's send buffer are full, the server's
// Write waits for space and its write deadline ends the connection. Each Write of the peer
// waits at most 100 ms, so the peer notices the drop while its sends are blocked; a
// timed-out send resumes the same frame where it stopped, so a slow server (a loaded
// machine) never sees a split frame, which it would rightly drop as oversized instead. The
// peer leaves its receive buffer as it is: shrinking it after connecting, below the window
// already advertised, stalled the transfer in about 1 run in 1,000 (the server then waited
// in a read, never in a write). Returns the error that ended the sends (none when the
// server's counter showed the drop first).
template <typename Sched>
coro::Lazy<IoError> NeverReadingPeer(Sched* scheduler, SocketAddress address,
                                     const EchoServer<Sched>* server) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return connected.error();
  TcpStream<Sched> stream = std::move(connected).value();
  const std::string frame = Frame(std::string(60000, 'w'));
  const auto give_up = TaskClock::now() + seconds(20);
  std::size_t sent = 0;  // bytes of the current frame already sent
  while (server->Stats().dropped_slow_reader == 0 && TaskClock::now() < give_up) {
    IoError written = co_await stream.Write(std::span<const char>(frame).subspan(sent),
                                            coro::DeadlineAfter(milliseconds(100)));
    if (written.ok()) {
      sent = 0;
    } else if (written.code() == IoErrorCode::kTimeout) {
      sent += written.bytes_done();
    } else {
      co_return written;  // the server closed the connection (a reset or EPIPE)
    }
  }
  co_return IoError();
}

TYPED_TEST(TcpTest, PeerThatNeverReadsIsDroppedAfterTheWriteDeadline) {
  EchoServerOptions options;
  options.write_timeout = milliseconds(200);
  const SocketAddress address = this->StartServer(options);
  const IoError ended =
      coro::Spawn(this->peers(), NeverReadingPeer(&this->peers(), address, this->server_.get()))
          .Get();
  const bool dropped =
      WaitUntilTrue([&] { return this->server_->Stats().dropped_slow_reader == 1; });
  const examples::EchoServerStats stats = this->server_->Stats();
  EXPECT_TRUE(dropped) << "the peer's sends ended with: "
                       << (ended.ok() ? "(no error)" : ended.Message())
                       << "; the server counted closed_by_peer " << stats.closed_by_peer
                       << ", dropped_oversized " << stats.dropped_oversized << ", dropped_idle "
                       << stats.dropped_idle;
  this->ExpectServerHealthy(address);
}

TYPED_TEST(TcpTest, PeerThatNeverSendsIsClosedAtTheIdleDeadline) {
  EchoServerOptions options;
  options.idle_timeout = milliseconds(200);
  const SocketAddress address = this->StartServer(options);
  auto& peers = this->peers();
  const auto start = TaskClock::now();
  coro::JoinHandle<IoError> silent = coro::Spawn(peers, ScriptedPeer(&peers, address, "", "", true));
  coro::JoinHandle<IoError> slow_loris =  // never finishes its frame
      coro::Spawn(peers, ScriptedPeer(&peers, address, "", Frame("abcdef").substr(0, 6), true));
  EXPECT_TRUE(silent.Get().ok());
  EXPECT_TRUE(slow_loris.Get().ok());
  EXPECT_GE(TaskClock::now() - start, milliseconds(150));
  this->ExpectServerHealthy(address);
  EXPECT_EQ(this->server_->Stats().dropped_idle, 2);
}

TYPED_TEST(TcpTest, OversizedFrameDisconnects) {
  EchoServerOptions options;
  options.max_frame = 1024;
  const SocketAddress address = this->StartServer(options);
  std::string header(examples::kEchoHeaderSize, '\0');
  examples::EncodeFrameLength(1u << 30, header.data());
  auto& peers = this->peers();
  // The maximum is fine; one byte more than any buffer could hold is not.
  const IoError result = coro::Spawn(peers, ScriptedPeer(&peers, address, std::string(1024, 'm'),
                                                         header + "xyz", true))
                             .Get();
  EXPECT_TRUE(result.ok()) << result.Message();
  this->ExpectServerHealthy(address);
  EXPECT_EQ(this->server_->Stats().dropped_oversized, 1);
}

// Sends numbered frames and reads each answer until the connection ends. Counts the
// answers it got complete; `clean_end` tells whether the end came between two answers.
template <typename Sched>
coro::Lazy<IoError> CountingClient(Sched* scheduler, SocketAddress address, int id,
                                   std::atomic<int>* answers, bool* clean_end) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return connected.error();
  TcpStream<Sched> stream = std::move(connected).value();
  for (int i = 0;; ++i) {
    const std::string frame = Frame(std::to_string(id) + ":" + std::to_string(i));
    IoError written = co_await stream.Write(frame, coro::DeadlineAfter(seconds(10)));
    if (!written.ok()) co_return IoError();  // the server closed while we sent
    std::string reply(frame.size(), '\0');
    IoResult<std::size_t> first = co_await stream.Read(reply, coro::DeadlineAfter(seconds(10)));
    if (!first.ok()) {  // nothing of this answer came: closed between two answers
      *clean_end = true;
      co_return IoError();
    }
    const std::span<char> rest(reply.data() + first.value(), reply.size() - first.value());
    IoError read = co_await stream.ReadExactly(rest, coro::DeadlineAfter(seconds(10)));
    if (!read.ok()) co_return IoError();  // cut mid-answer
    if (reply != frame) co_return IoError(IoErrorCode::kSystem, EBADMSG);
    answers->fetch_add(1);
  }
}

TYPED_TEST(TcpTest, StopClosesOpenConnectionsAndLosesNoAnsweredRequest) {
  const SocketAddress address = this->StartServer();
  constexpr int kClients = 8;
  // Stop comes once every client has some answers, so every connection is accepted and
  // served when it is stopped.
  std::vector<std::atomic<int>> answers(kClients);
  bool clean_ends[kClients] = {};
  std::vector<coro::JoinHandle<IoError>> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.push_back(coro::Spawn(this->peers(), CountingClient(&this->peers(), address, c,
                                                                &answers[c], &clean_ends[c])));
  }
  EXPECT_TRUE(WaitUntilTrue([&] {
    for (const std::atomic<int>& count : answers) {
      if (count.load() < 50) return false;
    }
    return true;
  }));
  this->server_->Stop();
  int received = 0;
  int clean = 0;
  for (int c = 0; c < kClients; ++c) {
    const IoError result = clients[c].Get();
    EXPECT_TRUE(result.ok()) << "client " << c << ": " << result.Message();
    received += answers[c].load();
    clean += clean_ends[c] ? 1 : 0;
  }
  const examples::EchoServerStats stats = this->server_->Stats();
  EXPECT_EQ(stats.open, 0);
  EXPECT_EQ(stats.closed_by_stop, kClients);
  // Every answer the server counted reached its client, complete.
  EXPECT_EQ(received, stats.answered);
  EXPECT_GE(clean, kClients - 1);  // at most one answer cut mid-write
}

// Connects, then waits in a Read that never gets data (until `deadline`, a cancel or
// Stop). Fails with EBUSY if the backend still holds more operations after Read returned
// than before it started.
template <typename Sched>
coro::Lazy<IoError> BlockedRead(Sched* scheduler, SocketAddress address, TaskDeadline deadline,
                                std::atomic<bool>* reading) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return connected.error();
  TcpStream<Sched> stream = std::move(connected).value();
  const std::int64_t live_before = scheduler->io().LiveCount();
  char buffer[16];
  reading->store(true);
  IoResult<std::size_t> read = co_await stream.Read(buffer, deadline);
  // (Stop also ends an epoll socket's standing watch: then there are fewer.)
  if (scheduler->io().LiveCount() > live_before) co_return IoError(IoErrorCode::kSystem, EBUSY);
  co_return read.ok() ? IoError() : read.error();
}

TYPED_TEST(TcpTest, CancellingABlockedReadReleasesTheOperation) {
  TcpListener<typename TestFixture::Sched> silent = this->SilentListener();
  std::atomic<bool> reading{false};
  coro::JoinHandle<IoError> reader = coro::Spawn(
      this->scheduler(), BlockedRead(&this->scheduler(), silent.LocalAddress().value(),
                                     kTaskDeadlineInfinite, &reading));
  ASSERT_TRUE(WaitUntilTrue([&] { return reading.load(); }));
  std::this_thread::sleep_for(milliseconds(20));  // let it block in the backend
  EXPECT_FALSE(reader.IsDone());
  EXPECT_TRUE(reader.Cancel());
  const IoError result = reader.Get();
  EXPECT_EQ(result.code(), IoErrorCode::kCancelled) << result.Message();
  EXPECT_TRUE(WaitUntilTrue([&] { return this->scheduler().io().LiveCount() == 0; }));
}

// Regression test: the spawn deadline ended a blocked Read on epoll (a
// cancellable wait) but not on io_uring, whose operation waits uncancellably for its final
// completion: seconds later it was still blocked. Now the deadline requests the
// cancellation on every backend: the op is cancelled, released, and Read returns kCancelled.
TYPED_TEST(TcpTest, SpawnDeadlineEndsABlockedRead) {
  TcpListener<typename TestFixture::Sched> silent = this->SilentListener();
  std::atomic<bool> reading{false};
  const auto start = TaskClock::now();
  coro::JoinHandle<IoError> reader = coro::Spawn(
      this->scheduler(),
      BlockedRead(&this->scheduler(), silent.LocalAddress().value(), kTaskDeadlineInfinite,
                  &reading),
      coro::SpawnOptions{.deadline = TaskClock::now() + milliseconds(200)});
  const bool ended = reader.WaitFor(seconds(5));
  if (!ended) reader.Cancel();  // release it, so the test fails instead of hanging
  EXPECT_TRUE(ended) << "a Read with no deadline of its own outlived the spawn deadline";
  const IoError result = reader.Get();
  EXPECT_TRUE(reading.load());
  EXPECT_EQ(result.code(), IoErrorCode::kCancelled) << result.Message();
  EXPECT_GE(TaskClock::now() - start, milliseconds(200));
  EXPECT_TRUE(WaitUntilTrue([&] { return this->scheduler().io().LiveCount() == 0; }));
}

TYPED_TEST(TcpTest, ReadDeadlineIsATimeout) {
  TcpListener<typename TestFixture::Sched> silent = this->SilentListener();
  std::atomic<bool> reading{false};
  const auto start = TaskClock::now();
  const IoError result =
      coro::Spawn(this->scheduler(),
                  BlockedRead(&this->scheduler(), silent.LocalAddress().value(),
                              coro::DeadlineAfter(milliseconds(100)), &reading))
          .Get();
  EXPECT_EQ(result.code(), IoErrorCode::kTimeout) << result.Message();
  EXPECT_GE(TaskClock::now() - start, milliseconds(100));
  EXPECT_TRUE(WaitUntilTrue([&] { return this->scheduler().io().LiveCount() == 0; }));
}

TYPED_TEST(TcpTest, SchedulerStopEndsABlockedReadWithShutdown) {
  TcpListener<typename TestFixture::Sched> silent = this->SilentListener();
  std::atomic<bool> reading{false};
  coro::JoinHandle<IoError> reader = coro::Spawn(
      this->scheduler(), BlockedRead(&this->scheduler(), silent.LocalAddress().value(),
                                     kTaskDeadlineInfinite, &reading));
  ASSERT_TRUE(WaitUntilTrue([&] { return reading.load(); }));
  std::this_thread::sleep_for(milliseconds(20));
  this->scheduler().Stop();
  ASSERT_TRUE(reader.IsDone());
  const IoError result = reader.Get();
  EXPECT_EQ(result.code(), IoErrorCode::kShutdown) << result.Message();
}

template <typename Sched>
coro::Lazy<IoError> AcceptOnce(TcpListener<Sched>* listener) {
  IoResult<TcpStream<Sched>> accepted = co_await listener->Accept(kTaskDeadlineInfinite);
  co_return accepted.ok() ? IoError() : accepted.error();
}

TYPED_TEST(TcpTest, SchedulerStopEndsABlockedAcceptWithShutdown) {
  using Sched = typename TestFixture::Sched;
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(this->scheduler(), SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok()) << listener.error().Message();
  coro::JoinHandle<IoError> accept =
      coro::Spawn(this->scheduler(), AcceptOnce(&listener.value()));
  std::this_thread::sleep_for(milliseconds(50));  // let it block in the backend
  EXPECT_FALSE(accept.IsDone());
  this->scheduler().Stop();
  EXPECT_EQ(accept.Get().code(), IoErrorCode::kShutdown);
  listener.value().Close();
}

// SetNoDelay's value as the socket reports it (getsockopt) after each of SetNoDelay(true),
// (false).
template <typename Sched>
coro::Lazy<std::vector<int>> NoDelayAfterEachSet(Sched* scheduler, SocketAddress address) {
  std::vector<int> seen;
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return seen;
  TcpStream<Sched> stream = std::move(connected).value();
  for (const bool on : {true, false}) {
    if (!stream.SetNoDelay(on).ok()) co_return seen;
    // Starts from -1: Winsock (and Wine) may write a yes/no option such as TCP_NODELAY as one
    // byte; GetSocketOption must still return the whole value (0 after SetNoDelay(false)).
    int value = -1;
    if (internal::GetSocketOption(stream.fd(), internal::SocketOption::kNoDelay, &value) != 0) {
      co_return seen;
    }
    seen.push_back(value != 0 ? 1 : 0);
  }
  co_return seen;
}

TYPED_TEST(TcpTest, SetNoDelayReachesTheSocket) {
  TcpListener<typename TestFixture::Sched> silent = this->SilentListener();
  const std::vector<int> seen =
      coro::Spawn(this->scheduler(),
                  NoDelayAfterEachSet(&this->scheduler(), silent.LocalAddress().value()))
          .Get();
  EXPECT_EQ(seen, (std::vector<int>{1, 0}));
}

// Echo rounds whose reads race tiny deadlines against the answer (the timed-out read is
// released, then the answer is read by the next one), while the test thread cancels some
// of these coroutines at random points. Every coroutine ends cleanly (ok, or kCancelled
// when cancelled), no data is mixed up, and the backend ends with no live operation.
template <typename Sched>
coro::Lazy<IoError> RacingClient(Sched* scheduler, SocketAddress address, int rounds, int seed) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return connected.error();
  TcpStream<Sched> stream = std::move(connected).value();
  std::uint32_t random = static_cast<std::uint32_t>(seed) * 2654435761u + 1;
  for (int i = 0; i < rounds; ++i) {
    const std::string frame = Frame(std::to_string(seed) + "/" + std::to_string(i));
    IoError written = co_await stream.Write(frame, coro::DeadlineAfter(seconds(10)));
    if (!written.ok()) co_return written;
    std::string reply(frame.size(), '\0');
    std::size_t done = 0;
    while (done < reply.size()) {
      random = random * 1103515245u + 12345u;
      const auto wait = std::chrono::microseconds((random >> 16) % 40);  // often too short
      IoResult<std::size_t> n = co_await stream.Read(
          std::span<char>(reply.data() + done, reply.size() - done), coro::DeadlineAfter(wait));
      if (!n.ok()) {
        if (n.error().code() == IoErrorCode::kTimeout) continue;
        co_return n.error();
      }
      done += n.value();
    }
    if (reply != frame) co_return IoError(IoErrorCode::kSystem, EBADMSG);
  }
  co_return IoError();
}

TYPED_TEST(TcpTest, ReadsRacingDeadlinesAndCancelsStayConsistent) {
  const SocketAddress address = this->StartServer();
  const int clients = 16;
  const int rounds = static_cast<int>(testing::StressIterations(100, 5));
  std::vector<coro::JoinHandle<IoError>> handles;
  for (int c = 0; c < clients; ++c) {
    handles.push_back(
        coro::Spawn(this->scheduler(), RacingClient(&this->scheduler(), address, rounds, c)));
  }
  // Cancel every fourth client after a while (at whatever point it is).
  std::this_thread::sleep_for(milliseconds(5));
  for (int c = 0; c < clients; c += 4) handles[c].Cancel();
  for (int c = 0; c < clients; ++c) {
    const IoError result = handles[c].Get();
    if (c % 4 == 0) {
      EXPECT_TRUE(result.ok() || result.code() == IoErrorCode::kCancelled) << result.Message();
    } else {
      EXPECT_TRUE(result.ok()) << "client " << c << ": " << result.Message();
    }
  }
  this->ExpectServerHealthy(address);
  this->server_.reset();
  EXPECT_TRUE(WaitUntilTrue([&] { return this->scheduler().io().LiveCount() == 0; }))
      << "live ops: " << this->scheduler().io().LiveCount();
}

}  // namespace
}  // namespace fairsched
