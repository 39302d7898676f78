// The savegame pipeline simulation. See the header.
#include "examples/savegame_pipeline.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "examples/fake_async_client.h"
#include "examples/notification.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"

namespace fairsched::examples {
namespace {

using Clock = std::chrono::steady_clock;

// Asynchronous per-user lock. A job that finds the profile held is queued as a waiter and
// goes to PostWait; Unlock hands the lock straight to the oldest waiter and returns it,
// for the caller to Wakeup.
class ProfileLocks {
 public:
  explicit ProfileLocks(int users) : entries_(users) {}

  // True if `task` now holds `user`'s lock; false if it was queued behind the holder.
  bool LockOrQueue(int user, Task* task) {
    MutexLock lock(mu_);
    Entry& e = entries_[user];
    if (!e.held) {
      e.held = true;
      return true;
    }
    e.waiters.push_back(task);
    return false;
  }

  // Releases `user`'s lock; returns the waiter that now holds it, or nullptr.
  Task* Unlock(int user) {
    MutexLock lock(mu_);
    Entry& e = entries_[user];
    if (e.waiters.empty()) {
      e.held = false;
      return nullptr;
    }
    Task* next = e.waiters.front();
    e.waiters.pop_front();
    return next;  // ownership passes over; `held` stays true
  }

 private:
  struct Entry {
    bool held = false;
    std::deque<Task*> waiters;
  };
  Mutex mu_;
  std::vector<Entry> entries_;  // guarded by mu_
};

void SpinFor(std::chrono::nanoseconds duration) {
  const auto end = Clock::now() + duration;
  while (Clock::now() < end) CpuRelax();
}

struct Shared {
  Shared(const PipelineOptions& o) : options(o), locks(o.users), holders(o.users) {}
  const PipelineOptions& options;
  TaskScheduler sched;
  FakeAsyncClient client;
  ProfileLocks locks;
  std::vector<Atomic<int>> holders;  // jobs inside the locked section, per user (checks)
  Atomic<bool> lock_violation{false};
  Atomic<int> lock_waits{0};
  Atomic<int> finished{0};
  Notification all_finished;
};

class SaveJob {
 public:
  SaveJob(Shared* shared, int user, std::chrono::nanoseconds download_latency,
          std::chrono::nanoseconds upload_latency)
      : shared_(shared),
        user_(user),
        download_latency_(download_latency),
        upload_latency_(upload_latency),
        task_(this, &SaveJob::Lock) {
    request_.url = "blob/" + std::to_string(user);
  }

  void Submit() {
    posted_ = Clock::now();
    shared_->sched.Post(&task_);
  }

  bool timed_out() const { return timed_out_; }
  std::chrono::nanoseconds latency() const { return done_ - posted_; }

 private:
  // Step 1: lock the profile, or wait for the holder to hand it over.
  void Lock(Task*) {
    task_.SetCallback(this, &SaveJob::Download);
    if (shared_->locks.LockOrQueue(user_, &task_)) {
      shared_->sched.Post(&task_);
    } else {
      shared_->lock_waits.fetch_add(1, std::memory_order_relaxed);
      // A hand-over Wakeup that lands before this PostWait is remembered by the task.
      shared_->sched.PostWait(&task_);
    }
  }

  // Step 2: start the download with a deadline; wait for its Signal or the deadline.
  void Download(Task*) {
    // Relaxed: only the count matters; the lock hand-over orders the holders.
    if (shared_->holders[user_].fetch_add(1, std::memory_order_relaxed) != 0) {
      shared_->lock_violation.store(true, std::memory_order_relaxed);
    }
    task_.SetCallback(this, &SaveJob::DownloadDone);
    task_.SetDelay(shared_->options.download_timeout);
    shared_->client.Get(&request_, download_latency_, [this] { shared_->sched.Signal(&task_); });
    shared_->sched.Post(&task_);
  }

