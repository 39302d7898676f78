// One typed suite for the coroutine TCP sockets (io/tcp.h) and the echo server built on them
// (examples/echo_server.h), over both backends: EpollBackend and IoUringBackend.
//
// The misbehaving peers are plain blocking sockets on the test thread (independent of the
// code under test): they disconnect mid-message, half-close, never read, never send, send an
// oversized frame, or come 5,000 at once. After each scenario the server must still serve a
// new client, and once the scheduler is gone the process's open fds (/proc/self/fd) are back
// to where they started. Loopback only; every wait is bounded.
#include "io/tcp.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "coro/runtime.h"
#include "coro/task.h"
#include "examples/echo_server.h"
#include "io/epoll_backend.h"
#include "io/io_uring_backend.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"
#include "tests/io/raw_client.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using examples::EchoServer;
using examples::EchoServerOptions;
using std::chrono::milliseconds;
using std::chrono::seconds;

template <typename Backend>
using Scheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;

using testing::OpenFdCount;
using testing::RawClient;
using testing::WaitUntilTrue;

std::string Frame(const std::string& payload) {
  std::string frame(examples::kEchoHeaderSize, '\0');
  examples::EncodeFrameLength(static_cast<std::uint32_t>(payload.size()), frame.data());
  return frame + payload;
}

bool FramedRoundTrip(RawClient& client, const std::string& payload) {
  return client.RoundTrip(Frame(payload));
}

template <typename Backend>
class TcpTest : public ::testing::Test {
 protected:
  using Sched = Scheduler<Backend>;

  void SetUp() override { fds_at_start_ = OpenFdCount(); }
  void TearDown() override {
    server_.reset();
    scheduler_.reset();
    EXPECT_EQ(OpenFdCount(), fds_at_start_) << "a file descriptor leaked";
  }

  Sched& scheduler() {
    if (scheduler_ == nullptr) {
      scheduler_ = std::make_unique<Sched>();
      scheduler_->Start(2);
    }
    return *scheduler_;
  }

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
    RawClient client(address);
    EXPECT_TRUE(FramedRoundTrip(client, "still serving"));
  }

  std::unique_ptr<Sched> scheduler_;
  std::unique_ptr<EchoServer<Sched>> server_;
  int fds_at_start_ = 0;
};

using Backends = ::testing::Types<EpollBackend, IoUringBackend>;
TYPED_TEST_SUITE(TcpTest, Backends);

// A coroutine client: connects, sends `rounds` frames and checks each echo.
template <typename Sched>
coro::Task<IoError> EchoClient(Sched* scheduler, SocketAddress address, int rounds,
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
  // A port nobody listens on: bind one, note it, close it.
  const int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  socklen_t length = sizeof(any);
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&any), &length);
  ::close(probe);
  const SocketAddress address =
      SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&any), sizeof(any));
  const IoError result =
      coro::Spawn(this->scheduler(), EchoClient(&this->scheduler(), address, 1, 1)).Get();
  EXPECT_EQ(result.code(), IoErrorCode::kRefused) << result.Message();
  EXPECT_NE(result.Message().find("refused"), std::string::npos) << result.Message();
}

