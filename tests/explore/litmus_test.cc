// Litmus tests of the explorer's C++20 memory model (explore::Options::memory_model =
// kCpp20, sync/explore/README.md): each classic shape must show the outcome the standard
// allows and never the one it forbids. An allowed weak outcome is asserted as found (the
// scenario's Check fails with its own message); a forbidden one as never found in a
// complete search, which must still have produced every other outcome (so the search was
// not vacuous). Load buffering (out-of-thin-air shapes) is not explored by the model: a
// load only reads stores that already ran.
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sync/primitives.h"

namespace fairsched {
namespace {

using explore::Check;
using explore::Thread;
using Outcomes = std::set<std::vector<int>>;

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;
constexpr std::memory_order kAcquire = std::memory_order_acquire;
constexpr std::memory_order kRelease = std::memory_order_release;
constexpr std::memory_order kSeqCst = std::memory_order_seq_cst;

explore::Options Cpp20() {
  explore::Options options;
  options.memory_model = explore::Options::MemoryModel::kCpp20;
  return options;
}

// The search found `message` (exactly that check, not another failure).
void ExpectFound(const explore::Result& result, const std::string& message) {
  ASSERT_TRUE(result.failed) << "not found: " << message << "\n" << result.Report();
  EXPECT_EQ(result.failure.rfind("check failed: " + message + " (", 0), 0u) << result.Report();
  std::printf("found '%s' after %llu schedule(s)\n", message.c_str(),
              static_cast<unsigned long long>(result.executions));
}

// A complete search passed and saw exactly `expected` outcomes.
void ExpectNever(const explore::Result& result, const Outcomes& seen, const Outcomes& expected) {
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
  EXPECT_EQ(seen, expected);
  std::printf("never: %llu schedule(s), %zu outcome(s)\n",
              static_cast<unsigned long long>(result.executions), seen.size());
}

// --- Store buffering: x = 1; r1 = y  ||  y = 1; r2 = x. r1 == r2 == 0 needs store->load
// reordering: allowed unless all four accesses are seq_cst or seq_cst fences separate each
// thread's store from its load. ---

struct SbOrders {
  std::memory_order store;
  std::memory_order load;
  bool fence_first = false;   // a seq_cst fence between thread 1's store and load
  bool fence_second = false;  // ... and thread 2's
};

void StoreBuffering(const SbOrders& orders, Outcomes* seen) {
  Atomic<int> x{0};
  Atomic<int> y{0};
  int r1 = -1;
  int r2 = -1;
  Thread first([&] {
    x.store(1, orders.store);
    if (orders.fence_first) FenceSeqCst();
    r1 = y.load(orders.load);
  });
  Thread second([&] {
    y.store(1, orders.store);
    if (orders.fence_second) FenceSeqCst();
    r2 = x.load(orders.load);
  });
  first.Join();
  second.Join();
  seen->insert({r1, r2});
  Check(r1 == 1 || r2 == 1, "store buffering: both loads read 0");
}

const Outcomes kSbScOutcomes = {{0, 1}, {1, 0}, {1, 1}};

TEST(LitmusStoreBufferingTest, RelaxedFindsBothZero) {
  Outcomes seen;
  ExpectFound(explore::Explore(Cpp20(), [&] { StoreBuffering({kRelaxed, kRelaxed}, &seen); }),
              "store buffering: both loads read 0");
}

TEST(LitmusStoreBufferingTest, ReleaseAcquireFindsBothZero) {
  Outcomes seen;
  ExpectFound(explore::Explore(Cpp20(), [&] { StoreBuffering({kRelease, kAcquire}, &seen); }),
              "store buffering: both loads read 0");
}

TEST(LitmusStoreBufferingTest, SeqCstStoresWithAcquireLoadsFindBothZero) {
  Outcomes seen;
  ExpectFound(explore::Explore(Cpp20(), [&] { StoreBuffering({kSeqCst, kAcquire}, &seen); }),
              "store buffering: both loads read 0");
}

TEST(LitmusStoreBufferingTest, OneFenceIsNotEnough) {
  Outcomes seen;
  ExpectFound(explore::Explore(Cpp20(),
                               [&] { StoreBuffering({kRelaxed, kRelaxed, true, false}, &seen); }),
              "store buffering: both loads read 0");
}

TEST(LitmusStoreBufferingTest, SeqCstNever) {
  Outcomes seen;
  const explore::Result result =
      explore::Explore(Cpp20(), [&] { StoreBuffering({kSeqCst, kSeqCst}, &seen); });
  ExpectNever(result, seen, kSbScOutcomes);
}

TEST(LitmusStoreBufferingTest, SeqCstFencesBetweenRelaxedAccessesNever) {
  Outcomes seen;
  const explore::Result result = explore::Explore(
      Cpp20(), [&] { StoreBuffering({kRelaxed, kRelaxed, true, true}, &seen); });
  ExpectNever(result, seen, kSbScOutcomes);
}

// The default model is sequentially consistent: the weak outcome needs the opt-in.
TEST(LitmusStoreBufferingTest, DefaultModelIsSequentiallyConsistent) {
  Outcomes seen;
  const explore::Result result =
      explore::Explore(explore::Options{}, [&] { StoreBuffering({kRelaxed, kRelaxed}, &seen); });
  ExpectNever(result, seen, kSbScOutcomes);
}

// The random strategy draws value choices too.
TEST(LitmusStoreBufferingTest, RandomSearchFindsBothZero) {
  Outcomes seen;
  explore::Options options = Cpp20();
  options.strategy = explore::Options::Strategy::kRandom;
  options.max_executions = 1000;
  ExpectFound(explore::Explore(options, [&] { StoreBuffering({kRelaxed, kRelaxed}, &seen); }),
              "store buffering: both loads read 0");
}

// A failing weak schedule replays (value choices included) to the same failure.
TEST(LitmusStoreBufferingTest, ReplayReproducesAWeakOutcome) {
  Outcomes seen;
  auto scenario = [&] { StoreBuffering({kRelaxed, kRelaxed}, &seen); };
  const explore::Result first = explore::Explore(Cpp20(), scenario);
  ASSERT_TRUE(first.failed);
  EXPECT_NE(first.schedule.find('v'), std::string::npos) << first.schedule;
  EXPECT_NE(first.trace.find("(reads the store 1 before the newest)"), std::string::npos)
      << first.trace;
  explore::Options replay = Cpp20();
  replay.replay = first.schedule;
  const explore::Result again = explore::Explore(replay, scenario);
  ASSERT_TRUE(again.failed);
  EXPECT_EQ(again.failure, first.failure);
  EXPECT_EQ(again.executions, 1u);
}

// --- Message passing: data = 1; flag = 1  ||  if (flag == 1) read data. ---

enum class Mp { kRelaxed, kReleaseAcquire, kFences };

void MessagePassing(Mp how, Outcomes* seen) {
  Atomic<int> data{0};
  Atomic<int> flag{0};
  int f = -1;
  int d = -1;
  Thread producer([&] {
    data.store(1, kRelaxed);
    if (how == Mp::kFences) ThreadFence(kRelease);
    flag.store(1, how == Mp::kReleaseAcquire ? kRelease : kRelaxed);
  });
  Thread consumer([&] {
    f = flag.load(how == Mp::kReleaseAcquire ? kAcquire : kRelaxed);
    if (how == Mp::kFences) ThreadFence(kAcquire);
    d = data.load(kRelaxed);
  });
  producer.Join();
  consumer.Join();
  seen->insert({f, d});
  Check(f == 0 || d == 1, "message passing: flag seen but data stale");
}

TEST(LitmusMessagePassingTest, RelaxedFlagFindsStaleData) {
  Outcomes seen;
  ExpectFound(explore::Explore(Cpp20(), [&] { MessagePassing(Mp::kRelaxed, &seen); }),
              "message passing: flag seen but data stale");
}

TEST(LitmusMessagePassingTest, ReleaseAcquireNever) {
  Outcomes seen;
  const explore::Result result =
      explore::Explore(Cpp20(), [&] { MessagePassing(Mp::kReleaseAcquire, &seen); });
  ExpectNever(result, seen, {{0, 0}, {0, 1}, {1, 1}});
}

TEST(LitmusMessagePassingTest, FencesWithRelaxedAccessesNever) {
  Outcomes seen;
  const explore::Result result =
      explore::Explore(Cpp20(), [&] { MessagePassing(Mp::kFences, &seen); });
  ExpectNever(result, seen, {{0, 0}, {0, 1}, {1, 1}});
}

// The same with the data in an explore::Data: the relaxed flag is reported as a race.
TEST(LitmusMessagePassingTest, RelaxedFlagIsADataRaceOnPlainData) {
  const explore::Result result = explore::Explore(Cpp20(), [] {
    explore::Data<int> data(0);
    Atomic<int> flag{0};
    Thread producer([&] {
      data.Write(1);
      flag.store(1, kRelaxed);
    });
    Thread consumer([&] {
      if (flag.load(kRelaxed) == 1) Check(data.Read() == 1, "stale");
    });
    producer.Join();
    consumer.Join();
  });
  ASSERT_TRUE(result.failed);
  EXPECT_EQ(result.failure.rfind(
                "check failed: data race: a read is not ordered after thread 1's write "
                "(happens-before) (",
                0),
            0u)
      << result.Report();
}

// --- IRIW: two writers, two readers reading x then y and y then x. The readers may
// disagree on the order of the writes unless everything is seq_cst. ---

enum class Iriw { kAcquire, kSeqCst, kSeqCstFences };

void IndependentReads(Iriw how, Outcomes* seen) {
  Atomic<int> x{0};
  Atomic<int> y{0};
  int r[4] = {-1, -1, -1, -1};
  const std::memory_order store = how == Iriw::kSeqCst ? kSeqCst : kRelease;
  const std::memory_order load =
      how == Iriw::kSeqCst ? kSeqCst : how == Iriw::kAcquire ? kAcquire : kRelaxed;
  Thread write_x([&] { x.store(1, store); });
  Thread write_y([&] { y.store(1, store); });
  Thread read_xy([&] {
    r[0] = x.load(load);
    if (how == Iriw::kSeqCstFences) FenceSeqCst();
    r[1] = y.load(load);
  });
  Thread read_yx([&] {
    r[2] = y.load(load);
    if (how == Iriw::kSeqCstFences) FenceSeqCst();
    r[3] = x.load(load);
  });
  write_x.Join();
  write_y.Join();
  read_xy.Join();
  read_yx.Join();
  seen->insert({r[0], r[1], r[2], r[3]});
  Check(!(r[0] == 1 && r[1] == 0 && r[2] == 1 && r[3] == 0),
        "IRIW: the readers saw the writes in opposite orders");
}

TEST(LitmusIriwTest, AcquireLoadsFindDisagreement) {
  Outcomes seen;
  ExpectFound(explore::Explore(Cpp20(), [&] { IndependentReads(Iriw::kAcquire, &seen); }),
              "IRIW: the readers saw the writes in opposite orders");
}

// Every one of the 16 outcomes but the disagreeing one is reached: 15. (With seq_cst
// values every outcome is an interleaving; one of them needs three preemptions.)
TEST(LitmusIriwTest, SeqCstNever) {
  Outcomes seen;
  explore::Options options = Cpp20();
  options.preemption_bound = 3;
  const explore::Result result =
      explore::Explore(options, [&] { IndependentReads(Iriw::kSeqCst, &seen); });
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete);
  EXPECT_EQ(seen.size(), 15u);
}

TEST(LitmusIriwTest, SeqCstFencesBetweenTheLoadsNever) {
  Outcomes seen;
  const explore::Result result =
      explore::Explore(Cpp20(), [&] { IndependentReads(Iriw::kSeqCstFences, &seen); });
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete);
  EXPECT_EQ(seen.size(), 15u);
}

