// Scenarios for AutoResetEvent's futex path (sync/auto_reset_event.cc with FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX) under
// the explorer's futex model (sync/explore/futex.h): several receivers on one futex word,
// and timed receives whose timeout races the wake-up. Shared by the test of the real code
// (auto_reset_event_futex_explore_test.cc) and the seeded-bug copy (auto_reset_event_futex_seeded_test.cc).
// A lost wakeup shows up as a deadlock (a receiver sleeps forever with nobody left to send).
#ifndef FAIRSCHED_TESTS_EXPLORE_AUTO_RESET_EVENT_FUTEX_SCENARIO_H_
#define FAIRSCHED_TESTS_EXPLORE_AUTO_RESET_EVENT_FUTEX_SCENARIO_H_

#include <chrono>

#include "sync/primitives.h"
#include "sync/auto_reset_event.h"

namespace fairsched::testing {

// Two receivers, one sender that sends twice: each Send is consumed by exactly one receiver
// (a receiver may only return once a Send of its own has started), and both return.
inline void TwoReceivers() {
  fairsched::AutoResetEvent signal;
  Atomic<int> sent{0};
  Atomic<int> received{0};
  auto receive = [&] {
    signal.Receive();
    explore::Check(received.fetch_add(1) < sent.load(),
                   "more receives returned than Sends started (one bit consumed twice)");
  };
  explore::Thread first([&] { receive(); });
  explore::Thread second([&] { receive(); });
  explore::Thread sender([&] {
    sent.fetch_add(1);
    signal.Send();
    // The second Send only after one receiver consumed the first: two Sends in a row may
    // coalesce into one bit.
    while (received.load() == 0) CpuRelax();
    sent.fetch_add(1);
    signal.Send();
  });
  first.Join();
  second.Join();
  sender.Join();
  explore::Check(!signal.TryReceive(), "a bit survived being received");
}

// A timed receive and an untimed one race for one Send; the timeout may fire before,
// during or after the wake-up. Whoever does not get the bit: the timed receiver gives up
// (never before its deadline), the untimed one gets a second Send.
inline void TimedAndUntimedReceivers() {
  fairsched::AutoResetEvent signal;
  const AutoResetEvent::Clock::time_point deadline =
      AutoResetEvent::Clock::now() + std::chrono::microseconds(100);
  bool timed_got = false;  // read after the join
  explore::Thread timed([&] {
    timed_got = signal.ReceiveUntil(deadline);
    explore::Check(timed_got || AutoResetEvent::Clock::now() >= deadline,
                   "a timed receive gave up before its deadline");
  });
  explore::Thread untimed([&] { signal.Receive(); });
  explore::Thread sender([&] { signal.Send(); });
  timed.Join();
  if (timed_got) signal.Send();  // the untimed receiver still waits for a bit
  untimed.Join();
  sender.Join();
  explore::Check(!signal.TryReceive(), "a bit survived being received");
}

// Two timed receivers and one Send: exactly one of them gets it (the other times out).
inline void TwoTimedReceivers() {
  fairsched::AutoResetEvent signal;
  const AutoResetEvent::Clock::time_point now = AutoResetEvent::Clock::now();
  bool got[2] = {false, false};  // read after the joins
  explore::Thread first([&] { got[0] = signal.ReceiveUntil(now + std::chrono::microseconds(50)); });
  explore::Thread second(
      [&] { got[1] = signal.ReceiveTimed(std::chrono::microseconds(100)); });
  explore::Thread sender([&] { signal.Send(); });
  first.Join();
  second.Join();
  sender.Join();
  const bool left = signal.TryReceive();
  explore::Check(static_cast<int>(got[0]) + static_cast<int>(got[1]) + static_cast<int>(left) == 1,
                 "one Send was received twice, or lost");
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_AUTO_RESET_EVENT_FUTEX_SCENARIO_H_
