// TcpStream::SetIdleTimeout (io/tcp.h) over the platform's backends: bytes moving in either
// direction refresh the idle deadline of every operation, also of a Read that is already
// waiting (a listen-only peer, to which the server writes while its Read waits, stays
// connected); a connection where nothing moves is still dropped, with a Read and a Write
// both waiting; and switching the timeout off reaches a Read that waits already.
// Loopback only; every wait is bounded. The bounds are generous (a loaded machine runs
// timers late, never early); each test fails on a stream whose waiting Read keeps the idle
// deadline it started with.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "coro/lazy.h"
#include "coro/runtime.h"
#include "io/tcp.h"
#include "tests/io/io_test_util.h"
#include "tests/io/socket_test.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TaskDeadline Soon() { return coro::DeadlineAfter(seconds(10)); }

// How one waiting Read ended, and when (from the start of the test's coroutine).
struct ReadEnd {
  IoError error;
  TaskClock::duration at{};
};

// One Read with `deadline` that is expected to wait (the peer sends nothing).
template <typename Sched>
coro::Lazy<ReadEnd> WaitingRead(TcpStream<Sched>* stream, TaskDeadline deadline,
                                TaskDeadline start) {
  char buffer[16];
  IoResult<std::size_t> n = co_await stream->Read(buffer, deadline);
  co_return ReadEnd{n.ok() ? IoError() : n.error(), TaskClock::now() - start};
}

// Writes one byte every `gap`, `count` times; when the last write completed.
template <typename Sched>
coro::Lazy<TaskClock::duration> Ticker(TcpStream<Sched>* stream, int count,
                                       std::chrono::nanoseconds gap, TaskDeadline start) {
  for (int i = 0; i < count; ++i) {
    co_await coro::SleepFor(gap);
    const IoError written = co_await stream->Write(std::string_view("t"), Soon());
    if (!written.ok()) co_return TaskClock::duration::max();
  }
  co_return TaskClock::now() - start;
}

// The listen-only client: reads until the stream ends or fails; how many bytes it got.
template <typename Sched>
coro::Lazy<std::size_t> Listen(TcpStream<Sched>* stream) {
  std::size_t got = 0;
  char buffer[64];
  while (true) {
    IoResult<std::size_t> n = co_await stream->Read(buffer, Soon());
    if (!n.ok()) co_return got;
    got += n.value();
  }
}

struct ListenOnlyOutcome {
  IoError connect;
  ReadEnd read;
  TaskClock::duration last_write{};
  std::size_t client_got = 0;
};

// The server side has an idle timeout of `idle`; its Read waits (the client sends nothing)
// while a writer sends the client a byte every `gap`, `count` times. The server closes the
// stream when its Read ends (the idle drop), which ends the client's reads.
template <typename Sched>
coro::Lazy<ListenOnlyOutcome> ListenOnlyClient(Sched* scheduler, std::chrono::nanoseconds idle,
                                               int count, std::chrono::nanoseconds gap) {
  ListenOnlyOutcome outcome;
  IoResult<testing::TcpPair<Sched>> pair = co_await testing::ConnectTcpPair(scheduler, Soon());
  if (!pair.ok()) {
    outcome.connect = pair.error();
    co_return outcome;
  }
  TcpStream<Sched>& server = pair.value().server.stream;
  const TaskDeadline start = TaskClock::now();
  if (IoError set = server.SetIdleTimeout(idle); !set.ok()) {
    outcome.connect = set;
    co_return outcome;
  }
  coro::JoinHandle<std::size_t> client = coro::Spawn(*scheduler, Listen(&pair.value().client));
  coro::JoinHandle<TaskClock::duration> ticker =
      coro::Spawn(*scheduler, Ticker(&server, count, gap, start));
  outcome.read = co_await WaitingRead(&server, coro::DeadlineAfter(seconds(20)), start);
  outcome.last_write = co_await std::move(ticker);
  server.Close();
  outcome.client_got = co_await std::move(client);
  co_return outcome;
}

template <typename Backend>
class IdleTimeoutTest : public testing::SocketTest<Backend> {};

TYPED_TEST_SUITE(IdleTimeoutTest, testing::IoBackends, testing::BackendNames);

