// Operating-system faults against io::TcpServer (io/tcp_server.h) on epoll and io_uring.
// First those the kernel itself produces:
//   - out of file descriptors: RLIMIT_NOFILE lowered to the fds already open, so accept
//     fails with EMFILE while a connection waits in the backlog;
//   - a peer that resets the connection (SO_LINGER 0, then close) while the server is in
//     the middle of a large write;
//   - signals without SA_RESTART hitting the workers thousands of times a second, so that
//     their system calls (epoll_wait, io_uring_enter, the socket calls) fail with EINTR.
// Then those only the socket layer's fault seam (io/internal/socket_faults.h) can produce:
// sends of one byte at a time, readiness that was false, EINTR from the socket calls,
// EMFILE/ENFILE at accept, and io_uring's setup and submit refused.
// For each: the session that meets the fault gets a clear error, the other sessions keep
// being served, the server does not spin, and nothing leaks (the fixture compares the open
// fds and the backend's live operations with the start).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "coro/runtime.h"
#include "io/internal/socket_faults.h"
#include "io/tcp_server.h"
#include "tests/io/echo_session.h"
#include "tests/io/raw_client.h"
#include "tests/io/socket_test.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

template <typename Backend>
class OsFaultsTest : public testing::SocketTest<Backend> {
 public:
  using Sched = typename testing::SocketTest<Backend>::Sched;

  // Echoes until the stream ends (tests/io/echo_session.h).
  static coro::Lazy<void> Echo(TcpStream<Sched> stream) {
    return testing::EchoSession(std::move(stream));
  }
};
TYPED_TEST_SUITE(OsFaultsTest, testing::IoBackends, testing::BackendNames);

// CPU time (user + system) this process has used.
std::chrono::microseconds ProcessCpuTime() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto micros = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  return micros(usage.ru_utime) + micros(usage.ru_stime);
}

// Lowers this process's soft RLIMIT_NOFILE for its lifetime, then restores it.
class FdLimit {
 public:
  explicit FdLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = soft;
    ok_ = ::setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~FdLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

// The highest fd number open now, plus one: the soft limit at which the next new fd fails.
rlim_t NextFreeFdLimit() {
  rlim_t highest = 0;
  for (int fd = 0; fd < 65536; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1) highest = static_cast<rlim_t>(fd) + 1;
  }
  return highest;
}

