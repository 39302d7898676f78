// Close from another coroutine or thread (io/tcp.h, io/udp.h), over both Linux backends,
// epoll and io_uring, and over IOCP (target tcp_close_iocp_test, --config=mingw, under Wine;
// without the UDP case: no UDP on Windows yet). A Read, a Write blocked on a full send
// buffer, an Accept and a UDP receive that wait forever are released by Close with
// kClosed; operations started after Close fail at once; destroying a stream releases its
// pending Read; and a stress test races Close with the byte that completes a pending Read,
// then reuses the fd number at once: each Read ends exactly once (the byte or kClosed), and
// the new socket's data all reaches the new socket (no old operation reads from, or
// unregisters, the reused fd).
// Loopback only; every wait is bounded; on Linux fds are counted before and after each test.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/socket_platform.h"
#include "io/tcp.h"
#ifdef _WIN32
#include "io/iocp_backend.h"
#else
#include "io/epoll_backend.h"
#include "io/io_uring_backend.h"
#include "io/udp.h"
#endif
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"
#include "tests/io/socket_test.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TaskDeadline Soon() { return coro::DeadlineAfter(seconds(10)); }

// How long a test lets a spawned operation reach its wait before it closes the socket. If
// the machine is so slow that the operation has not started by then, it still fails with
// kClosed (at its start), so the assertions hold either way.
constexpr milliseconds kLetItBlock{50};

// A bound on every join: a broken Close would leave the operation waiting forever.
constexpr seconds kJoinBound{20};

template <typename Sched>
struct Pair {
  TcpStream<Sched> client;
  TcpStream<Sched> server;
};

// Connects to `listener` and accepts the connection.
template <typename Sched>
coro::Lazy<IoResult<Pair<Sched>>> Connected(Sched* scheduler, TcpListener<Sched>* listener) {
  IoResult<SocketAddress> address = listener->LocalAddress();
  if (!address.ok()) co_return address.error();
  IoResult<TcpStream<Sched>> client =
      co_await TcpStream<Sched>::Connect(*scheduler, address.value(), Soon());
  if (!client.ok()) co_return client.error();
  IoResult<TcpStream<Sched>> server = co_await listener->Accept(Soon());
  if (!server.ok()) co_return server.error();
  co_return Pair<Sched>{std::move(client).value(), std::move(server).value()};
}

// One Read of up to 16 bytes; what it read as a string, or its error.
template <typename Sched>
coro::Lazy<IoResult<std::string>> ReadOnce(TcpStream<Sched>* stream, TaskDeadline deadline) {
  char buffer[16];
  IoResult<std::size_t> n = co_await stream->Read(buffer, deadline);
  if (!n.ok()) co_return n.error();
  co_return std::string(buffer, n.value());
}

template <typename Sched>
coro::Lazy<IoError> ReadExactlyInto(TcpStream<Sched>* stream, std::span<char> buffer) {
  co_return co_await stream->ReadExactly(buffer, Soon());
}

template <typename Sched>
coro::Lazy<IoError> WriteAllOf(TcpStream<Sched>* stream, const std::string* data) {
  co_return co_await stream->Write(*data, kTaskDeadlineInfinite);
}

template <typename Sched>
coro::Lazy<IoError> AcceptOnce(TcpListener<Sched>* listener) {
  IoResult<TcpStream<Sched>> accepted = co_await listener->Accept(kTaskDeadlineInfinite);
  co_return accepted.ok() ? IoError() : accepted.error();
}

#ifndef _WIN32
template <typename Sched>
coro::Lazy<IoError> ReceiveOnce(UdpSocket<Sched>* socket) {
  char buffer[64];
  IoResult<UdpDatagram> got = co_await socket->ReceiveFrom(buffer, kTaskDeadlineInfinite);
  co_return got.ok() ? IoError() : got.error();
}
#endif

// Closes `socket` from inside a coroutine (another one than the operation's).
template <typename Socket>
coro::Lazy<void> CloseFromCoroutine(Socket* socket) {
  socket->Close();
  co_return;
}

void SpinFor(std::chrono::microseconds duration) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// One plain send(2) of `data` on a stream's fd, from the calling thread (not through the
// stream: the stress times it against Close). Whether all of it went.
bool SendRaw(int fd, std::string_view data) {
#ifdef _WIN32
  const long long sent =
      ::send(static_cast<SOCKET>(fd), data.data(), static_cast<int>(data.size()), 0);
#else
  const long long sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
#endif
  return sent == static_cast<long long>(data.size());
}

