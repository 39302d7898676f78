// TcpListener::Accept over io_uring (io/tcp.h): with the kernel's multishot accept (one
// standing op, internal::MultishotAcceptor) and with the single-shot fallback
// (IoUringBackend::SetMultishot(false)); every test runs in both modes, the multishot one
// skipped where the kernel lacks it. Covered: 150 connections (more than the acceptor's
// queue bound, so its full-queue cancel and re-arm run), connections accepted ahead of
// Accept only in multishot mode, a timed-out or cancelled Accept that leaves the op armed,
// Close and Stop while the op is armed, and no fd or op left behind (fds counted before and
// after, the backend's LiveCount back to 0). Loopback only; every wait is bounded.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/io_uring_backend.h"
#include "io/tcp.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"
#include "tests/io/raw_client.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Sched = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, IoUringBackend>;
using Listener = TcpListener<Sched>;
using testing::RawClient;

// Accepts `count` connections and reads one byte from each; returns those bytes (sorted)
// or the first error's message.
coro::Lazy<std::string> AcceptAndReadOneByteEach(Listener* listener, int count) {
  std::string seen;
  for (int i = 0; i < count; ++i) {
    IoResult<TcpStream<Sched>> stream = co_await listener->Accept(coro::DeadlineAfter(seconds(10)));
    if (!stream.ok()) co_return "accept failed: " + stream.error().Message();
    char byte = 0;
    IoError read = co_await stream.value().ReadExactly(std::span<char>(&byte, 1),
                                                       coro::DeadlineAfter(seconds(10)));
    if (!read.ok()) co_return "read failed: " + read.Message();
    seen += byte;
  }
  std::sort(seen.begin(), seen.end());
  co_return seen;
}

// One Accept with `deadline`: "ok", or the error's code as a name.
coro::Lazy<std::string> AcceptOnce(Listener* listener, TaskDeadline deadline) {
  IoResult<TcpStream<Sched>> stream = co_await listener->Accept(deadline);
  if (stream.ok()) co_return "ok";
  switch (stream.error().code()) {
    case IoErrorCode::kTimeout:
      co_return "timeout";
    case IoErrorCode::kCancelled:
      co_return "cancelled";
    case IoErrorCode::kShutdown:
      co_return "shutdown";
    default:
      co_return stream.error().Message();
  }
}

class TcpMultishotAcceptTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    fds_at_start_ = testing::OpenFdCount();
    scheduler_ = std::make_unique<Sched>();
    if (!GetParam()) scheduler_->io().SetMultishot(false);
    if (GetParam() && !scheduler_->io().multishot_accept()) {
      GTEST_SKIP() << "no multishot accept: " << scheduler_->io().multishot_note();
    }
    scheduler_->Start(2);
    IoResult<Listener> listener =
        Listener::Listen(*scheduler_, SocketAddress::Parse("127.0.0.1:0").value());
    ASSERT_TRUE(listener.ok()) << listener.error().Message();
    listener_ = std::move(listener).value();
    address_ = listener_.LocalAddress().value();
  }
  void TearDown() override {
    listener_.Close();
    if (scheduler_ != nullptr) {
      // The relay of an armed op finishes the close within a role step.
      EXPECT_TRUE(testing::WaitUntilTrue([&] { return scheduler_->io().LiveCount() == 0; }))
          << "an IoOp was left submitted";
      scheduler_.reset();
    }
    EXPECT_EQ(testing::OpenFdCount(), fds_at_start_) << "a file descriptor leaked";
  }
  bool multishot() const { return GetParam(); }
  template <typename T>
  T Run(coro::Lazy<T> task) {
    return coro::Spawn(*scheduler_, std::move(task)).Get();
  }

  int fds_at_start_ = 0;
  std::unique_ptr<Sched> scheduler_;
  Listener listener_;
  SocketAddress address_;
};

