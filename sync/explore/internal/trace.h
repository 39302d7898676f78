// Reporting and replay of a schedule (implementation only): the trace of one schedule (one
// line per step), and the schedule text a failure prints and Options::replay parses back.
#ifndef FAIRSCHED_SYNC_EXPLORE_INTERNAL_TRACE_H_
#define FAIRSCHED_SYNC_EXPLORE_INTERNAL_TRACE_H_

#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sync/explore/internal/ops.h"

namespace fairsched::explore::internal {

inline const char* OpName(OpKind kind) {
  switch (kind) {
    case OpKind::kStart:
      return "start";
    case OpKind::kLoad:
      return "load";
    case OpKind::kStore:
      return "store";
    case OpKind::kReadModifyWrite:
      return "read-modify-write";
    case OpKind::kLock:
      return "mutex lock";
    case OpKind::kTryLock:
      return "mutex try_lock";
    case OpKind::kWaitBegin:
      return "condvar wait, unlock";
    case OpKind::kWait:
      return "condvar wait";
    case OpKind::kReacquire:
      return "condvar wake, relock";
    case OpKind::kNotify:
      return "condvar notify";
    case OpKind::kJoin:
      return "join";
    case OpKind::kRelax:
      return "CpuRelax (spin)";
    case OpKind::kFence:
      return "fence";
    case OpKind::kCheckFailed:
      return "CHECK FAILED";
    case OpKind::kFinish:
      return "finish";
    case OpKind::kFutexCompare:
      return "futex wait, compare";
    case OpKind::kFutexWait:
      return "futex wait, sleep";
    case OpKind::kFutexWake:
      return "futex wake";
  }
  return "?";
}

// One step of a schedule, as the trace shows it.
struct TraceStep {
  int thread;
  OpKind kind;
  const void* object;
  SourceLocation where;
  int read_behind = 0;  // kCpp20 load: how many stores older than the newest it read
};

// One line per step of `trace`. Objects are numbered by first use in the schedule
// (addresses differ between runs).
inline std::string TraceText(const std::vector<TraceStep>& trace) {
  std::string out;
  std::vector<const void*> objects;
  char line[512];
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceStep& step = trace[i];
    std::string object;
    if (step.object != nullptr) {
      std::size_t n = 0;
      while (n < objects.size() && objects[n] != step.object) ++n;
      if (n == objects.size()) objects.push_back(step.object);
      object = "#" + std::to_string(n);
    }
    std::string where;
    if (step.kind != OpKind::kStart && step.kind != OpKind::kFinish) {
      where = std::string(step.where.file_name()) + ":" + std::to_string(step.where.line());
    }
    if (step.read_behind > 0) {
      where += " (reads the store " + std::to_string(step.read_behind) + " before the newest)";
    }
    std::snprintf(line, sizeof line, "    %4zu  t%d: %-22s %-4s %s\n", i, step.thread,
                  OpName(step.kind), object.c_str(), where.c_str());
    out += line;
  }
  return out;
}

// "0x3,1,2x4" = thread 0 for three choices, then 1, then 2 for four. kCpp20 value
// choices read "v1" (the load reads the store one before the newest).
inline std::string ScheduleText(const std::vector<int>& schedule) {
  std::string out;
  for (std::size_t i = 0; i < schedule.size();) {
    std::size_t run = 1;
    while (i + run < schedule.size() && schedule[i + run] == schedule[i]) ++run;
    if (!out.empty()) out += ',';
    out += schedule[i] >= 0 ? std::to_string(schedule[i]) : "v" + std::to_string(-1 - schedule[i]);
    if (run > 1) out += 'x' + std::to_string(run);
    i += run;
  }
  return out;
}

// Parses ScheduleText's form back; false when `text` is not one.
inline bool ParseSchedule(const std::string& text, std::vector<int>* schedule) {
  schedule->clear();
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t used = 0;
    int thread = 0;
    long long run = 1;
    const bool value = text[i] == 'v';
    if (value) ++i;
    try {
      thread = std::stoi(text.substr(i), &used);
      if (thread < 0) return false;
      if (value) thread = -1 - thread;
      i += used;
      if (i < text.size() && text[i] == 'x') {
        ++i;
        run = std::stoll(text.substr(i), &used);
        i += used;
      }
    } catch (const std::exception&) {
      return false;
    }
    if (run < 1) return false;
    schedule->insert(schedule->end(), static_cast<std::size_t>(run), thread);
    if (i < text.size() && text[i] != ',') return false;
    ++i;
  }
  return true;
}

}  // namespace fairsched::explore::internal

#endif  // FAIRSCHED_SYNC_EXPLORE_INTERNAL_TRACE_H_