// --- Release sequence: data = 1; flag.store(1, release)  ||  flag 1 -> 2 (relaxed)  ||
// if (flag.load(acquire) == 2) read data. ---

void ReleaseSequence(bool rmw) {
  Atomic<int> data{0};
  Atomic<int> flag{0};
  Thread producer([&] {
    data.store(1, kRelaxed);
    flag.store(1, kRelease);
  });
  Thread bumper([&] {
    if (rmw) {
      flag.fetch_add(1, kRelaxed);  // reads 1 (then writes 2) or 0 (then writes 1)
    } else if (flag.load(kRelaxed) == 1) {
      flag.store(2, kRelaxed);
    }
  });
  Thread consumer([&] {
    if (flag.load(kAcquire) == 2) {
      Check(data.load(kRelaxed) == 1, "release sequence: data stale after reading 2");
    }
  });
  producer.Join();
  bumper.Join();
  consumer.Join();
}

TEST(LitmusReleaseSequenceTest, ThroughARelaxedRmwNeverStale) {
  const explore::Result result = explore::Explore(Cpp20(), [] { ReleaseSequence(true); });
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete);
}

TEST(LitmusReleaseSequenceTest, APlainStoreEndsItAndDataIsStale) {
  ExpectFound(explore::Explore(Cpp20(), [] { ReleaseSequence(false); }),
              "release sequence: data stale after reading 2");
}