TEST_P(TcpMultishotAcceptTest, AcceptsMoreConnectionsThanTheQueueBound) {
  constexpr int kConnections = 150;
  static_assert(kConnections > internal::MultishotAcceptor<Sched>::kMaxPending);
  // All connected and waiting (in the backlog, or already accepted by the multishot op)
  // before the first Accept, so the multishot op fills its queue and is cancelled at the
  // bound, then armed again.
  std::vector<std::unique_ptr<RawClient>> clients;
  std::string expected;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(std::make_unique<RawClient>(address_));
    const char byte = static_cast<char>(i % 200 + 32);
    ASSERT_TRUE(clients.back()->SendAll(std::string(1, byte)));
    expected += byte;
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(Run(AcceptAndReadOneByteEach(&listener_, kConnections)), expected);
}

TEST_P(TcpMultishotAcceptTest, MultishotAcceptsAheadOfAcceptOnlyWhenOn) {
  RawClient first(address_);
  ASSERT_TRUE(first.SendAll("a"));
  ASSERT_EQ(Run(AcceptAndReadOneByteEach(&listener_, 1)), "a");
  // No Accept in progress now. The multishot op (still armed) takes the next connection
  // out of the backlog at once: a new fd appears in this process without an Accept. The
  // single-shot path leaves it in the backlog.
  const int before = testing::OpenFdCount();
  RawClient second(address_);
  const bool accepted_ahead =
      testing::WaitUntilTrue([&] { return testing::OpenFdCount() >= before + 2; }, seconds(2));
  EXPECT_EQ(accepted_ahead, multishot());
  ASSERT_TRUE(second.SendAll("b"));
  EXPECT_EQ(Run(AcceptAndReadOneByteEach(&listener_, 1)), "b");
}

TEST_P(TcpMultishotAcceptTest, TimedOutAndCancelledAcceptsLeaveTheListenerUsable) {
  EXPECT_EQ(Run(AcceptOnce(&listener_, coro::DeadlineAfter(milliseconds(50)))), "timeout");
  coro::JoinHandle<std::string> waiting =
      coro::Spawn(*scheduler_, AcceptOnce(&listener_, kTaskDeadlineInfinite));
  std::this_thread::sleep_for(milliseconds(20));
  waiting.Cancel();
  EXPECT_EQ(waiting.Get(), "cancelled");
  RawClient client(address_);
  ASSERT_TRUE(client.SendAll("c"));
  EXPECT_EQ(Run(AcceptAndReadOneByteEach(&listener_, 1)), "c");
}

TEST_P(TcpMultishotAcceptTest, CloseWhileArmedClosesConnectionsNobodyAccepted) {
  RawClient first(address_);
  ASSERT_TRUE(first.SendAll("a"));
  ASSERT_EQ(Run(AcceptAndReadOneByteEach(&listener_, 1)), "a");
  // Multishot: these are accepted into the queue; single-shot: they wait in the backlog.
  // Either way Close must end them (the peer sees the close) and leak nothing.
  std::vector<std::unique_ptr<RawClient>> waiting;
  for (int i = 0; i < 3; ++i) waiting.push_back(std::make_unique<RawClient>(address_));
  listener_.Close();
  for (const std::unique_ptr<RawClient>& client : waiting) EXPECT_TRUE(client->SeesClose());
  EXPECT_TRUE(testing::WaitUntilTrue([&] { return scheduler_->io().LiveCount() == 0; }));
}

TEST_P(TcpMultishotAcceptTest, StopEndsAWaitingAcceptWithShutdown) {
  coro::JoinHandle<std::string> waiting =
      coro::Spawn(*scheduler_, AcceptOnce(&listener_, kTaskDeadlineInfinite));
  std::this_thread::sleep_for(milliseconds(20));
  scheduler_->Stop();
  EXPECT_EQ(waiting.Get(), "shutdown");
  EXPECT_EQ(scheduler_->io().LiveCount(), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, TcpMultishotAcceptTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Multishot" : "SingleShot";
                         });

}  // namespace
}  // namespace fairsched
