// IocpBackend (io/iocp_backend.h) and the coroutine sockets over it (io/tcp.h), as a Windows
// executable (`bazel test --config=mingw`, run under Wine). The Linux suites
// (io_backend_test, tcp_test) are built on pipes, eventfds, /proc/self/fd and seccomp; this
// one covers the same contract with Winsock sockets on loopback: the role holder sleeps in
// the port and wakes for posts, timers and completions; every op ends with exactly one final
// completion (also when cancelled, when it succeeded at once, and at Stop); accept/connect;
// and the echo server of examples/echo_server.h serving coroutine clients.
//
// Where Wine differs from Windows, the test says which API; see io/README.md ("Verified
// under Wine, and what only Windows can show").
#include "io/iocp_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "coro/runtime.h"
#include "coro/task.h"
#include "examples/echo_server.h"
#include "io/io_op.h"
#include "io/tcp.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::WaitUntilTrue;
using Sched = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, IocpBackend>;

// A connected loopback pair of blocking Winsock sockets, made on the test thread: `server`
// for the backend (attached to it by the test), `client` for the test to drive.
struct SocketPair {
  SOCKET server = INVALID_SOCKET;
  SOCKET client = INVALID_SOCKET;

  SocketPair() {
    internal::EnsureWinsock();
    const SOCKET listener = ::socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int length = sizeof(address);
    EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(listener, 1), 0);
    EXPECT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
    client = ::socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    server = ::accept(listener, nullptr, nullptr);
    EXPECT_NE(server, INVALID_SOCKET);
    ::closesocket(listener);
    // Every receive of the test thread is bounded.
    const DWORD timeout_ms = 10000;
    ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, reinterpret_cast<const char*>(&timeout_ms),
                 sizeof(timeout_ms));
  }
  ~SocketPair() {
    ::closesocket(server);
    ::closesocket(client);
  }
  int server_fd() const { return static_cast<int>(server); }
};

// A task that waits for one IoOp: counts its runs and its final completions.
class IoWaiter {
 public:
  explicit IoWaiter(Sched* scheduler) : scheduler_(scheduler), task_(this, &IoWaiter::Run) {}
  Task* task() { return &task_; }
  IoOp& op() { return op_; }
  void Start() {
    scheduler_->PostDeadlineThroughStop(&task_, kTaskDeadlineInfinite);
    scheduler_->io().Submit(&op_);
  }
  int finals() const { return finals_.load(); }
  std::int32_t result() const { return result_.load(); }

 private:
  void Run(Task* task) {
    if (task->ReceiveSignal()) {
      result_.store(op_.Result());
      finals_.fetch_add(1);
      return;
    }
    if (task->IsCancelled()) scheduler_->io().Cancel(&op_);
    scheduler_->PostDeadlineThroughStop(task, kTaskDeadlineInfinite);
  }

  Sched* scheduler_;
  Task task_;
  IoOp op_;
  std::atomic<int> finals_{0};
  std::atomic<std::int32_t> result_{0};
};

class IocpBackendTest : public ::testing::Test {
 protected:
  IocpBackendTest() { scheduler_.Start(2); }
  ~IocpBackendTest() override { scheduler_.Stop(); }
  Sched scheduler_;
};

TEST_F(IocpBackendTest, PostsWakeASleepingRoleHolder) {
  std::atomic<int> ran{0};
  Task task([&](Task*) { ran.fetch_add(1); });
  std::this_thread::sleep_for(milliseconds(50));  // let the holder fall asleep in the port
  scheduler_.Post(&task);
  EXPECT_TRUE(WaitUntilTrue([&] { return ran.load() == 1; }));
}

// The sleep in GetQueuedCompletionStatusEx rounds the timeout up to whole milliseconds, so a
// timer never fires early (it may be up to one Windows timer tick late).
TEST_F(IocpBackendTest, TimersFireWhileTheHolderWaitsInThePort) {
  std::atomic<bool> fired{false};
  TaskClock::time_point fired_at;
  Task task([&](Task*) {
    fired_at = TaskClock::now();
    fired.store(true);
  });
  const TaskDeadline deadline = TaskClock::now() + milliseconds(30);
  scheduler_.PostDeadline(&task, deadline);
  ASSERT_TRUE(WaitUntilTrue([&] { return fired.load(); }));
  EXPECT_GE(fired_at, deadline);
}

