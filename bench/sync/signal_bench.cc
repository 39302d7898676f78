// //sync:auto_reset_event (AutoResetEvent) against the textbook one (mutex + condition
// variable + bool), in one run. The benchmark names keep their `signal/` prefix, the
// class's old name, so that they compare with the recorded runs:
//
//   signal/ping_pong/<impl>             round trips/s between two threads, each waiting for
//                                       the other's Send (the blocking path)
//   signal/send_when_set/<impl>         Send while the bit is already set (fast path)
//   signal/send_when_set/<impl>/threads:2   the same from two threads on one signal
//   signal/send_receive_no_waiter/<impl>    Send on a clear bit with nobody asleep, then a
//                                       Receive that finds the bit set (receive fast path)
//   signal/try_receive_when_clear/<impl>    polling a clear bit
//   signal/stream/<impl>                one thread sends continuously, another receives:
//                                       receives/s, where most receives find the bit set
#include <benchmark/benchmark.h>

#include <thread>

#include "sync/auto_reset_event.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

// The textbook signal: every operation takes the mutex.
class TextbookSignal {
 public:
  void Send() {
    MutexLock lock(mu_);
    flag_ = true;
    cv_.notify_one();
  }
  void Receive() {
    MutexLock lock(mu_);
    while (!flag_) cv_.wait(lock);
    flag_ = false;
  }
  bool TryReceive() {
    MutexLock lock(mu_);
    const bool was = flag_;
    flag_ = false;
    return was;
  }

 private:
  Mutex mu_;
  ConditionVariable cv_;
  bool flag_ = false;  // guarded by mu_
};

template <typename S>
void PingPong(benchmark::State& state) {
  S ping, pong;
  Atomic<bool> stop{false};
  std::thread partner([&] {
    for (;;) {
      ping.Receive();
      // Relaxed: the Receive above already ordered the stop store (made before the last
      // Send) before this load.
      if (stop.load(std::memory_order_relaxed)) return;
      pong.Send();
    }
  });
  for (auto _ : state) {
    ping.Send();
    pong.Receive();
  }
  stop.store(true, std::memory_order_relaxed);
  ping.Send();
  partner.join();
  state.SetItemsProcessed(state.iterations());
}

template <typename S>
void SendWhenSet(benchmark::State& state) {
  static S* signal = nullptr;
  if (state.thread_index() == 0) {
    signal = new S;
    signal->Send();
  }
  // Google Benchmark starts the timed loop of all threads together, after thread 0's setup.
  for (auto _ : state) signal->Send();
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    delete signal;
    signal = nullptr;
  }
}

template <typename S>
void SendReceiveNoWaiter(benchmark::State& state) {
  S signal;
  for (auto _ : state) {
    signal.Send();
    signal.Receive();
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename S>
void TryReceiveWhenClear(benchmark::State& state) {
  S signal;
  for (auto _ : state) benchmark::DoNotOptimize(signal.TryReceive());
  state.SetItemsProcessed(state.iterations());
}

template <typename S>
void Stream(benchmark::State& state) {
  S signal;
  Atomic<bool> stop{false};
  std::thread sender([&] {
    // Relaxed: only has to notice eventually.
    while (!stop.load(std::memory_order_relaxed)) signal.Send();
  });
  for (auto _ : state) signal.Receive();
  stop.store(true, std::memory_order_relaxed);
  sender.join();
  state.SetItemsProcessed(state.iterations());
}

#define FAIRSCHED_SIGNAL_BENCH(fn, name)                                            \
  BENCHMARK_TEMPLATE(fn, AutoResetEvent)->Name("signal/" name "/fairsched")->UseRealTime(); \
  BENCHMARK_TEMPLATE(fn, TextbookSignal)->Name("signal/" name "/textbook")->UseRealTime()

FAIRSCHED_SIGNAL_BENCH(PingPong, "ping_pong");
FAIRSCHED_SIGNAL_BENCH(SendWhenSet, "send_when_set");
BENCHMARK_TEMPLATE(SendWhenSet, AutoResetEvent)
    ->Name("signal/send_when_set/fairsched")
    ->Threads(2)
    ->UseRealTime();
BENCHMARK_TEMPLATE(SendWhenSet, TextbookSignal)
    ->Name("signal/send_when_set/textbook")
    ->Threads(2)
    ->UseRealTime();
FAIRSCHED_SIGNAL_BENCH(SendReceiveNoWaiter, "send_receive_no_waiter");
FAIRSCHED_SIGNAL_BENCH(TryReceiveWhenClear, "try_receive_when_clear");
FAIRSCHED_SIGNAL_BENCH(Stream, "stream");

}  // namespace
}  // namespace fairsched::bench

BENCHMARK_MAIN();
