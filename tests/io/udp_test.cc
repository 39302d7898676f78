// One typed suite for the coroutine UDP sockets (io/udp.h) over every backend: EpollBackend
// and IoUringBackend on Linux, IocpBackend on Windows (`--config=mingw`, run under Wine):
// ping-pong, many datagrams, IPv6, receive deadlines, cancellation and Stop of a blocked
// receive, truncated datagrams, oversized sends, what is reported for a datagram sent to a
// closed port (connected and unconnected), and a stress run of several senders against one
// echoing receiver. Loopback only; every wait is bounded; the fd count is checked after
// each test (Linux: /proc/self/fd).
#include "io/udp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/socket_platform.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"
#include "tests/io/socket_test.h"
#include "tests/stress.h"

#ifdef _WIN32
#include "io/iocp_backend.h"
#else
#include <unistd.h>

#include "io/epoll_backend.h"
#include "io/io_uring_backend.h"
#endif

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::WaitUntilTrue;

TaskDeadline Soon() { return coro::DeadlineAfter(seconds(10)); }

SocketAddress Loopback(const char* host = "127.0.0.1", std::uint16_t port = 0) {
  IoResult<SocketAddress> address = SocketAddress::FromHostPort(host, port);
  EXPECT_TRUE(address.ok());
  return address.value();
}

#ifdef _WIN32
// Wine exports wine_get_version from its ntdll; Windows does not.
bool RunsUnderWine() {
  const HMODULE ntdll = GetModuleHandleA("ntdll.dll");
  return ntdll != nullptr && GetProcAddress(ntdll, "wine_get_version") != nullptr;
}
#else
bool RunsUnderWine() { return false; }
#endif

// A plain blocking UDP socket of the test thread, not attached to any backend.
class RawUdpSocket {
 public:
#ifdef _WIN32
  using Handle = SOCKET;
#else
  using Handle = int;
#endif
  RawUdpSocket() : handle_(::socket(AF_INET, SOCK_DGRAM, 0)) {}
  ~RawUdpSocket() {
#ifdef _WIN32
    ::closesocket(handle_);
#else
    ::close(handle_);
#endif
  }
  RawUdpSocket(const RawUdpSocket&) = delete;
  RawUdpSocket& operator=(const RawUdpSocket&) = delete;

  Handle handle() const { return handle_; }
  // Bytes sent, or -1.
  int SendTo(std::string_view data, const SocketAddress& to) {
    return static_cast<int>(::sendto(handle_, data.data(), static_cast<int>(data.size()), 0,
                                     to.get(), to.length()));
  }

 private:
  Handle handle_;
};

// A UDP port that nobody listens on: bound once to find a free port, then closed.
SocketAddress ClosedPort() {
  RawUdpSocket raw;
  const SocketAddress any = Loopback();
  EXPECT_EQ(::bind(raw.handle(), any.get(), any.length()), 0);
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  EXPECT_EQ(::getsockname(raw.handle(), reinterpret_cast<sockaddr*>(&storage), &length), 0);
  return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&storage), length);
}

// An error with a tag, so that a coroutine's failure says which step failed.
IoError Mismatch() { return IoError(IoErrorCode::kSystem, EBADMSG); }

template <typename Backend>
class UdpTest : public testing::SocketTest<Backend> {
 public:
  using Sched = typename testing::SocketTest<Backend>::Sched;
  using Socket = UdpSocket<Sched>;
  using testing::SocketTest<Backend>::scheduler;

  Socket Bind(const char* host = "127.0.0.1") {
    IoResult<Socket> socket = Socket::Bind(scheduler(), Loopback(host));
    EXPECT_TRUE(socket.ok()) << socket.error().Message();
    return std::move(socket).value();
  }
};

TYPED_TEST_SUITE(UdpTest, testing::IoBackends);

// Receives `rounds` datagrams on `socket` and sends each back to its sender.
template <typename Socket>
coro::Lazy<IoError> Echo(Socket* socket, int rounds) {
  char buffer[2048];
  for (int i = 0; i < rounds; ++i) {
    IoResult<UdpDatagram> got = co_await socket->ReceiveFrom(buffer, Soon());
    if (!got.ok()) co_return got.error();
    const UdpDatagram& datagram = got.value();
    if (datagram.truncated()) co_return Mismatch();
    IoResult<std::size_t> sent =
        co_await socket->SendTo(std::span<const char>(buffer, datagram.size), datagram.from,
                                Soon());
    if (!sent.ok()) co_return sent.error();
  }
  co_return IoError();
}

