// The set-based correctness check of the savegame service (check.h).
#include "examples/savegame/check.h"

#include <cinttypes>
#include <cstdio>
#include <unordered_map>

#include "examples/savegame/protocol.h"

namespace fairsched::savegame {
namespace {

std::string Hex(std::uint64_t id) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, id);
  return text;
}

// One rule's failures: how many, and the first one described.
struct Violations {
  std::int64_t count = 0;
  std::string first;
  void Add(const std::string& what) {
    if (count++ == 0) first = what;
  }
  // "<first> (<count> in all)", appended to `message` (after "; ") if there was any.
  void AppendTo(std::string* message) const {
    if (count == 0) return;
    if (!message->empty()) *message += "; ";
    *message += first + " (" + std::to_string(count) + " in all)";
  }
};

}  // namespace

CheckResult CheckSaves(const CheckInput& input) {
  CheckResult result;
  std::unordered_map<std::uint64_t, const RequestOutcome*> sent;
  sent.reserve(input.requests.size());
  for (const RequestOutcome& request : input.requests) {
    sent.emplace(request.request_id, &request);
    if (request.outcome == static_cast<std::uint8_t>(SaveStatus::kOk)) ++result.acknowledged;
    if (request.outcome == static_cast<std::uint8_t>(SaveStatus::kConflict)) ++result.conflicts;
    if (request.outcome == static_cast<std::uint8_t>(SaveStatus::kUnknown) ||
        request.outcome == kNoReplyOutcome) {
      ++result.unknown;
    }
  }

  // The applied set: each id's number of applications; saves per user.
  std::unordered_map<std::uint64_t, int> times_applied;
  times_applied.reserve(input.applied.size());
  std::vector<std::int64_t> saves_of_user(input.users, 0);
  Violations applied_twice, applied_unsent, applied_but_failed, acked_not_applied;
  for (const AppliedSave& save : input.applied) {
    ++result.applied;
    if (save.user < saves_of_user.size()) ++saves_of_user[save.user];
    const std::string request = "request " + Hex(save.request_id) + " (user " +
                                std::to_string(save.user) + ")";
    if (++times_applied[save.request_id] == 2) applied_twice.Add(request + " was applied twice");
    const auto it = sent.find(save.request_id);
    if (it == sent.end() || it->second->user != save.user) {
      applied_unsent.Add(request + " was applied but never sent for that user");
      continue;
    }
    const std::uint8_t outcome = it->second->outcome;
    if (outcome != static_cast<std::uint8_t>(SaveStatus::kOk) &&
        outcome != static_cast<std::uint8_t>(SaveStatus::kUnknown) &&
        outcome != kNoReplyOutcome && times_applied[save.request_id] == 1) {
      applied_but_failed.Add(request + " was applied but its reply said " +
                             ToString(static_cast<SaveStatus>(outcome)));
    }
  }
  for (const RequestOutcome& request : input.requests) {
    if (request.outcome == static_cast<std::uint8_t>(SaveStatus::kOk) &&
        times_applied.find(request.request_id) == times_applied.end()) {
      acked_not_applied.Add("request " + Hex(request.request_id) + " (user " +
                            std::to_string(request.user) + ") was acknowledged but never applied");
    }
  }

  Violations counter_mismatch;
  for (int u = 0; u < input.users; ++u) {
    ++result.users_checked;
    const std::uint64_t counter =
        static_cast<std::size_t>(u) < input.counters.size() ? input.counters[u] : 0;
    if (static_cast<std::int64_t>(counter) != saves_of_user[u]) {
      counter_mismatch.Add("user " + std::to_string(u) + ": blob counter " +
                           std::to_string(counter) + " but " + std::to_string(saves_of_user[u]) +
                           " saves applied");
    }
  }
  if (input.counters.size() != static_cast<std::size_t>(input.users)) {
    counter_mismatch.Add("read " + std::to_string(input.counters.size()) + " counters for " +
                         std::to_string(input.users) + " users");
  }

  std::string& message = result.message;
  applied_twice.AppendTo(&message);
  applied_unsent.AppendTo(&message);
  acked_not_applied.AppendTo(&message);
  applied_but_failed.AppendTo(&message);
  if (result.conflicts > 0 && !input.conflicts_allowed) {
    if (!message.empty()) message += "; ";
    message += std::to_string(result.conflicts) +
               " conflict replies: a profile lock did not keep two saves of one user apart";
  }
  if (result.acknowledged == 0) {
    if (!message.empty()) message += "; ";
    message += "no save was acknowledged";
  }
  if (!input.faults_injected && result.unknown > 0) {
    if (!message.empty()) message += "; ";
    message += std::to_string(result.unknown) +
               " requests ended with an unknown outcome although no fault was injected";
  }
  counter_mismatch.AppendTo(&message);
  result.passed = message.empty();
  return result;
}

}  // namespace fairsched::savegame
