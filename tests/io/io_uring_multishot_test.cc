// IoUringBackend's multishot operations (io/io_op.h: AcceptMultishot, RecvMultishot) and
// provided buffer rings (io/io_uring_backend.h): many intermediate completions per Submit,
// exactly one final completion, bytes delivered in order with none lost or repeated, buffer
// exhaustion and recovery, cancel and Stop. Every test runs twice: with the kernel's
// multishot operations (skipped where the kernel lacks them) and with the single-shot
// fallbacks (SetMultishot(false)). Loopback only; fds counted before and after.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "io/epoll_backend.h"
#include "io/io_op.h"
#include "io/io_uring_backend.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using testing::OpenFdCount;
using testing::WaitUntilTrue;
using UringScheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, IoUringBackend>;

// A task that runs one multishot op: every run drains the op's event queue into `on_event`
// (on the task's worker, one run at a time); the final completion records the result; a
// scheduler Cancel makes it cancel the op and wait for the final completion.
class MultishotWaiter {
 public:
  MultishotWaiter(UringScheduler* scheduler, std::function<void(const IoEvent&)> on_event)
      : scheduler_(scheduler), on_event_(std::move(on_event)), task_(this, &MultishotWaiter::Run) {}
  ~MultishotWaiter() { EXPECT_TRUE(finished_.load()) << "a MultishotWaiter was left waiting"; }

  void StartAccept(int listen_fd) {
    op_.PrepareAcceptMultishot(listen_fd, &queue_, &task_);
    Start();
  }
  void StartRecv(int fd, IoBufferRing* ring) {
    op_.PrepareRecvMultishot(fd, ring, &queue_, &task_);
    Start();
  }
  Task* task() { return &task_; }
  int finals() const { return finals_.load(); }
  bool finished() const { return finished_.load(); }
  std::int32_t result() const { return result_.load(); }
  std::int64_t events() const { return events_.load(); }

 private:
  void Start() {
    scheduler_->PostDeadlineThroughStop(&task_, kTaskDeadlineInfinite);
    scheduler_->io().Submit(&op_);
  }
  void Run(Task* self) {
    const bool final = self->ReceiveSignal();
    queue_.TakeAll(batch_);
    for (const IoEvent& event : batch_) on_event_(event);
    events_.fetch_add(static_cast<std::int64_t>(batch_.size()));
    if (final) {  // the backend is done with op_: no event follows
      result_ = op_.Result();
      finals_.fetch_add(1);
      finished_ = true;
      return;
    }
    if (self->IsCancelled() && op_.IsSubmitted()) scheduler_->io().Cancel(&op_);
    scheduler_->PostDeadlineThroughStop(self, kTaskDeadlineInfinite);
  }

  UringScheduler* scheduler_;
  std::function<void(const IoEvent&)> on_event_;
  Task task_;
  IoOp op_;
  IoEventQueue queue_;
  std::vector<IoEvent> batch_;
  std::atomic<int> finals_{0};
  std::atomic<bool> finished_{false};
  std::atomic<std::int32_t> result_{0};
  std::atomic<std::int64_t> events_{0};
};

// The byte at position `i` of every test stream.
char PatternByte(std::size_t i) { return static_cast<char>('a' + (i * 7 + i / 251) % 26); }

// Writes pattern bytes [from, to) to `fd` (blocking) in chunks of varying size.
void WritePattern(int fd, std::size_t from, std::size_t to) {
  std::string chunk;
  std::size_t sent = from;
  std::size_t round = 0;
  while (sent < to) {
    const std::size_t size = std::min<std::size_t>(to - sent, 1 + (round++ * 977) % 9000);
    chunk.resize(size);
    for (std::size_t i = 0; i < size; ++i) chunk[i] = PatternByte(sent + i);
    const ssize_t n = send(fd, chunk.data(), size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;  // io_uring task work on this thread (docs/io.md)
    ASSERT_GT(n, 0) << "send failed: " << errno;
    sent += static_cast<std::size_t>(n);
  }
}

void ExpectPattern(const std::string& bytes, std::size_t from = 0) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != PatternByte(from + i)) {
      ADD_FAILURE() << "byte " << from + i << " out of order, lost or repeated";
      return;
    }
  }
}

