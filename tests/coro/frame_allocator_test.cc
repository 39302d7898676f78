// Tests for coro/frame_allocator.h: blocks freed on another thread than the one that
// allocated them go through the global pool, which keeps at most kMaxPooledBytes and gives
// the rest back to the system; what it keeps is reused without asking the system; a class
// filled and then unused makes room for a class in use; Trim empties the pool.
#include "coro/frame_allocator.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <thread>
#include <vector>

namespace fairsched::coro {
namespace {

using FA = FrameAllocator;

constexpr std::size_t kBlock = 256;  // the class of a small spawned coroutine
constexpr std::size_t kBatchBytes = FA::kBatchSize * kBlock;

// Allocates `count` blocks of `size` bytes on a new thread.
std::vector<void*> AllocateOnAThread(std::size_t count, std::size_t size) {
  std::vector<void*> blocks;
  std::thread([&] {
    for (std::size_t i = 0; i < count; ++i) blocks.push_back(FA::Allocate(size));
  }).join();
  return blocks;
}

// Frees `blocks` on a new thread; its cache goes to the pool when it exits.
void DeallocateOnAThread(const std::vector<void*>& blocks, std::size_t size) {
  std::thread([&] {
    for (void* block : blocks) FA::Deallocate(block, size);
  }).join();
}

TEST(FrameAllocatorTest, PoolKeepsAtMostTheCapAndReusesIt) {
  FA::Trim();
  ASSERT_EQ(FA::PooledBytes(), 0u);
  // Three caps' worth, allocated on one thread and freed on another: far more than the pool
  // may keep.
  const std::size_t count = 3 * FA::kMaxPooledBytes / kBlock;
  DeallocateOnAThread(AllocateOnAThread(count, kBlock), kBlock);
  EXPECT_LE(FA::PooledBytes(), FA::kMaxPooledBytes);
  EXPECT_GT(FA::PooledBytes(), FA::kMaxPooledBytes - kBatchBytes);  // and it is full

  // What the pool keeps comes back without the system: a cap's worth of allocations on a
  // fresh thread (an empty cache) takes every block from the pool.
  const std::size_t pooled_blocks = FA::PooledBytes() / kBlock;
  std::size_t system_allocations = 0;
  std::vector<void*> again;
  std::thread([&] {
    const FrameAllocatorStats before = FA::ThisThreadFrameStats();
    for (std::size_t i = 0; i < pooled_blocks; ++i) again.push_back(FA::Allocate(kBlock));
    system_allocations = FA::ThisThreadFrameStats().system_allocations - before.system_allocations;
  }).join();
  EXPECT_EQ(system_allocations, 0u);
  EXPECT_EQ(FA::PooledBytes(), 0u);
  // The next one does go to the system.
  std::thread([&] {
    const FrameAllocatorStats before = FA::ThisThreadFrameStats();
    again.push_back(FA::Allocate(kBlock));
    EXPECT_EQ(FA::ThisThreadFrameStats().system_allocations - before.system_allocations, 1u);
  }).join();
  // The blocks are usable memory of their size.
  for (void* block : again) static_cast<unsigned char*>(block)[kBlock - 1] = 1;
  DeallocateOnAThread(again, kBlock);
  EXPECT_LE(FA::PooledBytes(), FA::kMaxPooledBytes);
}

TEST(FrameAllocatorTest, FlowBetweenTwoThreadsCirculatesOnceWarm) {
  FA::Trim();
  // A thread that allocates and a thread that frees, in rounds of a few thousand live
  // blocks: after the first round every block comes from the pool.
  constexpr std::size_t kLive = 5000;
  constexpr int kRounds = 5;
  std::vector<std::size_t> system_per_round;
  std::thread allocator([&] {
    for (int round = 0; round < kRounds; ++round) {
      const FrameAllocatorStats before = FA::ThisThreadFrameStats();
      std::vector<void*> blocks;
      for (std::size_t i = 0; i < kLive; ++i) blocks.push_back(FA::Allocate(kBlock));
      system_per_round.push_back(FA::ThisThreadFrameStats().system_allocations -
                                 before.system_allocations);
      std::thread([&] {
        for (void* block : blocks) FA::Deallocate(block, kBlock);
      }).join();
    }
  });
  allocator.join();
  ASSERT_EQ(system_per_round.size(), std::size_t{kRounds});
  EXPECT_EQ(system_per_round[0], kLive);
  // Each freeing thread exits with its last blocks in its cache, which go to the pool
  // whole batches at a time; fewer than a batch per round goes to the system.
  for (int round = 1; round < kRounds; ++round) {
    EXPECT_LT(system_per_round[round], FA::kBatchSize) << round;
  }
}

TEST(FrameAllocatorTest, UnusedClassMakesRoomForAClassInUse) {
  FA::Trim();
  // A burst of 1 KiB frames fills the pool, and nothing allocates that size again.
  constexpr std::size_t kBig = 1024;
  const std::size_t big_count = 2 * FA::kMaxPooledBytes / kBig;
  DeallocateOnAThread(AllocateOnAThread(big_count, kBig), kBig);
  ASSERT_GT(FA::PooledBytes(), FA::kMaxPooledBytes - FA::kBatchSize * kBig);

  // 256-byte blocks freed on another thread still reach the pool (a quarter of the cap,
  // but for the freeing thread's last partial batch), and come back from it.
  const std::size_t count = FA::kMaxPooledBytes / 4 / kBlock;
  DeallocateOnAThread(AllocateOnAThread(count, kBlock), kBlock);
  EXPECT_LE(FA::PooledBytes(), FA::kMaxPooledBytes);
  std::size_t system_allocations = 0;
  std::vector<void*> again;
  std::thread([&] {
    const FrameAllocatorStats before = FA::ThisThreadFrameStats();
    for (std::size_t i = 0; i + FA::kBatchSize < count; ++i) {
      again.push_back(FA::Allocate(kBlock));
    }
    system_allocations = FA::ThisThreadFrameStats().system_allocations - before.system_allocations;
  }).join();
  EXPECT_EQ(system_allocations, 0u);
  DeallocateOnAThread(again, kBlock);
}

TEST(FrameAllocatorTest, TrimEmptiesThePool) {
  DeallocateOnAThread(AllocateOnAThread(10 * FA::kBatchSize, kBlock), kBlock);
  EXPECT_GT(FA::PooledBytes(), 0u);
  FA::Trim();
  EXPECT_EQ(FA::PooledBytes(), 0u);
}

TEST(FrameAllocatorTest, LargeBlocksBypassThePool) {
  FA::Trim();
  constexpr std::size_t kLarge = FA::kMaxRecycledSize + 1;
  DeallocateOnAThread(AllocateOnAThread(10 * FA::kBatchSize, kLarge), kLarge);
  EXPECT_EQ(FA::PooledBytes(), 0u);
}

}  // namespace
}  // namespace fairsched::coro