TYPED_TEST(TcpTest, AddressesParseAndBadOnesAreRejected) {
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

TYPED_TEST(TcpTest, PeerDisconnectingMidMessageIsClosed) {
  const SocketAddress address = this->StartServer();
  for (int cut : {2, 4, 100}) {  // inside the header, after it, inside the payload
    RawClient client(address);
    ASSERT_TRUE(FramedRoundTrip(client, "first"));
    const std::string frame = Frame(std::string(1000, 'x'));
    ASSERT_TRUE(client.SendAll(frame.substr(0, cut)));
    client.Close();
  }
  EXPECT_TRUE(WaitUntilTrue([&] { return this->server_->Stats().closed_by_peer == 3; }));
  this->ExpectServerHealthy(address);
}

TYPED_TEST(TcpTest, HalfClosedPeerGetsEveryAnswer) {
  const SocketAddress address = this->StartServer();
  RawClient client(address);
  std::string frames;
  for (int i = 0; i < 3; ++i) frames += Frame(std::string(100 + i, 'h'));
  ASSERT_TRUE(client.SendAll(frames));
  ASSERT_EQ(::shutdown(client.fd(), SHUT_WR), 0);
  EXPECT_EQ(client.Receive(frames.size()), frames);
  EXPECT_TRUE(client.SeesClose());
  EXPECT_TRUE(WaitUntilTrue([&] { return this->server_->Stats().closed_by_peer == 1; }));
  this->ExpectServerHealthy(address);
}

TYPED_TEST(TcpTest, PeerThatNeverReadsIsDroppedAfterTheWriteDeadline) {
  EchoServerOptions options;
  options.write_timeout = milliseconds(200);
  const SocketAddress address = this->StartServer(options);
  RawClient client(address);
  // A small receive buffer, then frames until the server's answers fill every buffer and
  // our sends block (the server stops reading while its write waits).
  const int small = 4096;
  ::setsockopt(client.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  const std::string frame = Frame(std::string(60000, 'w'));
  timeval short_timeout{0, 100000};
  ::setsockopt(client.fd(), SOL_SOCKET, SO_SNDTIMEO, &short_timeout, sizeof(short_timeout));
  const auto give_up = TaskClock::now() + seconds(20);
  while (this->server_->Stats().dropped_slow_reader == 0 && TaskClock::now() < give_up) {
    if (::send(client.fd(), frame.data(), frame.size(), MSG_NOSIGNAL) < 0 && errno != EAGAIN) {
      break;  // reset: the server is gone
    }
  }
  EXPECT_TRUE(WaitUntilTrue([&] { return this->server_->Stats().dropped_slow_reader == 1; }));
  client.Close();
  this->ExpectServerHealthy(address);
}

TYPED_TEST(TcpTest, PeerThatNeverSendsIsClosedAtTheIdleDeadline) {
  EchoServerOptions options;
  options.idle_timeout = milliseconds(200);
  const SocketAddress address = this->StartServer(options);
  RawClient silent(address);
  RawClient slow_loris(address);
  ASSERT_TRUE(slow_loris.SendAll(Frame("abcdef").substr(0, 6)));  // never finishes the frame
  const auto start = TaskClock::now();
  EXPECT_TRUE(silent.SeesClose());
  EXPECT_TRUE(slow_loris.SeesClose());
  EXPECT_GE(TaskClock::now() - start, milliseconds(150));
  this->ExpectServerHealthy(address);
  EXPECT_EQ(this->server_->Stats().dropped_idle, 2);
}

TYPED_TEST(TcpTest, OversizedFrameDisconnects) {
  EchoServerOptions options;
  options.max_frame = 1024;
  const SocketAddress address = this->StartServer(options);
  RawClient client(address);
  ASSERT_TRUE(FramedRoundTrip(client, std::string(1024, 'm')));  // the maximum is fine
  std::string header(examples::kEchoHeaderSize, '\0');
  examples::EncodeFrameLength(1u << 30, header.data());
  ASSERT_TRUE(client.SendAll(header + "xyz"));
  EXPECT_TRUE(client.SeesClose());
  this->ExpectServerHealthy(address);
  EXPECT_EQ(this->server_->Stats().dropped_oversized, 1);
}

TYPED_TEST(TcpTest, ThousandsOfConcurrentConnections) {
  // 5,000 in optimised and debug builds; 1,000 under the sanitizers (their shadow memory and
  // slower syscalls make 5,000 take too long for CI).
  const int connections = testing::kSanitized ? 1000 : 5000;
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t needed = static_cast<rlim_t>(2 * connections + 256);
  if (limit.rlim_cur < needed) {
    if (limit.rlim_max < needed) GTEST_SKIP() << "RLIMIT_NOFILE hard limit too low";
    limit.rlim_cur = needed;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  }
  const SocketAddress address = this->StartServer();
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < connections; ++i) clients.push_back(std::make_unique<RawClient>(address));
  EXPECT_TRUE(WaitUntilTrue([&] { return this->server_->Stats().open == connections; }));
  // Every connection is open at once; each gets a request, then every answer is read.
  for (int i = 0; i < connections; ++i) {
    ASSERT_TRUE(clients[i]->SendAll(Frame(std::to_string(i))));
  }
  for (int i = 0; i < connections; ++i) {
    const std::string expected = Frame(std::to_string(i));
    ASSERT_EQ(clients[i]->Receive(expected.size()), expected) << "connection " << i;
  }
  EXPECT_TRUE(WaitUntilTrue([&] { return this->server_->Stats().answered == connections; }));
  clients.clear();
  this->ExpectServerHealthy(address);
}

TYPED_TEST(TcpTest, StopClosesOpenConnectionsAndLosesNoAnsweredRequest) {
  const SocketAddress address = this->StartServer();
  constexpr int kClients = 8;
  std::atomic<std::int64_t> received{0};
  // Answers per client: Stop comes once every client has some, so every connection is
  // accepted and served when it is stopped.
  std::vector<std::atomic<int>> answers(kClients);
  std::vector<std::thread> threads;
  std::atomic<int> clean_ends{0};
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      RawClient client(address);
      for (int i = 0;; ++i) {
        const std::string frame = Frame(std::to_string(c) + ":" + std::to_string(i));
        if (!client.SendAll(frame)) break;
        const std::string reply = client.Receive(frame.size());
        if (reply.size() < frame.size()) {
          if (reply.empty()) clean_ends.fetch_add(1);
          break;
        }
        ASSERT_EQ(reply, frame);
        received.fetch_add(1);
        answers[c].fetch_add(1);
      }
    });
  }
  EXPECT_TRUE(WaitUntilTrue([&] {
    for (const std::atomic<int>& count : answers) {
      if (count.load() < 50) return false;
    }
    return true;
  }));
  this->server_->Stop();
  for (auto& thread : threads) thread.join();
  const examples::EchoServerStats stats = this->server_->Stats();
  EXPECT_EQ(stats.open, 0);
  EXPECT_EQ(stats.closed_by_stop, kClients);
  // Every answer the server counted reached its client, complete.
  EXPECT_EQ(received.load(), stats.answered);
  EXPECT_GE(clean_ends.load(), kClients - 1);  // at most one answer cut mid-write
}