// A blocking stream socket pair (the test's end blocks; the backend does not care).
struct SocketPair {
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0); }
  ~SocketPair() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  void CloseWriter() {
    close(fds[1]);
    fds[1] = -1;
  }
  int fds[2] = {-1, -1};
};

class MultishotTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    fds_before_ = OpenFdCount();
    sched_ = std::make_unique<UringScheduler>();
    if (GetParam()) {
      if (!sched_->io().multishot_accept() || !sched_->io().multishot_recv()) {
        GTEST_SKIP() << "kernel multishot missing: " << sched_->io().multishot_note();
      }
    } else {
      sched_->io().SetMultishot(false);
      EXPECT_FALSE(sched_->io().multishot_accept());
      EXPECT_FALSE(sched_->io().multishot_recv());
    }
    if (!sched_->io().buffer_rings()) GTEST_SKIP() << sched_->io().multishot_note();
    sched_->Start(2);
  }
  void TearDown() override {
    sched_->Stop();
    EXPECT_EQ(sched_->io().LiveCount(), 0);
    sched_.reset();
    EXPECT_EQ(OpenFdCount(), fds_before_) << "file descriptors leaked";
  }
  UringScheduler& sched() { return *sched_; }
  IoBufferRing* Ring(unsigned count, std::size_t size) {
    std::string error;
    IoBufferRing* ring = sched_->io().CreateBufferRing(count, size, &error);
    EXPECT_NE(ring, nullptr) << error;
    return ring;
  }

  std::unique_ptr<UringScheduler> sched_;
  int fds_before_ = 0;
};

// 100 clients connect to one listener; one Submit accepts them all, each as one event.
TEST_P(MultishotTest, AcceptsAHundredConnectionsWithOneSubmit) {
  constexpr int kClients = 100;
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, kClients), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);

  std::mutex mutex;
  std::vector<int> accepted;
  MultishotWaiter acceptor(&sched(), [&](const IoEvent& event) {
    EXPECT_GE(event.result, 0) << "accept failed: " << -event.result;
    EXPECT_FALSE(event.has_buffer);
    std::lock_guard<std::mutex> lock(mutex);
    accepted.push_back(event.result);
  });
  acceptor.StartAccept(listener);
  std::vector<int> clients;
  for (int i = 0; i < kClients; ++i) {
    const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(client, 0);
    int rc;
    do {
      rc = connect(client, reinterpret_cast<const sockaddr*>(&address), length);
    } while (rc != 0 && errno == EINTR);
    ASSERT_EQ(rc, 0) << errno;
    clients.push_back(client);
  }
  ASSERT_TRUE(WaitUntilTrue([&] { return acceptor.events() == kClients; }));
  EXPECT_FALSE(acceptor.finished());  // still accepting
  sched().Cancel(acceptor.task());
  ASSERT_TRUE(WaitUntilTrue([&] { return acceptor.finished(); }));
  EXPECT_EQ(acceptor.result(), -ECANCELED);
  {
    std::lock_guard<std::mutex> lock(mutex);
    const std::set<int> distinct(accepted.begin(), accepted.end());
    EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kClients));
    for (int fd : accepted) {
      EXPECT_NE(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
      close(fd);
    }
  }
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(acceptor.finals(), 1);
  EXPECT_EQ(acceptor.events(), kClients);
  for (int client : clients) close(client);
  close(listener);
}

// A 4 MiB stream arrives in many chunks through a 16-buffer ring, byte-exact and in order;
// the writer's close is the final completion with result 0.
TEST_P(MultishotTest, ReceivesALongStreamInOrder) {
  constexpr std::size_t kTotal = 4 << 20;
  IoBufferRing* ring = Ring(16, 4096);
  ASSERT_NE(ring, nullptr);
  SocketPair pair;
  std::string received;  // appended by the task's runs, one at a time
  MultishotWaiter reader(&sched(), [&](const IoEvent& event) {
    ASSERT_TRUE(event.has_buffer);
    ASSERT_GT(event.result, 0);
    ASSERT_LE(static_cast<std::size_t>(event.result), ring->buffer_size());
    received.append(ring->Buffer(event.buffer_id), static_cast<std::size_t>(event.result));
    sched().io().ReleaseBuffer(ring, event.buffer_id);
  });
  reader.StartRecv(pair.fds[0], ring);
  WritePattern(pair.fds[1], 0, kTotal);
  pair.CloseWriter();
  ASSERT_TRUE(WaitUntilTrue([&] { return reader.finished(); }));
  EXPECT_EQ(reader.result(), 0);  // end of stream
  EXPECT_EQ(reader.finals(), 1);
  EXPECT_EQ(received.size(), kTotal);
  ExpectPattern(received);
  EXPECT_GE(reader.events(), static_cast<std::int64_t>(kTotal / 4096));
}

