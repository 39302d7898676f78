// The Linux-only part of the TCP tests (the part every platform runs is tcp_test.cc): the
// echo server against 5,000 raw POSIX clients at once (RLIMIT_NOFILE raised as needed),
// SIGPIPE left alone when writing to a reset connection (a death test), and the errno of an
// epoll watch the kernel refused. Typed over EpollBackend and IoUringBackend; the open fds
// (/proc/self/fd) are checked after each server test.
#include "io/tcp.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "examples/echo_server.h"
#include "io/epoll_backend.h"
#include "sched/task_scheduler.h"
#include "tests/io/echo_frames.h"
#include "tests/io/io_test_util.h"
#include "tests/io/raw_client.h"
#include "tests/io/server_fixture.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using examples::EchoServer;
using examples::EchoServerOptions;
using std::chrono::seconds;
using testing::Frame;
using testing::RawClient;
using testing::WaitUntilTrue;

template <typename Backend>
using Scheduler = testing::IoTestScheduler<Backend>;

EchoServerOptions Framed() {
  EchoServerOptions options;
  options.protocol = examples::EchoProtocol::kFramed;
  return options;
}

// The framed echo server on 127.0.0.1 (tests/io/server_fixture.h: scheduler, fd check).
template <typename Backend>
class TcpLinuxTest : public testing::ServerFixture<Backend, EchoServer, EchoServerOptions> {
 protected:
  // The server's open connections drop to zero, and a new raw client is served.
  void ExpectServerHealthy(const SocketAddress& address) {
    EXPECT_TRUE(this->AllClosed()) << "open connections: " << this->Stats().open;
    RawClient client(address);
    EXPECT_TRUE(client.RoundTrip(Frame("still serving")));
  }
};
TYPED_TEST_SUITE(TcpLinuxTest, testing::IoBackends, testing::BackendNames);

TYPED_TEST(TcpLinuxTest, ThousandsOfConcurrentConnections) {
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
  const SocketAddress address = this->Start(Framed());
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < connections; ++i) clients.push_back(std::make_unique<RawClient>(address));
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().open == connections; }));
  // Every connection is open at once; each gets a request, then every answer is read.
  for (int i = 0; i < connections; ++i) {
    ASSERT_TRUE(clients[i]->SendAll(Frame(std::to_string(i))));
  }
  for (int i = 0; i < connections; ++i) {
    const std::string expected = Frame(std::to_string(i));
    ASSERT_EQ(clients[i]->Receive(expected.size()), expected) << "connection " << i;
  }
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().answered == connections; }));
  clients.clear();
  this->ExpectServerHealthy(address);
}

template <typename Backend>
class TcpSignalTest : public ::testing::Test {};
TYPED_TEST_SUITE(TcpSignalTest, testing::IoBackends, testing::BackendNames);

// Regression test: the library set SIGPIPE to SIG_IGN for the whole process (io_uring writes
// went through write(2), which raises it on a reset connection). Writes are sends with
// MSG_NOSIGNAL now: the process's SIGPIPE disposition stays what it was (here the
// default, which would kill the process), and the write fails with kResetByPeer.
template <typename Sched>
coro::Lazy<IoError> WriteUntilFailure(Sched* scheduler, SocketAddress address) {
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
TYPED_TEST(TcpSignalTest, WritingToAResetConnectionFailsWithoutSigpipe) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(WriteToAResetConnection<Scheduler<TypeParam>>()),
              ::testing::ExitedWithCode(0), "");
}

// Regression test: a standing watch the kernel refused (epoll_ctl failed) made every operation
// fail with kShutdown, hiding the reason. The errno is kept: a regular file, which epoll
// cannot watch (EPERM), here.
coro::Lazy<IoError> WaitForReadable(internal::SocketCore<Scheduler<EpollBackend>>* core) {
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
