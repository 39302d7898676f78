// Resolve, Connect by name and ConnectToAny (io/resolve.h) on epoll and io_uring, with
// "localhost", numeric addresses and a name under the reserved .invalid domain only (no
// network): the lookup's results and errors, a deadline that passes while the lookup
// waits for the pool, connecting by name, and an address list whose first address refuses.
#include "io/resolve.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "coro/blocking_pool.h"
#include "coro/runtime.h"
#include "tests/io/socket_test.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

template <typename Backend>
class ResolveTest : public testing::SocketTest<Backend> {
 public:
  using Sched = typename testing::SocketTest<Backend>::Sched;

  IoResult<std::vector<SocketAddress>> ResolveNow(std::string host, std::uint16_t port,
                                                  AddressFamily family = AddressFamily::kAny) {
    return this->Run(Resolve(pool_, std::move(host), port, coro::DeadlineAfter(seconds(20)),
                             family));
  }

  // A port on 127.0.0.1 where nobody listens: bound by a listener that is closed again.
  // Its fd closes once the backend has handed its operations back (io/tcp.h), so this
  // waits (bounded) until a connect is refused.
  SocketAddress RefusingAddress() {
    SocketAddress address;
    {
      IoResult<TcpListener<Sched>> listener = TcpListener<Sched>::Listen(
          this->scheduler(), SocketAddress::Parse("127.0.0.1:0").value());
      EXPECT_TRUE(listener.ok());
      address = listener.value().LocalAddress().value();
    }
    auto refused = [&]() -> coro::Lazy<bool> {
      const TaskDeadline give_up = coro::DeadlineAfter(seconds(20));
      while (TaskClock::now() < give_up) {
        IoResult<TcpStream<Sched>> stream =
            co_await TcpStream<Sched>::Connect(this->scheduler(), address, give_up);
        if (!stream.ok() && stream.error().code() == IoErrorCode::kRefused) co_return true;
        co_await coro::SleepFor(milliseconds(1));
      }
      co_return false;
    };
    EXPECT_TRUE(this->Run(refused()));
    return address;
  }

  // The order io/resolve.h asks for: the pool stops first (it runs the lookups still queued
  // and joins its threads, so none is still waking a coroutine), then the scheduler goes.
  void TearDown() override {
    pool_.Stop();
    testing::SocketTest<Backend>::TearDown();
  }

  coro::BlockingPool pool_{{.threads = 1, .queue_bound = 16}};
};
TYPED_TEST_SUITE(ResolveTest, testing::IoBackends, testing::BackendNames);

bool IsLoopback(const SocketAddress& address) {
  const std::string text = address.ToString();
  return text.rfind("127.", 0) == 0 || text.rfind("[::1]", 0) == 0;
}

TYPED_TEST(ResolveTest, ResolvesLocalhostToLoopbackAddresses) {
  IoResult<std::vector<SocketAddress>> addresses = this->ResolveNow("localhost", 7000);
  ASSERT_TRUE(addresses.ok()) << ToString(addresses.error().code());
  ASSERT_FALSE(addresses.value().empty());
  for (const SocketAddress& address : addresses.value()) {
    EXPECT_TRUE(IsLoopback(address)) << address.ToString();
    EXPECT_EQ(address.port(), 7000);
  }
}

TYPED_TEST(ResolveTest, ResolvesNumericAddressesAsThemselves) {
  IoResult<std::vector<SocketAddress>> v4 = this->ResolveNow("127.0.0.1", 8080);
  ASSERT_TRUE(v4.ok());
  ASSERT_EQ(v4.value().size(), 1u);
  EXPECT_EQ(v4.value()[0].ToString(), "127.0.0.1:8080");
  IoResult<std::vector<SocketAddress>> v6 = this->ResolveNow("::1", 8080, AddressFamily::kIPv6);
  ASSERT_TRUE(v6.ok());
  ASSERT_EQ(v6.value().size(), 1u);
  EXPECT_EQ(v6.value()[0].ToString(), "[::1]:8080");
  // An IPv4 literal has no IPv6 address. (Not checked on Windows: Wine's getaddrinfo
  // passes the host's EAI_ADDRFAMILY (-9) through, which Windows has no name for.)
  IoResult<std::vector<SocketAddress>> none =
      this->ResolveNow("127.0.0.1", 8080, AddressFamily::kIPv6);
  ASSERT_FALSE(none.ok());
#ifndef _WIN32
  EXPECT_EQ(none.error().code(), IoErrorCode::kInvalidAddress);
#endif
}

TYPED_TEST(ResolveTest, ANameThatDoesNotResolveIsAnErrorValue) {
  IoResult<std::vector<SocketAddress>> addresses =
      this->ResolveNow("no-such-host.fairsched.invalid", 80);
  ASSERT_FALSE(addresses.ok());
  // kSystem/EAGAIN only where no name server answers at all.
  const IoError error = addresses.error();
  EXPECT_TRUE(error.code() == IoErrorCode::kInvalidAddress ||
              (error.code() == IoErrorCode::kSystem && error.sys_errno() == EAGAIN))
      << ToString(error.code());
  IoResult<std::vector<SocketAddress>> empty = this->ResolveNow("", 80);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code(), IoErrorCode::kInvalidAddress);
}

