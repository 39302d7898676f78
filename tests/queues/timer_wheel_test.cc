// Tests for //queues:timer_wheel: the WaitQueue contract (never early, earliest first, equal
// deadlines in push order even when one timer cascaded from a higher level and the other was
// inserted directly), Remove from a slot / the due heap / the overflow list, level and
// rotation boundaries, idle time jumps, NextDeadline never after the earliest deadline, and
// a randomized comparison with a reference model for several wheel shapes.
#include "queues/timer_wheel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "queues/concepts.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

struct Item {
  int id = 0;
  std::uint32_t wait_index = kNotInWaitQueue;
};

using Wheel = TimerWheel<Item>;
static_assert(WaitQueue<Wheel, Item>);
static_assert(WaitQueue<TimerWheel<Item, &Item::wait_index, 2>, Item>);

const WaitDeadline kT0 = WaitDeadline{} + std::chrono::hours(1);
WaitDeadline At(std::int64_t ms) { return kT0 + milliseconds(ms); }

template <typename W>
std::vector<int> DrainIds(W& wheel, WaitDeadline now) {
  std::vector<int> ids;
  while (Item* it = wheel.PopExpired(now)) {
    EXPECT_EQ(it->wait_index, kNotInWaitQueue);
    ids.push_back(it->id);
  }
  return ids;
}

TEST(TimerWheelTest, Empty) {
  Wheel wheel(milliseconds(1), kT0);
  EXPECT_TRUE(wheel.IsEmpty());
  EXPECT_EQ(wheel.NextDeadline(), kNoDeadline);
  EXPECT_EQ(wheel.PopExpired(At(1000000)), nullptr);
  Item a;
  EXPECT_FALSE(wheel.Contains(&a));
  EXPECT_EQ(wheel.Tick(), milliseconds(1));
}

TEST(TimerWheelTest, OneItemNeverEarlyEvenWithinItsTick) {
  Wheel wheel(milliseconds(1), kT0);
  Item a{1};
  const WaitDeadline d = At(10) + microseconds(500);  // middle of tick 10
  wheel.Push(&a, d);
  EXPECT_TRUE(wheel.Contains(&a));
  EXPECT_LE(wheel.NextDeadline(), d);
  EXPECT_EQ(wheel.PopExpired(At(10)), nullptr);  // same tick, but before the deadline
  EXPECT_EQ(wheel.NextDeadline(), d);            // due now: exact
  EXPECT_EQ(wheel.PopExpired(d - microseconds(1)), nullptr);
  EXPECT_EQ(wheel.PopExpired(d), &a);
  EXPECT_TRUE(wheel.IsEmpty());
  EXPECT_FALSE(wheel.Contains(&a));
}

TEST(TimerWheelTest, PastDeadlinesAreDueAtOnceInOrder) {
  Wheel wheel(milliseconds(1), kT0);
  Item a{1}, b{2}, c{3};
  wheel.Push(&b, At(-5));
  wheel.Push(&a, At(-10));
  wheel.Push(&c, WaitDeadline{} - std::chrono::hours(1));  // before the clock's epoch
  EXPECT_EQ(DrainIds(wheel, kT0), (std::vector<int>{3, 1, 2}));
}

