// io::TcpServer (io/tcp_server.h) on epoll and io_uring, and on IOCP under Wine: the connection limit (the next
// connection waits in the backlog), session counting, and Shutdown: sessions in the middle
// of a request finish within the grace period, a session that ignores the request is
// cancelled at the deadline, and a server without sessions stops at once. Clients are
// blocking sockets (tests/io/raw_client.h) with receive timeouts.
#include "io/tcp_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coro/runtime.h"
#include "tests/io/echo_session.h"
#include "tests/io/raw_client.h"
#include "tests/io/socket_test.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

template <typename Backend>
class TcpServerTest : public testing::SocketTest<Backend> {
 public:
  using Sched = typename testing::SocketTest<Backend>::Sched;

  // Echoes until the stream ends (tests/io/echo_session.h).
  static coro::Lazy<void> Echo(TcpStream<Sched> stream) {
    return testing::EchoSession(std::move(stream));
  }

  IoResult<SocketAddress> StartOnLoopback(TcpServer<Sched>& server) {
    return server.Start(SocketAddress::Parse("127.0.0.1:0").value());
  }
};
TYPED_TEST_SUITE(TcpServerTest, testing::IoBackends, testing::BackendNames);

TYPED_TEST(TcpServerTest, ConnectionBeyondTheLimitWaitsUntilASessionEnds) {
  using Sched = typename TestFixture::Sched;
  TcpServer<Sched> server(this->scheduler(), &TestFixture::Echo, {.max_connections = 2});
  IoResult<SocketAddress> address = this->StartOnLoopback(server);
  ASSERT_TRUE(address.ok());

  auto first = std::make_unique<testing::RawClient>(address.value());
  testing::RawClient second(address.value());
  ASSERT_TRUE(first->RoundTrip("one"));
  ASSERT_TRUE(second.RoundTrip("two"));
  // The third connects (the kernel completes the handshake into the backlog) but is not
  // served while two sessions are open.
  testing::RawClient third(address.value());
  ASSERT_TRUE(third.SendAll("three"));
  EXPECT_FALSE(third.Readable(milliseconds(300))) << "served beyond max_connections";
  EXPECT_EQ(server.accepted(), 2);
  EXPECT_EQ(server.open(), 2);

  first.reset();  // one session ends: the waiting connection is accepted and served
  EXPECT_EQ(third.Receive(5), "three");
  EXPECT_EQ(server.accepted(), 3);
  server.Stop();
  EXPECT_EQ(server.open(), 0);
}

TYPED_TEST(TcpServerTest, CountsOpenSessions) {
  using Sched = typename TestFixture::Sched;
  TcpServer<Sched> server(this->scheduler(), &TestFixture::Echo);
  IoResult<SocketAddress> address = this->StartOnLoopback(server);
  ASSERT_TRUE(address.ok());
  std::vector<std::unique_ptr<testing::RawClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<testing::RawClient>(address.value()));
    ASSERT_TRUE(clients.back()->RoundTrip("x"));
  }
  EXPECT_EQ(server.accepted(), 3);
  EXPECT_EQ(server.open(), 3);
  clients[0].reset();
  clients[2].reset();
  EXPECT_TRUE(testing::WaitUntilTrue([&] { return server.open() == 1; })) << server.open();
  EXPECT_EQ(server.accepted(), 3);
  server.Shutdown(seconds(10));
  EXPECT_EQ(server.open(), 0);
  EXPECT_EQ(server.cancelled(), 0);  // the last one ended when asked (its read saw the end)
  EXPECT_TRUE(clients[1]->SeesClose());
}

// A session in the middle of a request (it has read the request and is still working on
// it) when Shutdown starts writes its answer, then sees the end of its stream and ends,
// long before the deadline; nothing is cancelled.
TYPED_TEST(TcpServerTest, ShutdownLetsASessionFinishItsRequest) {
  using Sched = typename TestFixture::Sched;
  Atomic<int> requests_read{0};
  Atomic<bool> shutdown_started{false};
  auto handler = [&](TcpStream<Sched> stream) -> coro::Lazy<void> {
    char request[3];
    while (true) {
      const IoError read = co_await stream.ReadExactly(request, coro::DeadlineAfter(seconds(30)));
      if (!read.ok()) break;
      // Relaxed flags: the test thread only polls them; nothing else is published.
      requests_read.fetch_add(1, std::memory_order_relaxed);
      // Working on the request until Shutdown has begun (bounded).
      const auto give_up = TaskClock::now() + seconds(20);
      while (!shutdown_started.load(std::memory_order_relaxed) && TaskClock::now() < give_up) {
        co_await coro::SleepFor(milliseconds(5));
      }
      co_await coro::SleepFor(milliseconds(50));  // Shutdown has asked by now, most likely
      const IoError written =
          co_await stream.Write(std::span<const char>("ok\n", 3), coro::DeadlineAfter(seconds(30)));
      if (!written.ok()) break;
    }
    CloseGracefully(stream);
  };
  TcpServer<Sched> server(this->scheduler(), handler);
  IoResult<SocketAddress> address = this->StartOnLoopback(server);
  ASSERT_TRUE(address.ok());
  testing::RawClient client(address.value());
  ASSERT_TRUE(client.SendAll("req"));
  ASSERT_TRUE(testing::WaitUntilTrue([&] { return requests_read.load() == 1; }));

  const auto start = std::chrono::steady_clock::now();
  std::thread stopper([&] { server.Shutdown(seconds(30)); });
  shutdown_started.store(true, std::memory_order_relaxed);
  EXPECT_EQ(client.ReceiveLine(), "ok\n");  // the answer of the request in progress
  EXPECT_TRUE(client.SeesClose());          // then the session ends
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(20));
  EXPECT_EQ(server.open(), 0);
  EXPECT_EQ(server.cancelled(), 0);
}

