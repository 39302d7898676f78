// FakeAsyncClient: one thread completing requests in due-time order. See the header.
#include "examples/fake_async_client.h"

#include <utility>

namespace fairsched::examples {

FakeAsyncClient::FakeAsyncClient() : thread_([this] { Run(); }) {}

FakeAsyncClient::~FakeAsyncClient() {
  {
    MutexLock lock(mu_);
    stopped_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void FakeAsyncClient::Get(Request* request, std::chrono::nanoseconds latency,
                          std::function<void()> done) {
  Schedule(request, latency, std::move(done));
}

void FakeAsyncClient::Call(std::chrono::nanoseconds latency, std::function<void()> done) {
  Schedule(nullptr, latency, std::move(done));
}

void FakeAsyncClient::Schedule(Request* request, std::chrono::nanoseconds latency,
                               std::function<void()> done) {
  const Clock::time_point due = Clock::now() + latency;
  bool wake = false;
  {
    MutexLock lock(mu_);
    const std::uint64_t id = next_id_++;
    pending_.emplace(id, Pending{request, std::move(done)});
    if (request != nullptr) ids_[request] = id;
    wake = timeline_.empty() || due < timeline_.top().due;
    timeline_.push(Entry{due, id});
  }
  if (wake) cv_.notify_one();
}

void FakeAsyncClient::Cancel(Request* request) {
  {
    MutexLock lock(mu_);
    auto it = ids_.find(request);
    if (it == ids_.end()) return;  // already completed
    request->cancelled = true;
    // A second timeline entry for the same id; whichever comes first completes the
    // request, the other finds no pending entry and is skipped.
    timeline_.push(Entry{Clock::now(), it->second});
  }
  cv_.notify_one();
}

std::uint64_t FakeAsyncClient::CompletedCount() {
  MutexLock lock(mu_);
  return completed_;
}

void FakeAsyncClient::Run() {
  MutexLock lock(mu_);
  while (!stopped_) {
    if (timeline_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const Entry next = timeline_.top();
    if (Clock::now() < next.due) {
      cv_.wait_until(lock, next.due);
      continue;
    }
    timeline_.pop();
    auto it = pending_.find(next.id);
    if (it == pending_.end()) continue;  // stale entry of a cancelled request
    Pending done = std::move(it->second);
    pending_.erase(it);
    if (done.request != nullptr) {
      ids_.erase(done.request);
      done.request->result = done.request->cancelled ? "cancelled" : done.request->url + ": ok";
    }
    ++completed_;
    lock.unlock();
    // From here on the request may be freed by whoever the callback wakes.
    done.done();
    lock.lock();
  }
}

}  // namespace fairsched::examples
