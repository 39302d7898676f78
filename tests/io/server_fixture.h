// A gtest fixture for the example servers (examples/echo_server.h, examples/kv_server.h)
// over one IO backend: a 2-worker scheduler, the server started on 127.0.0.1 with a free
// port, and the leak check every IO test makes (the process's open fds are back to where
// they started once server and scheduler are gone).
#ifndef FAIRSCHED_TESTS_IO_SERVER_FIXTURE_H_
#define FAIRSCHED_TESTS_IO_SERVER_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>

#include "io/tcp.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"

namespace fairsched::testing {

// Server<Sched> has a constructor (Sched&, Options), Start(address) -> IoResult<address>
// and Stats() with an `open` count.
template <typename Backend, template <typename> class Server, typename Options>
class ServerFixture : public ::testing::Test {
 protected:
  using Sched = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;

  ServerFixture() : fds_at_start_(OpenFdCount()) { scheduler_->Start(2); }
  ~ServerFixture() override {
    server_.reset();
    scheduler_.reset();
    EXPECT_EQ(OpenFdCount(), fds_at_start_) << "a file descriptor leaked";
  }

  SocketAddress Start(Options options = {}) {
    server_ = std::make_unique<Server<Sched>>(*scheduler_, options);
    IoResult<SocketAddress> bound = server_->Start(SocketAddress::Parse("127.0.0.1:0").value());
    EXPECT_TRUE(bound.ok()) << bound.error().Message();
    return bound.value();
  }

  auto Stats() const { return server_->Stats(); }
  // Every connection closed within the bounded wait.
  bool AllClosed() const {
    return WaitUntilTrue([&] { return Stats().open == 0; });
  }

  const int fds_at_start_;
  std::unique_ptr<Sched> scheduler_ = std::make_unique<Sched>();
  std::unique_ptr<Server<Sched>> server_;
};

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_SERVER_FIXTURE_H_
