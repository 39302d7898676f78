// The coroutine runtime's join under the interleaving explorer: spawned coroutines on the
// real BasicTaskScheduler (scheduler_scenarios.h), whose workers are model threads. Checks
// the lifetime rule of coro/runtime.h ("Wakers and lifetime"): a join returns only after
// the joined coroutine's root frame, its parameters included, has been destroyed (Finish
// hands its own reference to the attached JoinHandle; the join waits for Finish's last
// step and drops both), and a Detach racing the end destroys the frame exactly once. The
// parameter's destructor writes an explore::Data, so a destruction that is not ordered
// before the join's return (a missing release/acquire in the hand-over) is a reported data
// race even where the value happens to be right. With one worker and a plain-thread join
// (Get, Detach): every schedule with one preemption; these find the seeded version of the
// old bug (coro_join_seeded_test). A co_await join needs two workers, whose schedules are
// too many for the depth-first search: 1,000 random ones, which check that the join's wait
// for Finish's last step neither hangs nor loses the value (they did not find the seeded
// bug in 1,000 schedules: the window is a few steps of one worker).
#include <gtest/gtest.h>

#include "sync/primitives.h"
#include "tests/explore/coro_join_scenarios.h"
#include "tests/explore/explore_test_util.h"

namespace fairsched::coro {
namespace {

using fairsched::testing::ExpectPass;
using testing::CoroutineJoin;
using testing::DetachRacesTheEnd;
using testing::PlainThreadGet;

TEST(CoroJoinExploreTest, PlainThreadGet) {
  ExpectPass(&PlainThreadGet, 1, "coro join: 1 worker, Get racing the end");
}

TEST(CoroJoinExploreTest, DetachRacesTheEnd) {
  ExpectPass(&DetachRacesTheEnd, 1, "coro join: 1 worker, Detach racing the end");
}

// Two workers: random schedules. (Depth-first with sleep sets, once its one preemption is
// spent, keeps running an idle worker's timed park loop while the finishing worker, whose
// last step the joiner spins for, sleeps in the sleep set: a livelock of the search, not
// of the code.)
void ExpectRandomPass(void (*scenario)(), const char* name) {
  explore::Options options;
  options.strategy = explore::Options::Strategy::kRandom;
  options.max_executions = fairsched::testing::DeepExploration() ? 20000 : 1000;
  const explore::Result result = explore::Explore(options, scenario);
  fairsched::testing::PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
}

TEST(CoroJoinExploreTest, CoroutineJoin) {
  ExpectRandomPass([] { CoroutineJoin(false); }, "coro join: 2 workers, co_await of a handle");
}

TEST(CoroJoinExploreTest, CoroutineJoinThatWaits) {
  ExpectRandomPass([] { CoroutineJoin(true); },
                   "coro join: 2 workers, co_await of a handle whose coroutine yields first");
}

}  // namespace
}  // namespace fairsched::coro