// The error of a connect to `address` (kRefused once nobody listens there).
template <typename Sched>
coro::Lazy<IoError> ConnectError(Sched* scheduler, SocketAddress address) {
  IoResult<TcpStream<Sched>> stream =
      co_await TcpStream<Sched>::Connect(*scheduler, address, Soon());
  co_return stream.ok() ? IoError() : stream.error();
}

template <typename Backend>
class TcpCloseTest : public testing::SocketTest<Backend> {
 public:
  using Sched = typename testing::SocketTest<Backend>::Sched;
  using testing::SocketTest<Backend>::scheduler;

  TcpListener<Sched> Listen() {
    IoResult<TcpListener<Sched>> listener =
        TcpListener<Sched>::Listen(scheduler(), SocketAddress::Parse("127.0.0.1:0").value());
    EXPECT_TRUE(listener.ok()) << listener.error().Message();
    return std::move(listener).value();
  }

  Pair<Sched> Connect(TcpListener<Sched>* listener) {
    IoResult<Pair<Sched>> pair = Join(coro::Spawn(scheduler(), Connected(&scheduler(), listener)));
    EXPECT_TRUE(pair.ok()) << pair.error().Message();
    return std::move(pair).value();
  }

  // The coroutine's result; fails the test (and aborts with the value() check) instead of
  // hanging if it does not finish within kJoinBound.
  template <typename T>
  static T Join(coro::JoinHandle<T> handle) {
    EXPECT_TRUE(handle.WaitFor(kJoinBound)) << "the operation was not released";
    return handle.Get();
  }
};

TYPED_TEST_SUITE(TcpCloseTest, testing::IoBackends);

TYPED_TEST(TcpCloseTest, CloseFromAnotherCoroutineReleasesABlockedRead) {
  using Sched = typename TestFixture::Sched;
  TcpListener<Sched> listener = this->Listen();
  Pair<Sched> pair = this->Connect(&listener);
  coro::JoinHandle<IoResult<std::string>> reader =
      coro::Spawn(this->scheduler(), ReadOnce(&pair.server, kTaskDeadlineInfinite));
  std::this_thread::sleep_for(kLetItBlock);
  EXPECT_FALSE(reader.IsDone()) << "the Read did not wait";
  this->Join(coro::Spawn(this->scheduler(), CloseFromCoroutine(&pair.server)));
  IoResult<std::string> got = this->Join(std::move(reader));
  ASSERT_FALSE(got.ok()) << "read " << got.value();
  EXPECT_EQ(got.error().code(), IoErrorCode::kClosed) << got.error().Message();
  EXPECT_NE(got.error().Message().find("Close()"), std::string::npos) << got.error().Message();
  EXPECT_FALSE(pair.server.IsOpen());
  // The fd is really closed: the peer sees the end of the stream.
  IoResult<std::string> peer =
      this->Join(coro::Spawn(this->scheduler(), ReadOnce(&pair.client, Soon())));
  ASSERT_FALSE(peer.ok());
  EXPECT_EQ(peer.error().code(), IoErrorCode::kEndOfStream) << peer.error().Message();
}

TYPED_TEST(TcpCloseTest, CloseFromAnotherThreadReleasesAWriteBlockedOnAFullBuffer) {
  using Sched = typename TestFixture::Sched;
  TcpListener<Sched> listener = this->Listen();
  Pair<Sched> pair = this->Connect(&listener);
  // Small buffers on both ends, and the client never reads: the Write blocks.
  ASSERT_TRUE(pair.server.SetSendBufferSize(4096).ok());
  ASSERT_TRUE(pair.client.SetReceiveBufferSize(4096).ok());
  const std::string data(8 << 20, 'w');
  coro::JoinHandle<IoError> writer =
      coro::Spawn(this->scheduler(), WriteAllOf(&pair.server, &data));
  std::this_thread::sleep_for(kLetItBlock);
  EXPECT_FALSE(writer.IsDone()) << "the Write did not block";
  pair.server.Close();  // from the test thread: not a worker at all
  const IoError written = this->Join(std::move(writer));
  EXPECT_EQ(written.code(), IoErrorCode::kClosed) << written.Message();
#ifndef _WIN32
  // Linux's first send fills the buffer and reports it; an IOCP WSASend of the whole 8 MiB
  // that is cancelled reports no bytes (under Wine: 0), whatever part of it went.
  EXPECT_GT(written.bytes_done(), 0u);
#endif
  EXPECT_LT(written.bytes_done(), data.size());
}