// The task holds every buffer: the op starves (ENOBUFS) without losing or repeating a byte,
// stays submitted, and resumes when the buffers come back.
TEST_P(MultishotTest, BufferExhaustionThenRecovery) {
  constexpr unsigned kBuffers = 4;
  constexpr std::size_t kSize = 64;
  constexpr std::size_t kTotal = 1000;
  IoBufferRing* ring = Ring(kBuffers, kSize);
  ASSERT_NE(ring, nullptr);
  SocketPair pair;
  WritePattern(pair.fds[1], 0, kTotal);  // all queued in the socket before the op starts
  std::mutex mutex;
  std::string received;
  std::vector<std::uint16_t> held;
  std::atomic<bool> release_at_once{false};
  MultishotWaiter reader(&sched(), [&](const IoEvent& event) {
    ASSERT_TRUE(event.has_buffer);
    std::lock_guard<std::mutex> lock(mutex);
    received.append(ring->Buffer(event.buffer_id), static_cast<std::size_t>(event.result));
    if (release_at_once.load()) {
      sched().io().ReleaseBuffer(ring, event.buffer_id);
    } else {
      held.push_back(event.buffer_id);
    }
  });
  reader.StartRecv(pair.fds[0], ring);
  ASSERT_TRUE(WaitUntilTrue([&] { return reader.events() == kBuffers; }));
  std::this_thread::sleep_for(milliseconds(50));  // room for a wrong extra event
  EXPECT_EQ(reader.events(), kBuffers);
  EXPECT_FALSE(reader.finished()) << "starving must not end the op";
  {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(received.size(), kBuffers * kSize);
    release_at_once = true;
    for (std::uint16_t id : held) sched().io().ReleaseBuffer(ring, id);
    held.clear();
  }
  ASSERT_TRUE(WaitUntilTrue([&] {
    std::lock_guard<std::mutex> lock(mutex);
    return received.size() == kTotal;
  }));
  pair.CloseWriter();
  ASSERT_TRUE(WaitUntilTrue([&] { return reader.finished(); }));
  EXPECT_EQ(reader.result(), 0);
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(received.size(), kTotal);
  ExpectPattern(received);
}