// --- Coherence: two loads of one location by one thread never go back in modification
// order (CoRR), and a thread never reads older than its own store (CoWR); both while
// stale reads do happen (the outcome sets include them). ---

TEST(LitmusCoherenceTest, ReadReadNeverGoesBack) {
  Outcomes seen;
  const explore::Result result = explore::Explore(Cpp20(), [&] {
    Atomic<int> x{0};
    int a = -1;
    int b = -1;
    Thread writer([&] {
      x.store(1, kRelaxed);
      x.store(2, kRelaxed);
    });
    Thread reader([&] {
      a = x.load(kRelaxed);
      b = x.load(kRelaxed);
    });
    writer.Join();
    reader.Join();
    seen.insert({a, b});
    Check(a <= b, "coherence: the second load read an older store than the first");
  });
  ExpectNever(result, seen, {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}});
}

TEST(LitmusCoherenceTest, WriteReadNeverReadsOlderThanOwnStore) {
  Outcomes seen;
  const explore::Result result = explore::Explore(Cpp20(), [&] {
    Atomic<int> x{0};
    int r = -1;
    int other = -1;
    Thread first([&] {
      x.store(1, kRelaxed);
      r = x.load(kRelaxed);
    });
    Thread second([&] {
      x.store(2, kRelaxed);
      other = x.load(kRelaxed);
    });
    first.Join();
    second.Join();
    seen.insert({r, other});
    Check(r != 0 && other != 0, "coherence: a thread read an older store than its own");
  });
  // Each thread reads its own store or the other's if that came later in the order.
  ExpectNever(result, seen, {{1, 2}, {2, 2}, {1, 1}});
}

// The history bound: with 1, a load reads only the newest store (sequentially consistent
// values), so even relaxed store buffering is never seen.
TEST(LitmusHistoryBoundTest, BoundOneReadsOnlyTheNewest) {
  Outcomes seen;
  explore::Options options = Cpp20();
  options.history_bound = 1;
  const explore::Result result =
      explore::Explore(options, [&] { StoreBuffering({kRelaxed, kRelaxed}, &seen); });
  ExpectNever(result, seen, kSbScOutcomes);
}

}  // namespace
}  // namespace fairsched