TYPED_TEST(OsFaultsTest, OutOfFdsAtAcceptKeepsServingAndRecovers) {
  using Sched = typename TestFixture::Sched;
  if constexpr (std::is_same_v<TypeParam, IoUringBackend>) {
    // Seen on kernel 6.18: an accept through the ring still gets an fd after the soft
    // limit is lowered (the ring's accept does not run under this thread's new limit), so
    // this way of producing EMFILE does not reach it.
    GTEST_SKIP() << "RLIMIT_NOFILE lowered after the ring's setup does not limit its accept";
  }
#if defined(FAIRSCHED_UBSAN)
  // UBSan's dynamic-type check opens a pipe to probe memory: with no fd free it reports a
  // valid object as having an invalid vptr. (--config=ubsan, which --config=asan includes,
  // defines FAIRSCHED_UBSAN; --config=asan_only runs this test.)
  GTEST_SKIP() << "UBSan's vptr check needs a free fd";
#endif
  TcpServer<Sched> server(this->scheduler(), &TestFixture::Echo);
  IoResult<SocketAddress> address = server.Start(SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(address.ok());
  testing::RawClient served(address.value());
  ASSERT_TRUE(served.RoundTrip("before"));
  ASSERT_EQ(server.accepted(), 1);

  // The second client's socket exists before the limit drops; its connect completes into
  // the backlog after, and the server's accept of it fails with EMFILE (no fd is free).
  const int waiting = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(waiting, 0);
  {
    FdLimit limit(NextFreeFdLimit());
    ASSERT_TRUE(limit.ok());
    ASSERT_EQ(::connect(waiting, address.value().get(), address.value().length()), 0);
    ASSERT_EQ(::send(waiting, "waiting", 7, MSG_NOSIGNAL), 7);
    const auto cpu_before = ProcessCpuTime();
    const auto wall_before = std::chrono::steady_clock::now();
    EXPECT_FALSE(testing::RawClient::Readable(waiting, milliseconds(500)))
        << "accepted with no fd free";
    // The open session is served as before.
    EXPECT_TRUE(served.RoundTrip("during"));
    std::this_thread::sleep_for(milliseconds(500));
    const auto cpu = ProcessCpuTime() - cpu_before;
    const auto wall = std::chrono::steady_clock::now() - wall_before;
    // The accept loop waits between attempts instead of spinning on a listener that stays
    // readable. Measured on 2 cores: 13% of the wall time in CPU with the pause, 49%
    // without it (the loop then retries through the scheduler as fast as it can).
    const auto wall_us = std::chrono::duration_cast<std::chrono::microseconds>(wall).count();
    EXPECT_LT(cpu.count() * 100, wall_us * 35)
        << "the server burned CPU while accept failed";
    EXPECT_EQ(server.accepted(), 1);
  }
  // Fds free again: the waiting connection is accepted and served.
  EXPECT_TRUE(testing::RawClient::Readable(waiting, milliseconds(10000)))
      << "not accepted after the fds came back";
  char echoed[8] = {};
  EXPECT_EQ(::recv(waiting, echoed, 7, MSG_WAITALL), 7);
  EXPECT_EQ(std::string(echoed), "waiting");
  EXPECT_EQ(server.accepted(), 2);
  ::close(waiting);
  EXPECT_TRUE(served.RoundTrip("after"));
  server.Shutdown(seconds(5));
}

TYPED_TEST(OsFaultsTest, PeerResetDuringALargeWriteIsAnErrorForThatSessionOnly) {
  using Sched = typename TestFixture::Sched;
  std::atomic<int> write_error{-1};  // IoErrorCode of the large write, once it ended
  constexpr std::size_t kLarge = std::size_t{16} << 20;
  // A session that answers "big" with 16 MiB and anything else with an echo.
  auto handler = [&write_error](TcpStream<Sched> stream) -> coro::Lazy<void> {
    char buffer[256];
    while (true) {
      IoResult<std::size_t> n = co_await stream.Read(buffer, coro::DeadlineAfter(seconds(30)));
      if (!n.ok()) break;
      if (std::string(buffer, n.value()) == "big") {
        const std::string large(kLarge, 'x');
        const IoError written =
            co_await stream.Write(std::span<const char>(large), coro::DeadlineAfter(seconds(30)));
        write_error.store(static_cast<int>(written.code()));
        break;
      }
      const IoError written = co_await stream.Write(std::span<const char>(buffer, n.value()),
                                                    coro::DeadlineAfter(seconds(30)));
      if (!written.ok()) break;
    }
    CloseGracefully(stream);
  };
  TcpServer<Sched> server(this->scheduler(), handler);
  IoResult<SocketAddress> address = server.Start(SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(address.ok());
  testing::RawClient other(address.value());
  ASSERT_TRUE(other.RoundTrip("other"));

  {
    testing::RawClient resetter(address.value());
    resetter.SetReceiveBuffer(4096);
    ASSERT_TRUE(resetter.SendAll("big"));
    // Some of the answer arrives: the server is inside its write.
    EXPECT_FALSE(resetter.Receive(1024).empty());
    // Close with SO_LINGER 0: the kernel sends a reset instead of a FIN.
    const linger abort_on_close{1, 0};
    ASSERT_EQ(::setsockopt(resetter.fd(), SOL_SOCKET, SO_LINGER, &abort_on_close,
                           sizeof(abort_on_close)),
              0);
  }  // closed here
  const auto give_up = std::chrono::steady_clock::now() + seconds(10);
  while (write_error.load() < 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(write_error.load(), static_cast<int>(IoErrorCode::kResetByPeer))
      << "the write to a reset peer did not end with kResetByPeer";
  // The process is alive (no SIGPIPE) and the other session is served.
  EXPECT_TRUE(other.RoundTrip("still here"));
  server.Shutdown(seconds(5));
}

std::atomic<int> g_interruptions{0};
void CountInterruption(int) { g_interruptions.fetch_add(1, std::memory_order_relaxed); }

TYPED_TEST(OsFaultsTest, SignalsInterruptingTheWorkersLoseNothing) {
  using Sched = typename TestFixture::Sched;
  // No SA_RESTART: an interrupted system call fails with EINTR instead of going on.
  struct sigaction action{};
  action.sa_handler = &CountInterruption;
  sigemptyset(&action.sa_mask);
  struct sigaction saved{};
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &saved), 0);
  TcpServer<Sched> server(this->scheduler(), &TestFixture::Echo);  // workers start here
  IoResult<SocketAddress> address = server.Start(SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(address.ok());
  // This thread and the sender block the signal (the sender inherits the mask), so every
  // signal lands on a thread started before: the scheduler's workers.
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigset_t saved_mask;
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &usr1, &saved_mask), 0);
  g_interruptions.store(0);
  std::atomic<bool> stop{false};
  std::thread sender([&stop] {
    while (!stop.load()) {
      ::kill(::getpid(), SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::vector<std::unique_ptr<testing::RawClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<testing::RawClient>(address.value()));
  }
  int round_trips = 0;
  bool all_ok = true;
  const auto until = std::chrono::steady_clock::now() + milliseconds(800);
  while (all_ok && std::chrono::steady_clock::now() < until) {
    for (std::size_t i = 0; i < clients.size(); ++i) {
      const std::string message(1 + (round_trips * 97) % 3000, static_cast<char>('a' + i));
      all_ok = all_ok && clients[i]->RoundTrip(message);
      ++round_trips;
    }
  }
  stop.store(true);
  sender.join();
  clients.clear();
  server.Shutdown(seconds(5));
  ::pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  ::sigaction(SIGUSR1, &saved, nullptr);
  EXPECT_TRUE(all_ok) << "a round trip failed after " << round_trips;
  EXPECT_GT(round_trips, 40);
  // The fault happened: the workers took the signals.
  EXPECT_GT(g_interruptions.load(), 100);
}

// ---- Faults through the seam ----

// The faults a test asks for, counted as they are injected. Every knob is atomic: the
// socket calls ask from the workers while the test thread sets them.
class FaultPlan : public internal::SocketFaults {
 public:
  std::atomic<std::size_t> send_cap{0};         // 0: sends are not capped
  std::atomic<bool> false_readiness{false};     // every edge: both sides said ready
  std::atomic<int> interrupt_every{0};          // every Nth send/receive/accept: -EINTR
  std::atomic<int> accept_failures{0};          // the next N accepts fail with accept_errno
  std::atomic<int> accept_errno{EMFILE};
  std::atomic<int> ring_setup_errno{0};         // io_uring_queue_init refused with it
  std::atomic<bool> refuse_every_other_submit{false};

  std::atomic<long> capped_sends{0};
  std::atomic<long> false_readies{0};
  std::atomic<long> interrupts{0};
  std::atomic<long> failed_accepts{0};
  std::atomic<long> refused_submits{0};

  int BeforeReceive(int) override {
    return MaybeInterrupt();
  }
  bool FalseReadiness(int) override {
    if (!false_readiness.load()) return false;
    false_readies.fetch_add(1);
    return true;
  }
  int BeforeSend(int, std::size_t* limit) override {
    if (const int e = MaybeInterrupt(); e != 0) return e;
    const std::size_t cap = send_cap.load();
    if (cap != 0 && *limit > cap) {
      *limit = cap;
      capped_sends.fetch_add(1);
    }
    return 0;
  }
  int BeforeAccept(int) override {
    if (const int e = MaybeInterrupt(); e != 0) return e;
    int left = accept_failures.load();
    while (left > 0 && !accept_failures.compare_exchange_weak(left, left - 1)) {
    }
    if (left <= 0) return 0;
    failed_accepts.fetch_add(1);
    return -accept_errno.load();
  }
  int BeforeRingSetup() override { return -ring_setup_errno.load(); }
  int BeforeRingSubmit() override {
    if (refuse_every_other_submit.load() && submits_.fetch_add(1) % 2 == 0) {
      refused_submits.fetch_add(1);
      return -EAGAIN;
    }
    return 0;
  }

 private:
  int MaybeInterrupt() {
    const int every = interrupt_every.load();
    if (every == 0 || calls_.fetch_add(1) % every != 0) return 0;
    interrupts.fetch_add(1);
    return -EINTR;
  }
  std::atomic<long> submits_{0};
  std::atomic<long> calls_{0};
};

// The seam's faults are installed for the whole test, and removed only after the
// scheduler (whose role holder submits to the ring between waits) is gone.
template <typename Backend>
class InjectedFaultsTest : public OsFaultsTest<Backend> {
 protected:
  void SetUp() override {
    OsFaultsTest<Backend>::SetUp();
    internal::InstallSocketFaults(&plan_);
  }
  void TearDown() override {
    OsFaultsTest<Backend>::TearDown();  // destroys the scheduler
    internal::InstallSocketFaults(nullptr);
  }

  // Starts an echo server on loopback; `round_trips` clients of it each send messages of
  // growing size (up to `largest` bytes) and check each comes back whole, in order.
  bool EchoFromClients(int clients, int round_trips, std::size_t largest,
                       std::string* failure) {
    using Sched = typename OsFaultsTest<Backend>::Sched;
    TcpServer<Sched> server(this->scheduler(), &OsFaultsTest<Backend>::Echo);
    IoResult<SocketAddress> address =
        server.Start(SocketAddress::Parse("127.0.0.1:0").value());
    if (!address.ok()) {
      *failure = "Start: " + address.error().Message();
      return false;
    }
    bool ok = true;
    {
      std::vector<std::unique_ptr<testing::RawClient>> open;
      for (int c = 0; c < clients; ++c) {
        open.push_back(std::make_unique<testing::RawClient>(address.value()));
      }
      for (int r = 0; r < round_trips && ok; ++r) {
        for (int c = 0; c < clients && ok; ++c) {
          const std::size_t size = 1 + (largest * static_cast<std::size_t>(r + 1)) /
                                           static_cast<std::size_t>(round_trips);
          const std::string message(size, static_cast<char>('a' + (r + c) % 26));
          ok = open[static_cast<std::size_t>(c)]->RoundTrip(message);
          if (!ok) *failure = "round trip " + std::to_string(r) + " of client " +
                              std::to_string(c) + " (" + std::to_string(size) + " bytes)";
        }
      }
    }
    server.Shutdown(seconds(5));
    return ok;
  }

  FaultPlan plan_;
};
TYPED_TEST_SUITE(InjectedFaultsTest, testing::IoBackends, testing::BackendNames);

TYPED_TEST(InjectedFaultsTest, OneByteSendsDeliverEveryByteInOrder) {
  this->plan_.send_cap.store(1);
  std::string failure;
  EXPECT_TRUE(this->EchoFromClients(3, 6, 8192, &failure)) << failure;
  // The fault happened: the server's answers went out a byte per send.
  EXPECT_GT(this->plan_.capped_sends.load(), 8192);
}

TYPED_TEST(InjectedFaultsTest, FalseReadinessAndInterruptedCallsLoseNothing) {
  if constexpr (std::is_same_v<TypeParam, IoUringBackend>) {
    GTEST_SKIP() << "io_uring receives through the ring: no readiness to be false";
  }
  this->plan_.false_readiness.store(true);
  this->plan_.interrupt_every.store(3);
  std::string failure;
  EXPECT_TRUE(this->EchoFromClients(3, 20, 20000, &failure)) << failure;
  EXPECT_GT(this->plan_.false_readies.load(), 30);
  EXPECT_GT(this->plan_.interrupts.load(), 30);
}

TYPED_TEST(InjectedFaultsTest, AcceptOutOfFdsIsRetriedAndTheOthersAreServed) {
  using Sched = typename TestFixture::Sched;
  if constexpr (std::is_same_v<TypeParam, IoUringBackend>) {
    GTEST_SKIP() << "io_uring accepts through the ring (covered by the RLIMIT test on epoll)";
  }
  TcpServer<Sched> server(this->scheduler(), &TestFixture::Echo);
  IoResult<SocketAddress> address = server.Start(SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(address.ok());
  testing::RawClient served(address.value());
  ASSERT_TRUE(served.RoundTrip("before"));
  for (const int error : {EMFILE, ENFILE}) {
    this->plan_.accept_errno.store(error);
    this->plan_.accept_failures.store(3);
    const long failed_before = this->plan_.failed_accepts.load();
    testing::RawClient waiting(address.value());  // accepted after three failures
    EXPECT_TRUE(served.RoundTrip("during"));
    EXPECT_TRUE(waiting.RoundTrip("waiting")) << "not served after accept failed with "
                                              << error;
    EXPECT_EQ(this->plan_.failed_accepts.load() - failed_before, 3);
  }
  EXPECT_EQ(server.accepted(), 3);
  EXPECT_TRUE(served.RoundTrip("after"));
  server.Shutdown(seconds(5));
}

TYPED_TEST(InjectedFaultsTest, RefusedRingSubmitsAreSubmittedLater) {
  if constexpr (!std::is_same_v<TypeParam, IoUringBackend>) {
    GTEST_SKIP() << "only io_uring submits";
  }
  this->plan_.refuse_every_other_submit.store(true);
  std::string failure;
  EXPECT_TRUE(this->EchoFromClients(3, 10, 4000, &failure)) << failure;
  EXPECT_GT(this->plan_.refused_submits.load(), 10);
}

TYPED_TEST(InjectedFaultsTest, RingSetupOutOfMemoryIsReportedNotUsed) {
  if constexpr (!std::is_same_v<TypeParam, IoUringBackend>) {
    GTEST_SKIP() << "only io_uring sets up a ring";
  }
  this->plan_.ring_setup_errno.store(ENOMEM);
  // Asked first, as io/backend_choice.h says: the kernel's refusal is a "no", not a crash.
  EXPECT_FALSE(IoUringBackend::Supported());
  // Constructed anyway: a message naming the kernel's error, then the abort.
  EXPECT_DEATH({ IoUringBackend backend; }, "io_uring_queue_init: Cannot allocate memory");
  this->plan_.ring_setup_errno.store(0);
  EXPECT_TRUE(IoUringBackend::Supported());
}

}  // namespace
}  // namespace fairsched
