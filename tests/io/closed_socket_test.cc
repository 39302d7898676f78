// Calls on a socket that another coroutine or thread closed (io/tcp.h, io/udp.h,
// io/unix_stream.h, io/buffered_stream.h), over epoll and io_uring, and IOCP under Wine
// (without the Unix socket part: io/unix_stream.h is Linux-only): every call returns
// kClosed instead of aborting (Shutdown, the option setters, SetIdleTimeout, the address
// getters, WithFd, the operations), also when it races with the Close; and Close itself may
// come from several threads at once, on a BufferedStream too (its Close and
// stream().Close()).
// Loopback only; every wait is bounded; fds are counted before and after each test (Linux).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "coro/lazy.h"
#include "coro/runtime.h"
#include "io/buffered_stream.h"
#include "io/tcp.h"
#include "io/udp.h"
#ifndef _WIN32
#include <unistd.h>

#include "io/unix_stream.h"
#endif
#include "tests/io/io_test_util.h"
#include "tests/io/socket_test.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::seconds;

TaskDeadline Soon() { return coro::DeadlineAfter(seconds(10)); }

// A bound on every join: a call that hangs fails the test instead.
constexpr seconds kJoinBound{20};

template <typename T>
T Join(coro::JoinHandle<T> handle) {
  EXPECT_TRUE(handle.WaitFor(kJoinBound)) << "the coroutine did not finish";
  return handle.Get();
}

// The code of each call's result, in call order, ";"-separated.
class Codes {
 public:
  void Add(const IoError& error) {
    codes_.push_back(error.code());
    text_ += std::string(ToString(error.code())) + ";";
  }
  template <typename T>
  void Add(const IoResult<T>& result) {
    Add(result.ok() ? IoError() : result.error());
  }
  const std::vector<IoErrorCode>& codes() const { return codes_; }
  const std::string& text() const { return text_; }

 private:
  std::vector<IoErrorCode> codes_;
  std::string text_;
};

std::string Repeat(IoErrorCode code, int times) {
  std::string text;
  for (int i = 0; i < times; ++i) text += std::string(ToString(code)) + ";";
  return text;
}

// Every call that uses the socket at once, none of which waits: 10 results.
template <typename Sched>
void DirectCalls(TcpStream<Sched>& stream, Codes& codes) {
  codes.Add(stream.SetNoDelay(true));
  codes.Add(stream.EnableKeepAlive());
  codes.Add(stream.DisableKeepAlive());
  codes.Add(stream.SetReceiveBufferSize(64 << 10));
  codes.Add(stream.SetSendBufferSize(64 << 10));
  codes.Add(stream.SetIdleTimeout(seconds(30)));
  codes.Add(stream.LocalAddress());
  codes.Add(stream.PeerAddress());
  codes.Add(stream.WithFd([](int) { return IoError(); }));
  codes.Add(stream.Shutdown(ShutdownHow::kWrite));
}
constexpr int kDirectCalls = 10;

// The session a broadcaster kicked: the stream is closed by another coroutine, then the
// session goes on using it: the direct calls and every operation.
template <typename Sched>
coro::Lazy<void> CloseFrom(TcpStream<Sched>* stream) {
  stream->Close();
  co_return;
}

template <typename Sched>
coro::Lazy<std::string> UseAfterClose(Sched* scheduler, TcpStream<Sched>* stream) {
  co_await coro::Spawn(*scheduler, CloseFrom(stream));  // another coroutine closes it
  Codes codes;
  DirectCalls(*stream, codes);
  char buffer[8];
  const std::string data = "late";
  const ConstIoSlice out[] = {std::span<const char>(data)};
  const IoSlice in[] = {std::span<char>(buffer)};
  codes.Add(co_await stream->Read(buffer, Soon()));
  codes.Add(co_await stream->ReadSome(buffer, Soon()));
  codes.Add(co_await stream->ReadSomeV(in, Soon()));
  codes.Add(co_await stream->Write(data, Soon()));
  codes.Add(co_await stream->WriteSome(data, Soon()));
  codes.Add(co_await stream->WriteV(out, Soon()));
  co_return codes.text();
}

template <typename Backend>
class ClosedSocketTest : public testing::SocketTest<Backend> {
 public:
  using Sched = typename testing::SocketTest<Backend>::Sched;
  using testing::SocketTest<Backend>::scheduler;

  testing::TcpPair<Sched> Connect() {
    IoResult<testing::TcpPair<Sched>> pair =
        Join(coro::Spawn(scheduler(), testing::ConnectTcpPair(&scheduler(), Soon())));
    EXPECT_TRUE(pair.ok()) << pair.error().Message();
    return std::move(pair).value();
  }
};

TYPED_TEST_SUITE(ClosedSocketTest, testing::IoBackends, testing::BackendNames);