  void DownloadDone(Task*) {
    if (!task_.ReceiveSignal()) {
      // Deadline: cancel, and wait for the cancellation's Signal before going on (the
      // client still references request_ until then).
      shared_->client.Cancel(&request_);
      shared_->sched.PostWait(&task_);
      return;
    }
    if (request_.cancelled) {
      timed_out_ = true;
      Unlock(&task_);
      return;
    }
    // Yield between the network step and the CPU step, as a real job would.
    task_.SetCallback(this, &SaveJob::Work);
    shared_->sched.Post(&task_);
  }

  // Step 3: change the blob (CPU), then upload it.
  void Work(Task* task) {
    SpinFor(shared_->options.cpu_work);
    task_.SetCallback(this, &SaveJob::Unlock);
    TaskScheduler* sched = &shared_->sched;
    shared_->client.Call(upload_latency_, [sched, task] { sched->Post(task); });
  }

  // Step 4: unlock (hand the profile to the next waiter) and finish.
  void Unlock(Task*) {
    shared_->holders[user_].fetch_sub(1, std::memory_order_relaxed);
    if (Task* next = shared_->locks.Unlock(user_)) shared_->sched.Wakeup(next);
    done_ = Clock::now();
    Shared* shared = shared_;
    // acq_rel: the last job sees every other job's fields and publishes them to the runner.
    if (shared->finished.fetch_add(1, std::memory_order_acq_rel) + 1 == shared->options.jobs) {
      shared->all_finished.Notify();
    }
  }

  Shared* shared_;
  const int user_;
  const std::chrono::nanoseconds download_latency_;
  const std::chrono::nanoseconds upload_latency_;
  FakeAsyncClient::Request request_;
  Clock::time_point posted_;
  Clock::time_point done_;
  bool timed_out_ = false;
  Task task_;
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

}  // namespace

PipelineReport RunSavegamePipeline(const PipelineOptions& options) {
  PipelineReport report;
  report.jobs = options.jobs;
  if (options.jobs <= 0) return report;

  Shared shared(options);
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<int> pick_user(0, options.users - 1);
  std::uniform_int_distribution<std::int64_t> download(options.download_min.count(),
                                                       options.download_max.count());
  std::uniform_int_distribution<std::int64_t> upload(options.upload_min.count(),
                                                     options.upload_max.count());
  std::bernoulli_distribution slow(options.slow_download_fraction);
  std::vector<std::unique_ptr<SaveJob>> jobs;
  jobs.reserve(options.jobs);
  for (int i = 0; i < options.jobs; ++i) {
    const bool is_slow = slow(rng);
    report.slow_downloads += is_slow ? 1 : 0;
    const std::chrono::microseconds down =
        is_slow ? options.slow_download_latency : std::chrono::microseconds(download(rng));
    jobs.push_back(std::make_unique<SaveJob>(&shared, pick_user(rng), down,
                                             std::chrono::microseconds(upload(rng))));
  }

  shared.sched.Start(options.workers);
  const auto start = Clock::now();
  const auto gap = std::chrono::duration<double>(1.0 / options.arrival_rate);
  for (int i = 0; i < options.jobs; ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(gap * i));
    jobs[i]->Submit();
  }
  shared.all_finished.WaitForNotification();
  const auto end = Clock::now();
  shared.sched.Stop();
  report.worker_stats = shared.sched.Stats();
  report.post_to_start = shared.sched.LatencyHistogram();

  std::vector<double> latencies;
  latencies.reserve(options.jobs);
  for (const auto& job : jobs) {
    latencies.push_back(std::chrono::duration<double, std::micro>(job->latency()).count());
    if (job->timed_out()) {
      ++report.timed_out;
    } else {
      ++report.completed;
    }
  }
  report.lock_waits = shared.lock_waits.load(std::memory_order_relaxed);
  report.lock_violation = shared.lock_violation.load(std::memory_order_relaxed);
  report.seconds = std::chrono::duration<double>(end - start).count();
  report.throughput = options.jobs / report.seconds;
  report.max_us = *std::max_element(latencies.begin(), latencies.end());
  report.p50_us = Percentile(latencies, 0.50);
  report.p90_us = Percentile(latencies, 0.90);
  report.p99_us = Percentile(latencies, 0.99);
  return report;
}

}  // namespace fairsched::examples
