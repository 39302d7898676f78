// io_uring multishot vs single-shot, in one binary and one run: the same
// scheduler (2 workers, IoUringBackend), the same sockets, three ways to take many results.
//
//   accept_rate/<mode>          connections accepted per second: each iteration the bench
//     thread connects 100 loopback TCP clients (closed with RST, so no TIME_WAIT piles up)
//     and waits until the server task has accepted (and closed) all 100.
//   listener_accept_rate/<mode> the same through TcpListener::Accept (io/tcp.h) in a
//     coroutine loop that closes each stream: multishot is the listener's standing
//     multishot accept, single its single-shot Accept (SetMultishot(false)).
//   recv_throughput/<mode>      bytes per second received by a task from a writer thread
//     that pushes 8 MiB per iteration through an AF_UNIX stream socket pair (16 KiB reads /
//     64 ring buffers of 16 KiB; multishot_ring8: 8 of them).
// Modes:
//   single     the classic loop: the task prepares and Submits one Accept / Read after each
//              final completion (one Submit, one registry round trip, one SQE per result).
//   multishot  one AcceptMultishot / RecvMultishot for the whole run: one SQE, one CQE and
//              one Wakeup per result (recv: the kernel picks a ring buffer, the task releases).
//   fallback   the multishot API with SetMultishot(false): the backend re-arms a single-shot
//              SQE in the role after each CQE (no Submit round trip; what an older kernel gets).
// Build and run with --config=opt; the lead records it (tools/bench_report/record.py).
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/io_op.h"
#include "io/io_uring_backend.h"
#include "io/tcp.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"

