// What the coroutine socket suites (tests/io: TCP, Unix streams, UDP, Close, vectored IO)
// share: a typed fixture that owns a started scheduler over one backend and checks, at the
// end, that no IoOp is left live and no fd leaked; and a connected TCP pair on loopback.
#ifndef FAIRSCHED_TESTS_IO_SOCKET_TEST_H_
#define FAIRSCHED_TESTS_IO_SOCKET_TEST_H_

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/tcp.h"
#include "tests/io/io_test_util.h"

namespace fairsched::testing {

// A scheduler over `Backend`, started with two workers on first use. TearDown waits (bounded)
// until the backend holds no live IoOp, destroys the scheduler and compares the open fds
// with the count at SetUp (where they can be counted: OpenFdCount). A suite that adds its
// own SetUp/TearDown calls these.
template <typename Backend>
class SocketTest : public ::testing::Test {
 public:
  using Sched = IoTestScheduler<Backend>;

  Sched& scheduler() {
    if (scheduler_ == nullptr) {
      scheduler_ = std::make_unique<Sched>();
      scheduler_->Start(2);
    }
    return *scheduler_;
  }
  // Runs `task` on the scheduler and returns its result.
  template <typename T>
  T Run(coro::Lazy<T> task) {
    return coro::Spawn(scheduler(), std::move(task)).Get();
  }

 protected:
  void SetUp() override { fds_at_start_ = OpenFdCount(); }
  void TearDown() override {
    if (scheduler_ != nullptr) {
      EXPECT_TRUE(WaitUntilTrue([&] { return scheduler_->io().LiveCount() == 0; }))
          << "IO operations still live: " << scheduler_->io().LiveCount();
    }
    scheduler_.reset();
    EXPECT_EQ(OpenFdCount(), fds_at_start_) << "a file descriptor leaked";
  }

  std::unique_ptr<Sched> scheduler_;
  int fds_at_start_ = 0;
};

template <typename Sched>
struct TcpPair {
  TcpListener<Sched> listener;
  TcpStream<Sched> client;
  AcceptedConnection<Sched> server;  // .stream, .peer
};

// Listens on 127.0.0.1 (a free port), connects and accepts; every wait ends by `deadline`.
// The kernel completes the handshake from the backlog, so connect comes first.
template <typename Sched>
coro::Lazy<IoResult<TcpPair<Sched>>> ConnectTcpPair(Sched* scheduler, TaskDeadline deadline) {
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(*scheduler, SocketAddress::Parse("127.0.0.1:0").value());
  if (!listener.ok()) co_return listener.error();
  IoResult<SocketAddress> bound = listener.value().LocalAddress();
  if (!bound.ok()) co_return bound.error();
  IoResult<TcpStream<Sched>> client =
      co_await TcpStream<Sched>::Connect(*scheduler, bound.value(), deadline);
  if (!client.ok()) co_return client.error();
  IoResult<AcceptedConnection<Sched>> server = co_await listener.value().AcceptWithPeer(deadline);
  if (!server.ok()) co_return server.error();
  co_return TcpPair<Sched>{std::move(listener).value(), std::move(client).value(),
                           std::move(server).value()};
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_SOCKET_TEST_H_