// Sends `rounds` distinct datagrams to `to` and checks that each comes back unchanged, from
// `to`.
template <typename Socket>
coro::Lazy<IoError> PingPong(Socket* socket, SocketAddress to, int rounds, std::string tag) {
  char buffer[2048];
  for (int i = 0; i < rounds; ++i) {
    const std::string message = tag + ":" + std::to_string(i);
    IoResult<std::size_t> sent = co_await socket->SendTo(message, to, Soon());
    if (!sent.ok()) co_return sent.error();
    if (sent.value() != message.size()) co_return Mismatch();
    IoResult<UdpDatagram> got = co_await socket->ReceiveFrom(buffer, Soon());
    if (!got.ok()) co_return got.error();
    if (std::string(buffer, got.value().size) != message) co_return Mismatch();
    if (got.value().from.ToString() != to.ToString()) co_return Mismatch();
  }
  co_return IoError();
}

TYPED_TEST(UdpTest, PingPongOverIpv4AndIpv6) {
  for (const char* host : {"127.0.0.1", "::1"}) {
    SCOPED_TRACE(host);
    auto server = this->Bind(host);
    auto client = this->Bind(host);
    const SocketAddress server_address = server.LocalAddress().value();
    EXPECT_NE(server_address.port(), 0);
    EXPECT_EQ(server_address.family(), std::string(host) == "::1" ? AF_INET6 : AF_INET);
    constexpr int kRounds = 200;
    coro::JoinHandle<IoError> echo = coro::Spawn(this->scheduler(), Echo(&server, kRounds));
    const IoError pinged =
        coro::Spawn(this->scheduler(), PingPong(&client, server_address, kRounds, "ping")).Get();
    EXPECT_TRUE(pinged.ok()) << pinged.Message();
    const IoError echoed = echo.Get();
    EXPECT_TRUE(echoed.ok()) << echoed.Message();
  }
}

// Bursts of datagrams, each burst acknowledged by the receiver before the next (so the
// receive buffer never overflows and loopback drops nothing): every datagram arrives once,
// whole, with the sender's address.
template <typename Socket>
coro::Lazy<IoError> SendBursts(Socket* socket, SocketAddress to, int bursts, int per_burst) {
  char ack[16];
  for (int b = 0; b < bursts; ++b) {
    for (int i = 0; i < per_burst; ++i) {
      std::string message(100 + (b * per_burst + i) % 900, 'x');
      const std::string number = std::to_string(b * per_burst + i);
      message.replace(0, number.size() + 1, number + ":");
      IoResult<std::size_t> sent = co_await socket->SendTo(message, to, Soon());
      if (!sent.ok()) co_return sent.error();
    }
    IoResult<UdpDatagram> got = co_await socket->ReceiveFrom(ack, Soon());
    if (!got.ok()) co_return got.error();
  }
  co_return IoError();
}
template <typename Socket>
coro::Lazy<IoError> ReceiveBursts(Socket* socket, int bursts, int per_burst,
                                  std::vector<int>* seen) {
  char buffer[2048];
  for (int b = 0; b < bursts; ++b) {
    SocketAddress sender;
    for (int i = 0; i < per_burst; ++i) {
      IoResult<UdpDatagram> got = co_await socket->ReceiveFrom(buffer, Soon());
      if (!got.ok()) co_return got.error();
      const UdpDatagram& datagram = got.value();
      const int number = std::atoi(buffer);
      if (datagram.truncated() || number < 0 || number >= static_cast<int>(seen->size()) ||
          datagram.size != 100 + static_cast<std::size_t>(number) % 900) {
        co_return Mismatch();
      }
      ++(*seen)[number];
      sender = datagram.from;
    }
    IoResult<std::size_t> acked = co_await socket->SendTo(std::string_view("ok"), sender, Soon());
    if (!acked.ok()) co_return acked.error();
  }
  co_return IoError();
}