// A 600 ms idle timeout; the server writes every 100 ms for 2 s while its Read waits: the
// Read must last until the writes stop, and end (kTimeout) about 600 ms after the last one.
TYPED_TEST(IdleTimeoutTest, AListenOnlyClientStaysConnectedWhileTheServerWrites) {
  const ListenOnlyOutcome outcome =
      this->Run(ListenOnlyClient(&this->scheduler(), milliseconds(600), 20, milliseconds(100)));
  ASSERT_TRUE(outcome.connect.ok()) << outcome.connect.Message();
  EXPECT_EQ(outcome.read.error.code(), IoErrorCode::kTimeout) << outcome.read.error.Message();
  EXPECT_EQ(outcome.client_got, 20u);
  ASSERT_NE(outcome.last_write, TaskClock::duration::max()) << "a write failed";
  EXPECT_GE(outcome.last_write, milliseconds(2000));
  // Dropped only once the writes had stopped for the idle time (a little slack for the
  // clock reads on two threads), and not long after.
  EXPECT_GE(outcome.read.at, outcome.last_write + milliseconds(550));
  EXPECT_LT(outcome.read.at, outcome.last_write + seconds(8));
}

// Nothing moves: a Read waiting for data and a Write blocked on full buffers (the client
// neither sends nor reads) both end with kTimeout at the idle deadline, not at their own.
template <typename Sched>
coro::Lazy<std::string> BothDirectionsIdle(Sched* scheduler) {
  IoResult<testing::TcpPair<Sched>> pair = co_await testing::ConnectTcpPair(scheduler, Soon());
  if (!pair.ok()) co_return "connect: " + pair.error().Message();
  TcpStream<Sched>& server = pair.value().server.stream;
  if (!server.SetSendBufferSize(4096).ok() ||
      !pair.value().client.SetReceiveBufferSize(4096).ok()) {
    co_return "buffer sizes refused";
  }
  (void)server.SetIdleTimeout(milliseconds(300));
  const TaskDeadline start = TaskClock::now();
  const TaskDeadline own = coro::DeadlineAfter(seconds(30));
  coro::JoinHandle<ReadEnd> reader = coro::Spawn(*scheduler, WaitingRead(&server, own, start));
  const std::string data(8 << 20, 'w');
  const IoError written = co_await server.Write(data, own);
  const TaskClock::duration write_end = TaskClock::now() - start;
  const ReadEnd read = co_await std::move(reader);
  std::string report = std::string("write=") + ToString(written.code()) +
                       " read=" + ToString(read.error.code());
  if (read.at > seconds(10) || write_end > seconds(10)) report += " (too late)";
  if (read.at < milliseconds(250)) report += " (too early)";
  co_return report;
}

TYPED_TEST(IdleTimeoutTest, AConnectionWhereNothingMovesIsStillDropped) {
  EXPECT_EQ(this->Run(BothDirectionsIdle(&this->scheduler())),
            std::string("write=") + ToString(IoErrorCode::kTimeout) +
                " read=" + ToString(IoErrorCode::kTimeout));
}

// A Read waits under a 300 ms idle timeout; after 100 ms the timeout is switched off: the
// Read ends at its own deadline (1.5 s), not at the idle one.
template <typename Sched>
coro::Lazy<ReadEnd> SwitchOffWhileWaiting(Sched* scheduler) {
  IoResult<testing::TcpPair<Sched>> pair = co_await testing::ConnectTcpPair(scheduler, Soon());
  if (!pair.ok()) co_return ReadEnd{pair.error(), {}};
  TcpStream<Sched>& server = pair.value().server.stream;
  (void)server.SetIdleTimeout(milliseconds(300));
  const TaskDeadline start = TaskClock::now();
  coro::JoinHandle<ReadEnd> reader = coro::Spawn(
      *scheduler, WaitingRead(&server, coro::DeadlineAfter(milliseconds(1500)), start));
  co_await coro::SleepFor(milliseconds(100));
  (void)server.SetIdleTimeout(std::chrono::nanoseconds(0));
  co_return co_await std::move(reader);
}

TYPED_TEST(IdleTimeoutTest, SwitchingTheTimeoutOffReachesAWaitingRead) {
  const ReadEnd end = this->Run(SwitchOffWhileWaiting(&this->scheduler()));
  EXPECT_EQ(end.error.code(), IoErrorCode::kTimeout) << end.error.Message();
  EXPECT_GE(end.at, milliseconds(1400));
  EXPECT_LT(end.at, seconds(10));
}

}  // namespace
}  // namespace fairsched