TEST(TimerWheelTest, OrdersAcrossLevels) {
  Wheel wheel(milliseconds(1), kT0);
  // Ticks on level 0 (<64), 1 (<4096), 2 (<262144), 3, and the overflow list (>= 64^4).
  const std::int64_t deadlines[] = {20'000'000, 300'000, 5'000, 63, 64, 4096, 1, 262'144};
  std::vector<Item> items(8);
  for (int i = 0; i < 8; ++i) {
    items[i].id = i;
    wheel.Push(&items[i], At(deadlines[i]));
  }
  std::vector<int> got;
  std::int64_t now = 0;
  while (!wheel.IsEmpty()) {
    const WaitDeadline next = wheel.NextDeadline();
    ASSERT_NE(next, kNoDeadline);
    ASSERT_GT(next, At(now));
    now = (next - kT0) / milliseconds(1);
    for (int id : DrainIds(wheel, At(now))) {
      EXPECT_LE(At(deadlines[id]), At(now));
      got.push_back(id);
    }
  }
  EXPECT_EQ(got, (std::vector<int>{6, 3, 4, 5, 2, 7, 1, 0}));
}

TEST(TimerWheelTest, EqualDeadlinesKeepPushOrderAcrossCascades) {
  Wheel wheel(milliseconds(1), kT0);
  std::vector<Item> items(6);
  for (int i = 0; i < 6; ++i) items[i].id = i;
  const WaitDeadline d = At(5000);
  wheel.Push(&items[0], d);  // level 1 (far from now)
  wheel.Push(&items[1], d);
  EXPECT_EQ(wheel.PopExpired(At(4990)), nullptr);                    // cascades them to level 0
  wheel.Push(&items[2], d);                                          // inserted directly on level 0
  EXPECT_EQ(wheel.PopExpired(At(5000) - microseconds(1)), nullptr);  // all three due now
  wheel.Push(&items[3], d);         // inserted straight into the due heap
  wheel.Push(&items[4], At(4000));  // earlier deadline, pushed later
  EXPECT_EQ(DrainIds(wheel, At(6000)), (std::vector<int>{4, 0, 1, 2, 3}));
}

TEST(TimerWheelTest, RemoveFromSlotDueHeapAndOverflow) {
  TimerWheel<Item, &Item::wait_index, 2> wheel(milliseconds(1), kT0);  // 4096-tick range
  std::vector<Item> items(6);
  for (int i = 0; i < 6; ++i) items[i].id = i;
  wheel.Push(&items[0], At(3));       // level 0
  wheel.Push(&items[1], At(700));     // level 1
  wheel.Push(&items[2], At(100000));  // overflow
  wheel.Push(&items[3], At(-1));      // due
  wheel.Push(&items[4], At(3));       // same slot as 0
  wheel.Push(&items[5], At(100001));  // overflow
  wheel.Remove(&items[3]);
  wheel.Remove(&items[0]);  // first of two nodes in a slot: the other one moves into its place
  wheel.Remove(&items[2]);  // first node of the overflow slot
  wheel.Remove(&items[1]);  // only node of its slot: the slot's bit is cleared
  EXPECT_EQ(items[1].wait_index, kNotInWaitQueue);
  EXPECT_EQ(wheel.Count(), 2u);
  EXPECT_LE(wheel.NextDeadline(), At(3));
  EXPECT_EQ(DrainIds(wheel, At(100000)), (std::vector<int>{4}));
  EXPECT_EQ(DrainIds(wheel, At(100001)), (std::vector<int>{5}));
  EXPECT_TRUE(wheel.IsEmpty());
  EXPECT_EQ(wheel.NextDeadline(), kNoDeadline);
  // Nodes are reused after removal.
  wheel.Push(&items[0], At(200000));
  EXPECT_TRUE(wheel.Contains(&items[0]));
  wheel.Remove(&items[0]);
  EXPECT_FALSE(wheel.Contains(&items[0]));
}

TEST(TimerWheelTest, LongIdleJumpAndNoDeadline) {
  Wheel wheel(microseconds(100), kT0);
  Item a{1}, b{2}, never{3};
  wheel.Push(&never, kNoDeadline);
  wheel.Push(&a, At(1000LL * 3600 * 24 * 30));  // a month away: overflow, many rotations
  wheel.Push(&b, At(7));
  EXPECT_EQ(DrainIds(wheel, At(1000LL * 3600 * 24 * 30)), (std::vector<int>{2, 1}));
  EXPECT_TRUE(wheel.Contains(&never));
  EXPECT_LE(wheel.NextDeadline(), kNoDeadline);
  wheel.Remove(&never);
  EXPECT_TRUE(wheel.IsEmpty());
}

TEST(TimerWheelTest, RotationBoundary) {
  // kT0 is a multiple of 64 ms, so starting at +60 ms puts the wheel near the end of a
  // level-0 lap: the timers below land on level 0, on level 1 (next lap), and on level 2.
  static_assert((std::chrono::hours(1) / milliseconds(1)) % 64 == 0);
  Wheel wheel(milliseconds(1), kT0 + milliseconds(60));
  std::vector<Item> items(4);
  for (int i = 0; i < 4; ++i) items[i].id = i;
  wheel.Push(&items[0], At(62));
  wheel.Push(&items[1], At(70));  // next lap
  wheel.Push(&items[2], At(130));
  wheel.Push(&items[3], At(64 * 64 + 61));
  for (std::int64_t ms = 60; ms <= 64 * 64 + 70; ++ms) {
    for (int id : DrainIds(wheel, At(ms))) {
      const std::int64_t expected[] = {62, 70, 130, 64 * 64 + 61};
      EXPECT_EQ(ms, expected[id]) << "item " << id << " came out late or early";
    }
  }
  EXPECT_TRUE(wheel.IsEmpty());
}

// Random pushes, removes and clock advances checked step by step against a reference model:
// the exact pop order, Count, and NextDeadline <= the earliest deadline.
template <typename W>
void RunModelCheck(std::chrono::nanoseconds tick, int max_delay_ms, std::uint32_t seed) {
  const int steps = static_cast<int>(testing::StressIterations(200000, 4));
  constexpr int kItems = 512;
  std::vector<Item> items(kItems);
  for (int i = 0; i < kItems; ++i) items[i].id = i;
  W wheel(tick, kT0);
  std::map<std::pair<WaitDeadline, std::uint64_t>, int> model;
  std::vector<std::map<std::pair<WaitDeadline, std::uint64_t>, int>::iterator> where(kItems);
  std::uint64_t seq = 0;
  std::mt19937 rng(seed);
  WaitDeadline now = kT0;
  for (int step = 0; step < steps; ++step) {
    const int op = static_cast<int>(rng() % 8);
    Item& it = items[rng() % kItems];
    if (op <= 3) {
      if (wheel.Contains(&it)) continue;
      // Mostly near deadlines with sub-tick precision, some far, a few equal to others.
      WaitDeadline d;
      if (op == 0 && !model.empty()) {
        d = model.begin()->first.first;
      } else {
        const std::int64_t range_us = (op == 1 ? max_delay_ms : 200) * 1000LL;
        d = now + microseconds(static_cast<std::int64_t>(rng() % range_us) - 50);
      }
      wheel.Push(&it, d);
      where[it.id] = model.emplace(std::make_pair(d, seq++), it.id).first;
    } else if (op == 4) {
      if (!wheel.Contains(&it)) continue;
      wheel.Remove(&it);
      model.erase(where[it.id]);
    } else {
      // Advance: small steps mostly, sometimes a jump to just past the next deadline.
      if (op == 7 && !model.empty()) {
        now = std::max(now, model.begin()->first.first);
      } else {
        now += microseconds(static_cast<std::int64_t>(rng() % 3000));
      }
      while (Item* got = wheel.PopExpired(now)) {
        ASSERT_FALSE(model.empty());
        ASSERT_EQ(got->id, model.begin()->second);
        ASSERT_LE(model.begin()->first.first, now);
        model.erase(model.begin());
      }
      ASSERT_TRUE(model.empty() || model.begin()->first.first > now)
          << "an expired item was not returned";
    }
    ASSERT_EQ(wheel.Count(), model.size());
    if (model.empty()) {
      ASSERT_EQ(wheel.NextDeadline(), kNoDeadline);
    } else {
      ASSERT_LE(wheel.NextDeadline(), model.begin()->first.first);
    }
  }
}

TEST(TimerWheelStressTest, MatchesModelDefaultShape) {
  RunModelCheck<Wheel>(milliseconds(1), 100000, 1);
}

TEST(TimerWheelStressTest, MatchesModelTwoLevelsWithOverflow) {
  RunModelCheck<TimerWheel<Item, &Item::wait_index, 2>>(milliseconds(1), 50000, 2);
}

TEST(TimerWheelStressTest, MatchesModelFineTickThreeLevels) {
  RunModelCheck<TimerWheel<Item, &Item::wait_index, 3>>(microseconds(100), 2000000, 3);
}

TEST(TimerWheelStressTest, MatchesModelOneLevel) {
  RunModelCheck<TimerWheel<Item, &Item::wait_index, 1>>(microseconds(250), 1000, 4);
}

}  // namespace
}  // namespace fairsched