TYPED_TEST(UdpTest, ManyDatagramsArriveWholeAndOnce) {
  auto receiver = this->Bind();
  auto sender = this->Bind();
  const int bursts = static_cast<int>(testing::StressIterations(50, 5));
  constexpr int kPerBurst = 32;
  std::vector<int> seen(static_cast<std::size_t>(bursts * kPerBurst), 0);
  coro::JoinHandle<IoError> receiving =
      coro::Spawn(this->scheduler(), ReceiveBursts(&receiver, bursts, kPerBurst, &seen));
  const IoError sent = coro::Spawn(this->scheduler(), SendBursts(&sender,
                                                                 receiver.LocalAddress().value(),
                                                                 bursts, kPerBurst))
                           .Get();
  EXPECT_TRUE(sent.ok()) << sent.Message();
  const IoError received = receiving.Get();
  EXPECT_TRUE(received.ok()) << received.Message();
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(seen.size()));
}

// A receive whose deadline passes reports kTimeout, and the socket stays usable: the next
// receive gets the datagram that comes later.
template <typename Socket>
coro::Lazy<IoError> TimeOutThenReceive(Socket* socket, std::atomic<bool>* timed_out) {
  char buffer[64];
  IoResult<UdpDatagram> first =
      co_await socket->ReceiveFrom(buffer, coro::DeadlineAfter(milliseconds(100)));
  if (first.ok() || first.error().code() != IoErrorCode::kTimeout) co_return Mismatch();
  timed_out->store(true);
  IoResult<UdpDatagram> second = co_await socket->ReceiveFrom(buffer, Soon());
  if (!second.ok()) co_return second.error();
  if (std::string(buffer, second.value().size) != "late") co_return Mismatch();
  co_return IoError();
}

TYPED_TEST(UdpTest, ReceiveDeadlineIsATimeoutAndTheSocketStaysUsable) {
  auto receiver = this->Bind();
  std::atomic<bool> timed_out{false};
  const auto start = TaskClock::now();
  coro::JoinHandle<IoError> receiving =
      coro::Spawn(this->scheduler(), TimeOutThenReceive(&receiver, &timed_out));
  ASSERT_TRUE(WaitUntilTrue([&] { return timed_out.load(); }));
  EXPECT_GE(TaskClock::now() - start, milliseconds(100));
  RawUdpSocket raw;
  ASSERT_EQ(raw.SendTo("late", receiver.LocalAddress().value()), 4);
  const IoError result = receiving.Get();
  EXPECT_TRUE(result.ok()) << result.Message();
}

// Waits in a receive that gets nothing (until a cancel or Stop).
template <typename Socket>
coro::Lazy<IoError> BlockedReceive(Socket* socket, std::atomic<bool>* receiving) {
  char buffer[64];
  receiving->store(true);
  IoResult<UdpDatagram> got = co_await socket->ReceiveFrom(buffer, kTaskDeadlineInfinite);
  co_return got.ok() ? Mismatch() : got.error();
}

// Spawns BlockedReceive on `socket` and returns once it waits in the backend.
template <typename Sched, typename Socket>
coro::JoinHandle<IoError> StartBlockedReceive(Sched& scheduler, Socket* socket) {
  std::atomic<bool> receiving{false};
  coro::JoinHandle<IoError> blocked = coro::Spawn(scheduler, BlockedReceive(socket, &receiving));
  EXPECT_TRUE(WaitUntilTrue([&] { return receiving.load(); }));
  std::this_thread::sleep_for(milliseconds(20));  // let it block in the backend
  EXPECT_FALSE(blocked.IsDone());
  return blocked;
}

TYPED_TEST(UdpTest, CancellingABlockedReceiveReleasesTheOperation) {
  auto receiver = this->Bind();
  coro::JoinHandle<IoError> blocked = StartBlockedReceive(this->scheduler(), &receiver);
  EXPECT_TRUE(blocked.Cancel());
  const IoError result = blocked.Get();
  EXPECT_EQ(result.code(), IoErrorCode::kCancelled) << result.Message();
  receiver.Close();
  EXPECT_TRUE(WaitUntilTrue([&] { return this->scheduler().io().LiveCount() == 0; }));
}

TYPED_TEST(UdpTest, SchedulerStopEndsABlockedReceiveWithShutdown) {
  auto receiver = this->Bind();
  coro::JoinHandle<IoError> blocked = StartBlockedReceive(this->scheduler(), &receiver);
  this->scheduler().Stop();
  ASSERT_TRUE(blocked.IsDone());
  const IoError result = blocked.Get();
  EXPECT_EQ(result.code(), IoErrorCode::kShutdown) << result.Message();
}

