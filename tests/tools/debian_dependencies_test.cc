// Links one symbol from every Abseil label that tools/bazel/debian.bzl exposes, so a wrong
// library name in the Debian mapping fails here instead of in a user's build.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/hash/hash.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

ABSL_FLAG(int, fairsched_test_workers, 2, "a flag defined only to prove the flags library links");

namespace {

absl::StatusOr<int> ParsePositive(int value) {
  if (value <= 0) return absl::InvalidArgumentError(absl::StrCat("not positive: ", value));
  return value;
}

TEST(DebianDependenciesTest, AbseilLabelsLinkAndWork) {
  EXPECT_GT(absl::ToUnixSeconds(absl::Now()), 0);
  EXPECT_EQ(absl::FormatDuration(absl::Milliseconds(1500)), "1.5s");

  EXPECT_EQ(*ParsePositive(3), 3);
  EXPECT_EQ(ParsePositive(-1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(absl::StrFormat("%d-%s", 7, "x"), "7-x");

  absl::flat_hash_map<std::string, int> counts;
  absl::flat_hash_set<int> seen;
  for (int i = 0; i < 100; ++i) {
    ++counts[absl::StrCat("k", i % 10)];
    seen.insert(i % 7);
  }
  EXPECT_EQ(counts.size(), 10u);
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(absl::Hash<int>{}(5), absl::Hash<int>{}(5));

  absl::BitGen gen;
  const int roll = absl::Uniform(gen, 1, 7);
  EXPECT_GE(roll, 1);
  EXPECT_LE(roll, 6);

  std::vector<char*> args = {const_cast<char*>("test"),
                             const_cast<char*>("--fairsched_test_workers=5")};
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  EXPECT_EQ(absl::GetFlag(FLAGS_fairsched_test_workers), 5);
}

}  // namespace
