// One typed suite for the Unix-domain stream sockets (io/unix_stream.h) over both Linux
// backends, EpollBackend and IoUringBackend: 20 clients echoed over a path address, an
// abstract address, addresses that do not fit sun_path, a path that exists (regular file,
// live listener, stale socket file with and without remove_stale), refused connects, a read
// deadline, Close (of a stream: the peer sees the end; of a listener: its file is gone),
// peer credentials and the socket options (TCP's refused). Socket files live in a fresh directory under /tmp (TEST_TMPDIR may be
// longer than sun_path allows); the fd count is checked after each test.
#include "io/unix_stream.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/epoll_backend.h"
#include "io/io_uring_backend.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"
#include "tests/io/socket_test.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TaskDeadline Soon() { return coro::DeadlineAfter(seconds(10)); }

IoError Mismatch() { return IoError(IoErrorCode::kSystem, EBADMSG); }

bool Exists(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0;
}

template <typename Backend>
class UnixStreamTest : public testing::SocketTest<Backend> {
 public:  // EchoManyClients drives any fixture
  using Sched = typename testing::SocketTest<Backend>::Sched;
  using Stream = UnixStream<Sched>;
  using Listener = UnixListener<Sched>;
  using testing::SocketTest<Backend>::scheduler;

  void SetUp() override {
    testing::SocketTest<Backend>::SetUp();
    char pattern[] = "/tmp/fairsched_unix.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    testing::SocketTest<Backend>::TearDown();
    // Every socket file was removed by its listener (tests remove what they made).
    EXPECT_EQ(::rmdir(dir_.c_str()), 0) << "files left in " << dir_;
  }
  std::string PathIn(const char* name) const { return dir_ + "/" + name; }
  SocketAddress AddressIn(const char* name) const {
    IoResult<SocketAddress> address = UnixPathAddress(PathIn(name));
    EXPECT_TRUE(address.ok()) << address.error().Message();
    return address.value();
  }
  Listener Listen(const SocketAddress& address) {
    IoResult<Listener> listener = Listener::Listen(scheduler(), address);
    EXPECT_TRUE(listener.ok()) << listener.error().Message();
    return std::move(listener).value();
  }

  std::string dir_;
};

using Backends = ::testing::Types<EpollBackend, IoUringBackend>;
TYPED_TEST_SUITE(UnixStreamTest, Backends);

// Accepts `clients` connections and echoes each one's bytes until it ends.
template <typename Sched>
coro::Lazy<void> EchoOne(UnixStream<Sched> stream) {
  char buffer[256];
  while (true) {
    IoResult<std::size_t> n = co_await stream.Read(buffer, Soon());
    if (!n.ok()) co_return;
    const IoError written =
        co_await stream.Write(std::span<const char>(buffer, n.value()), Soon());
    if (!written.ok()) co_return;
  }
}
template <typename Sched>
coro::Lazy<IoError> AcceptAndEcho(Sched* scheduler, UnixListener<Sched>* listener, int clients) {
  std::vector<coro::JoinHandle<void>> echoes;
  for (int i = 0; i < clients; ++i) {
    IoResult<UnixStream<Sched>> accepted = co_await listener->Accept(Soon());
    if (!accepted.ok()) co_return accepted.error();
    echoes.push_back(coro::Spawn(*scheduler, EchoOne<Sched>(std::move(accepted).value())));
  }
  for (auto& echo : echoes) co_await std::move(echo);
  co_return IoError();
}

// Connects, sends `rounds` messages, reads each back whole.
template <typename Sched>
coro::Lazy<IoError> Client(Sched* scheduler, SocketAddress address, int id, int rounds) {
  IoResult<UnixStream<Sched>> connected =
      co_await UnixStream<Sched>::Connect(*scheduler, address, Soon());
  if (!connected.ok()) co_return connected.error();
  UnixStream<Sched> stream = std::move(connected).value();
  for (int i = 0; i < rounds; ++i) {
    const std::string message = "client " + std::to_string(id) + " message " + std::to_string(i);
    if (IoError written = co_await stream.Write(message, Soon()); !written.ok()) co_return written;
    std::string back(message.size(), '\0');
    if (IoError read = co_await stream.ReadExactly(back, Soon()); !read.ok()) co_return read;
    if (back != message) co_return Mismatch();
  }
  co_return IoError();
}

