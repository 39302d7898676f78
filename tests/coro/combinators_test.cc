// Tests for the coroutine combinators (coro/combinators.h): WhenAll, WhenAny, WithTimeout,
// JoinUntil/JoinFor (and JoinHandle::Finished), CancelSource/WithCancel. Results,
// exceptions, cancellation of the caller and of the losers, timeouts firing and not,
// nesting, Stop, and a stress run of completions racing cancellations and deadlines in
// which every child is checked to be gone (frame and parameters destroyed) when its
// combinator returns.
#include "coro/combinators.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include "coro/event.h"
#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "tests/coro/alive.h"
#include "tests/stress.h"

namespace fairsched::coro {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kLongTime = seconds(60);  // "never" for a test that must not hit it

using testing::Alive;  // counts a child's live locals and parameters

Lazy<int> ValueAfterYields(int value, int yields) {
  for (int i = 0; i < yields; ++i) co_await Yield();
  co_return value;
}

Lazy<int> ValueAfterSleep(int value, std::chrono::nanoseconds sleep) {
  co_await SleepFor(sleep);
  co_return value;
}

Lazy<std::string> Text(std::string text) {
  co_await Yield();
  co_return text;
}

Lazy<void> Nothing() { co_await Yield(); }

// Sleeps up to `sleep`; counts itself in `*live` (a parameter and a local) meanwhile.
// Returns why the sleep ended.
Lazy<WakeReason> Sleeper(std::chrono::nanoseconds sleep, [[maybe_unused]] Alive parameter,
                         std::atomic<int>* live) {
  Alive local(live);
  co_return co_await SleepFor(sleep);
}

Lazy<int> ThrowAfterSleep(milliseconds sleep, std::string what) {
  co_await SleepFor(sleep);
  throw std::runtime_error(what);
  co_return 0;
}

// --- WhenAll ---

Lazy<std::tuple<int, std::string, std::monostate>> AllThree() {
  co_return co_await WhenAll(ValueAfterYields(7, 3), Text("seven"), Nothing());
}

TEST(WhenAllTest, VariadicReturnsEveryResultInArgumentOrder) {
  TaskScheduler sched;
  sched.Start(2);
  auto [number, text, nothing] = Spawn(sched, AllThree()).Get();
  EXPECT_EQ(number, 7);
  EXPECT_EQ(text, "seven");
  (void)nothing;
}

// Each of two children waits for the other's event: finishes only if they run concurrently.
Lazy<int> SetThenWait(Event* mine, Event* other, int value) {
  mine->Set();
  const WaitStatus status = co_await other->Wait(DeadlineAfter(kLongTime));
  co_return status == WaitStatus::kOk ? value : -1;
}
Lazy<std::tuple<int, int>> Handshake() {
  Event a, b;
  co_return co_await WhenAll(SetThenWait(&a, &b, 1), SetThenWait(&b, &a, 2));
}

TEST(WhenAllTest, ChildrenRunConcurrentlyEvenOnOneWorker) {
  TaskScheduler sched;
  sched.Start(1);
  EXPECT_EQ(Spawn(sched, Handshake()).Get(), std::make_tuple(1, 2));
}

Lazy<std::vector<int>> AllOfHundred() {
  std::vector<Lazy<int>> tasks;
  for (int i = 0; i < 100; ++i) tasks.push_back(ValueAfterYields(i, i % 4));
  co_return co_await WhenAll(std::move(tasks));
}
Lazy<std::size_t> AllOfNone() {
  std::vector<int> values = co_await WhenAll(std::vector<Lazy<int>>());
  co_return values.size();
}
Lazy<int> AllVoids(std::atomic<int>* ran) {
  std::vector<Lazy<void>> tasks;
  for (int i = 0; i < 10; ++i) tasks.push_back(Nothing());
  co_await WhenAll(std::move(tasks));
  ran->fetch_add(1);
  co_return 0;
}

TEST(WhenAllTest, VectorReturnsValuesInOrderAndHandlesEmptyAndVoid) {
  TaskScheduler sched;
  sched.Start(2);
  const std::vector<int> values = Spawn(sched, AllOfHundred()).Get();
  ASSERT_EQ(values.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(values[i], i);
  EXPECT_EQ(Spawn(sched, AllOfNone()).Get(), 0u);
  std::atomic<int> ran{0};
  Spawn(sched, AllVoids(&ran)).Get();
  EXPECT_EQ(ran.load(), 1);
}

struct FailFastRecord {
  std::atomic<int> live{0};
  WakeReason sleeper_reason = WakeReason::kWakeup;
  int live_when_caught = -1;
};
Lazy<WakeReason> RecordingSleeper(FailFastRecord* record) {
  const WakeReason why = co_await Sleeper(kLongTime, Alive(&record->live), &record->live);
  record->sleeper_reason = why;
  co_return why;
}
Lazy<std::string> FailFast(FailFastRecord* record) {
  try {
    co_await WhenAll(RecordingSleeper(record), ThrowAfterSleep(milliseconds(5), "first"),
                     ThrowAfterSleep(milliseconds(200), "second"));
  } catch (const std::runtime_error& e) {
    record->live_when_caught = record->live.load();
    co_return e.what();
  }
  co_return "no exception";
}

TEST(WhenAllTest, FirstExceptionCancelsTheOthersWhichAreAwaitedThenItIsRethrown) {
  TaskScheduler sched;
  sched.Start(2);
  FailFastRecord record;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Spawn(sched, FailFast(&record)).Get(), "first");
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(30));  // not the 60 s sleep
  EXPECT_EQ(record.sleeper_reason, WakeReason::kCancelled);
  EXPECT_EQ(record.live_when_caught, 0);  // the sleeper's local and parameter were gone
}

