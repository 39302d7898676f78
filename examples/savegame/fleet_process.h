// The savegame client fleet in a child process (load.h, RunFleet), for runs with more
// connections than one process may hold open files for: both ends of every loopback
// connection in one process need two descriptors each, so 10,000 connections do not fit
// under a 20,000 RLIMIT_NOFILE; with the fleet in a child each process holds one end.
//
// The child is forked from the running job, runs RunFleet (its own threads, no progress
// line: a stdio lock another thread of the parent held at the fork stays held in the
// child), sends the FleetResult back through a pipe and leaves with _exit (no destructor
// of the parent's state runs twice). The client threads measure their own CPU time as they
// end, so the record keeps them. Plain builds only: the sanitizers' allocators are not
// fork-safe in a multi-threaded process (a child of GCC 12's ASan can deadlock in malloc,
// TSan refuses threads started after such a fork); the tests skip this mode there.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_FLEET_PROCESS_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_FLEET_PROCESS_H_

#include <optional>
#include <string>

#include "examples/savegame/load.h"

namespace fairsched::savegame {

// RunFleet in a child process. Exits the program with a message if the child fails.
FleetResult RunFleetInChildProcess(const SocketAddress& server, const FleetOptions& options);

// The byte form of a FleetResult that crosses the pipe, and back (nullopt if malformed).
std::string SerializeFleetResult(const FleetResult& result);
std::optional<FleetResult> ParseFleetResult(const std::string& bytes);

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_FLEET_PROCESS_H_
