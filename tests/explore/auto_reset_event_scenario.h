// AutoResetEvent scenarios for the interleaving explorer, shared by the test of the real AutoResetEvent
// (auto_reset_event_explore_test.cc, which compiles sync/auto_reset_event.cc with the instrumented primitives)
// and the planted-bug copies (planted_bugs_test.cc). A lost wakeup shows up as a deadlock
// (a receiver waits forever with nobody left to send), which the explorer reports.
#ifndef FAIRSCHED_TESTS_EXPLORE_AUTO_RESET_EVENT_SCENARIO_H_
#define FAIRSCHED_TESTS_EXPLORE_AUTO_RESET_EVENT_SCENARIO_H_

#include <string>

#include "sync/primitives.h"

namespace fairsched::testing {

// Two threads hand a token back and forth `kRounds` times through two signals: each
// Receive must be woken by the other side's Send, with no coalescing possible (one Send
// per Receive, strictly alternating). Checks that the payload written before each Send is
// the one seen after the matching Receive.
template <typename SignalT, int kRounds = 2>
void PingPong() {
  SignalT ping;
  SignalT pong;
  int payload = 0;  // written before each Send, read after the matching Receive
  explore::Thread a([&] {
    for (int round = 0; round < kRounds; ++round) {
      payload = 2 * round + 1;
      ping.Send();
      pong.Receive();
      explore::Check(payload == 2 * round + 2, "pong payload " + std::to_string(payload));
    }
  });
  explore::Thread b([&] {
    for (int round = 0; round < kRounds; ++round) {
      ping.Receive();
      explore::Check(payload == 2 * round + 1, "ping payload " + std::to_string(payload));
      payload = 2 * round + 2;
      pong.Send();
    }
  });
  a.Join();
  b.Join();
}

// Two senders, one receiver that receives once: it must wake whatever the order (two Sends
// may coalesce into one bit; one Receive consumes it). Afterwards at most one bit is left.
template <typename SignalT>
void TwoSendersOneReceiver() {
  SignalT signal;
  explore::Thread receiver([&] { signal.Receive(); });
  explore::Thread first([&] { signal.Send(); });
  explore::Thread second([&] { signal.Send(); });
  receiver.Join();
  first.Join();
  second.Join();
  signal.TryReceive();
  explore::Check(!signal.TryReceive(), "a bit survived being received");
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_AUTO_RESET_EVENT_SCENARIO_H_
