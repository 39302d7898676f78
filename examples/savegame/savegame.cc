// Running one design of the savegame service end to end, and the report table (savegame.h).
#include "examples/savegame/savegame.h"

#include <algorithm>
#include <map>
#include <optional>

#include "examples/savegame/blob_store.h"
#include "examples/savegame/fairsched_server.h"
#include "examples/savegame/updater_server.h"
#include "io/epoll_backend.h"
#include "io/io_uring_backend.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"

namespace fairsched::savegame {
namespace {

template <typename Backend>
using IoScheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;

TaskSchedulerOptions Named(const char* name, const SavegameOptions& savegame) {
  TaskSchedulerOptions options;
  options.name = name;
  options.spin_before_park = savegame.spin_before_park;
  return options;
}

SocketAddress Loopback() { return SocketAddress::FromHostPort("127.0.0.1", 0).value(); }

template <typename T>
T MustListen(IoResult<T> result, const char* what) {
  if (!result.ok()) {
    std::fprintf(stderr, "savegame: cannot listen for the %s: %s\n", what,
                 result.error().Message().c_str());
    std::exit(1);
  }
  return std::move(result).value();
}

// CPU seconds of each thread, and the sum of run-queue waits, between two snapshots.
void TimesSpent(const std::map<std::string, ThreadTimes>& before,
                const std::map<std::string, ThreadTimes>& after, DesignReport* report) {
  for (const auto& [name, times] : after) {
    const auto it = before.find(name);
    const ThreadTimes start = it == before.end() ? ThreadTimes{} : it->second;
    report->worker_cpu_seconds.push_back(times.cpu_seconds - start.cpu_seconds);
    report->worker_wait_seconds += times.runqueue_wait_seconds - start.runqueue_wait_seconds;
  }
}

// Every user's counter must equal its kOk replies; a kUnknown (or unanswered) request may
// or may not have applied, so each allows one more.
void Check(const SocketAddress& store, const SavegameOptions& options, DesignReport* report) {
  std::string error;
  std::optional<std::vector<std::uint64_t>> counters =
      ReadAllCounters(store, options.users, &error);
  if (!counters) {
    report->check_message = error;
    return;
  }
  for (int u = 0; u < options.users; ++u) {
    const auto counter = static_cast<std::int64_t>((*counters)[u]);
    const std::int64_t acked = report->fleet.acked[u];
    const std::int64_t unknown = report->fleet.unknown[u];
    ++report->users_checked;
    if (counter < acked || counter > acked + unknown) {
      if (report->mismatched_users++ == 0) {
        report->check_message = "user " + std::to_string(u) + ": counter " +
                                std::to_string(counter) + ", acknowledged " +
                                std::to_string(acked) + ", unknown " + std::to_string(unknown);
      }
    }
  }
  report->check_passed = report->mismatched_users == 0;
}

template <typename Backend>
DesignReport Run(Design design, const SavegameOptions& options) {
  DesignReport report;
  report.design = design;
  IoScheduler<Backend> store_scheduler(Named("blobstore", options));
  store_scheduler.Start(options.store_workers);
  BlobStoreOptions store_options;
  store_options.users = options.users;
  store_options.latency = options.blob_latency;
  store_options.fault = options.fault;
  store_options.fault_delay = options.fault_delay;
  BlobStore<IoScheduler<Backend>> store(store_scheduler, store_options);
  const SocketAddress store_address = MustListen(store.Start(Loopback()), "blob store");

  ServerOptions server_options;
  server_options.users = options.users;
  server_options.step_timeout = options.step_timeout;
  server_options.cpu_cost = options.cpu_cost;
  server_options.blob_payload = options.blob_payload;

  FleetOptions fleet;
  fleet.connections = options.connections;
  fleet.threads = options.client_threads;
  fleet.users = options.users;
  fleet.duration = options.duration;
  fleet.drain_timeout = options.drain_timeout;
  fleet.progress = options.progress;
  fleet.label = ToString(design);

  if (design == Design::kFairsched) {
    IoScheduler<Backend> scheduler(Named("savegame", options));
    scheduler.Start(options.workers);
    FairschedServer<IoScheduler<Backend>> server(scheduler, server_options, store_address);
    const SocketAddress address = MustListen(server.Start(Loopback()), "savegame server");
    const auto before = ThreadTimesOf("savegame-");
    report.fleet = RunFleet(address, fleet);
    TimesSpent(before, ThreadTimesOf("savegame-"), &report);
    report.scheduler_stats = scheduler.Stats();
    report.post_to_start = scheduler.LatencyHistogram();
    server.Stop();
    report.fenced_uploads = server.fenced_uploads();
    scheduler.Stop();
  } else {
    UpdaterOptions updater;
    updater.server = server_options;
    updater.threads = options.workers;
    updater.tick = options.updater_tick;
    UpdaterServer server(updater, store_address);
    const SocketAddress address = MustListen(server.Start(Loopback()), "updater server");
    const auto before = ThreadTimesOf("updater-");
    report.fleet = RunFleet(address, fleet);
    TimesSpent(before, ThreadTimesOf("updater-"), &report);
    server.Stop();
    report.fenced_uploads = server.fenced_uploads();
  }
  report.requests_per_second =
      report.fleet.seconds > 0 ? static_cast<double>(report.fleet.ok()) / report.fleet.seconds : 0;
  Check(store_address, options, &report);
  report.faults_injected = store.faults_injected();
  store.Stop();
  store_scheduler.Stop();
  return report;
}

}  // namespace

const char* ToString(Design design) {
  return design == Design::kFairsched ? "fairsched" : "updater";
}

DesignReport RunDesign(Design design, const SavegameOptions& options) {
  return options.backend == BackendKind::kIoUring ? Run<IoUringBackend>(design, options)
                                                  : Run<EpollBackend>(design, options);
}

void PrintReports(std::FILE* out, const SavegameOptions& options,
                  const std::vector<DesignReport>& reports) {
  std::fprintf(out, "\n%-10s %9s %8s %8s %8s %9s %8s  %-20s %11s  %s\n", "design", "req/s",
               "p50 ms", "p99 ms", "p999 ms", "ok", "errors", "CPU s per worker", "runq wait s",
               "check");
  for (const DesignReport& r : reports) {
    std::int64_t errors = r.fleet.no_reply;
    for (int s = 1; s < kSaveStatusCount; ++s) errors += r.fleet.replies[s];
    std::string cpu;
    for (double seconds : r.worker_cpu_seconds) {
      char part[32];
      std::snprintf(part, sizeof(part), "%s%.2f", cpu.empty() ? "" : " / ", seconds);
      cpu += part;
    }
    const std::vector<std::uint32_t>& latency = r.fleet.ok_latency_us;
    std::fprintf(out, "%-10s %9.0f %8.2f %8.2f %8.2f %9lld %8lld  %-20s %11.2f  %s\n",
                 ToString(r.design), r.requests_per_second, QuantileMs(latency, 0.5),
                 QuantileMs(latency, 0.99), QuantileMs(latency, 0.999),
                 static_cast<long long>(r.fleet.ok()), static_cast<long long>(errors), cpu.c_str(),
                 r.worker_wait_seconds,
                 r.check_passed ? ("ok (" + std::to_string(r.users_checked) + " users)").c_str()
                                : ("FAILED: " + r.check_message).c_str());
  }
  for (const DesignReport& r : reports) {
    std::string kinds;
    for (int s = 1; s < kSaveStatusCount; ++s) {
      if (r.fleet.replies[s] == 0) continue;
      kinds += std::string(" ") + ToString(static_cast<SaveStatus>(s)) + "=" +
               std::to_string(r.fleet.replies[s]);
    }
    if (r.fleet.no_reply > 0) kinds += " no_reply=" + std::to_string(r.fleet.no_reply);
    if (r.fleet.connect_failures > 0) {
      kinds += " client_connect_failed=" + std::to_string(r.fleet.connect_failures);
    }
    std::fprintf(
        out, "%-10s errors by kind:%s; store faults injected: %lld; uploads fenced: %lld\n",
        ToString(r.design), kinds.empty() ? " none" : kinds.c_str(),
        static_cast<long long>(r.faults_injected), static_cast<long long>(r.fenced_uploads));
  }
  for (const DesignReport& r : reports) {
    if (r.scheduler_stats.empty()) continue;
    // Upper bounds of the log2 buckets that hold the quantiles: "p99 <= 64 us".
    const auto bucket_us = [&](double q) {
      const std::size_t b = r.post_to_start.QuantileBucket(q);
      return static_cast<double>(LatencyHistogram::BucketUpperBound(b) + 1) / 1e3;
    };
    std::fprintf(out,
                 "%-10s scheduler: post-to-start latency p50 <= %.0f us, p99 <= %.0f us (%llu "
                 "sampled posts)\n",
                 ToString(r.design), bucket_us(0.5), bucket_us(0.99),
                 static_cast<unsigned long long>(r.post_to_start.Total()));
    for (std::size_t i = 0; i < r.scheduler_stats.size(); ++i) {
      const WorkerStats& w = r.scheduler_stats[i];
      std::fprintf(out,
                   "%-10s   worker %zu: %llu tasks, sched-role %llu times, parked %llu, role "
                   "sleeps %llu, wakes sent %llu, idle wake-ups %llu\n",
                   "", i, static_cast<unsigned long long>(w.tasks_executed),
                   static_cast<unsigned long long>(w.sched_role_taken),
                   static_cast<unsigned long long>(w.parks),
                   static_cast<unsigned long long>(w.role_sleeps),
                   static_cast<unsigned long long>(w.wakes_sent),
                   static_cast<unsigned long long>(w.idle_wakeups));
    }
  }
  if (reports.size() == 2 && reports[1].requests_per_second > 0) {
    std::fprintf(out, "fairsched / updater throughput: %.1fx\n",
                 reports[0].requests_per_second / reports[1].requests_per_second);
  }
  std::fprintf(out,
               "(%d workers, %d users, %d client connections, %.0f s per design, blob latency "
               "%.2f ms, CPU %.0f us per save, step deadline %.0f ms, fault %.3f, updater tick "
               "%.1f ms; latency of acknowledged saves; runq wait: time the server threads were "
               "runnable but waited for a CPU)\n",
               options.workers, options.users, options.connections,
               std::chrono::duration<double>(options.duration).count(),
               std::chrono::duration<double, std::milli>(options.blob_latency).count(),
               std::chrono::duration<double, std::micro>(options.cpu_cost).count(),
               std::chrono::duration<double, std::milli>(options.step_timeout).count(),
               options.fault,
               std::chrono::duration<double, std::milli>(options.updater_tick).count());
}

}  // namespace fairsched::savegame
