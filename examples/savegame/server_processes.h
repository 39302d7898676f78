// Several savegame server processes behind one client fleet (`--server_processes=N`): each
// child is the same savegame binary, started with fork+exec and the hidden flag
// --server_process, that runs one server design (its own scheduler, or the Updater's
// threads) on the run's store (the embedded store in the parent, or Redis under the run's
// key prefix) until the parent tells it to stop. The fleet spreads its connections over the
// children round-robin (FleetOptions::servers).
//
// The exactly-once rule across processes: a user's profile lock is only in-process, so two
// children can save one user at once. The store's compare-and-set on the version is what
// keeps their saves apart: of two uploads on the same version one is applied and the other
// refused, and the refused one is answered kConflict (nothing applied; the check still
// proves it: a kConflict request found in the store's log fails the check). So with N > 1
// the check accepts kConflict replies (CheckInput::conflicts_allowed), and the records count
// them: that is what giving up the shared lock costs. A fence (protocol.h) on a version that
// another process has moved on is answered kUnknown (the check lets unknown outcomes be
// either, with faults).
//
// Contract:
//   - Start spawns the N children and waits (up to `start_timeout`) for each to print the
//     address it listens on; on any failure it kills and reaps the ones it started and
//     returns false with a message.
//   - Stop closes each child's stdin (its signal to stop serving), reads its last line (its
//     statistics) and reaps it, each within `stop_timeout` (then SIGKILL and reap).
//   - The destructor kills (SIGKILL) and reaps every child still running; each child also
//     dies with the parent thread that forked it (PR_SET_PDEATHSIG): no orphans.
//
// The child side is ServeAsServerProcess (savegame.h).
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_SERVER_PROCESSES_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_SERVER_PROCESSES_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "io/socket_address.h"

namespace fairsched::savegame {

// What a child reports when it stops ("stats FENCED FAULTS CPU_SECONDS").
struct ServerProcessStats {
  std::int64_t fenced_uploads = 0;
  std::int64_t faults_injected = 0;  // on Redis: by the child's Redis client
  double cpu_seconds = 0;            // the child's user + system time
};

class ServerProcesses {
 public:
  ServerProcesses() = default;
  ~ServerProcesses();
  ServerProcesses(const ServerProcesses&) = delete;
  ServerProcesses& operator=(const ServerProcesses&) = delete;

  // Starts `count` children: `binary` with `args` (flags; --server_process among them) and
  // --server_index=I, I = 0 .. count-1 (each child's own fault-injection stream).
  bool Start(const std::string& binary, const std::vector<std::string>& args, int count,
             std::chrono::milliseconds start_timeout, std::string* error);
  const std::vector<SocketAddress>& addresses() const { return addresses_; }
  // Stops every child; false (and `error`) if one did not stop cleanly.
  bool Stop(std::vector<ServerProcessStats>* stats, std::string* error);

 private:
  struct Child {
    pid_t pid = -1;
    int to_child = -1;    // the child's stdin
    int from_child = -1;  // the child's stdout
  };
  void KillAll();
  std::vector<Child> children_;
  std::vector<SocketAddress> addresses_;
};

// The path of the running binary (/proc/self/exe), for the children; "" if unknown.
std::string SelfExecutable();

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_SERVER_PROCESSES_H_