TYPED_TEST(ClosedSocketTest, EveryCallOnAStreamClosedByAnotherCoroutineReturnsClosed) {
  using Sched = typename TestFixture::Sched;
  testing::TcpPair<Sched> pair = this->Connect();
  EXPECT_EQ(Join(coro::Spawn(this->scheduler(),
                             UseAfterClose(&this->scheduler(), &pair.server.stream))),
            Repeat(IoErrorCode::kClosed, kDirectCalls + 6));
  EXPECT_FALSE(pair.server.stream.IsOpen());
  // Closed from the test thread: the same, outside any coroutine.
  pair.listener.Close();
  pair.listener.Close();
  Codes codes;
  codes.Add(pair.listener.LocalAddress());
  codes.Add(pair.listener.WithFd([](int) { return IoError(); }));
  EXPECT_EQ(codes.text(), Repeat(IoErrorCode::kClosed, 2));
}

TYPED_TEST(ClosedSocketTest, UdpCallsOnAClosedSocketReturnClosed) {
  using Sched = typename TestFixture::Sched;
  IoResult<UdpSocket<Sched>> udp =
      UdpSocket<Sched>::Bind(this->scheduler(), SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(udp.ok()) << udp.error().Message();
  udp.value().Close();
  Codes codes;
  codes.Add(udp.value().LocalAddress());
  codes.Add(udp.value().PeerAddress());
  EXPECT_EQ(codes.text(), Repeat(IoErrorCode::kClosed, 2));
}

#ifndef _WIN32
// Unix sockets exist only on Linux here (io/unix_stream.h: the IOCP path is not wired for
// AF_UNIX).
TYPED_TEST(ClosedSocketTest, UnixCallsOnAClosedSocketReturnClosed) {
  using Sched = typename TestFixture::Sched;
  const SocketAddress path =
      UnixAbstractAddress("fairsched-closed-" + std::to_string(::getpid())).value();
  IoResult<UnixListener<Sched>> listener = UnixListener<Sched>::Listen(this->scheduler(), path);
  ASSERT_TRUE(listener.ok()) << listener.error().Message();
  IoResult<UnixStream<Sched>> client = Join(
      coro::Spawn(this->scheduler(), UnixStream<Sched>::Connect(this->scheduler(), path, Soon())));
  ASSERT_TRUE(client.ok()) << client.error().Message();
  ASSERT_TRUE(PeerCredentialsOf(client.value()).ok());
  client.value().Close();
  listener.value().Close();
  Codes unix_codes;
  unix_codes.Add(PeerCredentialsOf(client.value()));
  unix_codes.Add(client.value().LocalAddress());
  unix_codes.Add(listener.value().LocalAddress());
  EXPECT_EQ(unix_codes.text(), Repeat(IoErrorCode::kClosed, 3));
}
#endif  // _WIN32

#ifndef NDEBUG
TYPED_TEST(ClosedSocketTest, AMovedFromStreamIsMisuseInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  using Sched = typename TestFixture::Sched;
  TcpStream<Sched> moved_from;
  EXPECT_DEATH((void)moved_from.SetNoDelay(true),
               "use of a moved-from \\(or never opened\\) TcpStream");
  EXPECT_DEATH((void)moved_from.SetIdleTimeout(seconds(1)), "moved-from");
  EXPECT_DEATH((void)moved_from.fd(), "closed or moved-from TcpStream");
}
#endif

// What one round of the race saw: each result of the direct calls is ok or kClosed (or,
// for Shutdown, kSystem/ENOTCONN once the peer's end is gone).
struct RaceOutcome {
  int calls = 0;
  int closed = 0;
  std::string unexpected;  // the first result that was neither
};

template <typename Sched>
coro::Lazy<RaceOutcome> CallUntilClosed(TcpStream<Sched>* stream, std::atomic<bool>* started) {
  RaceOutcome outcome;
  // Until a whole round of calls saw kClosed (Close always comes), at most 2 s of calls.
  const auto give_up = TaskClock::now() + seconds(2);
  while (TaskClock::now() < give_up) {
    Codes codes;
    DirectCalls(*stream, codes);
    // Relaxed: only tells the closer that the calls have begun (timing, no data).
    started->store(true, std::memory_order_relaxed);
    outcome.calls += kDirectCalls;
    int closed_here = 0;
    for (const IoErrorCode code : codes.codes()) {
      if (code == IoErrorCode::kClosed) {
        ++closed_here;
      } else if (code != IoErrorCode::kOk && code != IoErrorCode::kSystem &&
                 outcome.unexpected.empty()) {
        outcome.unexpected = codes.text();
      }
    }
    outcome.closed += closed_here;
    if (closed_here == kDirectCalls) break;
  }
  co_return outcome;
}

template <typename Sched>
coro::Lazy<IoError> ReadOnce(TcpStream<Sched>* stream) {
  char buffer[16];
  IoResult<std::size_t> n = co_await stream->Read(buffer, Soon());
  co_return n.ok() ? IoError() : n.error();
}

// The stress: per round, one coroutine makes the direct calls in a loop and another waits
// in a Read, while two threads Close the stream at once after a varying delay. No call
// may abort or report anything but success or kClosed; the Read ends with kClosed; the
// fd is closed once (the fd count at the end checks that it is closed at all).
TYPED_TEST(ClosedSocketTest, CloseRacingWithDirectCallsAndAReadNeverAborts) {
  using Sched = typename TestFixture::Sched;
#ifdef _WIN32
  // Under Wine a round (a loopback connect and accept through wineserver) takes ~70 ms.
  const std::int64_t rounds = testing::StressIterations(40, 4);
#else
  const std::int64_t rounds = testing::StressIterations(200, 4);
#endif
  int saw_closed = 0;
  for (std::int64_t round = 0; round < rounds; ++round) {
    testing::TcpPair<Sched> pair = this->Connect();
    TcpStream<Sched>& stream = pair.server.stream;
    std::atomic<bool> started{false};
    coro::JoinHandle<IoError> reader = coro::Spawn(this->scheduler(), ReadOnce(&stream));
    coro::JoinHandle<RaceOutcome> caller =
        coro::Spawn(this->scheduler(), CallUntilClosed(&stream, &started));
    const std::chrono::microseconds delay(round % 10 * 50);
    auto close = [&] {
      while (!started.load(std::memory_order_relaxed)) std::this_thread::yield();
      std::this_thread::sleep_for(delay);
      stream.Close();
    };
    std::thread first(close);
    std::thread second(close);
    first.join();
    second.join();
    const RaceOutcome outcome = Join(std::move(caller));
    ASSERT_EQ(outcome.unexpected, "") << "round " << round;
    ASSERT_GT(outcome.closed, 0) << "round " << round << ": no call saw the Close";
    const IoError read = Join(std::move(reader));
    ASSERT_EQ(read.code(), IoErrorCode::kClosed) << "round " << round << ": " << read.Message();
    saw_closed += outcome.closed;
  }
  EXPECT_GT(saw_closed, 0);
}

// --- BufferedStream ---

template <typename Sched>
coro::Lazy<IoError> ReadLines(BufferedStream<TcpStream<Sched>>* stream) {
  while (true) {
    IoResult<std::string_view> line = co_await stream->ReadLine(64, Soon());
    if (!line.ok()) co_return line.error();
  }
}

template <typename Sched>
coro::Lazy<IoError> WriteLines(BufferedStream<TcpStream<Sched>>* stream) {
  while (true) {
    if (IoError e = co_await stream->Write("line\n", Soon()); !e.ok()) co_return e;
    if (IoError e = co_await stream->Flush(Soon()); !e.ok()) co_return e;
  }
}

template <typename Sched>
coro::Lazy<IoError> SendLines(TcpStream<Sched>* stream, int count) {
  for (int i = 0; i < count; ++i) {
    if (IoError e = co_await stream->Write(std::string_view("ping\n"), Soon()); !e.ok()) {
      co_return e;
    }
  }
  co_return IoError();
}

// A reader and a writer coroutine busy on a BufferedStream over TCP (the peer sends lines
// and never reads, so the writer fills the buffers and then waits) while two threads close
// it at once: one with BufferedStream::Close, one with stream().Close(). Both coroutines
// end with kClosed, and every later call fails with kClosed (nothing is buffered silently).
TYPED_TEST(ClosedSocketTest, BufferedStreamCloseRacesWithStreamCloseAndBusyCoroutines) {
  using Sched = typename TestFixture::Sched;
  const std::int64_t rounds = testing::StressIterations(40, 4);
  for (std::int64_t round = 0; round < rounds; ++round) {
    testing::TcpPair<Sched> pair = this->Connect();
    BufferedStream<TcpStream<Sched>> buffered(std::move(pair.server.stream),
                                              {.read_buffer = 64, .write_buffer = 64});
    coro::JoinHandle<IoError> sender =
        coro::Spawn(this->scheduler(), SendLines(&pair.client, 2000));
    coro::JoinHandle<IoError> reader = coro::Spawn(this->scheduler(), ReadLines(&buffered));
    coro::JoinHandle<IoError> writer = coro::Spawn(this->scheduler(), WriteLines(&buffered));
    std::this_thread::sleep_for(std::chrono::microseconds(round % 8 * 250));
    std::thread closer([&] { buffered.Close(); });
    buffered.stream().Close();
    closer.join();
    const IoError read = Join(std::move(reader));
    const IoError written = Join(std::move(writer));
    EXPECT_EQ(read.code(), IoErrorCode::kClosed) << "round " << round << ": " << read.Message();
    EXPECT_EQ(written.code(), IoErrorCode::kClosed)
        << "round " << round << ": " << written.Message();
    Codes codes;
    codes.Add(Join(coro::Spawn(this->scheduler(), buffered.Write("late\n", Soon()))));
    codes.Add(Join(coro::Spawn(this->scheduler(), buffered.ReadLine(64, Soon()))));
    codes.Add(Join(coro::Spawn(this->scheduler(), buffered.Flush(Soon()))));
    EXPECT_EQ(codes.text(), Repeat(IoErrorCode::kClosed, 3)) << "round " << round;
    EXPECT_EQ(buffered.Unflushed(), 0u);
    pair.client.Close();  // the sender ends (kClosed, or its lines all went)
    (void)Join(std::move(sender));
  }
}

}  // namespace
}  // namespace fairsched