// A plain listening socket on the test thread: the peer of BlockedRead, which never sends.
// With no server in the scheduler, the client's socket is the only user of the backend, so
// the backend's live-op count shows whether a cancelled Read released its operation.
class SilentPeer {
 public:
  SilentPeer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
    EXPECT_EQ(::listen(listen_fd_, 4), 0);
    socklen_t length = sizeof(any);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&any), &length);
    address_ = SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&any), sizeof(any));
  }
  ~SilentPeer() { ::close(listen_fd_); }
  const SocketAddress& address() const { return address_; }

 private:
  int listen_fd_ = -1;
  SocketAddress address_;
};

// Connects, then waits in a Read that never gets data (until `deadline`, a cancel or
// Stop). Fails with EBUSY if the backend still holds more operations after Read returned
// than before it started.
template <typename Sched>
coro::Task<IoError> BlockedRead(Sched* scheduler, SocketAddress address, TaskDeadline deadline,
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
  SilentPeer peer;
  std::atomic<bool> reading{false};
  coro::JoinHandle<IoError> reader =
      coro::Spawn(this->scheduler(),
                  BlockedRead(&this->scheduler(), peer.address(), kTaskDeadlineInfinite, &reading));
  ASSERT_TRUE(WaitUntilTrue([&] { return reading.load(); }));
  std::this_thread::sleep_for(milliseconds(20));  // let it block in the backend
  EXPECT_FALSE(reader.IsDone());
  EXPECT_TRUE(reader.Cancel());
  const IoError result = reader.Get();
  EXPECT_EQ(result.code(), IoErrorCode::kCancelled) << result.Message();
  EXPECT_TRUE(WaitUntilTrue([&] { return this->scheduler().io().LiveCount() == 0; }));
}