template <typename Fixture>
void EchoManyClients(Fixture* test, const SocketAddress& address, int clients) {
  auto listener = test->Listen(address);
  auto& scheduler = test->scheduler();
  coro::JoinHandle<IoError> server =
      coro::Spawn(scheduler, AcceptAndEcho(&scheduler, &listener, clients));
  std::vector<coro::JoinHandle<IoError>> running;
  for (int id = 0; id < clients; ++id) {
    running.push_back(coro::Spawn(scheduler, Client(&scheduler, address, id, 10)));
  }
  for (auto& client : running) {
    const IoError result = client.Get();
    EXPECT_TRUE(result.ok()) << result.Message();
  }
  const IoError served = server.Get();
  EXPECT_TRUE(served.ok()) << served.Message();
}

TYPED_TEST(UnixStreamTest, EchoesTwentyClientsOverAPathAndRemovesTheFileOnClose) {
  const std::string path = this->PathIn("echo.sock");
  EchoManyClients(this, this->AddressIn("echo.sock"), 20);
  EXPECT_FALSE(Exists(path)) << "the listener's Close left its socket file";
}

TYPED_TEST(UnixStreamTest, EchoesOverAnAbstractAddressWithNoFile) {
  const std::string name = "fairsched_test_" + std::to_string(::getpid()) + "_" + this->dir_.substr(5);
  IoResult<SocketAddress> address = UnixAbstractAddress(name);
  ASSERT_TRUE(address.ok()) << address.error().Message();
  EXPECT_EQ(UnixAddressText(address.value()), "@" + name);
  EchoManyClients(this, address.value(), 3);
}

TYPED_TEST(UnixStreamTest, AddressesThatDoNotFitAreClearErrors) {
  const std::size_t room = sizeof(sockaddr_un{}.sun_path);  // 108 on Linux
  const std::string longest(room - 1, 'p');
  IoResult<SocketAddress> fits = UnixPathAddress(longest);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(UnixAddressText(fits.value()), longest);  // nothing cut
  for (const std::string& too_long : {std::string(room, 'p'), std::string(4096, 'p')}) {
    IoResult<SocketAddress> path = UnixPathAddress(too_long);
    ASSERT_FALSE(path.ok());
    EXPECT_EQ(path.error().code(), IoErrorCode::kInvalidAddress);
    EXPECT_EQ(path.error().sys_errno(), ENAMETOOLONG);
    EXPECT_NE(path.error().Message().find("File name too long"), std::string::npos)
        << path.error().Message();
  }
  EXPECT_TRUE(UnixAbstractAddress(std::string(room - 1, 'a')).ok());
  EXPECT_EQ(UnixAbstractAddress(std::string(room, 'a')).error().sys_errno(), ENAMETOOLONG);
  for (const std::string_view bad : {std::string_view(""), std::string_view("a\0b", 3)}) {
    IoResult<SocketAddress> path = UnixPathAddress(bad);
    ASSERT_FALSE(path.ok());
    EXPECT_EQ(path.error().code(), IoErrorCode::kInvalidAddress);
    EXPECT_EQ(path.error().sys_errno(), EINVAL);
  }
  // An IP address is not a Unix listener's.
  IoResult<typename TestFixture::Listener> ip = TestFixture::Listener::Listen(
      this->scheduler(), SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_FALSE(ip.ok());
  EXPECT_EQ(ip.error().code(), IoErrorCode::kInvalidAddress);
}

// A socket file that nobody listens on: bound by a plain socket, closed without unlink.
void MakeStaleSocketFile(const SocketAddress& address) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::bind(fd, address.get(), address.length()), 0);
  ::close(fd);
}