// A 100-byte datagram into a 10-byte buffer is reported as truncated with its full length
// (Windows: with size + 1, all it knows); the rest of it is gone, and the next datagram is
// received whole.
template <typename Socket>
coro::Lazy<std::vector<UdpDatagram>> ReceiveTwo(Socket* socket, std::string* first,
                                                std::string* second) {
  std::vector<UdpDatagram> got;
  char small[10];
  IoResult<UdpDatagram> a = co_await socket->ReceiveFrom(small, Soon());
  if (!a.ok()) co_return got;
  first->assign(small, a.value().size);
  got.push_back(a.value());
  char large[200];
  IoResult<UdpDatagram> b = co_await socket->ReceiveFrom(large, Soon());
  if (!b.ok()) co_return got;
  second->assign(large, b.value().size);
  got.push_back(b.value());
  co_return got;
}

TYPED_TEST(UdpTest, TruncatedDatagramIsReported) {
  auto receiver = this->Bind();
  const SocketAddress to = receiver.LocalAddress().value();
  std::string big(100, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  RawUdpSocket raw;
  ASSERT_EQ(raw.SendTo(big, to), 100);
  ASSERT_EQ(raw.SendTo("next", to), 4);
  std::string first;
  std::string second;
  const std::vector<UdpDatagram> got =
      coro::Spawn(this->scheduler(), ReceiveTwo(&receiver, &first, &second)).Get();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].truncated());
  EXPECT_EQ(got[0].size, 10u);
#ifdef _WIN32
  EXPECT_EQ(got[0].datagram_size, 11u);
#else
  EXPECT_EQ(got[0].datagram_size, 100u);
#endif
  EXPECT_EQ(first, big.substr(0, 10));
  EXPECT_FALSE(got[1].truncated());
  EXPECT_EQ(got[1].datagram_size, 4u);
  EXPECT_EQ(second, "next");
}

template <typename Socket>
coro::Lazy<IoError> SendOnce(Socket* socket, std::string data, SocketAddress to) {
  IoResult<std::size_t> sent = co_await socket->SendTo(data, to, Soon());
  co_return sent.ok() ? IoError() : sent.error();
}

TYPED_TEST(UdpTest, OversizedDatagramFailsWithEmsgsize) {
  auto sender = this->Bind();
  auto receiver = this->Bind();
  const IoError result =
      coro::Spawn(this->scheduler(), SendOnce(&sender, std::string(70000, 'x'),
                                              receiver.LocalAddress().value()))
          .Get();
  EXPECT_EQ(result.code(), IoErrorCode::kSystem) << result.Message();
  EXPECT_EQ(result.sys_errno(), EMSGSIZE);
}

// A connected UDP socket reports the ICMP "port unreachable" its datagram caused as
// kRefused from the next operation (here a receive, which also wakes up for it): Linux's
// ECONNREFUSED, Windows' WSAECONNRESET.
template <typename Socket>
coro::Lazy<IoError> SendThenReceive(Socket* socket, TaskDeadline receive_deadline) {
  IoResult<std::size_t> sent = co_await socket->Send(std::string_view("anyone?"), Soon());
  if (!sent.ok()) co_return sent.error();
  char buffer[64];
  IoResult<UdpDatagram> got = co_await socket->ReceiveFrom(buffer, receive_deadline);
  co_return got.ok() ? Mismatch() : got.error();
}

TYPED_TEST(UdpTest, ConnectedSocketReportsAClosedPortAsRefused) {
  if (RunsUnderWine()) {
    GTEST_SKIP() << "Wine 8 does not pass the ICMP port unreachable on to a connected UDP "
                    "socket (Windows reports WSAECONNRESET, which io/udp.h makes kRefused)";
  }
  const SocketAddress closed = ClosedPort();
  IoResult<typename TestFixture::Socket> socket =
      TestFixture::Socket::Connect(this->scheduler(), closed);
  ASSERT_TRUE(socket.ok()) << socket.error().Message();
  EXPECT_EQ(socket.value().PeerAddress().value().ToString(), closed.ToString());
  const IoError result =
      coro::Spawn(this->scheduler(), SendThenReceive(&socket.value(), Soon())).Get();
  EXPECT_EQ(result.code(), IoErrorCode::kRefused) << result.Message();
}