TEST_F(IocpBackendTest, ReadCompletesOnceWithTheBytes) {
  SocketPair pair;
  ASSERT_EQ(scheduler_.io().Attach(pair.server_fd()), 0);
  char buffer[16] = {};
  IoWaiter waiter(&scheduler_);
  waiter.op().PrepareRead(pair.server_fd(), buffer, sizeof(buffer), waiter.task());
  waiter.Start();
  std::this_thread::sleep_for(milliseconds(20));  // the read is pending in the kernel
  EXPECT_EQ(waiter.finals(), 0);
  ASSERT_EQ(::send(pair.client, "hello", 5, 0), 5);
  ASSERT_TRUE(WaitUntilTrue([&] { return waiter.finals() == 1; }));
  EXPECT_EQ(waiter.result(), 5);
  EXPECT_EQ(std::string(buffer, 5), "hello");
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(waiter.finals(), 1);
  EXPECT_EQ(scheduler_.io().LiveCount(), 0);
}

// Data already buffered: WSARecv succeeds at once. With FILE_SKIP_COMPLETION_PORT_ON_SUCCESS
// the drain completes the op and no packet follows; without it the packet brings it. Either
// way exactly one final completion (a second one would use the freed request).
TEST_F(IocpBackendTest, ImmediateSuccessCompletesExactlyOnce) {
  SocketPair pair;
  ASSERT_EQ(scheduler_.io().Attach(pair.server_fd()), 0);
  ASSERT_EQ(::send(pair.client, "abc", 3, 0), 3);
  std::this_thread::sleep_for(milliseconds(20));  // the bytes reach the server socket
  for (int round = 0; round < 3; ++round) {
    char buffer[2] = {};
    IoWaiter waiter(&scheduler_);
    waiter.op().PrepareRead(pair.server_fd(), buffer, round < 2 ? 1 : 2, waiter.task());
    waiter.Start();
    ASSERT_TRUE(WaitUntilTrue([&] { return waiter.finals() == 1; }));
    EXPECT_EQ(waiter.result(), 1);
    EXPECT_EQ(buffer[0], "abc"[round]);
    std::this_thread::sleep_for(milliseconds(10));
    EXPECT_EQ(waiter.finals(), 1);
  }
  std::printf("FILE_SKIP_COMPLETION_PORT_ON_SUCCESS in use: %s\n",
              scheduler_.io().skips_port_on_success() ? "yes" : "no");
}

TEST_F(IocpBackendTest, CancelOfAPendingReadEndsOnceWithECANCELED) {
  SocketPair pair;
  ASSERT_EQ(scheduler_.io().Attach(pair.server_fd()), 0);
  char buffer[8];
  IoWaiter waiter(&scheduler_);
  waiter.op().PrepareRead(pair.server_fd(), buffer, sizeof(buffer), waiter.task());
  waiter.Start();
  std::this_thread::sleep_for(milliseconds(20));
  scheduler_.Cancel(waiter.task());  // the task cancels its op (CancelIoEx)
  ASSERT_TRUE(WaitUntilTrue([&] { return waiter.finals() == 1; }));
  EXPECT_EQ(waiter.result(), -ECANCELED);
  // The socket still works after the cancelled read.
  IoWaiter again(&scheduler_);
  again.op().PrepareRead(pair.server_fd(), buffer, sizeof(buffer), again.task());
  again.Start();
  ASSERT_EQ(::send(pair.client, "x", 1, 0), 1);
  ASSERT_TRUE(WaitUntilTrue([&] { return again.finals() == 1; }));
  EXPECT_EQ(again.result(), 1);
  EXPECT_EQ(waiter.finals(), 1);
}

