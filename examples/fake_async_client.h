// FakeAsyncClient: a stand-in for the README's HTTPClient. Requests complete on the
// client's own thread after a chosen latency, so the examples exercise the real pattern
// (start async work, get a callback on another thread, wake the task) without a network.
//
// Completion callbacks run on the client thread, one at a time, never under the client's
// lock, and the client touches neither the request nor the callback after a callback
// returns, so a callback may cause its request's owner to be deleted.
#ifndef FAIRSCHED_EXAMPLES_FAKE_ASYNC_CLIENT_H_
#define FAIRSCHED_EXAMPLES_FAKE_ASYNC_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "sync/primitives.h"

namespace fairsched::examples {

class FakeAsyncClient {
 public:
  using Clock = std::chrono::steady_clock;

  // A cancellable request. Owned by the caller; must stay alive until its callback ran.
  // `result` and `cancelled` are written by the client before the callback is called.
  struct Request {
    std::string url;
    std::string result;
    bool cancelled = false;
  };

  FakeAsyncClient();
  // Stops the client thread. Requests still in flight never complete.
  ~FakeAsyncClient();
  FakeAsyncClient(const FakeAsyncClient&) = delete;
  FakeAsyncClient& operator=(const FakeAsyncClient&) = delete;

  // Starts `request`; after `latency` sets request->result to "<url>: ok" and calls `done`.
  void Get(Request* request, std::chrono::nanoseconds latency, std::function<void()> done);

  // Fire-and-forget call without a request object (HEAD, PUT, ...): `done` runs after
  // `latency`.
  void Call(std::chrono::nanoseconds latency, std::function<void()> done);

  // If `request` has not completed yet, completes it now: result "cancelled",
  // cancelled = true, and its callback runs. No effect on a completed request.
  void Cancel(Request* request);

  // Number of calls completed so far.
  std::uint64_t CompletedCount();

 private:
  struct Pending {
    Request* request;  // null for Call()
    std::function<void()> done;
  };
  struct Entry {
    Clock::time_point due;
    std::uint64_t id;
    bool operator>(const Entry& other) const {
      return due != other.due ? due > other.due : id > other.id;
    }
  };

  void Schedule(Request* request, std::chrono::nanoseconds latency, std::function<void()> done);
  void Run();

  Mutex mu_;
  ConditionVariable cv_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> timeline_;  // mu_
  std::unordered_map<std::uint64_t, Pending> pending_;                            // mu_
  std::unordered_map<Request*, std::uint64_t> ids_;                               // mu_
  std::uint64_t next_id_ = 0;                                                     // mu_
  std::uint64_t completed_ = 0;                                                   // mu_
  bool stopped_ = false;                                                          // mu_
  std::thread thread_;
};

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_FAKE_ASYNC_CLIENT_H_
