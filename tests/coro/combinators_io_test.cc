// The per-operation cancel hook of coro/combinators.h on real sockets (io/tcp.h), over every
// IO backend of the platform (epoll and io_uring; IOCP under Wine): `WithCancel(stream.Read(...), token)` cancelled from another thread ends that
// one Read with kCancelled and releases its IO operation, while the coroutine that issued
// it is not cancelled and goes on using the same stream; `WithTimeout(stream.Read(...))`
// times out the same way. Loopback only; every wait is bounded.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <thread>

#include "coro/combinators.h"
#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/tcp.h"
#include "tests/io/io_test_util.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// What the reading coroutine saw, step by step.
struct ReadSteps {
  std::atomic<int> phase{0};  // 1: in the cancellable Read; 2: in the last Read
  IoErrorCode connect = IoErrorCode::kOk;
  IoErrorCode cancelled_read = IoErrorCode::kOk;
  bool released = false;  // the backend held no more operations after the cancelled Read
  bool caller_cancelled = true;
  bool timed_out = false;
  std::string last_read;
};

template <typename Sched>
coro::Lazy<void> ReadThreeTimes(Sched* scheduler, SocketAddress address, coro::CancelToken token,
                                ReadSteps* steps) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  if (!connected.ok()) {
    steps->connect = connected.error().code();
    co_return;
  }
  TcpStream<Sched> stream = std::move(connected).value();
  char buffer[16];
  const std::int64_t live_before = scheduler->io().LiveCount();
  steps->phase.store(1);
  // 1. One Read that a CancelSource may cancel (no deadline of its own).
  IoResult<std::size_t> first =
      co_await coro::WithCancel(stream.Read(buffer, kTaskDeadlineInfinite), token);
  steps->cancelled_read = first.ok() ? IoErrorCode::kOk : first.error().code();
  steps->released = scheduler->io().LiveCount() <= live_before;
  steps->caller_cancelled = coro::IsCancelled();
  // 2. A Read bounded by WithTimeout (again no deadline of its own).
  coro::TimeoutOr<IoResult<std::size_t>> second =
      co_await coro::WithTimeout(stream.Read(buffer, kTaskDeadlineInfinite), milliseconds(30));
  steps->timed_out = second.timed_out();
  // 3. The stream still works: the peer sends once we are here.
  steps->phase.store(2);
  IoResult<std::size_t> third = co_await stream.Read(buffer, coro::DeadlineAfter(seconds(10)));
  if (third.ok()) steps->last_read.assign(buffer, third.value());
}

template <typename Sched>
coro::Lazy<IoResult<TcpStream<Sched>>> AcceptOne(TcpListener<Sched>* listener) {
  co_return co_await listener->Accept(coro::DeadlineAfter(seconds(10)));
}

template <typename Sched>
coro::Lazy<IoError> SendOneByte(TcpStream<Sched>* stream) {
  const std::string byte = "x";
  co_return co_await stream->Write(byte, coro::DeadlineAfter(seconds(10)));
}

template <typename Backend>
class CombinatorsIoTest : public ::testing::Test {};
TYPED_TEST_SUITE(CombinatorsIoTest, testing::IoBackends);

// Polls `done` every millisecond for up to 10 s.
template <typename Predicate>
bool Eventually(Predicate done) {
  for (int i = 0; i < 10000 && !done(); ++i) std::this_thread::sleep_for(milliseconds(1));
  return done();
}

TYPED_TEST(CombinatorsIoTest, CancellingOneReadLeavesTheCallerAndTheStreamWorking) {
  using Sched = testing::IoTestScheduler<TypeParam>;
  // The peer: a listener on a scheduler of its own, so that its sockets' IO operations do
  // not count in the reader's LiveCount check.
  Sched peers;
  peers.Start(1);
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(peers, SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok()) << listener.error().Message();
  const SocketAddress address = listener.value().LocalAddress().value();

  coro::CancelSource source;
  ReadSteps steps;
  {
    Sched sched;
    sched.Start(2);
    coro::JoinHandle<void> reader =
        coro::Spawn(sched, ReadThreeTimes(&sched, address, source.Token(), &steps));
    IoResult<TcpStream<Sched>> peer = coro::Spawn(peers, AcceptOne(&listener.value())).Get();
    EXPECT_TRUE(peer.ok()) << peer.error().Message();
    ASSERT_TRUE(Eventually([&] { return steps.phase.load() >= 1; }));
    std::this_thread::sleep_for(milliseconds(20));  // let the Read block in the backend
    EXPECT_TRUE(source.Cancel());
    EXPECT_TRUE(Eventually([&] { return steps.phase.load() >= 2; }));
    if (peer.ok()) {
      EXPECT_TRUE(coro::Spawn(peers, SendOneByte(&peer.value())).Get().ok());
    }
    reader.Get();
    sched.Stop();
  }
  EXPECT_EQ(steps.connect, IoErrorCode::kOk);
  EXPECT_EQ(steps.cancelled_read, IoErrorCode::kCancelled);
  EXPECT_TRUE(steps.released);
  EXPECT_FALSE(steps.caller_cancelled);
  EXPECT_TRUE(steps.timed_out);
  EXPECT_EQ(steps.last_read, "x");
}

}  // namespace
}  // namespace fairsched