// CancelIoEx racing with the data that completes the read: every read ends exactly once,
// either with its byte or with -ECANCELED, and no byte is lost (a read that was cancelled
// leaves its byte in the socket for the next one).
TEST_F(IocpBackendTest, CancelRacingWithCompletionEndsOnceAndLosesNoByte) {
  SocketPair pair;
  ASSERT_EQ(scheduler_.io().Attach(pair.server_fd()), 0);
  constexpr int kRounds = 200;
  int received = 0;
  int cancelled = 0;
  for (int round = 0; round < kRounds; ++round) {
    char byte = 0;
    IoWaiter waiter(&scheduler_);
    waiter.op().PrepareRead(pair.server_fd(), &byte, 1, waiter.task());
    waiter.Start();
    std::thread sender([&] { ASSERT_EQ(::send(pair.client, "z", 1, 0), 1); });
    scheduler_.io().Cancel(&waiter.op());
    sender.join();
    ASSERT_TRUE(WaitUntilTrue([&] { return waiter.finals() == 1; })) << "round " << round;
    if (waiter.result() == 1) {
      EXPECT_EQ(byte, 'z');
      ++received;
    } else {
      EXPECT_EQ(waiter.result(), -ECANCELED) << "round " << round;
      ++cancelled;
    }
  }
  // The bytes of the cancelled reads are still there, in order.
  // Counted with FIONREAD after the last byte had time to arrive: under Wine 8 a blocking
  // recv with MSG_WAITALL returned fewer bytes than asked here, so it cannot count them.
  std::this_thread::sleep_for(milliseconds(50));
  u_long buffered = 0;
  ASSERT_EQ(::ioctlsocket(pair.server, FIONREAD, &buffered), 0);
  EXPECT_EQ(static_cast<int>(buffered), cancelled);
  std::string rest(buffered, '\0');
  if (buffered > 0) {
    EXPECT_EQ(::recv(pair.server, rest.data(), static_cast<int>(buffered), 0),
              static_cast<int>(buffered));
  }
  EXPECT_EQ(rest, std::string(buffered, 'z'));
  EXPECT_EQ(received + cancelled, kRounds);
  EXPECT_EQ(scheduler_.io().LiveCount(), 0);
  std::printf("%d reads got their byte, %d were cancelled first\n", received, cancelled);
}

TEST_F(IocpBackendTest, StopCancelsPendingOps) {
  SocketPair pair;
  ASSERT_EQ(scheduler_.io().Attach(pair.server_fd()), 0);
  char buffer[8];
  IoWaiter waiter(&scheduler_);
  waiter.op().PrepareRead(pair.server_fd(), buffer, sizeof(buffer), waiter.task());
  waiter.Start();
  std::this_thread::sleep_for(milliseconds(20));
  scheduler_.Stop();  // waits for the drain, which needs the read's final completion
  EXPECT_EQ(waiter.finals(), 1);
  EXPECT_EQ(waiter.result(), -ECANCELED);
  EXPECT_EQ(scheduler_.io().LiveCount(), 0);
}

TEST_F(IocpBackendTest, WritesAndPeerResetAreResults) {
  SocketPair pair;
  ASSERT_EQ(scheduler_.io().Attach(pair.server_fd()), 0);
  const char data[] = "0123456789";
  IoWaiter writer(&scheduler_);
  writer.op().PrepareSend(pair.server_fd(), data, 10, writer.task());
  writer.Start();
  ASSERT_TRUE(WaitUntilTrue([&] { return writer.finals() == 1; }));
  EXPECT_EQ(writer.result(), 10);
  char received[10];
  EXPECT_EQ(::recv(pair.client, received, 10, MSG_WAITALL), 10);
  // A reset by the peer (linger 0 + close) fails a pending read with ECONNRESET.
  char buffer[8];
  IoWaiter reader(&scheduler_);
  reader.op().PrepareRead(pair.server_fd(), buffer, sizeof(buffer), reader.task());
  reader.Start();
  // The read must be pending in the kernel before the reset: under Wine 8 a WSARecv issued
  // after the RST arrived completes with 0 bytes (end of stream) instead of WSAECONNRESET.
  std::this_thread::sleep_for(milliseconds(50));
  const linger abort_close{1, 0};
  ::setsockopt(pair.client, SOL_SOCKET, SO_LINGER, reinterpret_cast<const char*>(&abort_close),
               sizeof(abort_close));
  ::closesocket(pair.client);
  pair.client = INVALID_SOCKET;
  ASSERT_TRUE(WaitUntilTrue([&] { return reader.finals() == 1; }));
  EXPECT_EQ(reader.result(), -ECONNRESET);
}

TEST_F(IocpBackendTest, ReadinessOpsAreNotSupported) {
  SocketPair pair;
  ASSERT_EQ(scheduler_.io().Attach(pair.server_fd()), 0);
  IoWaiter waiter(&scheduler_);
  waiter.op().PrepareWatch(pair.server_fd(), kIoReadable, waiter.task());
  waiter.Start();
  ASSERT_TRUE(WaitUntilTrue([&] { return waiter.finals() == 1; }));
  EXPECT_EQ(waiter.result(), -EOPNOTSUPP);
}

// ---- The coroutine sockets (io/tcp.h) and the echo server over IOCP ----
// These need coro/frame_allocator.h's Windows thread cache (a heap object deleted by a
// pthread key): with a plain thread_local one, mingw-w64's emulated TLS freed the cache
// before its destructor ran, and a worker that had run coroutines crashed when it exited.

using examples::EchoServer;

std::string Frame(const std::string& payload) {
  std::string frame(examples::kEchoHeaderSize, '\0');
  examples::EncodeFrameLength(static_cast<std::uint32_t>(payload.size()), frame.data());
  return frame + payload;
}

