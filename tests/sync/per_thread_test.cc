// Tests for //sync:per_thread: one instance per thread, made on first use, destroyed at
// thread exit with its contents intact (the mingw-w64 thread_local bug it works around,
// see sync/per_thread.h, shows up here as destructors that see freed memory), in reverse
// order of creation.
#include "sync/per_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace fairsched {
namespace {

std::atomic<int> destroyed{0};
std::atomic<int> destroyed_corrupt{0};

// Checks in its destructor that its own memory still holds what the constructor wrote.
struct Checked {
  static constexpr std::uint64_t kPattern = 0x5a5a'1234'8765'a5a5;
  std::uint64_t words[8];
  std::vector<int> values = std::vector<int>(64, 7);
  Checked() {
    for (std::uint64_t& w : words) w = kPattern;
  }
  ~Checked() {
    bool intact = values.size() == 64;
    for (const std::uint64_t w : words) intact = intact && w == kPattern;
    destroyed.fetch_add(1);
    if (!intact) destroyed_corrupt.fetch_add(1);
  }
};

TEST(PerThreadTest, OneInstancePerThread) {
  Checked* main_instance = &PerThread<Checked>();
  EXPECT_EQ(&PerThread<Checked>(), main_instance);
  Checked* other = nullptr;
  std::thread([&] { other = &PerThread<Checked>(); }).join();
  EXPECT_NE(other, main_instance);
}

TEST(PerThreadTest, DestroyedIntactAtThreadExit) {
  destroyed = 0;
  destroyed_corrupt = 0;
  constexpr int kRounds = 20, kThreads = 8;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([] { PerThread<Checked>().values[0]++; });
    }
    for (std::thread& t : threads) t.join();
  }
  EXPECT_EQ(destroyed.load(), kRounds * kThreads);
  EXPECT_EQ(destroyed_corrupt.load(), 0) << "destructors ran on freed per-thread memory";
}

std::mutex order_mu;
std::vector<int> order;  // guarded by order_mu

template <int kId>
struct Recorded {
  ~Recorded() {
    std::lock_guard<std::mutex> lock(order_mu);
    order.push_back(kId);
  }
};

TEST(PerThreadTest, DestroyedInReverseOrderOfCreation) {
  std::thread([] {
    PerThread<Recorded<1>>();
    PerThread<Recorded<2>>();
  }).join();
  std::lock_guard<std::mutex> lock(order_mu);
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
}

}  // namespace
}  // namespace fairsched