TYPED_TEST(TcpCloseTest, ListenerCloseReleasesAPendingAccept) {
  using Sched = typename TestFixture::Sched;
  TcpListener<Sched> listener = this->Listen();
  const SocketAddress address = listener.LocalAddress().value();
  coro::JoinHandle<IoError> acceptor = coro::Spawn(this->scheduler(), AcceptOnce(&listener));
  std::this_thread::sleep_for(kLetItBlock);
  EXPECT_FALSE(acceptor.IsDone()) << "the Accept did not wait";
  this->Join(coro::Spawn(this->scheduler(), CloseFromCoroutine(&listener)));
  const IoError accepted = this->Join(std::move(acceptor));
  EXPECT_EQ(accepted.code(), IoErrorCode::kClosed) << accepted.Message();
  EXPECT_FALSE(listener.IsOpen());
  // The listening fd is closed: connections are refused (at once with io_uring and IOCP;
  // within one sched-role step with epoll, which closes it when the watch is handed back).
  EXPECT_TRUE(testing::WaitUntilTrue([&] {
    return this->Join(coro::Spawn(this->scheduler(), ConnectError(&this->scheduler(), address)))
               .code() == IoErrorCode::kRefused;
  }));
  // A later Accept fails at once.
  EXPECT_EQ(this->Join(coro::Spawn(this->scheduler(), AcceptOnce(&listener))).code(),
            IoErrorCode::kClosed);
}

// Destroying the listener releases a pending Accept too; on io_uring with multishot accept
// the standing op and its acceptor outlive the listener until that Accept has returned.
TYPED_TEST(TcpCloseTest, DestroyingTheListenerReleasesAPendingAccept) {
  using Sched = typename TestFixture::Sched;
  auto listener = std::make_unique<TcpListener<Sched>>(this->Listen());
  coro::JoinHandle<IoError> acceptor =
      coro::Spawn(this->scheduler(), AcceptOnce(listener.get()));
  std::this_thread::sleep_for(kLetItBlock);
  EXPECT_FALSE(acceptor.IsDone()) << "the Accept did not wait";
  listener.reset();
  const IoError accepted = this->Join(std::move(acceptor));
  EXPECT_EQ(accepted.code(), IoErrorCode::kClosed) << accepted.Message();
}

#ifndef _WIN32
TYPED_TEST(TcpCloseTest, UdpCloseReleasesAPendingReceive) {
  using Sched = typename TestFixture::Sched;
  IoResult<UdpSocket<Sched>> socket =
      UdpSocket<Sched>::Bind(this->scheduler(), SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(socket.ok()) << socket.error().Message();
  coro::JoinHandle<IoError> receiver = coro::Spawn(this->scheduler(), ReceiveOnce(&socket.value()));
  std::this_thread::sleep_for(kLetItBlock);
  EXPECT_FALSE(receiver.IsDone()) << "the receive did not wait";
  this->Join(coro::Spawn(this->scheduler(), CloseFromCoroutine(&socket.value())));
  EXPECT_EQ(this->Join(std::move(receiver)).code(), IoErrorCode::kClosed);
  EXPECT_FALSE(socket.value().IsOpen());
  EXPECT_EQ(this->Join(coro::Spawn(this->scheduler(), ReceiveOnce(&socket.value()))).code(),
            IoErrorCode::kClosed);
}
#endif

// Every operation on a closed stream fails at once with kClosed; Close again is a no-op.
template <typename Sched>
coro::Lazy<std::string> OperationsAfterClose(TcpStream<Sched>* stream) {
  stream->Close();
  stream->Close();
  char buffer[4];
  const std::string data = "late";
  std::string seen;
  auto note = [&seen](const IoError& error) { seen += ToString(error.code()) + std::string(";"); };
  IoResult<std::size_t> read = co_await stream->Read(buffer, kTaskDeadlineInfinite);
  note(read.error());
  IoResult<std::size_t> some = co_await stream->ReadSome(buffer, kTaskDeadlineInfinite);
  note(some.error());
  note(co_await stream->ReadExactly(buffer, kTaskDeadlineInfinite));
  note(co_await stream->Write(data, kTaskDeadlineInfinite));
  IoResult<std::size_t> wrote = co_await stream->WriteSome(data, kTaskDeadlineInfinite);
  note(wrote.error());
  co_return seen;
}

TYPED_TEST(TcpCloseTest, OperationsAfterCloseFailAtOnce) {
  using Sched = typename TestFixture::Sched;
  TcpListener<Sched> listener = this->Listen();
  Pair<Sched> pair = this->Connect(&listener);
  const std::string closed = ToString(IoErrorCode::kClosed) + std::string(";");
  EXPECT_EQ(this->Join(coro::Spawn(this->scheduler(), OperationsAfterClose(&pair.server))),
            closed + closed + closed + closed + closed);
  EXPECT_FALSE(pair.server.IsOpen());
}

TYPED_TEST(TcpCloseTest, DestroyingAStreamReleasesItsPendingRead) {
  using Sched = typename TestFixture::Sched;
  TcpListener<Sched> listener = this->Listen();
  Pair<Sched> pair = this->Connect(&listener);
  auto stream = std::make_unique<TcpStream<Sched>>(std::move(pair.server));
  coro::JoinHandle<IoResult<std::string>> reader =
      coro::Spawn(this->scheduler(), ReadOnce(stream.get(), kTaskDeadlineInfinite));
  std::this_thread::sleep_for(kLetItBlock);
  // The Read's coroutine keeps only the socket's shared state, which outlives the object
  // (AddressSanitizer would report a use after free otherwise).
  stream.reset();
  IoResult<std::string> got = this->Join(std::move(reader));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), IoErrorCode::kClosed) << got.error().Message();
}