coro::Task<IoError> EchoClient(Sched* scheduler, SocketAddress address, int rounds) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) co_return connected.error();
  TcpStream<Sched> stream = std::move(connected).value();
  for (int i = 0; i < rounds; ++i) {
    const std::string frame = Frame(std::string(100 + i, static_cast<char>('a' + i % 26)));
    IoError written = co_await stream.Write(frame, coro::DeadlineAfter(seconds(10)));
    if (!written.ok()) co_return written;
    std::string reply(frame.size(), '\0');
    IoError read = co_await stream.ReadExactly(reply, coro::DeadlineAfter(seconds(10)));
    if (!read.ok()) co_return read;
    if (reply != frame) co_return IoError(IoErrorCode::kSystem, EBADMSG);
  }
  co_return IoError();
}

TEST_F(IocpBackendTest, EchoServerServesCoroutineClientsOverIpv4AndIpv6) {
  for (const char* host : {"127.0.0.1", "::1"}) {
    EchoServer<Sched> server(scheduler_, {});
    IoResult<SocketAddress> bound = server.Start(SocketAddress::FromHostPort(host, 0).value());
    ASSERT_TRUE(bound.ok()) << host << ": " << bound.error().Message();
    constexpr int kClients = 20;
    coro::JoinHandle<IoError> clients[kClients];
    for (auto& client : clients) {
      client = coro::Spawn(scheduler_, EchoClient(&scheduler_, bound.value(), 10));
    }
    for (auto& client : clients) {
      const IoError error = client.Get();
      EXPECT_TRUE(error.ok()) << host << ": " << error.Message();
    }
    server.Stop();
    EXPECT_EQ(server.Stats().answered, kClients * 10) << host;
  }
}

TEST_F(IocpBackendTest, ConnectRefusedIsAClearError) {
  // A port nobody listens on: bind one, close it.
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(scheduler_, SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok());
  const SocketAddress address = listener.value().LocalAddress().value();
  listener.value().Close();
  auto connect = [&]() -> coro::Task<IoError> {
    IoResult<TcpStream<Sched>> stream =
        co_await TcpStream<Sched>::Connect(scheduler_, address, coro::DeadlineAfter(seconds(10)));
    co_return stream.ok() ? IoError() : stream.error();
  };
  const IoError error = coro::Spawn(scheduler_, connect()).Get();
  EXPECT_EQ(error.code(), IoErrorCode::kRefused) << error.Message();
}

// A read with nothing to read: its deadline ends it with kTimeout (CancelIoEx underneath),
// a JoinHandle::Cancel with kCancelled, and the stream stays usable in between.
TEST_F(IocpBackendTest, ReadDeadlineAndCancelReleaseTheOperation) {
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(scheduler_, SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok());
  const SocketAddress address = listener.value().LocalAddress().value();
  std::atomic<bool> reading{false};
  auto session = [&]() -> coro::Task<IoError> {
    IoResult<TcpStream<Sched>> accepted =
        co_await listener.value().Accept(coro::DeadlineAfter(seconds(10)));
    if (!accepted.ok()) co_return accepted.error();
    char buffer[8];
    IoResult<std::size_t> timed =
        co_await accepted.value().Read(buffer, coro::DeadlineAfter(milliseconds(50)));
    if (timed.ok() || timed.error().code() != IoErrorCode::kTimeout) {
      co_return IoError(IoErrorCode::kSystem, EPROTO);
    }
    reading.store(true);
    IoResult<std::size_t> read = co_await accepted.value().Read(buffer, kTaskDeadlineInfinite);
    co_return read.ok() ? IoError() : read.error();
  };
  auto client = [&]() -> coro::Task<IoError> {
    IoResult<TcpStream<Sched>> stream =
        co_await TcpStream<Sched>::Connect(scheduler_, address, coro::DeadlineAfter(seconds(10)));
    if (!stream.ok()) co_return stream.error();
    char byte;
    // Waits until the server side is cancelled and the connection closes.
    IoResult<std::size_t> read =
        co_await stream.value().Read({&byte, 1}, coro::DeadlineAfter(seconds(10)));
    co_return read.ok() ? IoError() : read.error();
  };
  coro::JoinHandle<IoError> server_side = coro::Spawn(scheduler_, session());
  coro::JoinHandle<IoError> client_side = coro::Spawn(scheduler_, client());
  ASSERT_TRUE(WaitUntilTrue([&] { return reading.load(); }));
  std::this_thread::sleep_for(milliseconds(20));
  server_side.Cancel();
  EXPECT_EQ(server_side.Get().code(), IoErrorCode::kCancelled);
  const IoError client_end = client_side.Get();
  EXPECT_TRUE(client_end.code() == IoErrorCode::kEndOfStream ||
              client_end.code() == IoErrorCode::kResetByPeer)
      << client_end.Message();
}