// The caller is cancelled: its children are cancelled with it (they report it as their
// value), awaited, and WhenAll returns what they produced.
Lazy<std::tuple<WakeReason, WakeReason>> TwoSleepers(std::atomic<int>* live, Event* started) {
  started->Set();
  co_return co_await WhenAll(Sleeper(kLongTime, Alive(live), live),
                             Sleeper(kLongTime, Alive(live), live));
}

TEST(WhenAllTest, CancellingTheCallerCancelsAndAwaitsTheChildren) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> live{0};
  Event started;
  JoinHandle<std::tuple<WakeReason, WakeReason>> handle =
      Spawn(sched, TwoSleepers(&live, &started));
  while (live.load() < 4) std::this_thread::sleep_for(milliseconds(1));  // both sleep
  EXPECT_TRUE(handle.Cancel());
  EXPECT_EQ(handle.Get(), std::make_tuple(WakeReason::kCancelled, WakeReason::kCancelled));
  EXPECT_EQ(live.load(), 0);
}

// --- WhenAny ---

struct AnyRecord {
  std::atomic<int> live{0};
  long token_uses_after = -1;
  int live_after = -1;
  std::size_t index = 99;
};
Lazy<int> AnyWithLoser(AnyRecord* record) {
  auto token = std::make_shared<int>(0);
  auto loser = []([[maybe_unused]] std::shared_ptr<int> held,
                  std::atomic<int>* live) -> Lazy<std::string> {
    Alive local(live);
    co_await SleepFor(kLongTime);
    co_return "loser";
  };
  std::variant<std::string, int> result =
      co_await WhenAny(loser(token, &record->live), ValueAfterYields(5, 2));
  record->token_uses_after = token.use_count();
  record->live_after = record->live.load();
  record->index = result.index();
  co_return std::get<1>(result);
}

TEST(WhenAnyTest, ReturnsTheFirstAndTheLoserIsDestroyedBeforeItReturns) {
  TaskScheduler sched;
  sched.Start(2);
  AnyRecord record;
  EXPECT_EQ(Spawn(sched, AnyWithLoser(&record)).Get(), 5);
  EXPECT_EQ(record.index, 1u);
  EXPECT_EQ(record.token_uses_after, 1);  // the loser's parameter copy is destroyed
  EXPECT_EQ(record.live_after, 0);        // and its local
}

// Same types twice: WhenAnyResult says which one won and holds its value (no variant of
// equal alternatives to read by index).
Lazy<std::size_t> SameTypeRace() {
  auto [index, value] = co_await WhenAny(ValueAfterSleep(1, kLongTime), ValueAfterYields(2, 0));
  static_assert(std::is_same_v<decltype(value), int>);
  co_return index * 10 + static_cast<std::size_t>(value);
}

