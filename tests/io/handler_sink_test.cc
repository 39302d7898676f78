// The coroutine sockets wake their coroutines through the IO backend's sink (io/io_op.h,
// "Handlers instead of a task"): a readiness edge or a final completion that ends a
// coroutine's IO wait goes straight to the ready queue through the IoReadySink the backend
// was handed, not through the scheduler's front queue. The test wraps each Linux backend in
// one whose role calls hand on a counting sink, runs request/response round trips between
// two coroutines over loopback TCP, and checks that the wakes of the waiting coroutines
// (and, on epoll, the watch's end at Close) arrived through that sink. A handler that woke
// with the scheduler's plain Wakeup would leave the counts at zero.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <span>
#include <utility>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/epoll_backend.h"
#include "io/io_uring_backend.h"
#include "io/tcp.h"
#include "sched/io_backend.h"
#include "tests/io/io_test_util.h"

namespace fairsched {
namespace {

using std::chrono::seconds;

// `Backend`, but every role call hands the backend a sink that counts the wakes made through
// it and forwards them to the scheduler's sink.
template <typename Backend>
class CountingBackend : public Backend {
 public:
  void Poll(IoReadySink& sink) {
    CountingSink counting(this, sink);
    Backend::Poll(counting);
  }
  void WaitUntil(TaskDeadline deadline, IoReadySink& sink) {
    CountingSink counting(this, sink);
    Backend::WaitUntil(deadline, counting);
  }
  void CancelAll(IoReadySink& sink) {
    CountingSink counting(this, sink);
    Backend::CancelAll(counting);
  }

  const void* scheduler = nullptr;  // the scheduler this backend serves (set by the test)
  std::atomic<int> wakeups{0};      // IoWake::kWakeup through the sink
  std::atomic<int> signals{0};      // IoWake::kSignal through the sink

 private:
  class CountingSink final : public IoReadySink {
   public:
    CountingSink(CountingBackend* backend, IoReadySink& inner)
        : IoReadySink(backend->scheduler), backend_(backend), inner_(inner) {}
    void Wake(Task* task, IoWake how) override {
      (how == IoWake::kSignal ? backend_->signals : backend_->wakeups).fetch_add(1);
      inner_.Wake(task, how);
    }

   private:
    CountingBackend* backend_;
    IoReadySink& inner_;
  };
};

template <typename Backend>
class HandlerSinkTest : public ::testing::Test {};
using Backends = ::testing::Types<EpollBackend, IoUringBackend>;
TYPED_TEST_SUITE(HandlerSinkTest, Backends);

TaskDeadline Soon() { return coro::DeadlineAfter(seconds(10)); }

template <typename Sched>
coro::Lazy<int> Serve(TcpListener<Sched>* listener, int rounds) {
  IoResult<TcpStream<Sched>> accepted = co_await listener->Accept(Soon());
  if (!accepted.ok()) co_return -1;
  TcpStream<Sched> stream = std::move(accepted).value();
  char byte = 0;
  int served = 0;
  for (; served < rounds; ++served) {
    const IoError read = co_await stream.ReadExactly(std::span<char>(&byte, 1), Soon());
    if (!read.ok()) break;
    ++byte;
    const IoError written = co_await stream.Write(std::span<const char>(&byte, 1), Soon());
    if (!written.ok()) break;
  }
  stream.Close();
  co_return served;
}

template <typename Sched>
coro::Lazy<int> Ask(Sched* scheduler, SocketAddress address, int rounds) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, Soon());
  if (!connected.ok()) co_return -1;
  TcpStream<Sched> stream = std::move(connected).value();
  int answered = 0;
  for (char byte = 0; answered < rounds; ++answered) {
    // Give the server time to reach its wait, so its Read is woken by the next edge.
    co_await coro::SleepFor(std::chrono::microseconds(500));
    const IoError written = co_await stream.Write(std::span<const char>(&byte, 1), Soon());
    if (!written.ok()) break;
    char reply = 0;
    const IoError read = co_await stream.ReadExactly(std::span<char>(&reply, 1), Soon());
    if (!read.ok()) break;
    if (reply != static_cast<char>(byte + 1)) break;
    byte = static_cast<char>(reply + 1);
  }
  co_return answered;
}

TYPED_TEST(HandlerSinkTest, SocketWakesGoThroughTheBackendsSink) {
  using Sched = testing::IoTestScheduler<CountingBackend<TypeParam>>;
  constexpr int kRounds = 50;
  Sched scheduler;
  scheduler.io().scheduler = &scheduler;
  scheduler.Start(2);
  {
    IoResult<TcpListener<Sched>> listener =
        TcpListener<Sched>::Listen(scheduler, SocketAddress::Parse("127.0.0.1:0").value());
    ASSERT_TRUE(listener.ok());
    const SocketAddress address = listener.value().LocalAddress().value();
    coro::JoinHandle<int> server = coro::Spawn(scheduler, Serve(&listener.value(), kRounds));
    coro::JoinHandle<int> client = coro::Spawn(scheduler, Ask(&scheduler, address, kRounds));
    EXPECT_EQ(client.Get(), kRounds);
    EXPECT_EQ(server.Get(), kRounds);
    listener.value().Close();
  }
  ASSERT_TRUE(scheduler.WaitEmpty(seconds(30)));
  scheduler.Stop();
  const int wakeups = scheduler.io().wakeups.load();
  const int signals = scheduler.io().signals.load();
  std::printf("wakes through the sink: %d wakeups, %d signals\n", wakeups, signals);
  // Nearly every round makes both coroutines wait for their peer's byte (about 2 wakes per
  // round measured; the backend's own task wakes, such as io_uring's multishot accept relay,
  // add one or two). Half a wake per round leaves room for a slow (sanitizer) run in which
  // the byte arrives before the reader waits, and still fails if the handlers bypass the
  // sink.
  EXPECT_GE(wakeups, kRounds / 2) << "the socket handler woke its coroutines around the sink";
  if constexpr (!internal::IsCompletionBased<TypeParam>()) {
    // epoll: each Close ends the socket's standing watch, whose end the handler signals.
    EXPECT_GT(signals, 0) << "the watch's end did not come through the sink";
  }
}

}  // namespace
}  // namespace fairsched
