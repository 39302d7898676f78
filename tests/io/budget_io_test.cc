// The cooperative budget (coro/budget.h) in io/: on a one-worker scheduler, a coroutine
// whose reads never suspend -- 40,000 pipelined lines served from a BufferedStream's
// buffer, or small TcpStream reads that always find data waiting (epoll and io_uring) --
// must let another ready coroutine run while it reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <utility>

#include "coro/budget.h"
#include "coro/event.h"
#include "coro/lazy.h"
#include "coro/runtime.h"
#include "io/buffered_stream.h"
#include "io/byte_stream.h"
#include "io/tcp.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"

namespace fairsched {
namespace {

using std::chrono::seconds;

// A ByteStream over `input` whose reads complete at once, never suspending (like data a
// peer sent long ago). Writes are accepted and dropped.
class MemoryStream {
 public:
  explicit MemoryStream(std::string input) : input_(std::move(input)) {}
  coro::Lazy<IoResult<std::size_t>> ReadSome(std::span<char> into, TaskDeadline) {
    if (read_ == input_.size()) co_return IoError(IoErrorCode::kEndOfStream);
    const std::size_t n = std::min(into.size(), input_.size() - read_);
    std::copy_n(input_.data() + read_, n, into.data());
    read_ += n;
    co_return n;
  }
  coro::Lazy<IoResult<std::size_t>> WriteSome(std::span<const char> data, TaskDeadline) {
    co_return data.size();
  }
  void Close() {}

 private:
  std::string input_;
  std::size_t read_ = 0;
};
static_assert(ByteStream<MemoryStream>);

// Yields in a loop until told to stop, counting its runs: it can only run while the
// coroutine that floods (on the same single worker) suspends or yields.
struct Bystander {
  coro::Lazy<> Run() {
    while (!done.load()) {
      runs.fetch_add(1);
      co_await coro::Yield();
    }
  }
  std::atomic<int> runs{0};
  std::atomic<bool> done{false};
};

// From inside the flooding coroutine: starts `bystander` on the same scheduler and lets it
// run once, so that it is queued (ready) while the flood goes on.
template <typename Sched>
coro::Lazy<coro::JoinHandle<void>> StartBeside(Sched* sched, Bystander* bystander) {
  coro::JoinHandle<void> handle =
      coro::Spawn(*sched, bystander->Run(), {.child_of_current = false});
  co_await coro::Yield();
  co_return handle;
}

TEST(BudgetIoTest, PipelinedLinesServedFromTheBufferLetOthersRun) {
  constexpr int kLines = 40000;
  std::string input;
  for (int i = 0; i < kLines; ++i) input += "line " + std::to_string(i) + "\r\n";
  TaskScheduler sched;
  sched.Start(1);
  Bystander bystander;
  auto flood = [&]() -> coro::Lazy<int> {
    coro::JoinHandle<void> other = co_await StartBeside(&sched, &bystander);
    BufferedStream in(MemoryStream(std::move(input)));
    const int before = bystander.runs.load();
    for (int i = 0; i < kLines; ++i) {
      IoResult<std::string_view> line = co_await in.ReadLine(64, kTaskDeadlineInfinite);
      EXPECT_TRUE(line.ok());
      if (!line.ok()) break;
      EXPECT_EQ(line.value(), "line " + std::to_string(i));
    }
    const int during = bystander.runs.load() - before;
    bystander.done.store(true);
    co_await std::move(other);
    co_return during;
  };
  const int during = coro::Spawn(sched, flood()).Get();
  // One yield per budget of ReadLines (each also spends one unit per Fill); without the
  // budget the bystander does not run at all until the flood ends.
  EXPECT_GE(during, kLines / coro::kDefaultReadyBudget / 2);
}

template <typename Backend>
class BudgetTcpTest : public ::testing::Test {
 protected:
  using Sched = testing::IoTestScheduler<Backend>;
  BudgetTcpTest() {
    server_.Start(1);
    peers_.Start(1);
  }
  Sched peers_;
  Sched server_;
};
TYPED_TEST_SUITE(BudgetTcpTest, testing::IoBackends);

// Accepts one connection, waits until the client's bytes were all sent, then reads them
// 16 bytes at a time (each read finds data waiting); returns how often the bystander ran
// meanwhile.
template <typename Sched>
coro::Lazy<int> ReadEverythingInSmallPieces(Sched* sched, TcpListener<Sched> listener,
                                            coro::Event* sent, std::size_t bytes) {
  const TaskDeadline deadline = coro::DeadlineAfter(seconds(10));
  IoResult<TcpStream<Sched>> accepted = co_await listener.Accept(deadline);
  EXPECT_TRUE(accepted.ok());
  if (!accepted.ok()) co_return -1;
  TcpStream<Sched> stream = std::move(accepted).value();
  const coro::WaitStatus all_sent = co_await sent->Wait(deadline);
  EXPECT_EQ(all_sent, coro::WaitStatus::kOk);
  Bystander bystander;
  coro::JoinHandle<void> other = co_await StartBeside(sched, &bystander);
  const int before = bystander.runs.load();
  char piece[16];
  std::size_t read = 0;
  while (read < bytes) {
    IoResult<std::size_t> n = co_await stream.Read(piece, deadline);
    EXPECT_TRUE(n.ok());
    if (!n.ok()) break;
    read += n.value();
  }
  const int during = bystander.runs.load() - before;
  bystander.done.store(true);
  co_await std::move(other);
  co_return during;
}

template <typename Sched>
coro::Lazy<IoResult<TcpStream<Sched>>> ConnectAndSend(Sched* sched, SocketAddress address,
                                                      std::string bytes) {
  const TaskDeadline deadline = coro::DeadlineAfter(seconds(10));
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*sched, address, deadline);
  if (!connected.ok()) co_return std::move(connected);
  const IoError written = co_await connected.value().Write(bytes, deadline);
  if (!written.ok()) co_return written;
  co_return std::move(connected);
}

TYPED_TEST(BudgetTcpTest, ReadsThatFindDataWaitingLetOthersRun) {
  using Sched = typename TestFixture::Sched;
  constexpr std::size_t kBytes = 32 * 1024;  // fits the loopback socket buffers
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(this->server_, SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok());
  const SocketAddress address = listener.value().LocalAddress().value();
  coro::Event sent;
  coro::JoinHandle<int> server = coro::Spawn(
      this->server_,
      ReadEverythingInSmallPieces(&this->server_, std::move(listener).value(), &sent, kBytes));
  IoResult<TcpStream<Sched>> client =
      coro::Spawn(this->peers_, ConnectAndSend(&this->peers_, address, std::string(kBytes, 'x')))
          .Get();
  ASSERT_TRUE(client.ok()) << client.error().Message();
  // Let the bytes reach the server's socket (only makes the reads find data more often).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  sent.Set();
  const int during = server.Get();
  // 2,048 reads: at least one yield per budget of them (without the budget, on epoll, the
  // bystander does not run until the last one).
  EXPECT_GE(during, static_cast<int>(kBytes / 16) / coro::kDefaultReadyBudget / 2);
}

}  // namespace
}  // namespace fairsched