// The stress: per round, a Read waits on a fresh connection; the test thread sends the byte
// that completes it while another thread Closes the stream, with a varying head start.
// Then, before the Read has even been joined, a new connection is made (one of its two fds
// often takes the closed number) and carries 5 bytes each way. Checked every round: the old
// Read ends exactly once, with the byte or with kClosed, never with anything of the new
// connection; each new end gets exactly its 5 bytes (an old op reading from the reused fd
// would steal them; an old epoll cancel on it would leave the new Read without a wake).
TYPED_TEST(TcpCloseTest, CloseRacingWithArrivingDataEndsTheReadOnceAndSparesAReusedFd) {
  using Sched = typename TestFixture::Sched;
  TcpListener<Sched> listener = this->Listen();
  const std::int64_t rounds = testing::StressIterations(400, 4);
  int got_byte = 0;
  int got_closed = 0;
  int reused = 0;
  for (std::int64_t round = 0; round < rounds; ++round) {
    Pair<Sched> pair = this->Connect(&listener);
    const int old_fd = pair.server.fd();
    coro::JoinHandle<IoResult<std::string>> reader =
        coro::Spawn(this->scheduler(), ReadOnce(&pair.server, Soon()));
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // usually waiting by now
    std::atomic<bool> go{false};
    // Relaxed flag, spun delays: only the timing varies; the socket calls synchronise. Even
    // rounds give the byte a head start of 0-700 us, odd rounds give it to Close (io_uring
    // needs a long one: its cancel takes a sched-role step, the kernel's recv microseconds).
    const std::chrono::microseconds head_start(round / 2 % 8 * 100);
    const bool byte_first = round % 2 == 0;
    std::thread closer([&] {
      while (!go.load(std::memory_order_relaxed)) {
      }
      if (byte_first) SpinFor(head_start);
      pair.server.Close();
    });
    go.store(true, std::memory_order_relaxed);
    if (!byte_first) SpinFor(head_start);
    ASSERT_TRUE(SendRaw(pair.client.fd(), "x"));
    closer.join();

    Pair<Sched> fresh = this->Connect(&listener);
    if (fresh.client.fd() == old_fd || fresh.server.fd() == old_fd) ++reused;
    for (TcpStream<Sched>* end : {&fresh.client, &fresh.server}) {
      TcpStream<Sched>* other = end == &fresh.client ? &fresh.server : &fresh.client;
      ASSERT_TRUE(SendRaw(other->fd(), "fresh"));
      char buffer[5];
      const IoError read_fresh =
          this->Join(coro::Spawn(this->scheduler(), ReadExactlyInto(end, std::span<char>(buffer))));
      ASSERT_TRUE(read_fresh.ok()) << "round " << round << ": " << read_fresh.Message();
      ASSERT_EQ(std::string(buffer, 5), "fresh") << "round " << round;
    }

    IoResult<std::string> got = this->Join(std::move(reader));
    if (got.ok()) {
      ASSERT_EQ(got.value(), "x") << "round " << round;
      ++got_byte;
    } else {
      ASSERT_EQ(got.error().code(), IoErrorCode::kClosed)
          << "round " << round << ": " << got.error().Message();
      ++got_closed;
    }
  }
  EXPECT_EQ(got_byte + got_closed, rounds);
  std::printf(
      "%lld rounds: %d read the byte, %d closed; the fd number was reused at once %d "
      "times\n",
      static_cast<long long>(rounds), got_byte, got_closed, reused);
}

}  // namespace
}  // namespace fairsched
