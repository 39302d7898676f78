// The savegame service's correctness check, a pure function of what the run recorded: the
// outcome of every request the client fleet sent (load.h), every save the blob store
// applied (its log, blob_store.h), and every user's blob counter read back over the wire.
// It compares the SET of request ids the store applied with the set acknowledged to the
// clients, not only counts, and fails when:
//   - a request was applied more than once, or applied although the fleet never sent it
//     (or for another user);
//   - a request was acknowledged (kOk) but never applied;
//   - a request was applied but its reply reported a failure (only kUnknown and a missing
//     reply leave the outcome open: protocol.h);
//   - any reply was kConflict (a user's profile lock must serialise its saves, so a
//     compare-and-set can only be refused if the lock did not exclude), unless
//     conflicts_allowed (several server processes: each has its own profile locks, and
//     the store's compare-and-set refuses the second of two overlapping saves; a refused
//     upload applied nothing, which the rules above still check);
//   - no save was acknowledged at all (a run that proves nothing);
//   - without injected faults, any request ended unknown (kUnknown or no reply);
//   - a user's counter differs from the number of saves the log says were applied to it.
// The failure message names every rule that failed, in the order above, each with its
// first offending request and the count.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_CHECK_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "examples/savegame/load.h"

namespace fairsched::savegame {

// One upload the store applied that changed a blob: the save of `request_id` (the new
// blob's last_request_id) to `user`. (A fence rewrites the blob unchanged: not a save.)
struct AppliedSave {
  std::uint32_t user = 0;
  std::uint64_t request_id = 0;
};

struct CheckInput {
  int users = 0;
  std::vector<RequestOutcome> requests;  // every request the fleet sent
  std::vector<AppliedSave> applied;      // the store's log
  std::vector<std::uint64_t> counters;   // per user, read back from the store
  bool faults_injected = false;          // the store was told to drop or delay answers
  bool conflicts_allowed = false;        // several server processes (server_processes.h)
};

struct CheckResult {
  bool passed = false;
  std::string message;  // "" when passed
  std::int64_t users_checked = 0;
  std::int64_t acknowledged = 0;  // kOk replies
  std::int64_t applied = 0;       // saves in the store's log
  std::int64_t unknown = 0;       // kUnknown replies and requests without a reply
  std::int64_t conflicts = 0;     // kConflict replies
};

CheckResult CheckSaves(const CheckInput& input);

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_CHECK_H_