TYPED_TEST(UnixStreamTest, AnExistingPathIsInUseUnlessAStaleSocketRemovalIsAsked) {
  using Listener = typename TestFixture::Listener;
  // A regular file: never removed, not even with remove_stale.
  const std::string file = this->PathIn("file");
  std::ofstream(file) << "mine";
  UnixListenOptions remove_stale;
  remove_stale.remove_stale = true;
  for (const UnixListenOptions& options : {UnixListenOptions{}, remove_stale}) {
    IoResult<Listener> on_file = Listener::Listen(this->scheduler(), this->AddressIn("file"), options);
    ASSERT_FALSE(on_file.ok());
    EXPECT_EQ(on_file.error().sys_errno(), EADDRINUSE) << on_file.error().Message();
  }
  EXPECT_TRUE(Exists(file));
  ::unlink(file.c_str());

  // A live listener's path: in use, also with remove_stale, and the first one keeps working.
  const SocketAddress live = this->AddressIn("live.sock");
  {
    auto first = this->Listen(live);
    IoResult<Listener> second = Listener::Listen(this->scheduler(), live, remove_stale);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().code(), IoErrorCode::kSystem);
    EXPECT_EQ(second.error().sys_errno(), EADDRINUSE);
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(::connect(probe, live.get(), live.length()), 0) << "the live listener lost its file";
    ::close(probe);
  }

  // A stale socket file: in use by default, replaced with remove_stale.
  const SocketAddress stale = this->AddressIn("stale.sock");
  MakeStaleSocketFile(stale);
  IoResult<Listener> refused = Listener::Listen(this->scheduler(), stale);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().sys_errno(), EADDRINUSE);
  IoResult<Listener> replaced = Listener::Listen(this->scheduler(), stale, remove_stale);
  ASSERT_TRUE(replaced.ok()) << replaced.error().Message();
  replaced.value().Close();
  EXPECT_FALSE(Exists(this->PathIn("stale.sock")));
}

template <typename Sched>
coro::Lazy<IoError> ConnectOnce(Sched* scheduler, SocketAddress address) {
  IoResult<UnixStream<Sched>> connected =
      co_await UnixStream<Sched>::Connect(*scheduler, address, Soon());
  co_return connected.ok() ? Mismatch() : connected.error();
}

TYPED_TEST(UnixStreamTest, ConnectToAStaleSocketIsRefusedAndToNoFileIsENOENT) {
  auto& scheduler = this->scheduler();
  const SocketAddress stale = this->AddressIn("stale.sock");
  MakeStaleSocketFile(stale);
  const IoError refused = coro::Spawn(scheduler, ConnectOnce(&scheduler, stale)).Get();
  EXPECT_EQ(refused.code(), IoErrorCode::kRefused) << refused.Message();
  ::unlink(this->PathIn("stale.sock").c_str());
  const IoError missing = coro::Spawn(scheduler, ConnectOnce(&scheduler, stale)).Get();
  EXPECT_EQ(missing.code(), IoErrorCode::kSystem) << missing.Message();
  EXPECT_EQ(missing.sys_errno(), ENOENT);
}

// Accepts one connection and reads from it with a short deadline (the peer sends nothing),
// then reads again until the peer's Close ends the stream.
template <typename Sched>
coro::Lazy<IoError> TimeOutThenSeeTheEnd(UnixListener<Sched>* listener, PeerCredentials* peer) {
  IoResult<UnixStream<Sched>> accepted = co_await listener->Accept(Soon());
  if (!accepted.ok()) co_return accepted.error();
  UnixStream<Sched> stream = std::move(accepted).value();
  IoResult<PeerCredentials> credentials = PeerCredentialsOf(stream);
  if (!credentials.ok()) co_return credentials.error();
  *peer = credentials.value();
  char buffer[16];
  const auto start = TaskClock::now();
  IoResult<std::size_t> first = co_await stream.Read(buffer, coro::DeadlineAfter(milliseconds(100)));
  if (first.ok() || first.error().code() != IoErrorCode::kTimeout) co_return Mismatch();
  if (TaskClock::now() - start < milliseconds(100)) co_return Mismatch();
  IoResult<std::size_t> second = co_await stream.Read(buffer, Soon());
  co_return second.ok() ? Mismatch() : second.error();
}

