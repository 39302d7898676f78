// What only IocpBackend (io/iocp_backend.h) has, as a Windows executable (`bazel test
// --config=mingw`, run under Wine). The backend contract every backend shares (posts and
// timers wake the holder, data completes exactly the right op once, cancel, Stop, cancel
// racing with completion, submissions from every worker) runs on IOCP in the typed suite of
// io_backend_test.cc, and the coroutine sockets over IOCP in tcp_test.cc. Here: timers below
// the port's millisecond granularity, an operation that succeeds at once (with or without
// FILE_SKIP_COMPLETION_PORT_ON_SUCCESS) and a cancel racing with it, overlapped sends and an
// abortive peer close, the refusal of readiness ops, and the Windows answers of the socket
// options.
//
// Where Wine differs from Windows, the test says which API; see docs/io.md ("What Wine
// verifies, and what only Windows can show").
#include "io/iocp_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/io_op.h"
#include "io/tcp.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"
#include "tests/io/io_waiter.h"
#include "tests/io/loopback_pair.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::LoopbackPair;
using testing::WaitUntilTrue;
using Sched = testing::IoTestScheduler<IocpBackend>;
using IoWaiter = testing::IoWaiter<IocpBackend>;

class IocpBackendTest : public ::testing::Test {
 protected:
  IocpBackendTest() { scheduler_.Start(2); }
  ~IocpBackendTest() override { scheduler_.Stop(); }
  Sched scheduler_;
};

// The holder sleeps in GetQueuedCompletionStatusEx, whose timeout is whole milliseconds:
// the backend rounds the time to the deadline UP, so a timer due in less than a
// millisecond (or at a fraction of one) never fires early. (It may fire up to one Windows
// timer tick late; under Wine the sleep has Linux's precision, so that is not exercised.)
TEST_F(IocpBackendTest, TimersBelowAMillisecondAreNeverEarly) {
  for (const auto delay : {std::chrono::microseconds(300), std::chrono::microseconds(1500),
                           std::chrono::microseconds(20000)}) {
    std::this_thread::sleep_for(milliseconds(5));  // the holder sleeps in the port
    std::atomic<TaskDeadline::rep> fired_at{0};
    Task timer([&](Task*) { fired_at = TaskClock::now().time_since_epoch().count(); });
    const TaskDeadline due = TaskClock::now() + delay;
    scheduler_.PostDeadline(&timer, due);
    ASSERT_TRUE(WaitUntilTrue([&] { return fired_at.load() != 0; }));
    EXPECT_GE(fired_at.load(), due.time_since_epoch().count())
        << "a " << delay.count() << " us timer fired early";
  }
}

// Data already buffered: WSARecv succeeds at once. With FILE_SKIP_COMPLETION_PORT_ON_SUCCESS
// the drain completes the op and no packet follows; without it the packet brings it. Either
// way exactly one final completion (a second one would use the freed request).
TEST_F(IocpBackendTest, ImmediateSuccessCompletesExactlyOnce) {
  LoopbackPair pair(scheduler_.io());
  for (const char byte : {'a', 'b', 'c'}) pair.SendByte(byte);
  std::this_thread::sleep_for(milliseconds(20));  // the bytes reach the socket
  for (int round = 0; round < 3; ++round) {
    char buffer[2] = {};
    IoWaiter waiter(&scheduler_);
    waiter.op().PrepareRead(pair.fd(), buffer, round < 2 ? 1 : 2, waiter.task());
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

// A Cancel submitted right after a read that succeeds at once (its byte is already
// buffered). Either the read was issued and completed at once (with the skip mode, in the
// same drain: no packet), and the cancel then finds nothing to cancel: the read ends with
// its byte; or the cancel came first: -ECANCELED and the byte stays in the socket. Either
// way exactly one final completion and no byte lost.
TEST_F(IocpBackendTest, CancelOfAnOpThatSucceededAtOnceEndsOnceWithItsResult) {
  LoopbackPair pair(scheduler_.io());
  for (int round = 0; round < 50; ++round) {
    pair.SendByte('i');
    char byte = 0;
    ASSERT_TRUE(WaitUntilTrue([&] {  // buffered at the socket, without taking it
      u_long buffered = 0;
      return ::ioctlsocket(internal::SocketOf(pair.fd()), FIONREAD, &buffered) == 0 &&
             buffered == 1;
    }));
    IoWaiter waiter(&scheduler_);
    waiter.op().PrepareRead(pair.fd(), &byte, 1, waiter.task());
    waiter.Start();
    scheduler_.io().Cancel(&waiter.op());
    ASSERT_TRUE(WaitUntilTrue([&] { return waiter.finished(); })) << "round " << round;
    EXPECT_EQ(waiter.finals(), 1);
    if (waiter.result() == 1) {
      EXPECT_EQ(byte, 'i');
    } else {  // the cancel reached the op before the role issued it
      EXPECT_EQ(waiter.result(), -ECANCELED) << "round " << round;
      ASSERT_TRUE(pair.ReceiveByte(&byte));
    }
    EXPECT_TRUE(pair.IsDrained());
  }
  EXPECT_EQ(scheduler_.io().LiveCount(), 0);
}

TEST_F(IocpBackendTest, WritesAndPeerResetAreResults) {
  LoopbackPair pair(scheduler_.io());
  const char data[] = "0123456789";
  IoWaiter writer(&scheduler_);
  writer.op().PrepareSend(pair.fd(), data, 10, writer.task());
  writer.Start();
  ASSERT_TRUE(WaitUntilTrue([&] { return writer.finals() == 1; }));
  EXPECT_EQ(writer.result(), 10);
  // A reset by the peer (linger 0 + close) fails a pending read with ECONNRESET.
  char buffer[8];
  IoWaiter reader(&scheduler_);
  reader.op().PrepareRead(pair.fd(), buffer, sizeof(buffer), reader.task());
  reader.Start();
  // The read must be pending in the kernel before the reset: under Wine 8 a WSARecv issued
  // after the RST arrived completes with 0 bytes (end of stream) instead of WSAECONNRESET.
  std::this_thread::sleep_for(milliseconds(50));
  pair.ResetPeer();
  ASSERT_TRUE(WaitUntilTrue([&] { return reader.finals() == 1; }));
  EXPECT_EQ(reader.result(), -ECONNRESET);
}

TEST_F(IocpBackendTest, ReadinessOpsAreNotSupported) {
  LoopbackPair pair(scheduler_.io());
  for (const bool watch : {true, false}) {
    IoWaiter waiter(&scheduler_);
    if (watch) {
      waiter.op().PrepareWatch(pair.fd(), kIoReadable, waiter.task());
    } else {
      waiter.op().PreparePoll(pair.fd(), kIoReadable, waiter.task());
    }
    waiter.Start();
    ASSERT_TRUE(WaitUntilTrue([&] { return waiter.finals() == 1; }));
    EXPECT_EQ(waiter.result(), -EOPNOTSUPP);
  }
}

// ---- The socket API over IOCP: AcceptWithPeer, WriteSome/ReadSome, options, idle timeout ----
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
  auto session = [&]() -> coro::Lazy<std::string> {
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