// Cancelled while bytes flow: exactly one final completion (-ECANCELED), nothing after it,
// and the bytes delivered plus the bytes left in the socket are the stream, once each. The
// writer sends the first half around the cancel and the second half after the final
// completion, so the op has certainly stopped before the stream ends.
TEST_P(MultishotTest, CancelMidStreamEndsOnceAndLosesNothing) {
  constexpr std::size_t kTotal = 1 << 20;
  IoBufferRing* ring = Ring(8, 1024);
  ASSERT_NE(ring, nullptr);
  SocketPair pair;
  std::string received;
  MultishotWaiter reader(&sched(), [&](const IoEvent& event) {
    received.append(ring->Buffer(event.buffer_id), static_cast<std::size_t>(event.result));
    sched().io().ReleaseBuffer(ring, event.buffer_id);
  });
  reader.StartRecv(pair.fds[0], ring);
  std::thread writer([&] {
    WritePattern(pair.fds[1], 0, kTotal / 2);
    while (!reader.finished()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    WritePattern(pair.fds[1], kTotal / 2, kTotal);
  });
  ASSERT_TRUE(WaitUntilTrue([&] { return reader.events() >= 20; }));
  sched().Cancel(reader.task());
  ASSERT_TRUE(WaitUntilTrue([&] { return reader.finished(); }));
  EXPECT_EQ(reader.result(), -ECANCELED);
  const std::size_t delivered = received.size();  // final: no event follows
  // The rest of the stream is still in the socket. Read it here.
  std::string rest;
  char buffer[8192];
  while (delivered + rest.size() < kTotal) {
    const ssize_t n = recv(pair.fds[0], buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    rest.append(buffer, static_cast<std::size_t>(n));
  }
  writer.join();
  EXPECT_EQ(reader.finals(), 1);
  EXPECT_EQ(received.size(), delivered);
  EXPECT_LE(delivered, kTotal / 2);
  EXPECT_EQ(delivered + rest.size(), kTotal);
  ExpectPattern(received + rest);
}

// Stop with an armed accept, an armed recv and a starved (parked) recv: each ends with one
// final completion, -ECANCELED.
TEST_P(MultishotTest, StopEndsActiveMultishotOps) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  IoBufferRing* idle_ring = Ring(4, 256);
  IoBufferRing* starved_ring = Ring(1, 16);
  ASSERT_NE(idle_ring, nullptr);
  ASSERT_NE(starved_ring, nullptr);
  SocketPair idle;
  SocketPair busy;
  WritePattern(busy.fds[1], 0, 64);  // 16 bytes fill the only buffer, which is never released
  const auto ignore = [](const IoEvent&) {};
  MultishotWaiter acceptor(&sched(), ignore);
  MultishotWaiter idle_reader(&sched(), ignore);
  MultishotWaiter starved_reader(&sched(), ignore);
  acceptor.StartAccept(listener);
  idle_reader.StartRecv(idle.fds[0], idle_ring);
  starved_reader.StartRecv(busy.fds[0], starved_ring);
  ASSERT_TRUE(WaitUntilTrue([&] { return starved_reader.events() == 1; }));
  std::this_thread::sleep_for(milliseconds(10));
  sched().Stop();
  for (MultishotWaiter* waiter : {&acceptor, &idle_reader, &starved_reader}) {
    EXPECT_TRUE(waiter->finished());
    EXPECT_EQ(waiter->finals(), 1);
    EXPECT_EQ(waiter->result(), -ECANCELED);
  }
  EXPECT_EQ(starved_reader.events(), 1);
  close(listener);
}

// Misuse reported as errors, not crashes: bad ring arguments.
TEST_P(MultishotTest, BadBufferRingArgumentsAreRefused) {
  std::string error;
  EXPECT_EQ(sched().io().CreateBufferRing(3, 64, &error), nullptr);
  EXPECT_NE(error.find("power of two"), std::string::npos) << error;
  EXPECT_EQ(sched().io().CreateBufferRing(4, 0, &error), nullptr);
  EXPECT_NE(error.find("size"), std::string::npos) << error;
}

// A buffer released twice (or never delivered) is misuse: abort with a message, every build.
TEST(MultishotMisuseDeathTest, ReleasingABufferNotHeldAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  UringScheduler sched;
  if (!sched.io().buffer_rings()) GTEST_SKIP() << sched.io().multishot_note();
  IoBufferRing* ring = sched.io().CreateBufferRing(4, 64);
  ASSERT_NE(ring, nullptr);
  EXPECT_DEATH(sched.io().ReleaseBuffer(ring, 1), "released twice, or never delivered");
  EXPECT_DEATH(sched.io().ReleaseBuffer(ring, 4), "out of range");
}

// Epoll has no multishot operations: a clear error result, once, not a hang.
TEST(MultishotOnEpollTest, IsRefusedWithEopnotsupp) {
  BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, EpollBackend> sched;
  sched.Start(1);
  std::atomic<int> finals{0};
  std::atomic<std::int32_t> result{0};
  IoOp op;
  IoEventQueue events;
  Task task([&](Task* self) {
    if (!self->ReceiveSignal()) return;
    result = op.Result();
    finals.fetch_add(1);
  });
  op.PrepareAcceptMultishot(0, &events, &task);
  sched.PostDeadlineThroughStop(&task, kTaskDeadlineInfinite);
  sched.io().Submit(&op);
  ASSERT_TRUE(WaitUntilTrue([&] { return finals.load() == 1; }));
  EXPECT_EQ(result.load(), -EOPNOTSUPP);
  sched.Stop();
  EXPECT_EQ(finals.load(), 1);
}

INSTANTIATE_TEST_SUITE_P(Modes, MultishotTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Multishot") : std::string("SingleShot");
                         });

}  // namespace
}  // namespace fairsched