// Review item 1 (issue 17): the spawn deadline ended a blocked Read on epoll (a
// cancellable wait) but not on io_uring, whose operation waits uncancellably for its final
// completion: seconds later it was still blocked. Now the deadline requests the
// cancellation on both: the op is cancelled, released, and Read returns kCancelled.
TYPED_TEST(TcpTest, SpawnDeadlineEndsABlockedRead) {
  SilentPeer peer;
  std::atomic<bool> reading{false};
  const auto start = TaskClock::now();
  coro::JoinHandle<IoError> reader = coro::Spawn(
      this->scheduler(),
      BlockedRead(&this->scheduler(), peer.address(), kTaskDeadlineInfinite, &reading),
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

// Issue 17: the library set SIGPIPE to SIG_IGN for the whole process (io_uring writes
// went through write(2), which raises it on a reset connection). Writes are sends with
// MSG_NOSIGNAL now: the process's SIGPIPE disposition stays what it was (here the
// default, which would kill the process), and the write fails with kResetByPeer.
template <typename Sched>
coro::Task<IoError> WriteUntilFailure(Sched* scheduler, SocketAddress address) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return connected.error();
  TcpStream<Sched> stream = std::move(connected).value();
  const std::string chunk(64 * 1024, 'x');
  for (int i = 0; i < 1000; ++i) {
    IoError written = co_await stream.Write(chunk, coro::DeadlineAfter(seconds(10)));
    if (written.ok()) continue;
    // The first failure reports the reset (ECONNRESET); a write after it fails with EPIPE,
    // the one that raises SIGPIPE unless the send says MSG_NOSIGNAL.
    if (written.code() != IoErrorCode::kResetByPeer) co_return written;
    co_return co_await stream.Write(chunk, coro::DeadlineAfter(seconds(10)));
  }
  co_return IoError();
}
template <typename Sched>
int WriteToAResetConnection() {
  std::signal(SIGPIPE, SIG_DFL);
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0) return 2;
  if (::listen(listener, 4) != 0) return 2;
  socklen_t length = sizeof(any);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&any), &length);
  const SocketAddress address =
      SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&any), sizeof(any));
  Sched sched;
  sched.Start(2);
  coro::JoinHandle<IoError> writer = coro::Spawn(sched, WriteUntilFailure(&sched, address));
  int accepted = -1;
  while ((accepted = ::accept(listener, nullptr, nullptr)) < 0 && errno == EINTR) {
  }
  const linger reset{1, 0};  // close with RST
  ::setsockopt(accepted, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  ::close(accepted);
  const IoError result = writer.Get();
  sched.Stop();
  ::close(listener);
  struct sigaction now {};
  ::sigaction(SIGPIPE, nullptr, &now);
  if (now.sa_handler != SIG_DFL) {
    std::fprintf(stderr, "the library changed the SIGPIPE disposition\n");
    return 3;
  }
  if (result.code() != IoErrorCode::kResetByPeer) {
    std::fprintf(stderr, "write ended with: %s\n", result.Message().c_str());
    return 4;
  }
  return 0;
}
TYPED_TEST(TcpTest, WritingToAResetConnectionFailsWithoutSigpipe) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(WriteToAResetConnection<typename TestFixture::Sched>()),
              ::testing::ExitedWithCode(0), "");
}

