// The load for the savegame service: a fleet of client connections, closed loop (each
// connection sends a save request for a random user, waits for the reply, sends the next),
// driven by a few plain threads with epoll. It is the load, not the system under test: no
// fairsched inside. Also the plain blocking reader the final check uses, and a per-thread
// CPU time reader (for the "CPU time per worker" column).
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_LOAD_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_LOAD_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "examples/savegame/protocol.h"
#include "io/tcp.h"

namespace fairsched::savegame {

struct FleetOptions {
  int connections = 128;
  int threads = 2;
  int users = 1000;
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  // After `duration`, no new requests; replies are awaited this long, then the rest count
  // as kNoReply.
  std::chrono::nanoseconds drain_timeout = std::chrono::seconds(10);
  std::uint64_t seed = 1;
  // Live progress once a second to `progress` (nullptr: none): on a terminal one line
  // rewritten with '\r', otherwise one line per second. Prefixed by `label`.
  std::FILE* progress = nullptr;
  std::string label;
};

struct FleetResult {
  double seconds = 0;  // the sending phase
  std::int64_t sent = 0;
  std::array<std::int64_t, kSaveStatusCount> replies{};  // by SaveStatus
  std::int64_t no_reply = 0;  // no reply before the drain timeout (or connection lost)
  std::int64_t connect_failures = 0;
  std::vector<std::int64_t> acked;           // per user: kOk replies
  std::vector<std::int64_t> unknown;         // per user: kUnknown replies or no reply
  std::vector<std::uint32_t> ok_latency_us;  // every kOk request, send to reply, sorted
  std::int64_t ok() const { return replies[0]; }
};

// Runs the fleet against `server` and returns what it saw.
FleetResult RunFleet(const SocketAddress& server, const FleetOptions& options);

// The p-quantile (0..1) of sorted values, in milliseconds (from microseconds).
double QuantileMs(const std::vector<std::uint32_t>& sorted_us, double p);

// Reads every user's blob counter from the store with kCheck (plain blocking socket,
// pipelined). nullopt and a message in `error` if the store cannot be read.
std::optional<std::vector<std::uint64_t>> ReadAllCounters(const SocketAddress& store, int users,
                                                          std::string* error);

// Per thread, from /proc/self/task/*/schedstat: time on a CPU, and time spent runnable but
// waiting for a CPU (the host's CPU contention as this thread felt it).
struct ThreadTimes {
  double cpu_seconds = 0;
  double runqueue_wait_seconds = 0;
};
// Every live thread of this process whose name starts with `prefix`, by name
// ("savegame-0" -> times).
std::map<std::string, ThreadTimes> ThreadTimesOf(const std::string& prefix);

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_LOAD_H_