// The result types: one type (also void, also a single task) gives WhenAnyResult; mixed
// types give a variant.
static_assert(std::is_same_v<decltype(WhenAny(std::declval<Lazy<int>>(), std::declval<Lazy<int>>())),
                             Lazy<WhenAnyResult<int>>>);
static_assert(std::is_same_v<decltype(WhenAny(std::declval<Lazy<void>>(), std::declval<Lazy<void>>())),
                             Lazy<WhenAnyResult<void>>>);
static_assert(std::is_same_v<decltype(WhenAny(std::declval<Lazy<int>>())), Lazy<WhenAnyResult<int>>>);
static_assert(std::is_same_v<decltype(WhenAny(std::declval<Lazy<int>>(), std::declval<Lazy<void>>())),
                             Lazy<std::variant<int, std::monostate>>>);

Lazy<std::size_t> VectorRace(std::atomic<int>* live) {
  std::vector<Lazy<WakeReason>> tasks;
  for (int i = 0; i < 8; ++i) {
    tasks.push_back(Sleeper(i == 5 ? milliseconds(1) : kLongTime, Alive(live), live));
  }
  WhenAnyResult<WakeReason> result = co_await WhenAny(std::move(tasks));
  if (result.value != WakeReason::kDeadline || live->load() != 0) co_return 99;
  co_return result.index;
}

Lazy<std::string> EmptyRace() {
  try {
    co_await WhenAny(std::vector<Lazy<int>>());
  } catch (const std::invalid_argument& e) {
    co_return e.what();
  }
  co_return "no exception";
}

TEST(WhenAnyTest, IndexOfTheWinnerForSameTypesAndVectors) {
  TaskScheduler sched;
  sched.Start(2);
  EXPECT_EQ(Spawn(sched, SameTypeRace()).Get(), 12u);
  std::atomic<int> live{0};
  EXPECT_EQ(Spawn(sched, VectorRace(&live)).Get(), 5u);
  EXPECT_EQ(Spawn(sched, EmptyRace()).Get(), "coro::WhenAny of an empty vector of tasks");
}

Lazy<std::string> WinnerThrows(std::atomic<int>* live) {
  try {
    co_await WhenAny(ThrowAfterSleep(milliseconds(1), "winner failed"),
                     Sleeper(kLongTime, Alive(live), live));
  } catch (const std::runtime_error& e) {
    if (live->load() != 0) co_return "loser still alive";
    co_return e.what();
  }
  co_return "no exception";
}

TEST(WhenAnyTest, TheWinnersExceptionIsRethrownAfterTheLosersEnded) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> live{0};
  EXPECT_EQ(Spawn(sched, WinnerThrows(&live)).Get(), "winner failed");
}

// A loser that never waits, only polls IsCancelled(): WhenAny still waits for it.
Lazy<int> PollUntilCancelled(std::atomic<bool>* saw_cancel) {
  while (!IsCancelled()) co_await Yield();
  saw_cancel->store(true);
  co_return -1;
}
Lazy<bool> PollingLoser() {
  std::atomic<bool> saw_cancel{false};
  co_await WhenAny(PollUntilCancelled(&saw_cancel), ValueAfterYields(3, 5));
  co_return saw_cancel.load();
}

TEST(WhenAnyTest, ALoserThatOnlyPollsIsCancelledAndAwaited) {
  TaskScheduler sched;
  sched.Start(2);
  EXPECT_TRUE(Spawn(sched, PollingLoser()).Get());
}

// --- WithTimeout ---

Lazy<int> TimeoutNotFiring() {
  TimeoutOr<int> fast = co_await WithTimeout(ValueAfterYields(9, 3), DeadlineAfter(kLongTime));
  TimeoutOr<void> done = co_await WithTimeout(Nothing(), seconds(60));
  if (!done) co_return -1;
  co_return fast ? *fast : -2;
}

TEST(WithTimeoutTest, ReturnsTheValueWhenTheTaskFinishesInTime) {
  TaskScheduler sched;
  sched.Start(2);
  EXPECT_EQ(Spawn(sched, TimeoutNotFiring()).Get(), 9);
}