// The deadline passes while the lookup waits for the pool's only thread: Resolve returns
// kTimeout at once, and the lookup runs later, in the background, without the caller.
TYPED_TEST(ResolveTest, ADeadlineReturnsTimeoutAndTheLookupFinishesInTheBackground) {
  Atomic<bool> release{false};
  auto block = [&] {
    // Bounded: the test fails instead of hanging if it is never released.
    const auto give_up = std::chrono::steady_clock::now() + seconds(20);
    while (!release.load(std::memory_order_relaxed) &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(1));
    }
  };
  Atomic<bool> blocking{false};
  auto block_and_say = [&] {
    blocking.store(true, std::memory_order_relaxed);  // relaxed: a flag the test polls
    block();
  };
  auto hold_pool = [&]() -> coro::Lazy<void> {
    co_await coro::RunBlocking(this->pool_, block_and_say);
  };
  coro::JoinHandle<void> holder = coro::Spawn(this->scheduler(), hold_pool());
  ASSERT_TRUE(testing::WaitUntilTrue([&] { return blocking.load(); }));

  IoResult<std::vector<SocketAddress>> late = this->Run(
      Resolve(this->pool_, "localhost", 80, coro::DeadlineAfter(milliseconds(50))));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code(), IoErrorCode::kTimeout);
  EXPECT_EQ(this->pool_.queued(), 1u);  // the lookup still waits for the thread

  release.store(true, std::memory_order_relaxed);  // relaxed: a flag the blocker polls
  holder.Get();
  // The abandoned lookup runs and finishes; the pool is idle again afterwards.
  EXPECT_TRUE(testing::WaitUntilTrue([&] { return this->pool_.queued() == 0; }));
  IoResult<std::vector<SocketAddress>> again = this->ResolveNow("localhost", 80);
  EXPECT_TRUE(again.ok());
}

TYPED_TEST(ResolveTest, ConnectsByNameToALoopbackListener) {
  using Sched = typename TestFixture::Sched;
  IoResult<TcpListener<Sched>> listener = TcpListener<Sched>::Listen(
      this->scheduler(), SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok());
  const std::uint16_t port = listener.value().LocalAddress().value().port();
  auto exchange = [&]() -> coro::Lazy<bool> {
    const TaskDeadline deadline = coro::DeadlineAfter(seconds(20));
    // "localhost" may list ::1 first, where nobody listens: Connect goes on to 127.0.0.1.
    IoResult<TcpStream<Sched>> client =
        co_await Connect(this->scheduler(), this->pool_, "localhost", port, deadline);
    if (!client.ok()) co_return false;
    IoResult<TcpStream<Sched>> server = co_await listener.value().Accept(deadline);
    if (!server.ok()) co_return false;
    const IoError written = co_await client.value().Write(std::span<const char>("x", 1), deadline);
    if (!written.ok()) co_return false;
    char byte = 0;
    IoResult<std::size_t> got = co_await server.value().Read(std::span<char>(&byte, 1), deadline);
    co_return got.ok() && byte == 'x';
  };
  EXPECT_TRUE(this->Run(exchange()));
}

TYPED_TEST(ResolveTest, ConnectToAnyGoesOnPastARefusingAddress) {
  using Sched = typename TestFixture::Sched;
  IoResult<TcpListener<Sched>> listener = TcpListener<Sched>::Listen(
      this->scheduler(), SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok());
  const SocketAddress refusing = this->RefusingAddress();
  const std::vector<SocketAddress> addresses = {refusing,
                                                listener.value().LocalAddress().value()};
  auto connect = [&]() -> coro::Lazy<IoResult<TcpStream<Sched>>> {
    co_return co_await ConnectToAny(this->scheduler(), std::span<const SocketAddress>(addresses),
                                    coro::DeadlineAfter(seconds(20)), seconds(10));
  };
  IoResult<TcpStream<Sched>> stream = this->Run(connect());
  ASSERT_TRUE(stream.ok()) << ToString(stream.error().code());
  EXPECT_EQ(stream.value().PeerAddress().value().port(),
            listener.value().LocalAddress().value().port());

  // Only refusing addresses: the last error; an empty list: kInvalidAddress.
  const std::vector<SocketAddress> refusing_only = {refusing, refusing};
  auto connect_refused = [&]() -> coro::Lazy<IoResult<TcpStream<Sched>>> {
    co_return co_await ConnectToAny(this->scheduler(),
                                    std::span<const SocketAddress>(refusing_only),
                                    coro::DeadlineAfter(seconds(20)));
  };
  IoResult<TcpStream<Sched>> refused = this->Run(connect_refused());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), IoErrorCode::kRefused);
  auto connect_none = [&]() -> coro::Lazy<IoResult<TcpStream<Sched>>> {
    co_return co_await ConnectToAny(this->scheduler(), std::span<const SocketAddress>(),
                                    coro::DeadlineAfter(seconds(20)));
  };
  IoResult<TcpStream<Sched>> none = this->Run(connect_none());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), IoErrorCode::kInvalidAddress);
}

}  // namespace
}  // namespace fairsched