namespace fairsched::bench {
namespace {

using UringScheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, IoUringBackend>;

enum class Mode { kSingle, kMultishot, kFallback };
constexpr int kWorkers = 2;
constexpr int kConnectionsPerIteration = 100;
constexpr std::size_t kBytesPerIteration = 8 << 20;
constexpr std::size_t kChunk = 16 << 10;
constexpr unsigned kRingBuffers = 64;
// recv_throughput/multishot_ring8: a ring that fits the L2 cache (8 x 16 KiB), to separate
// the cost of the kernel writing into many cold buffers from the cost per completion.
constexpr unsigned kSmallRingBuffers = 8;

void Die(const char* what) {
  std::fprintf(stderr, "uring_multishot_bench: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

// The server side of one benchmark: a task that takes results from one socket the way the
// mode says, and counts them (accepted connections, received bytes) for the bench thread.
class Server {
 public:
  Server(UringScheduler* sched, Mode mode, bool accept, int fd, IoBufferRing* ring)
      : sched_(sched),
        mode_(mode),
        accept_(accept),
        fd_(fd),
        ring_(ring),
        buffer_(kChunk),
        task_(this, &Server::Run) {
    if (mode_ == Mode::kSingle) {
      PrepareSingle();
    } else if (accept_) {
      op_.PrepareAcceptMultishot(fd_, &queue_, &task_);
    } else {
      op_.PrepareRecvMultishot(fd_, ring_, &queue_, &task_);
    }
    Arm();
  }
  // Cancels the op and waits for its final completion. A task cancel that arrives while Run
  // runs is not remembered (the task is not waiting), so it is repeated until the op ended;
  // Run also cancels the op when it finds stopping_ set.
  void Stop() {
    stopping_.store(true);
    while (!done_.load()) {
      sched_->Cancel(&task_);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::int64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  void PrepareSingle() {
    if (accept_) {
      op_.PrepareAccept(fd_, &task_);
    } else {
      op_.PrepareRead(fd_, buffer_.data(), buffer_.size(), &task_);
    }
  }
  void Arm() {
    sched_->PostDeadlineThroughStop(&task_, kTaskDeadlineInfinite);
    sched_->io().Submit(&op_);
  }
  // One result: an accepted socket (closed at once) or bytes received. A failed accept
  // (ECONNABORTED: the client's RST arrived before the accept) still ends one connection of
  // the iteration, so it counts; a cancel (Stop) does not.
  void Take(std::int32_t result) {
    if (accept_) {
      if (result == -ECANCELED) return;
      if (result >= 0) close(result);
      count_.fetch_add(1, std::memory_order_relaxed);
    } else if (result > 0) {
      count_.fetch_add(result, std::memory_order_relaxed);
    }
  }
  void Run(Task* self) {
    const bool final = self->ReceiveSignal();
    if (mode_ != Mode::kSingle) {
      queue_.TakeAll(events_);
      for (const IoEvent& event : events_) {
        Take(event.result);
        if (event.has_buffer) sched_->io().ReleaseBuffer(ring_, event.buffer_id);
      }
    }
    if (final) {
      if (mode_ == Mode::kSingle) Take(op_.Result());
      // Single-shot: re-armed after any result but the end of the stream, a cancel or Stop
      // (an accept that failed for one connection must not stop accepting the others).
      const bool ended = op_.Result() == -ECANCELED || (!accept_ && op_.Result() <= 0);
      if (stopping_.load() || ended) {
        done_.store(true);
        return;
      }
      PrepareSingle();  // single-shot: the next operation
      Arm();
      return;
    }
    if ((self->IsCancelled() || stopping_.load()) && op_.IsSubmitted()) {
      sched_->io().Cancel(&op_);
    }
    sched_->PostDeadlineThroughStop(self, kTaskDeadlineInfinite);
  }

  UringScheduler* sched_;
  const Mode mode_;
  const bool accept_;
  const int fd_;
  IoBufferRing* ring_;
  std::vector<char> buffer_;
  Task task_;
  IoOp op_;
  IoEventQueue queue_;
  std::vector<IoEvent> events_;
  std::atomic<std::int64_t> count_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> done_{false};
};

std::unique_ptr<UringScheduler> MakeScheduler(Mode mode, benchmark::State& state) {
  auto sched = std::make_unique<UringScheduler>();
  if (mode == Mode::kFallback) sched->io().SetMultishot(false);
  if (mode == Mode::kMultishot &&
      (!sched->io().multishot_accept() || !sched->io().multishot_recv())) {
    state.SkipWithError(sched->io().multishot_note().c_str());
    return nullptr;
  }
  sched->Start(kWorkers);
  return sched;
}

// Waits until `count()` (connections or bytes handled) reaches `target`; a benchmark that
// stops making progress fails loudly after 30 s instead of hanging the recording.
template <typename Count>
void WaitForCount(Count count, std::int64_t target) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (count() < target) {
    if (std::chrono::steady_clock::now() > give_up) Die("no progress for 30 s");
    std::this_thread::yield();
  }
}

// Connects kConnectionsPerIteration loopback clients to `address`, each closed at once.
void ConnectClients(const sockaddr_in& address) {
  const linger abortive{1, 0};  // close with RST: no TIME_WAIT
  for (int i = 0; i < kConnectionsPerIteration; ++i) {
    const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (client < 0) Die("client socket");
    while (connect(client, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      if (errno != EINTR) Die("connect");
    }
    setsockopt(client, SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
    close(client);
  }
}

template <Mode kMode>
void AcceptRate(benchmark::State& state) {
  std::unique_ptr<UringScheduler> sched = MakeScheduler(kMode, state);
  if (sched == nullptr) return;
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener < 0) Die("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0) Die("bind");
  if (listen(listener, 1024) != 0) Die("listen");
  if (getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) Die("name");
  Server server(sched.get(), kMode, /*accept=*/true, listener, nullptr);
  std::int64_t target = 0;
  for (auto _ : state) {
    ConnectClients(address);
    target += kConnectionsPerIteration;
    WaitForCount([&] { return server.count(); }, target);
  }
  server.Stop();
  sched->Stop();
  close(listener);
  state.SetItemsProcessed(state.iterations() * kConnectionsPerIteration);
}

// Accepts through TcpListener until Accept fails with kShutdown/kCancelled; counts
// connections (a failed accept of one reset connection counts too, as in Server::Take).
coro::Lazy<void> ListenerAcceptLoop(TcpListener<UringScheduler>* listener,
                                    std::atomic<std::int64_t>* count) {
  while (true) {
    IoResult<TcpStream<UringScheduler>> stream = co_await listener->Accept(kTaskDeadlineInfinite);
    if (!stream.ok() && (stream.error().code() == IoErrorCode::kShutdown ||
                         stream.error().code() == IoErrorCode::kCancelled)) {
      co_return;
    }
    count->fetch_add(1, std::memory_order_relaxed);
  }
}

template <Mode kMode>
void ListenerAcceptRate(benchmark::State& state) {
  std::unique_ptr<UringScheduler> sched = MakeScheduler(kMode, state);
  if (sched == nullptr) return;
  IoResult<TcpListener<UringScheduler>> listener =
      TcpListener<UringScheduler>::Listen(*sched, SocketAddress::Parse("127.0.0.1:0").value());
  if (!listener.ok()) Die("listen");
  const SocketAddress bound = listener.value().LocalAddress().value();
  sockaddr_in address{};
  std::memcpy(&address, bound.get(), sizeof(address));
  std::atomic<std::int64_t> count{0};
  coro::JoinHandle<void> loop = coro::Spawn(*sched, ListenerAcceptLoop(&listener.value(), &count));
  std::int64_t target = 0;
  for (auto _ : state) {
    ConnectClients(address);
    target += kConnectionsPerIteration;
    WaitForCount([&] { return count.load(std::memory_order_relaxed); }, target);
  }
  loop.Cancel();
  loop.Get();
  listener.value().Close();
  sched->Stop();
  state.SetItemsProcessed(state.iterations() * kConnectionsPerIteration);
}

template <Mode kMode, unsigned kBuffers = kRingBuffers>
void RecvThroughput(benchmark::State& state) {
  std::unique_ptr<UringScheduler> sched = MakeScheduler(kMode, state);
  if (sched == nullptr) return;
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) Die("socketpair");
  IoBufferRing* ring = nullptr;
  if (kMode != Mode::kSingle) {
    std::string error;
    ring = sched->io().CreateBufferRing(kBuffers, kChunk, &error);
    if (ring == nullptr) {
      state.SkipWithError(error.c_str());
      sched->Stop();
      close(fds[0]);
      close(fds[1]);
      return;
    }
  }
  Server server(sched.get(), kMode, /*accept=*/false, fds[0], ring);
  const std::vector<char> chunk(kChunk, 'x');
  std::int64_t target = 0;
  for (auto _ : state) {
    for (std::size_t sent = 0; sent < kBytesPerIteration;) {
      const ssize_t n = send(fds[1], chunk.data(), chunk.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EINTR) Die("send");
      if (n > 0) sent += static_cast<std::size_t>(n);
    }
    target += static_cast<std::int64_t>(kBytesPerIteration);
    WaitForCount([&] { return server.count(); }, target);
  }
  server.Stop();
  sched->Stop();
  close(fds[0]);
  close(fds[1]);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kBytesPerIteration));
}

BENCHMARK(AcceptRate<Mode::kSingle>)->Name("accept_rate/single")->UseRealTime();
BENCHMARK(AcceptRate<Mode::kMultishot>)->Name("accept_rate/multishot")->UseRealTime();
BENCHMARK(AcceptRate<Mode::kFallback>)->Name("accept_rate/fallback")->UseRealTime();
BENCHMARK(ListenerAcceptRate<Mode::kFallback>)->Name("listener_accept_rate/single")->UseRealTime();
BENCHMARK(ListenerAcceptRate<Mode::kMultishot>)
    ->Name("listener_accept_rate/multishot")
    ->UseRealTime();
BENCHMARK(RecvThroughput<Mode::kSingle>)->Name("recv_throughput/single")->UseRealTime();
BENCHMARK(RecvThroughput<Mode::kMultishot>)->Name("recv_throughput/multishot")->UseRealTime();
BENCHMARK(RecvThroughput<Mode::kFallback>)->Name("recv_throughput/fallback")->UseRealTime();
BENCHMARK(RecvThroughput<Mode::kMultishot, kSmallRingBuffers>)
    ->Name("recv_throughput/multishot_ring8")
    ->UseRealTime();

}  // namespace
}  // namespace fairsched::bench

BENCHMARK_MAIN();