// SetNoDelay's value as the kernel reports it after each of SetNoDelay(true), (false).
template <typename Sched>
coro::Task<std::vector<int>> NoDelayAfterEachSet(Sched* scheduler, SocketAddress address) {
  std::vector<int> seen;
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return seen;
  TcpStream<Sched> stream = std::move(connected).value();
  for (const bool on : {true, false}) {
    if (!stream.SetNoDelay(on).ok()) co_return seen;
    int value = -1;
    socklen_t length = sizeof(value);
    if (::getsockopt(stream.fd(), IPPROTO_TCP, TCP_NODELAY, &value, &length) != 0) co_return seen;
    seen.push_back(value != 0 ? 1 : 0);
  }
  co_return seen;
}

TYPED_TEST(TcpTest, SetNoDelayReachesTheSocket) {
  SilentPeer peer;
  const std::vector<int> seen =
      coro::Spawn(this->scheduler(), NoDelayAfterEachSet(&this->scheduler(), peer.address()))
          .Get();
  EXPECT_EQ(seen, (std::vector<int>{1, 0}));
}

TYPED_TEST(TcpTest, ReadDeadlineIsATimeout) {
  SilentPeer peer;
  std::atomic<bool> reading{false};
  const auto start = TaskClock::now();
  const IoError result =
      coro::Spawn(this->scheduler(), BlockedRead(&this->scheduler(), peer.address(),
                                                 coro::DeadlineAfter(milliseconds(100)), &reading))
          .Get();
  EXPECT_EQ(result.code(), IoErrorCode::kTimeout) << result.Message();
  EXPECT_GE(TaskClock::now() - start, milliseconds(100));
}

TYPED_TEST(TcpTest, SchedulerStopEndsABlockedReadWithShutdown) {
  SilentPeer peer;
  std::atomic<bool> reading{false};
  coro::JoinHandle<IoError> reader =
      coro::Spawn(this->scheduler(),
                  BlockedRead(&this->scheduler(), peer.address(), kTaskDeadlineInfinite, &reading));
  ASSERT_TRUE(WaitUntilTrue([&] { return reading.load(); }));
  std::this_thread::sleep_for(milliseconds(20));
  this->scheduler().Stop();
  ASSERT_TRUE(reader.IsDone());
  const IoError result = reader.Get();
  EXPECT_EQ(result.code(), IoErrorCode::kShutdown) << result.Message();
}

// Echo rounds whose reads race tiny deadlines against the answer (the timed-out read is
// released, then the answer is read by the next one), while the test thread cancels some
// of these coroutines at random points. Every coroutine ends cleanly (ok, or kCancelled
// when cancelled), no data is mixed up, and the backend ends with no live operation.
template <typename Sched>
coro::Task<IoError> RacingClient(Sched* scheduler, SocketAddress address, int rounds, int seed) {
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

// Issue 17: a standing watch the kernel refused (epoll_ctl failed) made every operation
// fail with kShutdown, hiding the reason. The errno is kept: a regular file, which epoll
// cannot watch (EPERM), here.
coro::Task<IoError> WaitForReadable(internal::SocketCore<Scheduler<EpollBackend>>* core) {
  co_return co_await core->WaitReady(internal::SocketCore<Scheduler<EpollBackend>>::kReadSide,
                                     coro::DeadlineAfter(seconds(10)));
}
TEST(TcpEpollTest, ARefusedWatchReportsItsErrno) {
  Scheduler<EpollBackend> sched;
  sched.Start(1);
  char path[] = "/tmp/fairsched_watch_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  auto* core = new internal::SocketCore<Scheduler<EpollBackend>>(&sched, fd);
  ASSERT_TRUE(WaitUntilTrue([&] { return sched.io().LiveCount() == 0; }));  // refused
  const IoError result = coro::Spawn(sched, WaitForReadable(core)).Get();
  EXPECT_EQ(result.code(), IoErrorCode::kSystem) << result.Message();
  EXPECT_EQ(result.sys_errno(), EPERM) << result.Message();
  core->Close();  // closes fd
  sched.Stop();
}

}  // namespace
}  // namespace fairsched
