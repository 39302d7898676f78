// Tests for examples/savegame/check.h on hand-made inputs: a consistent run passes, and each
// rule fails with its own message when its kind of bug is planted in the data (a save
// applied twice, acknowledged but never applied, applied but reported failed, applied
// without being sent, a conflict reply, nothing acknowledged, an unknown outcome without
// faults, a counter that disagrees with the log).
#include "examples/savegame/check.h"

#include <gtest/gtest.h>

#include "examples/savegame/protocol.h"

namespace fairsched::savegame {
namespace {

constexpr std::uint8_t Outcome(SaveStatus status) { return static_cast<std::uint8_t>(status); }

// Two users; requests 1 and 2 (user 0) and 3 (user 1) acknowledged and applied, request 4
// (user 1) failed cleanly with a lock timeout.
CheckInput Consistent() {
  CheckInput input;
  input.users = 2;
  input.requests = {{1, 0, Outcome(SaveStatus::kOk)},
                    {2, 0, Outcome(SaveStatus::kOk)},
                    {3, 1, Outcome(SaveStatus::kOk)},
                    {4, 1, Outcome(SaveStatus::kLockTimeout)}};
  input.applied = {{0, 1}, {0, 2}, {1, 3}};
  input.counters = {2, 1};
  return input;
}

TEST(SavegameCheckTest, ConsistentRunPasses) {
  const CheckResult result = CheckSaves(Consistent());
  EXPECT_TRUE(result.passed) << result.message;
  EXPECT_EQ(result.message, "");
  EXPECT_EQ(result.users_checked, 2);
  EXPECT_EQ(result.acknowledged, 3);
  EXPECT_EQ(result.applied, 3);
  EXPECT_EQ(result.unknown, 0);
  EXPECT_EQ(result.conflicts, 0);
}

TEST(SavegameCheckTest, UnknownOutcomesMayGoEitherWayWithFaults) {
  CheckInput input = Consistent();
  input.faults_injected = true;
  input.requests.push_back({5, 1, Outcome(SaveStatus::kUnknown)});  // applied
  input.requests.push_back({6, 1, kNoReplyOutcome});               // not applied
  input.applied.push_back({1, 5});
  input.counters = {2, 2};
  const CheckResult result = CheckSaves(input);
  EXPECT_TRUE(result.passed) << result.message;
  EXPECT_EQ(result.unknown, 2);
}

TEST(SavegameCheckTest, AppliedTwiceFails) {
  CheckInput input = Consistent();
  input.applied.push_back({0, 2});
  input.counters = {3, 1};
  const CheckResult result = CheckSaves(input);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.message, "request 0x2 (user 0) was applied twice (1 in all)");
}

TEST(SavegameCheckTest, AcknowledgedButNotAppliedFails) {
  CheckInput input = Consistent();
  input.applied = {{0, 1}, {1, 3}};
  input.counters = {1, 1};
  const CheckResult result = CheckSaves(input);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.message,
            "request 0x2 (user 0) was acknowledged but never applied (1 in all)");
}

TEST(SavegameCheckTest, AppliedButReportedFailedFails) {
  CheckInput input = Consistent();
  input.applied.push_back({1, 4});
  input.counters = {2, 2};
  const CheckResult result = CheckSaves(input);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.message,
            "request 0x4 (user 1) was applied but its reply said lock_timeout (1 in all)");
}

TEST(SavegameCheckTest, AppliedButNeverSentFails) {
  CheckInput input = Consistent();
  input.applied.push_back({0, 99});
  input.applied.push_back({0, 4});  // sent, but for user 1
  input.counters = {4, 1};
  const CheckResult result = CheckSaves(input);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.message,
            "request 0x63 (user 0) was applied but never sent for that user (2 in all)");
}

TEST(SavegameCheckTest, ConflictReplyFails) {
  CheckInput input = Consistent();
  input.requests.push_back({5, 0, Outcome(SaveStatus::kConflict)});
  const CheckResult result = CheckSaves(input);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.conflicts, 1);
  EXPECT_EQ(result.message,
            "1 conflict replies: a profile lock did not keep two saves of one user apart");
}

TEST(SavegameCheckTest, NothingAcknowledgedFails) {
  CheckInput input;
  input.users = 1;
  input.requests = {{1, 0, Outcome(SaveStatus::kDownloadFailed)}};
  input.counters = {0};
  const CheckResult result = CheckSaves(input);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.message, "no save was acknowledged");
}

TEST(SavegameCheckTest, UnknownWithoutFaultsFails) {
  CheckInput input = Consistent();
  input.requests.push_back({5, 1, Outcome(SaveStatus::kUnknown)});
  input.requests.push_back({6, 1, kNoReplyOutcome});
  const CheckResult result = CheckSaves(input);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.message,
            "2 requests ended with an unknown outcome although no fault was injected");
}

TEST(SavegameCheckTest, CounterDisagreeingWithTheLogFails) {
  CheckInput input = Consistent();
  input.counters = {2, 0};
  const CheckResult result = CheckSaves(input);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.message, "user 1: blob counter 0 but 1 saves applied (1 in all)");
}

TEST(SavegameCheckTest, EveryFailingRuleIsNamed) {
  CheckInput input = Consistent();
  input.applied = {{0, 1}, {0, 1}, {1, 3}};  // 1 twice, 2 never
  input.requests.push_back({5, 0, Outcome(SaveStatus::kConflict)});
  const CheckResult result = CheckSaves(input);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.message,
            "request 0x1 (user 0) was applied twice (1 in all); request 0x2 (user 0) was "
            "acknowledged but never applied (1 in all); 1 conflict replies: a profile lock "
            "did not keep two saves of one user apart");
}

}  // namespace
}  // namespace fairsched::savegame
