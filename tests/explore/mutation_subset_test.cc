// tools/mutate's CI subset (the mutations marked "ci" in tools/mutate/mutations.json) as one
// test: each header below is a copy of a shipped header with one memory order weakened,
// written by `tools/mutate/mutate.py --apply` (tests/explore/BUILD). Included first, each
// copy's include guard keeps the shipped header out of this translation unit, and the
// real-code scenario that kills that mutation (real_code_order_scenarios.h, which passes on
// the shipped headers in memory_order_test) must report a data race on its payload.
#include "tests/explore/mutated/local_batch_append_relaxed/local_batch.h"
#include "tests/explore/mutated/mcsp_publish_relaxed/mcsp_queue.h"
#include "tests/explore/mutated/role_lock_try_lock_relaxed/role_lock.h"
#include "tests/explore/mutated/task_pending_to_waiting_relaxed/task.h"

#include <string>

#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/real_code_order_scenarios.h"

namespace fairsched {
namespace {

constexpr char kDataRace[] = "check failed: data race: ";

void ExpectKilled(const char* mutation, const explore::Options& options, void (*scenario)()) {
  const explore::Result result = explore::Explore(options, scenario);
  testing::PrintCounts(mutation, result);
  ASSERT_TRUE(result.failed) << mutation << " survived: " << result.Report();
  EXPECT_EQ(result.failure.rfind(kDataRace, 0), 0u) << mutation << ": " << result.Report();
}

explore::Options Cpp20(int bound) {
  explore::Options options;
  options.memory_model = explore::Options::MemoryModel::kCpp20;
  options.preemption_bound = bound;
  return options;
}

TEST(MutationSubsetTest, McspPublishRelaxed) {
  ExpectKilled("mcsp_publish_relaxed", Cpp20(2), &testing::ReadyQueueOneProducerTwoConsumers);
}

TEST(MutationSubsetTest, RoleLockTryLockRelaxed) {
  ExpectKilled("role_lock_try_lock_relaxed", Cpp20(2),
               [] {
                 RoleLock role;
                 testing::RoleHandoverOf(role);
               });
}

TEST(MutationSubsetTest, TaskPendingToWaitingRelaxed) {
  ExpectKilled("task_pending_to_waiting_relaxed", Cpp20(3),
               &testing::PendingToWaitingPublishesTheRolesWrites);
}

TEST(MutationSubsetTest, LocalBatchAppendRelaxed) {
  ExpectKilled("local_batch_append_relaxed", explore::Options{},
               &testing::LocalBatchPublishesTheOwnersWrites);
}

}  // namespace
}  // namespace fairsched