struct TimeoutRecord {
  std::atomic<int> live{0};
  CancelReason child_reason = CancelReason::kNone;
  int live_after = -1;
  bool caller_cancelled = true;
};
Lazy<int> ReportCancelReason(TimeoutRecord* record) {
  Alive local(&record->live);
  co_await SleepFor(kLongTime);
  record->child_reason = CurrentCancelReason();
  co_return 1;
}
Lazy<bool> TimeoutFiring(TimeoutRecord* record) {
  TimeoutOr<int> result = co_await WithTimeout(ReportCancelReason(record), milliseconds(10));
  record->live_after = record->live.load();
  record->caller_cancelled = IsCancelled();
  co_return result.timed_out();
}

TEST(WithTimeoutTest, OnTimeoutTheTaskIsCancelledWithDeadlineAndAwaited) {
  TaskScheduler sched;
  sched.Start(2);
  TimeoutRecord record;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(Spawn(sched, TimeoutFiring(&record)).Get());
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(30));
  EXPECT_EQ(record.child_reason, CancelReason::kDeadline);
  EXPECT_EQ(record.live_after, 0);
  EXPECT_FALSE(record.caller_cancelled);  // only the task was cancelled
}

// A task that returns a value when the deadline cancels it still timed out, whichever of
// its end and the deadline the caller hears of first (each round races the two).
Lazy<int> CountTimeouts(std::atomic<int>* live) {
  int timeouts = 0;
  for (int i = 0; i < 20; ++i) {
    TimeoutOr<WakeReason> result =
        co_await WithTimeout(Sleeper(kLongTime, Alive(live), live), milliseconds(1));
    if (result.timed_out()) ++timeouts;
  }
  // A deadline already passed: timed out, although the task does not wait at all.
  TimeoutOr<int> late =
      co_await WithTimeout(ValueAfterYields(1, 0), DeadlineAfter(milliseconds(0)));
  if (late.timed_out()) ++timeouts;
  co_return timeouts;
}

TEST(WithTimeoutTest, ATaskThatReturnsAValueWhenCancelledAtTheDeadlineTimedOut) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> live{0};
  EXPECT_EQ(Spawn(sched, CountTimeouts(&live)).Get(), 21);
  EXPECT_EQ(live.load(), 0);
}

Lazy<std::string> TimeoutRethrows() {
  try {
    const TimeoutOr<int> result =
        co_await WithTimeout(ThrowAfterSleep(milliseconds(1), "inner"), seconds(60));
    co_return result.timed_out() ? "timed out" : "no exception";
  } catch (const std::runtime_error& e) {
    co_return e.what();
  }
}

TEST(WithTimeoutTest, RethrowsTheTasksException) {
  TaskScheduler sched;
  sched.Start(2);
  EXPECT_EQ(Spawn(sched, TimeoutRethrows()).Get(), "inner");
}

TEST(WithTimeoutTest, ValueOfATimeoutAbortsWithAMessage) {
  EXPECT_DEATH(
      {
        TimeoutOr<int> none = TimeoutOr<int>::TimedOut();
        (void)none.value();
      },
      "TimeoutOr::value\\(\\) of a timed-out result");
}

// --- Nested: WhenAll of WithTimeout and WhenAny, inside WithTimeout. ---

Lazy<int> AnyOfTwo() {
  WhenAnyResult<int> result =
      co_await WhenAny(ValueAfterYields(4, 1), ValueAfterSleep(8, kLongTime));
  co_return result.index == 0 ? result.value : -1;
}
Lazy<int> Nested(std::atomic<int>* live) {
  auto [slow, any] = co_await WhenAll(
      WithTimeout(Sleeper(kLongTime, Alive(live), live), milliseconds(5)), AnyOfTwo());
  TimeoutOr<int> outer = co_await WithTimeout(ValueAfterYields(any, 1), seconds(60));
  co_return (slow.timed_out() ? 100 : 0) + *outer + live->load();
}

TEST(CombinatorsTest, NestedCombinators) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> live{0};
  EXPECT_EQ(Spawn(sched, Nested(&live)).Get(), 104);
}

// --- JoinUntil / JoinFor / Finished ---

