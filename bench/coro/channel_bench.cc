// coro::Channel<T> against the mailbox users wrote before it existed (a std::mutex around a
// std::deque, with a coro::Semaphore counting the queued values; unbounded, no close), in
// one binary:
//
//   channel/uncontended/<impl>        one coroutine sends a value and receives it again:
//                                     the path of an operation that never waits
//   channel/pipe/<impl>/P             P producers and P consumers on 2 workers pass
//                                     kValuesPerProducer values each through one queue
//                                     (the channel with capacity 64: producers wait when
//                                     it is full). Reported per value: real time.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "coro/channel.h"
#include "coro/runtime.h"
#include "coro/semaphore.h"
#include "sched/task_scheduler.h"

namespace fairsched::bench {
namespace {

constexpr int kWorkers = 2;
constexpr std::int64_t kValuesPerProducer = 20000;
constexpr std::size_t kCapacity = 64;

// The hand-written mailbox: values under a thread mutex, their count in a semaphore.
class Mailbox {
 public:
  void Send(std::int64_t value) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      values_.push_back(value);
    }
    ready_.Release();
  }
  coro::Lazy<std::int64_t> Receive() {
    co_await ready_.Acquire();
    std::lock_guard<std::mutex> lock(mu_);
    const std::int64_t value = values_.front();
    values_.pop_front();
    co_return value;
  }

 private:
  std::mutex mu_;
  std::deque<std::int64_t> values_;
  coro::Semaphore ready_{0};
};

// The two queues behind one interface for the benchmark bodies.
struct ChannelQueue {
  coro::Channel<std::int64_t> channel{kCapacity};
  coro::Lazy<> Send(std::int64_t value) {
    [[maybe_unused]] const coro::ChannelStatus sent = co_await channel.Send(value);
  }
  coro::Lazy<std::int64_t> Receive() {
    coro::Received<std::int64_t> got = co_await channel.Receive();
    co_return got.ok() ? got.value() : -1;
  }
};
struct MailboxQueue {
  Mailbox mailbox;
  coro::Lazy<> Send(std::int64_t value) {
    mailbox.Send(value);
    co_return;
  }
  coro::Lazy<std::int64_t> Receive() { co_return co_await mailbox.Receive(); }
};

template <typename Queue>
void Uncontended(benchmark::State& state) {
  TaskScheduler sched;
  sched.Start(1);
  Queue queue;
  auto body = [&]() -> coro::Lazy<> {
    std::int64_t sum = 0;
    for (auto _ : state) {
      co_await queue.Send(1);
      sum += co_await queue.Receive();
    }
    benchmark::DoNotOptimize(sum);
  };
  coro::Spawn(sched, body()).Get();
  state.SetItemsProcessed(state.iterations());
}

template <typename Queue>
void Pipe(benchmark::State& state) {
  const int pairs = static_cast<int>(state.range(0));
  for (auto _ : state) {
    TaskScheduler sched;
    sched.Start(kWorkers);
    Queue queue;
    auto producer = [&]() -> coro::Lazy<> {
      for (std::int64_t i = 0; i < kValuesPerProducer; ++i) co_await queue.Send(i);
    };
    auto consumer = [&]() -> coro::Lazy<std::int64_t> {
      std::int64_t sum = 0;
      for (std::int64_t i = 0; i < kValuesPerProducer; ++i) sum += co_await queue.Receive();
      co_return sum;
    };
    std::vector<coro::JoinHandle<void>> producers;
    std::vector<coro::JoinHandle<std::int64_t>> consumers;
    for (int p = 0; p < pairs; ++p) {
      consumers.push_back(coro::Spawn(sched, consumer()));
      producers.push_back(coro::Spawn(sched, producer()));
    }
    std::int64_t sum = 0;
    for (auto& handle : producers) handle.Get();
    for (auto& handle : consumers) sum += handle.Get();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * pairs * kValuesPerProducer);
}

BENCHMARK(Uncontended<ChannelQueue>)->Name("channel/uncontended/channel");
BENCHMARK(Uncontended<MailboxQueue>)->Name("channel/uncontended/mutex_deque_semaphore");
BENCHMARK(Pipe<ChannelQueue>)->Name("channel/pipe/channel")->Arg(1)->Arg(4)->UseRealTime();
BENCHMARK(Pipe<MailboxQueue>)
    ->Name("channel/pipe/mutex_deque_semaphore")
    ->Arg(1)
    ->Arg(4)
    ->UseRealTime();

}  // namespace
}  // namespace fairsched::bench

BENCHMARK_MAIN();