TEST_F(IocpBackendTest, SchedulerStopEndsABlockedAcceptWithShutdown) {
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(scheduler_, SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok());
  auto accept = [&]() -> coro::Task<IoError> {
    IoResult<TcpStream<Sched>> accepted = co_await listener.value().Accept(kTaskDeadlineInfinite);
    co_return accepted.ok() ? IoError() : accepted.error();
  };
  coro::JoinHandle<IoError> handle = coro::Spawn(scheduler_, accept());
  std::this_thread::sleep_for(milliseconds(50));
  scheduler_.Stop();
  EXPECT_EQ(handle.Get().code(), IoErrorCode::kShutdown);
  listener.value().Close();
}

// ---- Issue 24 API over IOCP: AcceptWithPeer, WriteSome/ReadSome, options, idle timeout ----
// (The byte count of a timed-out Write is tested on Linux only: Wine's WSASend buffering
// differs from Windows', so where the timeout falls says nothing about Windows.)

// getsockopt of an int option, or -1. Starts from 0: Wine writes a BOOL option
// (SO_KEEPALIVE) as one byte.
int IntOption(int fd, int level, int name) {
  int value = 0;
  int length = sizeof(value);
  if (::getsockopt(static_cast<SOCKET>(fd), level, name, reinterpret_cast<char*>(&value),
                   &length) != 0) {
    return -1;
  }
  return value;
}

TEST_F(IocpBackendTest, ByteCountsPeerAddressOptionsAndIdleTimeout) {
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(scheduler_, SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok());
  const SocketAddress address = listener.value().LocalAddress().value();
  auto session = [&]() -> coro::Task<std::string> {
    IoResult<TcpStream<Sched>> client =
        co_await TcpStream<Sched>::Connect(scheduler_, address, coro::DeadlineAfter(seconds(10)));
    if (!client.ok()) co_return client.error().Message();
    IoResult<AcceptedConnection<Sched>> server =
        co_await listener.value().AcceptWithPeer(coro::DeadlineAfter(seconds(10)));
    if (!server.ok()) co_return server.error().Message();
    std::string report =
        server.value().peer.ToString() == client.value().LocalAddress().value().ToString()
            ? "peer "
            : "wrong-peer ";
    const std::string message = "some bytes";
    IoResult<std::size_t> written =
        co_await client.value().WriteSome(message, coro::DeadlineAfter(seconds(10)));
    if (!written.ok()) co_return written.error().Message();
    char buffer[64];
    std::size_t received = 0;
    while (received < written.value()) {
      IoResult<std::size_t> n =
          co_await server.value().stream.ReadSome(buffer, coro::DeadlineAfter(seconds(10)));
      if (!n.ok()) co_return n.error().Message();
      received += n.value();
    }
    report += "moved=" + std::to_string(received == written.value()) + " ";
    TcpStream<Sched>& stream = client.value();
    report += "keepalive=" +
              std::to_string(stream.EnableKeepAlive().ok()
                                 ? IntOption(stream.fd(), SOL_SOCKET, SO_KEEPALIVE)
                                 : -1) +
              " ";
    report += "rcvbuf=" +
              std::to_string(stream.SetReceiveBufferSize(64 << 10).ok() &&
                             IntOption(stream.fd(), SOL_SOCKET, SO_RCVBUF) >= (64 << 10)) +
              " ";
    stream.SetIdleTimeout(milliseconds(100));
    IoResult<std::size_t> idle = co_await stream.Read(buffer, kTaskDeadlineInfinite);
    report += std::string("idle=") + (idle.ok() ? "read" : ToString(idle.error().code()));
    co_return report;
  };
  EXPECT_EQ(coro::Spawn(scheduler_, session()).Get(),
            "peer moved=1 keepalive=1 rcvbuf=1 idle=timed out");
  ListenOptions options;
  options.reuse_port = true;
  IoResult<TcpListener<Sched>> reuse_port =
      TcpListener<Sched>::Listen(scheduler_, SocketAddress::Parse("127.0.0.1:0").value(), options);
  ASSERT_FALSE(reuse_port.ok());
  EXPECT_EQ(reuse_port.error().sys_errno(), ENOPROTOOPT);
}

}  // namespace
}  // namespace fairsched