Lazy<int> WaitForEvent(Event* event, std::atomic<bool>* cancelled) {
  co_await event->Wait();
  cancelled->store(IsCancelled());
  co_return 11;
}
Lazy<int> TimedJoin(TaskScheduler* sched, Event* event, std::atomic<bool>* cancelled) {
  JoinHandle<int> handle = Spawn(*sched, WaitForEvent(event, cancelled));
  TimeoutOr<int> first = co_await JoinFor(handle, milliseconds(10));
  if (!first.timed_out() || !handle.IsValid() || handle.IsDone()) co_return -1;
  const bool finished = co_await handle.Finished(DeadlineAfter(milliseconds(1)));
  if (finished) co_return -2;
  event->Set();  // the child was not cancelled by the timeouts: it finishes now
  TimeoutOr<int> second = co_await JoinUntil(handle, DeadlineAfter(kLongTime));
  if (handle.IsValid()) co_return -3;  // consumed
  co_return second ? *second : -4;
}

TEST(JoinUntilTest, TimesOutWithoutCancellingThenJoins) {
  TaskScheduler sched;
  sched.Start(2);
  Event event;
  std::atomic<bool> cancelled{true};
  EXPECT_EQ(Spawn(sched, TimedJoin(&sched, &event, &cancelled)).Get(), 11);
  EXPECT_FALSE(cancelled.load());
}

Lazy<int> JoinFinished(TaskScheduler* sched) {
  JoinHandle<int> handle = Spawn(*sched, ValueAfterYields(6, 0));
  while (!handle.IsDone()) co_await Yield();
  const bool finished = co_await handle.Finished(DeadlineAfter(milliseconds(0)));
  if (!finished) co_return -1;
  TimeoutOr<int> result = co_await JoinFor(handle, milliseconds(0));
  co_return result ? *result : -2;
}

TEST(JoinUntilTest, AFinishedCoroutineJoinsEvenWithAPassedDeadline) {
  TaskScheduler sched;
  sched.Start(2);
  EXPECT_EQ(Spawn(sched, JoinFinished(&sched)).Get(), 6);
}

// --- WithCancel ---

struct CancelOneRecord {
  WakeReason first = WakeReason::kWakeup;
  WakeReason second = WakeReason::kWakeup;
  bool caller_cancelled = true;
};
Lazy<WakeReason> SleepLong() { co_return co_await SleepFor(kLongTime); }
Lazy<void> CancelOne(CancelOneRecord* record, CancelToken token, Event* started) {
  started->Set();
  record->first = co_await WithCancel(SleepLong(), token);
  record->caller_cancelled = IsCancelled();
  // The source stays cancelled: a later operation under it starts cancelled.
  record->second = co_await WithCancel(SleepLong(), token);
}

TEST(WithCancelTest, CancelsOneOperationNotItsCaller) {
  TaskScheduler sched;
  sched.Start(2);
  CancelSource source;
  Event started;
  CancelOneRecord record;
  JoinHandle<void> handle = Spawn(sched, CancelOne(&record, source.Token(), &started));
  while (!started.IsSet()) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(5));  // most likely asleep in the first operation
  EXPECT_TRUE(source.Cancel());
  EXPECT_FALSE(source.Cancel());
  handle.Get();
  EXPECT_EQ(record.first, WakeReason::kCancelled);
  EXPECT_FALSE(record.caller_cancelled);
  EXPECT_EQ(record.second, WakeReason::kCancelled);
  EXPECT_TRUE(source.Token().IsCancelled());
  EXPECT_FALSE(CancelToken().IsCancelled());
}

Lazy<int> UnderDefaultToken() {
  co_return co_await WithCancel(ValueAfterYields(3, 2), CancelToken());
}

TEST(WithCancelTest, ADefaultTokenNeverCancels) {
  TaskScheduler sched;
  sched.Start(1);
  EXPECT_EQ(Spawn(sched, UnderDefaultToken()).Get(), 3);
}

// --- Stop ---

Lazy<std::tuple<WakeReason, WakeReason>> SleepersUntilStop(std::atomic<int>* live) {
  co_return co_await WhenAll(Sleeper(kLongTime, Alive(live), live),
                             Sleeper(kLongTime, Alive(live), live));
}