template <typename Sched>
coro::Lazy<IoError> ConnectWaitClose(Sched* scheduler, SocketAddress address) {
  IoResult<UnixStream<Sched>> connected =
      co_await UnixStream<Sched>::Connect(*scheduler, address, Soon());
  if (!connected.ok()) co_return connected.error();
  co_await coro::SleepFor(milliseconds(300));  // past the server's read deadline
  connected.value().Close();
  co_return IoError();
}

TYPED_TEST(UnixStreamTest, ReadDeadlineThenClosedPeerIsTheEndOfStream) {
  auto& scheduler = this->scheduler();
  const SocketAddress address = this->AddressIn("deadline.sock");
  auto listener = this->Listen(address);
  PeerCredentials peer;
  coro::JoinHandle<IoError> server =
      coro::Spawn(scheduler, TimeOutThenSeeTheEnd(&listener, &peer));
  const IoError client = coro::Spawn(scheduler, ConnectWaitClose(&scheduler, address)).Get();
  EXPECT_TRUE(client.ok()) << client.Message();
  const IoError result = server.Get();
  EXPECT_EQ(result.code(), IoErrorCode::kEndOfStream) << result.Message();
  // The client is this process.
  EXPECT_EQ(peer.pid, ::getpid());
  EXPECT_EQ(peer.uid, ::getuid());
  EXPECT_EQ(peer.gid, ::getgid());
}

// The options a connected Unix stream takes: TCP's own fail clearly, the buffer sizes work.
struct OptionResults {
  IoError no_delay;
  IoError keepalive_timers;
  IoError receive_buffer;
};
template <typename Sched>
coro::Lazy<IoResult<OptionResults>> TryOptions(Sched* scheduler, UnixListener<Sched>* listener,
                                               SocketAddress address) {
  IoResult<UnixStream<Sched>> connected =
      co_await UnixStream<Sched>::Connect(*scheduler, address, Soon());
  if (!connected.ok()) co_return connected.error();
  IoResult<UnixStream<Sched>> accepted = co_await listener->Accept(Soon());
  if (!accepted.ok()) co_return accepted.error();
  UnixStream<Sched>& stream = connected.value();
  KeepAlive timers;
  timers.idle = seconds(30);
  co_return OptionResults{stream.SetNoDelay(true), stream.EnableKeepAlive(timers),
                          stream.SetReceiveBufferSize(64 * 1024)};
}

TYPED_TEST(UnixStreamTest, TcpOnlyOptionsAreRefusedAndBufferSizesWork) {
  auto& scheduler = this->scheduler();
  const SocketAddress address = this->AddressIn("options.sock");
  auto listener = this->Listen(address);
  IoResult<OptionResults> results =
      coro::Spawn(scheduler, TryOptions(&scheduler, &listener, address)).Get();
  ASSERT_TRUE(results.ok()) << results.error().Message();
  for (const IoError& refused : {results.value().no_delay, results.value().keepalive_timers}) {
    EXPECT_EQ(refused.code(), IoErrorCode::kSystem) << refused.Message();
    EXPECT_EQ(refused.sys_errno(), EOPNOTSUPP) << refused.Message();
  }
  EXPECT_TRUE(results.value().receive_buffer.ok()) << results.value().receive_buffer.Message();
}

TYPED_TEST(UnixStreamTest, CloseRemovesOnlyTheListenersOwnFile) {
  const std::string path = this->PathIn("own.sock");
  auto listener = this->Listen(this->AddressIn("own.sock"));
  EXPECT_TRUE(Exists(path));
  EXPECT_EQ(UnixAddressText(listener.LocalAddress().value()), path);
  // Someone replaces the file meanwhile: Close must not remove theirs.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  std::ofstream(path) << "theirs";
  listener.Close();
  EXPECT_FALSE(listener.IsOpen());
  EXPECT_TRUE(Exists(path));
  ::unlink(path.c_str());
  // A moved-from listener removes nothing; the one it moved to removes its file once.
  auto first = this->Listen(this->AddressIn("own.sock"));
  typename TestFixture::Listener second = std::move(first);
  first.Close();
  EXPECT_TRUE(Exists(path));
  second.Close();
  EXPECT_FALSE(Exists(path));
}

}  // namespace
}  // namespace fairsched