// A session that does not react to the request (it never reads again) is cancelled at the
// deadline, and Shutdown returns once it has ended.
TYPED_TEST(TcpServerTest, ShutdownCancelsASessionThatIgnoresItAtTheDeadline) {
  using Sched = typename TestFixture::Sched;
  Atomic<bool> started{false};
  Atomic<bool> cancelled{false};
  auto handler = [&](TcpStream<Sched> stream) -> coro::Lazy<void> {
    // Relaxed flags: polled by the test thread, which reads them after Shutdown returned.
    started.store(true, std::memory_order_relaxed);
    const coro::WakeReason why = co_await coro::SleepFor(seconds(60));
    cancelled.store(why == coro::WakeReason::kCancelled, std::memory_order_relaxed);
    stream.Close();
  };
  TcpServer<Sched> server(this->scheduler(), handler);
  IoResult<SocketAddress> address = this->StartOnLoopback(server);
  ASSERT_TRUE(address.ok());
  testing::RawClient client(address.value());
  ASSERT_TRUE(testing::WaitUntilTrue([&] { return started.load(); }));

  const auto grace = milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  server.Shutdown(grace);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, grace);
  EXPECT_LT(took, seconds(20));
  EXPECT_TRUE(cancelled.load());
  EXPECT_EQ(server.cancelled(), 1);
  EXPECT_EQ(server.open(), 0);
  EXPECT_TRUE(client.SeesClose());
}

// ShutdownAsync inside a coroutine: a session that finishes when asked (an echo) and one
// that ignores it (it sleeps) are both over when the co_await returns; only the second was
// cancelled.
TYPED_TEST(TcpServerTest, ShutdownAsyncFromACoroutine) {
  using Sched = typename TestFixture::Sched;
  Atomic<int> sleepers{0};
  auto handler = [&](TcpStream<Sched> stream) -> coro::Lazy<void> {
    char first;
    IoResult<std::size_t> got =
        co_await stream.Read(std::span<char>(&first, 1), coro::DeadlineAfter(seconds(30)));
    if (got.ok() && first == 's') {
      // Relaxed: a count the test thread polls.
      sleepers.fetch_add(1, std::memory_order_relaxed);
      co_await coro::SleepFor(seconds(60));  // ignores the request to finish
    } else if (got.ok()) {
      co_await TestFixture::Echo(std::move(stream));
    }
  };
  TcpServer<Sched> server(this->scheduler(), handler);
  IoResult<SocketAddress> address = this->StartOnLoopback(server);
  ASSERT_TRUE(address.ok());
  testing::RawClient echo_client(address.value());
  testing::RawClient sleep_client(address.value());
  ASSERT_TRUE(echo_client.SendAll("e"));
  ASSERT_TRUE(echo_client.RoundTrip("hello"));
  ASSERT_TRUE(sleep_client.SendAll("s"));
  ASSERT_TRUE(testing::WaitUntilTrue([&] { return sleepers.load() == 1; }));

  auto shut_down = [&]() -> coro::Lazy<void> {
    co_await server.ShutdownAsync(std::chrono::milliseconds(200));
  };
  coro::Spawn(this->scheduler(), shut_down()).Get();
  EXPECT_EQ(server.open(), 0);
  EXPECT_EQ(server.cancelled(), 1);
  EXPECT_TRUE(echo_client.SeesClose());
  EXPECT_TRUE(sleep_client.SeesClose());
}

// Without sessions Shutdown returns at once and the port no longer accepts.
TYPED_TEST(TcpServerTest, ShutdownWithoutSessionsReturnsAtOnce) {
  using Sched = typename TestFixture::Sched;
  TcpServer<Sched> server(this->scheduler(), &TestFixture::Echo);
  IoResult<SocketAddress> address = this->StartOnLoopback(server);
  ASSERT_TRUE(address.ok());
  const auto start = std::chrono::steady_clock::now();
  server.Shutdown(seconds(30));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(20));
  EXPECT_EQ(server.accepted(), 0);
  server.Shutdown(seconds(30));  // idempotent
  // The listening fd is closed once the backend handed its last operation back (io/tcp.h:
  // up to one sched-role step after the close): the port refuses connections soon after.
  auto refused = [&] { return testing::ConnectionRefused(address.value()); };
  EXPECT_TRUE(testing::WaitUntilTrue(refused)) << "the listener still accepts after Shutdown";
}

}  // namespace
}  // namespace fairsched