TEST(CombinatorsTest, StopEndsTheChildrenAndTheCaller) {
  std::atomic<int> live{0};
  JoinHandle<std::tuple<WakeReason, WakeReason>> handle;
  {
    TaskScheduler sched;
    sched.Start(2);
    handle = Spawn(sched, SleepersUntilStop(&live));
    while (live.load() < 4) std::this_thread::sleep_for(milliseconds(1));
    sched.Stop();
    ASSERT_TRUE(handle.IsDone());
  }
  EXPECT_EQ(handle.Get(), std::make_tuple(WakeReason::kShutdown, WakeReason::kShutdown));
  EXPECT_EQ(live.load(), 0);
}

// --- Stress: completion racing cancellation and deadlines ---

// Finishes after `yields` yields, unless cancelled first (then it stops yielding).
Lazy<int> Racer(int value, int yields, [[maybe_unused]] Alive parameter) {
  for (int i = 0; i < yields && !IsCancelled(); ++i) co_await Yield();
  co_return value;
}

Lazy<void> CancelAfterYields(CancelSource source, int yields) {
  for (int i = 0; i < yields; ++i) co_await Yield();
  source.Cancel();
}

// One round: a WhenAny of racers, a WithTimeout with a deadline close to the work, and a
// WhenAll whose first exception races the others; a WithCancel racing its source's Cancel;
// a timed join racing the end. After each combinator and after the join, no child may be
// alive: its frame, parameters included, is gone before the call returns (a parameter
// that points into this frame is safe; ASan checks it).
Lazy<int> StressRound(int seed, std::atomic<int>* failures) {
  std::atomic<int> live{0};
  const int a = seed % 5, b = (seed / 5) % 5;
  WhenAnyResult<int> any = co_await WhenAny(
      Racer(0, a, Alive(&live)), Racer(1, b, Alive(&live)), Racer(2, (a + b) % 5, Alive(&live)));
  if (live.load() != 0) failures->fetch_add(1);
  if (any.value != static_cast<int>(any.index)) failures->fetch_add(1);

  TimeoutOr<int> timed = co_await WithTimeout(Racer(7, seed % 20, Alive(&live)),
                                              DeadlineAfter(std::chrono::microseconds(seed % 50)));
  if (live.load() != 0) failures->fetch_add(1);
  if (!timed.timed_out() && *timed != 7) failures->fetch_add(1);

  try {
    co_await WhenAll(Racer(1, a, Alive(&live)), ThrowAfterSleep(milliseconds(0), "boom"),
                     Racer(2, b, Alive(&live)));
    failures->fetch_add(1);  // must have thrown
  } catch (const std::runtime_error&) {
  }
  if (live.load() != 0) failures->fetch_add(1);

  // A source cancelled by another coroutine while (or before, or after) its operation runs.
  CancelSource source;
  JoinHandle<void> canceller = SpawnHere(CancelAfterYields(source, seed % 3));
  const int cancellable = co_await WithCancel(Racer(5, b, Alive(&live)), source.Token());
  if (cancellable != 5 || live.load() != 0) failures->fetch_add(1);
  co_await std::move(canceller);

  // A timed join racing the coroutine's end; after a timeout the handle joins again.
  JoinHandle<int> joined = SpawnHere(Racer(6, a, Alive(&live)));
  TimeoutOr<int> timed_join = co_await JoinFor(joined, std::chrono::microseconds(seed % 30));
  int join_value = 0;
  if (timed_join) {
    join_value = *timed_join;
  } else {
    join_value = co_await std::move(joined);
  }
  if (join_value != 6 || live.load() != 0) failures->fetch_add(1);
  co_return 0;
}

TEST(CombinatorsStressTest, CompletionsRaceCancellationAndNoChildOutlivesItsCall) {
  TaskScheduler sched;
  sched.Start(4);
  const int rounds = static_cast<int>(testing::StressIterations(2000, 4));
  std::atomic<int> failures{0};
  std::vector<JoinHandle<int>> handles;
  handles.reserve(rounds);
  for (int i = 0; i < rounds; ++i) {
    handles.push_back(Spawn(sched, StressRound(i, &failures)));
  }
  for (JoinHandle<int>& handle : handles) EXPECT_EQ(handle.Get(), 0);
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace fairsched::coro