// An unconnected socket hears nothing about it (Linux: no IP_RECVERR; Windows:
// SIO_UDP_CONNRESET off): the send succeeds and a receive just times out.
template <typename Socket>
coro::Lazy<IoError> SendToThenReceive(Socket* socket, SocketAddress to) {
  for (int i = 0; i < 2; ++i) {
    IoResult<std::size_t> sent = co_await socket->SendTo(std::string_view("anyone?"), to, Soon());
    if (!sent.ok()) co_return sent.error();
  }
  char buffer[64];
  IoResult<UdpDatagram> got =
      co_await socket->ReceiveFrom(buffer, coro::DeadlineAfter(milliseconds(200)));
  co_return got.ok() ? Mismatch() : got.error();
}

TYPED_TEST(UdpTest, UnconnectedSocketHearsNothingFromAClosedPort) {
  auto socket = this->Bind();
  const IoError result =
      coro::Spawn(this->scheduler(), SendToThenReceive(&socket, ClosedPort())).Get();
  EXPECT_EQ(result.code(), IoErrorCode::kTimeout) << result.Message();
}

// Several senders, each on its own socket, ping-pong with one echoing receiver at the same
// time (one datagram in flight per sender, so nothing is dropped); every answer must reach
// the sender it belongs to.
TYPED_TEST(UdpTest, StressSeveralSendersOneReceiver) {
  constexpr int kSenders = 4;
  const int rounds = static_cast<int>(testing::StressIterations(500, 10));
  auto receiver = this->Bind();
  const SocketAddress to = receiver.LocalAddress().value();
  std::vector<typename TestFixture::Socket> senders;
  for (int s = 0; s < kSenders; ++s) senders.push_back(this->Bind());
  coro::JoinHandle<IoError> echo =
      coro::Spawn(this->scheduler(), Echo(&receiver, kSenders * rounds));
  std::vector<coro::JoinHandle<IoError>> pings;
  for (int s = 0; s < kSenders; ++s) {
    pings.push_back(coro::Spawn(this->scheduler(),
                                PingPong(&senders[s], to, rounds, "sender" + std::to_string(s))));
  }
  for (auto& ping : pings) {
    const IoError result = ping.Get();
    EXPECT_TRUE(result.ok()) << result.Message();
  }
  const IoError echoed = echo.Get();
  EXPECT_TRUE(echoed.ok()) << echoed.Message();
}

TYPED_TEST(UdpTest, BindToAnAddressInUseFails) {
  auto first = this->Bind();
  IoResult<typename TestFixture::Socket> second =
      TestFixture::Socket::Bind(this->scheduler(), first.LocalAddress().value());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), IoErrorCode::kSystem);
  EXPECT_EQ(second.error().sys_errno(), EADDRINUSE);
}

#ifndef _WIN32
// The Linux backends have no datagram IoOps (io/udp.h polls there): a SendTo or ReceiveFrom
// op gets one final completion, -EOPNOTSUPP, not a hang.
TYPED_TEST(UdpTest, LinuxBackendsRefuseDatagramOps) {
  auto socket = this->Bind();
  const SocketAddress to = socket.LocalAddress().value();
  char buffer[8];
  sockaddr_storage from{};
  // One op and task per kind (a task is not posted again while its last run may go on).
  struct Waiter {
    IoOp op;
    std::atomic<int> finals{0};
    std::atomic<std::int32_t> result{0};
    Task task{[this](Task* self) {
      if (!self->ReceiveSignal()) return;
      result = op.Result();
      finals.fetch_add(1);
    }};
  };
  Waiter send;
  Waiter receive;
  send.op.PrepareSendTo(socket.fd(), "x", 1, to.get(), to.length(), &send.task);
  receive.op.PrepareReceiveFrom(socket.fd(), buffer, sizeof(buffer), &from, &receive.task);
  for (Waiter* waiter : {&send, &receive}) {
    this->scheduler().PostDeadlineThroughStop(&waiter->task, kTaskDeadlineInfinite);
    this->scheduler().io().Submit(&waiter->op);
  }
  for (Waiter* waiter : {&send, &receive}) {
    ASSERT_TRUE(WaitUntilTrue([&] { return waiter->finals.load() == 1; }));
    EXPECT_EQ(waiter->result.load(), -EOPNOTSUPP);
  }
  this->scheduler().Stop();  // the tasks' last runs are over before they are destroyed
  EXPECT_EQ(send.finals.load() + receive.finals.load(), 2);
}
#endif

TYPED_TEST(UdpTest, UseOfAClosedSocketAbortsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  typename TestFixture::Socket closed;
  EXPECT_FALSE(closed.IsOpen());
  EXPECT_DEATH((void)closed.fd(), "closed or moved-from UdpSocket");
}

}  // namespace
}  // namespace fairsched
