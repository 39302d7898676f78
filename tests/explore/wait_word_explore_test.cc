// The coroutine wait word (coro/internal/wait_word.h) under the interleaving explorer; the
// scenarios and their checks are in wait_word_scenario.h:
//   - WakeRacesSuspend[WithDeadline]: a Waker and a Cancel race the coroutine's PrepareWait
//     and suspension (and, with a deadline, the task's own close at the deadline): one
//     closer, its reason, its writes visible, one wake of the task, none lost;
//   - StaleWakerAndSignal: a waker of wait 1 arriving late never ends wait 2; a Signal
//     sent at any time ends the external wait 2 exactly once (remembered if early);
//   - FinishRacesDetach / FinishRacesJoin: the hand-over of the coroutine's own reference
//     against the JoinHandle: the state destroyed exactly once, after Finish's last touch,
//     and by the join before it returns.
// Sequentially consistent values with three preemptions, and the C++20 model with two.
// FAIRSCHED_EXPLORE_DEEP=1: the same without sleep sets, and the C++20 model with three.
#include <string>

#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/wait_word_scenario.h"

namespace fairsched {
namespace {

void ExpectWaitWordPasses(void (*scenario)(), int bound, bool sleep_sets,
                          explore::Options::MemoryModel model, const std::string& name) {
  explore::Options options;
  options.preemption_bound = bound;
  options.sleep_sets = sleep_sets;
  options.memory_model = model;
  const explore::Result result = explore::Explore(options, scenario);
  testing::PrintCounts(name.c_str(), result);
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
}

void ExpectScenarioPasses(void (*scenario)(), const std::string& name) {
  constexpr auto kSc = explore::Options::MemoryModel::kSequentiallyConsistent;
  constexpr auto kCpp20 = explore::Options::MemoryModel::kCpp20;
  const bool deep = testing::DeepExploration();
  ExpectWaitWordPasses(scenario, 3, true, kSc, name);
  if (deep) ExpectWaitWordPasses(scenario, 3, false, kSc, name + ", sleep sets off");
  ExpectWaitWordPasses(scenario, deep ? 3 : 2, true, kCpp20, name + ", C++20 model");
}

TEST(WaitWordExploreTest, WakeRacesSuspend) {
  ExpectScenarioPasses([] { coro::testing::WakeRacesSuspendAndCancel(false); },
                       "wait word: waker + cancel racing PrepareWait and the suspension");
}

TEST(WaitWordExploreTest, WakeRacesSuspendWithDeadline) {
  ExpectScenarioPasses([] { coro::testing::WakeRacesSuspendAndCancel(true); },
                       "wait word: waker + cancel + the deadline racing the suspension");
}

TEST(WaitWordExploreTest, StaleWakerAndSignal) {
  ExpectScenarioPasses(&coro::testing::StaleWakerAndSignal,
                       "wait word: a stale waker and a Signal across two waits");
}

TEST(WaitWordExploreTest, FinishRacesDetach) {
  ExpectScenarioPasses([] { coro::testing::FinishRacesHandle(false); },
                       "wait word: Finish's hand-over racing Detach");
}

TEST(WaitWordExploreTest, FinishRacesJoin) {
  ExpectScenarioPasses([] { coro::testing::FinishRacesHandle(true); },
                       "wait word: Finish's hand-over racing a join");
}

}  // namespace
}  // namespace fairsched
