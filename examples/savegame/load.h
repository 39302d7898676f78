// The load for the savegame service: a fleet of client connections driven by a few plain
// threads with epoll (named "client-<i>"). It is the load, not the system under test: no
// fairsched inside. Two modes:
//   - closed loop (rate == 0): each connection sends a save request for a random user,
//     waits for the reply, sends the next; latency is measured from the send.
//   - open loop (rate > 0): requests arrive at a fixed offered rate, a Poisson process
//     (exponential inter-arrival times from a seeded RNG), independent of the replies. An
//     arrival is sent on an idle connection (at most one request in flight per connection);
//     when none is idle it waits in a backlog. Latency is measured from the arrival (the
//     intended send time), so a late client or a full backlog counts as latency (no
//     coordinated omission).
// Also the plain blocking reader the final check uses, and the per-thread CPU time and
// run-queue wait readers (/proc/self/task/*/schedstat).
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_LOAD_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_LOAD_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "examples/savegame/protocol.h"
#include "io/tcp.h"

namespace fairsched::savegame {

struct FleetOptions {
  int connections = 128;
  // Several server processes (server_processes.h): when not empty, connection i goes to
  // servers[i % servers.size()] instead of RunFleet's `server`.
  std::vector<SocketAddress> servers;
  int threads = 2;
  int users = 1000;
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  // After `duration`, no new requests; replies are awaited this long, then the rest count
  // as kNoReply. Open loop: the backlog is still sent for this long (what is left counts
  // as unsent), then the replies to what was sent are awaited for as long again.
  std::chrono::nanoseconds drain_timeout = std::chrono::seconds(10);
  std::uint64_t seed = 1;
  // Open loop: offered requests per second, all threads together; 0: closed loop.
  double rate = 0;
  // A skewed workload (UserPicker): users 0 .. heavy_users-1 are picked heavy_factor times
  // as often as the others.
  int heavy_users = 0;
  int heavy_factor = 1;
  // Live progress once a second to `progress` (nullptr: none): on a terminal one line
  // rewritten with '\r', otherwise one line per second. Prefixed by `label`.
  std::FILE* progress = nullptr;
  std::string label;
  // Tests: the first fleet thread sleeps this long before its first connect, as a connect
  // whose SYN was dropped by a full listen queue waits for the kernel's retransmit.
  // Threads fleet only (not sent to a child process).
  std::chrono::nanoseconds first_connect_delay{0};
};

// Per thread, from /proc/self/task/*/schedstat: time on a CPU, and time spent runnable but
// waiting for a CPU (the host's CPU contention as this thread felt it). Without schedstat
// (a kernel without CONFIG_SCHED_INFO) the CPU time comes from .../stat and the wait is
// unknown (runqueue_wait_known false).
struct ThreadTimes {
  double cpu_seconds = 0;
  double runqueue_wait_seconds = 0;
  bool runqueue_wait_known = true;
};

// One thread's times and identity.
struct ThreadSample {
  int tid = 0;
  std::string name;
  ThreadTimes times;
};

// What happened to one request the fleet sent (for the set check, savegame/check.h).
inline constexpr std::uint8_t kNoReplyOutcome = 255;  // sent, no reply: outcome unknown
struct RequestOutcome {
  std::uint64_t request_id = 0;
  std::uint32_t user = 0;
  std::uint8_t outcome = kNoReplyOutcome;  // a SaveStatus, or kNoReplyOutcome
};

struct FleetResult {
  double seconds = 0;  // the sending phase
  bool open_loop = false;
  double offered_rate = 0;      // open loop: the configured rate
  std::int64_t arrivals = 0;    // open loop: requests that arrived (closed loop: == sent)
  std::int64_t unsent = 0;      // open loop: arrived, never sent (backlog at the drain's end)
  std::int64_t max_backlog = 0; // open loop: most arrivals waiting for a connection at once
  std::int64_t sent = 0;
  std::array<std::int64_t, kSaveStatusCount> replies{};  // by SaveStatus
  std::int64_t no_reply = 0;  // no reply before the drain timeout (or connection lost)
  std::int64_t connect_failures = 0;
  std::vector<std::int64_t> acked;           // per user: kOk replies
  std::vector<std::int64_t> unknown;         // per user: kUnknown replies or no reply
  // Sorted latencies, microseconds: from the send (closed loop) or the arrival (open loop)
  // to the reply; of every kOk reply, and of every reply whatever its status.
  std::vector<std::uint32_t> ok_latency_us;
  std::vector<std::uint32_t> reply_latency_us;
  std::vector<RequestOutcome> requests;  // every request sent, in no particular order
  std::vector<ThreadSample> client_threads;  // each fleet thread's times, taken as it ends
  std::int64_t ok() const { return replies[0]; }
};

// Picks the user of each save: uniformly among `users`, except that users 0 ..
// heavy_users-1 weigh heavy_factor each and the others 1. Needs 0 <= heavy_users <= users
// and heavy_factor >= 1.
class UserPicker {
 public:
  UserPicker(int users, int heavy_users, int heavy_factor);
  std::uint32_t Pick(std::mt19937_64& random);

 private:
  const std::uint32_t users_;
  const std::uint32_t heavy_users_;
  // Draws a slot: slots 0 .. users-1 are the users themselves, the rest are the heavy
  // users' extra (heavy_factor - 1) slots each.
  std::uniform_int_distribution<std::uint64_t> slot_;
};

// Runs the fleet against `server` and returns what it saw.
FleetResult RunFleet(const SocketAddress& server, const FleetOptions& options);

// The p-quantile (0..1) of sorted values, in milliseconds (from microseconds).
double QuantileMs(const std::vector<std::uint32_t>& sorted_us, double p);

// Reads every user's blob counter from the store with kCheck (plain blocking socket,
// pipelined). nullopt and a message in `error` if the store cannot be read.
std::optional<std::vector<std::uint64_t>> ReadAllCounters(const SocketAddress& store, int users,
                                                          std::string* error);

// Every live thread of this process.
std::vector<ThreadSample> SampleThreads();
// The calling thread.
ThreadTimes OwnThreadTimes();

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_LOAD_H_
