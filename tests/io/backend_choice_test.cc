// Tests for io/backend_choice.h: names parse to the platform's backends only, and a server
// written once as a template runs on each supported backend through WithIoBackend (a TCP
// round trip over loopback on the backend the run asked for).
#include "io/backend_choice.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "coro/lazy.h"
#include "coro/spawn.h"
#include "io/byte_stream.h"
#include "io/tcp.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"

namespace fairsched {
namespace {

TEST(BackendChoiceTest, NamesRoundTripAndOnlyThisPlatformsBackendsParse) {
  for (IoBackendKind kind : {IoBackendKind::kEpoll, IoBackendKind::kIoUring, IoBackendKind::kIocp}) {
    const std::optional<IoBackendKind> parsed = ParseIoBackendKind(IoBackendName(kind));
#ifdef _WIN32
    EXPECT_EQ(parsed.has_value(), kind == IoBackendKind::kIocp) << IoBackendName(kind);
#else
    EXPECT_EQ(parsed.has_value(), kind != IoBackendKind::kIocp) << IoBackendName(kind);
#endif
    if (parsed) {
      EXPECT_EQ(*parsed, kind);
    }
  }
  EXPECT_FALSE(ParseIoBackendKind(""));
  EXPECT_FALSE(ParseIoBackendKind("EPOLL"));
  EXPECT_FALSE(ParseIoBackendKind("io_uring "));
  EXPECT_TRUE(IoBackendSupported(DefaultIoBackend()));
  EXPECT_EQ(ParseIoBackendKind(IoBackendName(DefaultIoBackend())), DefaultIoBackend());
}

// Which instantiation ran, by the backend class itself.
template <typename Backend>
std::string NameOf() {
#ifdef _WIN32
  if constexpr (std::is_same_v<Backend, IocpBackend>) return "iocp";
#else
  if constexpr (std::is_same_v<Backend, EpollBackend>) return "epoll";
  if constexpr (std::is_same_v<Backend, IoUringBackend>) return "io_uring";
#endif
  return "unknown";
}

TaskDeadline Deadline() { return coro::DeadlineAfter(std::chrono::seconds(10)); }

// The server, written once: listen, accept one connection, echo one message back; the
// client side checks the echo. Returns the echoed text, or an error description.
template <typename Backend>
std::string EchoOnce() {
  using Sched = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;
  Sched sched;
  sched.Start(2);
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(sched, SocketAddress::Parse("127.0.0.1:0").value());
  if (!listener.ok()) return "listen failed";
  const SocketAddress address = listener.value().LocalAddress().value();
  auto serve = [](TcpListener<Sched>* listener) -> coro::Lazy<void> {
    IoResult<TcpStream<Sched>> stream = co_await listener->Accept(Deadline());
    if (!stream.ok()) co_return;
    char buffer[64];
    IoResult<std::size_t> n = co_await stream.value().ReadSome(buffer, Deadline());
    if (n.ok()) co_await WriteAll(stream.value(), std::span<const char>(buffer, n.value()), Deadline());
  };
  auto client = [](Sched* sched, SocketAddress address) -> coro::Lazy<std::string> {
    IoResult<TcpStream<Sched>> stream =
        co_await TcpStream<Sched>::Connect(*sched, address, Deadline());
    if (!stream.ok()) co_return "connect failed";
    const IoError written = co_await WriteAll(stream.value(), std::span<const char>("ping", 4), Deadline());
    if (!written.ok()) co_return "write failed";
    char buffer[4];
    IoResult<std::size_t> n = co_await stream.value().ReadSome(buffer, Deadline());
    if (!n.ok()) co_return "read failed";
    co_return std::string(buffer, n.value());
  };
  coro::JoinHandle<void> server = coro::Spawn(sched, serve(&listener.value()));
  std::string echoed = coro::Spawn(sched, client(&sched, address)).Get();
  server.Get();
  sched.Stop();
  return NameOf<Backend>() + ":" + echoed;
}

TEST(BackendChoiceTest, WithIoBackendRunsTheServerOnTheChosenBackend) {
  int ran = 0;
  for (std::string_view name : {"epoll", "io_uring", "iocp"}) {
    const std::optional<IoBackendKind> kind = ParseIoBackendKind(name);
    if (!kind) continue;
    if (!IoBackendSupported(*kind)) {
      std::printf("skipping %s: not supported by this kernel or sandbox\n", name.data());
      continue;
    }
    const std::string result =
        WithIoBackend(*kind, []<typename Backend>() { return EchoOnce<Backend>(); });
    EXPECT_EQ(result, std::string(name) + ":ping");
    ++ran;
  }
  EXPECT_GE(ran, 1);
}

}  // namespace
}  // namespace fairsched
