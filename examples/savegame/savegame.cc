// Running one design of the savegame service end to end, the report table and the JSON
// record (savegame.h).
#include "examples/savegame/savegame.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>
#include <unordered_set>

#include "examples/redis/redis_server_process.h"
#include "examples/savegame/blob_store.h"
#include "examples/savegame/fairsched_server.h"
#include "examples/savegame/fleet_process.h"
#include "examples/savegame/redis_store.h"
#include "examples/savegame/server_processes.h"
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

// The machine's load average line, without the newline ("" if unreadable).
std::string LoadAverage() {
  std::string line;
  std::getline(std::ifstream("/proc/loadavg"), line);
  return line;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string RoleOf(const std::string& name) {
  const auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  if (starts("savegame-") || starts("updater-")) return "server";
  if (starts("blobstore-")) return "store";
  if (starts("client-")) return "client";
  return "other";
}

// Every thread's times over the load: the difference between two samples for a thread in
// both, the whole of `after` for one that started in between, plus the fleet's threads
// (they measured themselves as they ended). Fills the per-server-worker columns too.
void TimesSpent(const std::vector<ThreadSample>& before, const std::vector<ThreadSample>& after,
                const std::vector<ThreadSample>& clients, DesignReport* report) {
  std::map<int, ThreadTimes> start;
  for (const ThreadSample& sample : before) start[sample.tid] = sample.times;
  std::vector<ThreadUsage> usage;
  for (const ThreadSample& sample : after) {
    ThreadUsage thread{sample.name, RoleOf(sample.name), sample.tid, sample.times};
    const auto it = start.find(sample.tid);
    if (it != start.end()) {
      thread.times.cpu_seconds -= it->second.cpu_seconds;
      thread.times.runqueue_wait_seconds -= it->second.runqueue_wait_seconds;
    }
    usage.push_back(thread);
  }
  for (const ThreadSample& sample : clients) {
    usage.push_back({sample.name, "client", sample.tid, sample.times});
  }
  const auto rank = [](const std::string& role) {
    return role == "server" ? 0 : role == "store" ? 1 : role == "client" ? 2 : 3;
  };
  std::stable_sort(usage.begin(), usage.end(), [&](const ThreadUsage& a, const ThreadUsage& b) {
    return std::make_pair(rank(a.role), a.name) < std::make_pair(rank(b.role), b.name);
  });
  for (const ThreadUsage& thread : usage) {
    if (thread.role != "server") continue;
    report->worker_cpu_seconds.push_back(thread.times.cpu_seconds);
    report->worker_wait_seconds += thread.times.runqueue_wait_seconds;
  }
  report->threads = std::move(usage);
}

// The set check (check.h) on what the fleet saw, the store's log and the counters read back.
void Check(const SocketAddress& store, std::vector<AppliedSave> applied,
           const SavegameOptions& options, DesignReport* report) {
  CheckInput input;
  input.users = options.users;
  std::string error;
  std::optional<std::vector<std::uint64_t>> counters =
      ReadAllCounters(store, options.users, &error);
  if (!counters) {
    report->check.message = "cannot read the counters back: " + error;
    return;
  }
  input.counters = std::move(*counters);
  input.requests = report->fleet.requests;
  input.applied = std::move(applied);
  input.faults_injected = options.fault > 0;
  input.conflicts_allowed = options.server_processes > 1;
  report->check = CheckSaves(input);
}

// Descriptors the job's process needs: the server side of every client connection and the
// client side too unless the fleet runs in a child, both sides of at most one store
// connection per user (a store call holds the user's profile lock), and spare.
std::uint64_t DescriptorsNeeded(const SavegameOptions& options) {
  const std::uint64_t connections = static_cast<std::uint64_t>(options.connections);
  const std::uint64_t store = std::min<std::uint64_t>(connections, options.users);
  return (options.fleet_in_child ? 1 : 2) * connections + 2 * store + 256;
}

FleetResult RunTheFleet(const SocketAddress& server, const FleetOptions& fleet,
                        const SavegameOptions& options) {
  return options.fleet_in_child ? RunFleetInChildProcess(server, fleet) : RunFleet(server, fleet);
}

ServerOptions ServerOptionsOf(const SavegameOptions& options) {
  ServerOptions server_options;
  server_options.users = options.users;
  server_options.step_timeout = options.step_timeout;
  server_options.cpu_cost = options.cpu_cost;
  server_options.blob_payload = options.blob_payload;
  server_options.seeded_bug = options.seeded_bug;
  server_options.heavy_users = options.heavy_users;
  server_options.heavy_factor = options.heavy_factor;
  return server_options;
}

UpdaterOptions UpdaterOptionsOf(const SavegameOptions& options) {
  UpdaterOptions updater;
  updater.server = ServerOptionsOf(options);
  updater.threads = options.workers;
  updater.tick = options.updater_tick;
  updater.start = options.updater_start;
  return updater;
}

FleetOptions FleetOptionsOf(Design design, const SavegameOptions& options) {
  FleetOptions fleet;
  fleet.connections = options.connections;
  fleet.threads = options.client_threads;
  fleet.users = options.users;
  fleet.duration = options.duration;
  fleet.rate = options.rate;
  fleet.seed = options.seed;
  fleet.heavy_users = options.heavy_users;
  fleet.heavy_factor = options.heavy_factor;
  fleet.drain_timeout = options.drain_timeout;
  fleet.first_connect_delay = options.first_connect_delay;
  fleet.progress = options.progress;
  fleet.label = ToString(design);
  return fleet;
}

// Loads the upload script into Redis (RedisStore::Prepare), or exits with a message.
template <typename Scheduler>
void PrepareOrExit(Scheduler& scheduler, RedisStore<Scheduler>& store,
                   const SocketAddress& address) {
  const IoError prepared =
      coro::Spawn(scheduler, store.Prepare(coro::DeadlineAfter(std::chrono::seconds(5)))).Get();
  if (!prepared.ok()) {
    std::fprintf(stderr, "savegame: cannot load the upload script into Redis at %s: %s\n",
                 address.ToString().c_str(), prepared.Message().c_str());
    std::exit(2);
  }
}

// The Updater's Redis settings (updater_server.h), with the Lua script loaded from a
// one-worker scheduler that stops before the load (the Updater itself has no scheduler).
// Exits with a message if Redis cannot be prepared.
template <typename Backend>
UpdaterRedis UpdaterOnRedis(const SocketAddress& address, const RedisStoreOptions& store_options,
                            const SavegameOptions& options) {
  UpdaterRedis redis;
  redis.address = address;
  redis.key_prefix = store_options.key_prefix;
  redis.fault = store_options.fault;
  redis.fault_delay = store_options.fault_delay;
  redis.seed = store_options.seed;
  IoScheduler<Backend> loader(Named("blobstore", options));
  loader.Start(1);
  RedisStore<IoScheduler<Backend>> store(loader, address, store_options);
  PrepareOrExit(loader, store, address);
  redis.script_sha = store.script_sha();
  store.Stop();
  loader.Stop();
  return redis;
}

std::string Flag(const char* name, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "--%s=%.17g", name, value);
  return text;
}

// The flags a server process gets: its store, its design and the server options.
std::vector<std::string> ServerProcessArgs(Design design, const SavegameOptions& o,
                                           const std::string& store,
                                           const std::string& key_prefix) {
  std::vector<std::string> args = {
      "--server_process=" + store,
      std::string("--design=") + ToString(design),
      Flag("workers", o.workers),
      Flag("users", o.users),
      Flag("step_timeout", std::chrono::duration<double, std::milli>(o.step_timeout).count()),
      Flag("cpu_cost", std::chrono::duration<double, std::micro>(o.cpu_cost).count()),
      Flag("fault", o.fault),
      Flag("fault_delay", std::chrono::duration<double, std::milli>(o.fault_delay).count()),
      Flag("seed", static_cast<double>(o.seed)),
      Flag("heavy_users", o.heavy_users),
      Flag("heavy_factor", o.heavy_factor),
      Flag("updater_tick", std::chrono::duration<double, std::milli>(o.updater_tick).count()),
      Flag("spin_us", std::chrono::duration<double, std::micro>(o.spin_before_park).count()),
      std::string("--updater_start=") +
          (o.updater_start == UpdaterStart::kSameTick ? "same_tick" : "next_tick"),
  };
  if (!key_prefix.empty()) args.push_back("--redis_key_prefix=" + key_prefix);
  return args;
}

// The fleet against options.server_processes children on `store` (server_processes.h):
// starts them, runs the fleet over all of them, stops and reaps them, and adds what they
// report (fenced uploads, faults injected by their Redis clients, CPU time per process).
void RunOnServerProcesses(Design design, const SavegameOptions& options,
                          const std::string& store, const std::string& key_prefix,
                          DesignReport* report) {
  const std::string binary =
      options.server_binary.empty() ? SelfExecutable() : options.server_binary;
  ServerProcesses processes;
  std::string error;
  if (!processes.Start(binary, ServerProcessArgs(design, options, store, key_prefix),
                       options.server_processes, std::chrono::seconds(30), &error)) {
    std::fprintf(stderr, "savegame: cannot start the server processes (%s): %s\n",
                 binary.c_str(), error.c_str());
    std::exit(2);
  }
  FleetOptions fleet = FleetOptionsOf(design, options);
  fleet.servers = processes.addresses();
  const std::vector<ThreadSample> before = SampleThreads();
  report->fleet = RunTheFleet(fleet.servers[0], fleet, options);
  TimesSpent(before, SampleThreads(), report->fleet.client_threads, report);
  std::vector<ServerProcessStats> stats;
  if (!processes.Stop(&stats, &error)) {
    std::fprintf(stderr, "savegame: %s\n", error.c_str());
    report->check.message = error;
  }
  report->fenced_uploads = 0;
  report->faults_injected = 0;
  report->worker_cpu_seconds.clear();  // one entry per server process
  for (const ServerProcessStats& child : stats) {
    report->fenced_uploads += child.fenced_uploads;
    report->faults_injected += child.faults_injected;
    report->worker_cpu_seconds.push_back(child.cpu_seconds);
  }
}

// A run's report before the run: the design, the raised file limit, the start time and load.
DesignReport NewReport(Design design, const SavegameOptions& options) {
  DesignReport report;
  report.design = design;
  report.file_limit = RaiseFileLimit(DescriptorsNeeded(options));
  report.started_utc = UtcNow();
  report.loadavg_before = LoadAverage();
  return report;
}

// One design on Redis (redis_store.h; the Updater through UpdaterRedis): a private redis-server for the run unless
// options.redis_address names one; the check reads the counters and the applied-request
// log back from Redis. Each run writes under its own key prefix.
template <typename Backend>
DesignReport RunOnRedis(Design design, const SavegameOptions& options) {
  DesignReport report = NewReport(design, options);
  const auto began = std::chrono::steady_clock::now();

  redis::RedisServerProcess private_redis;
  std::string dir;
  SocketAddress address;
  if (options.redis_address.empty()) {
    std::string pattern =
        std::filesystem::temp_directory_path().string() + "/savegame-redis.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "savegame: cannot make a directory for redis-server\n");
      std::exit(2);
    }
    dir = pattern;
    std::string error;
    if (!private_redis.Start(dir, &error)) {
      std::fprintf(stderr, "savegame: %s\n", error.c_str());
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
      std::exit(2);
    }
    address = private_redis.address();
    std::fprintf(stderr,
                 "savegame: started a private redis-server (PID %d) on %s, appendonly, in %s\n",
                 static_cast<int>(private_redis.pid()), address.ToString().c_str(), dir.c_str());
  } else {
    IoResult<SocketAddress> parsed = SocketAddress::Parse(options.redis_address);
    if (!parsed.ok()) {
      std::fprintf(stderr, "savegame: bad Redis address %s\n", options.redis_address.c_str());
      std::exit(2);
    }
    address = parsed.value();
  }
  // --redis_restart_at: a thread kills the private server that long into the load and
  // starts it again at once; it then stays until the run is over (the server dies with the
  // thread that started it: PR_SET_PDEATHSIG). If the load ends before the restart (a run
  // shorter than redis_restart_at, or the thread not scheduled for that long on a loaded
  // machine), the check waits for it: the restart always comes before the check reads Redis,
  // and the report says it came after the load (redis_restart_after_load).
  Mutex restart_mu;
  ConditionVariable restart_cv;
  bool run_over = false;      // guarded by restart_mu
  bool restart_done = false;  // guarded by restart_mu
  std::thread restarter;
  if (options.redis_restart_at.count() > 0) {
    if (dir.empty()) {
      std::fprintf(stderr, "savegame: --redis_restart_at needs --store=redis (a private server)\n");
      std::exit(2);
    }
    restarter = std::thread([&] {
      MutexLock lock(restart_mu);
      if (restart_cv.wait_for(lock, options.redis_restart_at, [&] { return run_over; })) return;
      lock.unlock();
      const auto killed = std::chrono::steady_clock::now();
      private_redis.Kill();
      std::string error;
      const bool restarted = private_redis.Restart(&error);
      const double down_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - killed)
              .count();
      std::fprintf(stderr, "savegame: killed redis-server (SIGKILL) and %s after %.0f ms%s%s\n",
                   restarted ? "restarted it" : "could NOT restart it", down_ms,
                   restarted ? "" : ": ", error.c_str());
      lock.lock();
      report.redis_restarted = restarted;
      report.redis_down_ms = down_ms;
      restart_done = true;
      restart_cv.notify_all();
      restart_cv.wait(lock, [&] { return run_over; });
    });
  }
  RedisStoreOptions store_options;
  store_options.key_prefix =
      "savegame:" + std::to_string(::getpid()) + ":" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ":";
  store_options.fault = options.fault;
  store_options.fault_delay = options.fault_delay;
  store_options.seed = options.seed;

  const auto prepare = [&](IoScheduler<Backend>& scheduler,
                           RedisStore<IoScheduler<Backend>>& store) {
    PrepareOrExit(scheduler, store, address);
  };
  if (options.server_processes > 0) {
    RunOnServerProcesses(design, options, "redis://" + address.ToString(),
                         store_options.key_prefix, &report);
  } else if (design == Design::kUpdater) {
    UpdaterServer server(UpdaterOptionsOf(options),
                         UpdaterOnRedis<Backend>(address, store_options, options));
    const SocketAddress server_address = MustListen(server.Start(Loopback()), "updater server");
    const std::vector<ThreadSample> before = SampleThreads();
    report.fleet = RunTheFleet(server_address, FleetOptionsOf(design, options), options);
    TimesSpent(before, SampleThreads(), report.fleet.client_threads, &report);
    server.Stop();
    report.fenced_uploads = server.fenced_uploads();
    report.jobs_started_late = server.jobs_started_late();
    report.faults_injected = server.faults_injected();
  } else {
    IoScheduler<Backend> scheduler(Named("savegame", options));
    scheduler.Start(options.workers);
    RedisStore<IoScheduler<Backend>> store(scheduler, address, store_options);
    prepare(scheduler, store);
    FairschedServer<IoScheduler<Backend>> server(scheduler, ServerOptionsOf(options), &store);
    const SocketAddress server_address = MustListen(server.Start(Loopback()), "savegame server");
    const std::vector<ThreadSample> before = SampleThreads();
    report.fleet = RunTheFleet(server_address, FleetOptionsOf(design, options), options);
    TimesSpent(before, SampleThreads(), report.fleet.client_threads, &report);
    report.scheduler_stats = scheduler.Stats();
    report.post_to_start = scheduler.LatencyHistogram();
    server.Stop();
    store.Stop();
    report.fenced_uploads = server.fenced_uploads();
    report.faults_injected = store.faults_injected();
    scheduler.Stop();
  }
  report.requests_per_second =
      report.fleet.seconds > 0 ? static_cast<double>(report.fleet.ok()) / report.fleet.seconds : 0;

  if (restarter.joinable()) {
    MutexLock lock(restart_mu);
    if (!restart_done) {
      report.redis_restart_after_load = true;
      std::fprintf(stderr, "savegame: the load ended before the Redis restart; the check waits for it\n");
      restart_cv.wait(lock, [&] { return restart_done; });
    }
  }

  // The check, on what Redis holds.
  IoScheduler<Backend> check_scheduler(Named("blobstore", options));
  check_scheduler.Start(1);
  CheckInput input;
  input.users = options.users;
  const IoError read =
      coro::Spawn(check_scheduler,
                  ReadBackFromRedis(&check_scheduler, address, store_options.key_prefix,
                                    options.users, &input.counters, &input.applied))
          .Get();
  check_scheduler.Stop();
  if (restarter.joinable()) {
    {
      MutexLock lock(restart_mu);
      run_over = true;
    }
    restart_cv.notify_all();
    restarter.join();
  }
  if (read.ok()) {
    input.requests = report.fleet.requests;
    // A restart is a fault: requests in flight may end unknown.
    input.faults_injected = options.fault > 0 || options.redis_restart_at.count() > 0;
    input.conflicts_allowed = options.server_processes > 1;
    report.check = CheckSaves(input);
    std::unordered_set<std::uint64_t> applied;
    for (const AppliedSave& save : input.applied) applied.insert(save.request_id);
    for (const RequestOutcome& request : report.fleet.requests) {
      if (request.outcome != kNoReplyOutcome &&
          request.outcome != static_cast<std::uint8_t>(SaveStatus::kUnknown)) {
        continue;
      }
      ++(applied.count(request.request_id) > 0 ? report.unsettled_applied
                                               : report.unsettled_not_applied);
    }
  } else {
    report.check.message =
        "cannot read the counters and the applied log back from Redis: " + read.Message();
  }
  if (!dir.empty()) {
    private_redis.Stop();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  report.loadavg_after = LoadAverage();
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return report;
}

template <typename Backend>
DesignReport Run(Design design, const SavegameOptions& options) {
  if (options.redis) return RunOnRedis<Backend>(design, options);
  DesignReport report = NewReport(design, options);
  const auto began = std::chrono::steady_clock::now();
  IoScheduler<Backend> store_scheduler(Named("blobstore", options));
  store_scheduler.Start(options.store_workers);
  BlobStoreOptions store_options;
  store_options.users = options.users;
  store_options.latency = options.blob_latency;
  store_options.fault = options.fault;
  store_options.fault_delay = options.fault_delay;
  BlobStore<IoScheduler<Backend>> store(store_scheduler, store_options);
  const SocketAddress store_address = MustListen(store.Start(Loopback()), "blob store");

  const ServerOptions server_options = ServerOptionsOf(options);
  const FleetOptions fleet = FleetOptionsOf(design, options);

  if (options.server_processes > 0) {
    RunOnServerProcesses(design, options, "embedded://" + store_address.ToString(), "", &report);
  } else if (design == Design::kFairsched) {
    IoScheduler<Backend> scheduler(Named("savegame", options));
    scheduler.Start(options.workers);
    FairschedServer<IoScheduler<Backend>> server(scheduler, server_options, store_address);
    const SocketAddress address = MustListen(server.Start(Loopback()), "savegame server");
    const std::vector<ThreadSample> before = SampleThreads();
    report.fleet = RunTheFleet(address, fleet, options);
    TimesSpent(before, SampleThreads(), report.fleet.client_threads, &report);
    report.scheduler_stats = scheduler.Stats();
    report.post_to_start = scheduler.LatencyHistogram();
    server.Stop();
    report.fenced_uploads = server.fenced_uploads();
    scheduler.Stop();
  } else {
    UpdaterServer server(UpdaterOptionsOf(options), store_address);
    const SocketAddress address = MustListen(server.Start(Loopback()), "updater server");
    const std::vector<ThreadSample> before = SampleThreads();
    report.fleet = RunTheFleet(address, fleet, options);
    TimesSpent(before, SampleThreads(), report.fleet.client_threads, &report);
    server.Stop();
    report.fenced_uploads = server.fenced_uploads();
    report.jobs_started_late = server.jobs_started_late();
  }
  report.requests_per_second =
      report.fleet.seconds > 0 ? static_cast<double>(report.fleet.ok()) / report.fleet.seconds : 0;
  Check(store_address, store.AppliedSaves(), options, &report);
  report.faults_injected = store.faults_injected();
  store.Stop();
  store_scheduler.Stop();
  report.loadavg_after = LoadAverage();
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return report;
}

// The child side of --server_processes (ServeAsServerProcess).
template <typename Backend>
int Serve(Design design, const SavegameOptions& options, const std::string& store,
          const std::string& key_prefix, int index) {
  const bool redis = store.rfind("redis://", 0) == 0;
  const bool embedded = store.rfind("embedded://", 0) == 0;
  IoResult<SocketAddress> parsed =
      SocketAddress::Parse(redis ? store.substr(8) : embedded ? store.substr(11) : "");
  if (!parsed.ok() || !(redis || embedded)) {
    std::fprintf(stderr, "savegame server process: bad store %s\n", store.c_str());
    return 2;
  }
  const SocketAddress address = parsed.value();
  RedisStoreOptions store_options;
  store_options.key_prefix = key_prefix;
  store_options.fault = options.fault;
  store_options.fault_delay = options.fault_delay;
  store_options.seed = options.seed + 1000003 * static_cast<std::uint64_t>(index);
  const auto announce = [](const SocketAddress& listening) {
    std::printf("listening %s\n", listening.ToString().c_str());
    std::fflush(stdout);
  };
  // Serves until the parent closes our stdin (or dies: PR_SET_PDEATHSIG).
  const auto wait_for_stop = [] {
    char byte = 0;
    while (true) {
      const ssize_t n = ::read(0, &byte, 1);
      if (n == 0 || (n < 0 && errno != EINTR)) return;
    }
  };
  std::int64_t fenced = 0;
  std::int64_t faults = 0;
  if (design == Design::kUpdater) {
    std::optional<UpdaterServer> server;
    if (redis) {
      server.emplace(UpdaterOptionsOf(options),
                     UpdaterOnRedis<Backend>(address, store_options, options));
    } else {
      server.emplace(UpdaterOptionsOf(options), address);
    }
    announce(MustListen(server->Start(Loopback()), "updater server"));
    wait_for_stop();
    server->Stop();
    fenced = server->fenced_uploads();
    faults = server->faults_injected();
  } else {
    IoScheduler<Backend> scheduler(Named("savegame", options));
    scheduler.Start(options.workers);
    std::optional<RedisStore<IoScheduler<Backend>>> redis_store;
    std::optional<FairschedServer<IoScheduler<Backend>>> server;
    if (redis) {
      redis_store.emplace(scheduler, address, store_options);
      PrepareOrExit(scheduler, *redis_store, address);
      server.emplace(scheduler, ServerOptionsOf(options), &*redis_store);
    } else {
      server.emplace(scheduler, ServerOptionsOf(options), address);
    }
    announce(MustListen(server->Start(Loopback()), "savegame server"));
    wait_for_stop();
    server->Stop();
    fenced = server->fenced_uploads();
    if (redis_store) {
      redis_store->Stop();
      faults = redis_store->faults_injected();
    }
    server.reset();
    redis_store.reset();
    scheduler.Stop();
  }
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  std::printf("stats %lld %lld %.6f\n", static_cast<long long>(fenced),
              static_cast<long long>(faults), seconds(usage.ru_utime) + seconds(usage.ru_stime));
  std::fflush(stdout);
  return 0;
}

}  // namespace

int ServeAsServerProcess(Design design, const SavegameOptions& options, const std::string& store,
                         const std::string& key_prefix, int index) {
  return Serve<EpollBackend>(design, options, store, key_prefix, index);
}

const char* ToString(Design design) {
  return design == Design::kFairsched ? "fairsched" : "updater";
}

FileLimit RaiseFileLimit(std::uint64_t needed) {
  FileLimit result;
  result.needed = needed;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return result;
  result.soft_before = limit.rlim_cur;
  result.hard_before = limit.rlim_max;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
    std::uint64_t ceiling = needed;
    std::ifstream("/proc/sys/fs/nr_open") >> ceiling;  // the kernel's cap on the hard limit
    rlimit raised{std::min<rlim_t>(needed, ceiling), std::min<rlim_t>(needed, ceiling)};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised{limit.rlim_max, limit.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  result.soft = limit.rlim_cur;
  result.hard = limit.rlim_max;
  if (result.soft != result.soft_before || result.hard != result.hard_before) {
    std::fprintf(stderr,
                 "savegame: raised the open-file limit (RLIMIT_NOFILE) from soft %llu / hard %llu "
                 "to soft %llu / hard %llu (this run needs about %llu)\n",
                 static_cast<unsigned long long>(result.soft_before),
                 static_cast<unsigned long long>(result.hard_before),
                 static_cast<unsigned long long>(result.soft),
                 static_cast<unsigned long long>(result.hard),
                 static_cast<unsigned long long>(needed));
  }
  if (result.soft < needed) {
    std::fprintf(stderr,
                 "savegame: warning: the open-file limit %llu is below the about %llu descriptors "
                 "this run needs; connections beyond it fail (client_connect_failed)\n",
                 static_cast<unsigned long long>(result.soft),
                 static_cast<unsigned long long>(needed));
  }
  return result;
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
                 r.check.passed ? ("ok (" + std::to_string(r.check.users_checked) + " users)").c_str()
                                : "FAILED");
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
    if (r.fleet.open_loop) {
      std::fprintf(out,
                   "%-10s open loop: offered %.0f req/s, %lld arrivals, %lld never sent, at most "
                   "%lld waiting for a connection (latency from the intended send time)\n",
                   ToString(r.design), r.fleet.offered_rate,
                   static_cast<long long>(r.fleet.arrivals), static_cast<long long>(r.fleet.unsent),
                   static_cast<long long>(r.fleet.max_backlog));
    }
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
  if (options.server_processes > 0) {
    std::fprintf(out,
                 "(%d server processes: \"CPU s per worker\" is each process's CPU time over "
                 "its life; their run-queue wait is not measured; conflicts are saves of one "
                 "user that two processes overlapped on, refused by the store)\n",
                 options.server_processes);
  }
  if (reports.size() == 2 && reports[1].requests_per_second > 0) {
    std::fprintf(out, "fairsched / updater throughput: %.1fx\n",
                 reports[0].requests_per_second / reports[1].requests_per_second);
  }
  std::fprintf(out,
               "(%d workers, %d users, %d client connections, %.3g s per design, blob latency "
               "%.2f ms, CPU %.0f us per save, step deadline %.0f ms, fault %.3f, updater tick "
               "%.1f ms (%s), %d heavy users x%d; latency of acknowledged saves; runq wait: time "
               "the server threads were runnable but waited for a CPU)\n",
               options.workers, options.users, options.connections,
               std::chrono::duration<double>(options.duration).count(),
               std::chrono::duration<double, std::milli>(options.blob_latency).count(),
               std::chrono::duration<double, std::micro>(options.cpu_cost).count(),
               std::chrono::duration<double, std::milli>(options.step_timeout).count(),
               options.fault,
               std::chrono::duration<double, std::milli>(options.updater_tick).count(),
               options.updater_start == UpdaterStart::kSameTick ? "new jobs start in their tick"
                                                                : "new jobs wait a tick",
               options.heavy_users, options.heavy_factor);
  for (const DesignReport& r : reports) {
    if (!options.redis || options.redis_restart_at.count() == 0) continue;
    std::fprintf(out,
                 "%-10s redis-server killed (SIGKILL) %.1f s into the load: %s after %.0f ms; "
                 "requests in flight whose outcome the server could not settle (unknown or no "
                 "reply): %lld, of which Redis's log shows %lld applied and %lld not applied; "
                 "every acknowledged save is in Redis after the restart: %s\n",
                 ToString(r.design),
                 std::chrono::duration<double>(options.redis_restart_at).count(),
                 r.redis_restarted ? (r.redis_restart_after_load ? "restarted (after the load)"
                                                                 : "restarted")
                                   : "NOT restarted",
                 r.redis_down_ms,
                 static_cast<long long>(r.unsettled_applied + r.unsettled_not_applied),
                 static_cast<long long>(r.unsettled_applied),
                 static_cast<long long>(r.unsettled_not_applied),
                 r.check.passed ? "yes (the check passed)" : "see the check");
  }
  if (options.redis) {
    std::fprintf(
        out,
        "(store: Redis at %s; the blob latency above does not apply; faults are "
        "injected by our Redis client: answers dropped or delayed after Redis applied)\n",
        options.redis_address.empty() ? "a private redis-server" : options.redis_address.c_str());
  }
}

namespace {

// Appends JSON text to a string: objects and arrays with commas placed by the writer.
class JsonWriter {
 public:
  std::string Take() { return std::move(text_); }
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  // Inside an object: the next value's key.
  void Key(const std::string& key) {
    Separate();
    Quote(key);
    text_ += ':';
    after_key_ = true;
  }
  void String(const std::string& value) {
    Separate();
    Quote(value);
  }
  void Number(double value) {
    Separate();
    if (!std::isfinite(value)) {
      text_ += "null";
      return;
    }
    char number[40];
    std::snprintf(number, sizeof(number), "%.10g", value);
    text_ += number;
  }
  void Integer(std::int64_t value) {
    Separate();
    text_ += std::to_string(value);
  }
  void Bool(bool value) {
    Separate();
    text_ += value ? "true" : "false";
  }
  void Null() {
    Separate();
    text_ += "null";
  }
  // Shorthands for "key": value.
  void Field(const std::string& key, double value) {
    Key(key);
    Number(value);
  }
  void IntField(const std::string& key, std::int64_t value) {
    Key(key);
    Integer(value);
  }
  void StringField(const std::string& key, const std::string& value) {
    Key(key);
    String(value);
  }
  void BoolField(const std::string& key, bool value) {
    Key(key);
    Bool(value);
  }

 private:
  void Open(char bracket) {
    Separate();
    text_ += bracket;
    first_ = true;
  }
  void Close(char bracket) {
    text_ += bracket;
    first_ = false;
  }
  void Quote(const std::string& value) {
    text_ += '"';
    for (const char c : value) {
      if (c == '"' || c == '\\') {
        text_ += '\\';
        text_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
        text_ += escaped;
      } else {
        text_ += c;
      }
    }
    text_ += '"';
  }
  // A comma before every value but the first of its container and one that follows a key.
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_) text_ += ',';
    first_ = false;
  }
  std::string text_;
  bool first_ = true;
  bool after_key_ = false;
};

// "1.85 1.70 1.60 3/512 12345" -> {"1min":1.85,"5min":1.70,"15min":1.60,"text":...}.
void LoadAverageJson(JsonWriter& json, const std::string& key, const std::string& line) {
  json.Key(key);
  json.BeginObject();
  double one = NAN, five = NAN, fifteen = NAN;
  std::sscanf(line.c_str(), "%lf %lf %lf", &one, &five, &fifteen);
  json.Field("1min", one);
  json.Field("5min", five);
  json.Field("15min", fifteen);
  json.StringField("text", line);
  json.EndObject();
}

// Percentiles of sorted microseconds, in milliseconds.
void LatencyJson(JsonWriter& json, const std::string& key,
                 const std::vector<std::uint32_t>& sorted_us) {
  json.Key(key);
  json.BeginObject();
  json.IntField("count", static_cast<std::int64_t>(sorted_us.size()));
  if (sorted_us.empty()) {
    for (const char* name : {"mean", "p50", "p90", "p99", "p999", "max"}) {
      json.Key(name);
      json.Null();
    }
  } else {
    double sum = 0;
    for (std::uint32_t us : sorted_us) sum += us;
    json.Field("mean", sum / static_cast<double>(sorted_us.size()) / 1000.0);
    json.Field("p50", QuantileMs(sorted_us, 0.5));
    json.Field("p90", QuantileMs(sorted_us, 0.9));
    json.Field("p99", QuantileMs(sorted_us, 0.99));
    json.Field("p999", QuantileMs(sorted_us, 0.999));
    json.Field("max", sorted_us.back() / 1000.0);
  }
  json.EndObject();
}

const char* ToString(SeededBug bug) {
  switch (bug) {
    case SeededBug::kNone:
      return "none";
    case SeededBug::kAckWithoutUpload:
      return "ack_without_upload";
    case SeededBug::kUploadTwice:
      return "upload_twice";
    case SeededBug::kLockDoesNotExclude:
      return "lock_does_not_exclude";
  }
  return "?";
}

double Ms(std::chrono::nanoseconds d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

std::string RunRecordJson(const SavegameOptions& options, const DesignReport& r) {
  JsonWriter json;
  json.BeginObject();
  json.StringField("record", "savegame-run/1");
  json.StringField("design", ToString(r.design));
  json.StringField("mode", r.fleet.open_loop ? "open" : "closed");
  json.StringField("latency_from", r.fleet.open_loop ? "intended_send" : "send");
  json.StringField("started_utc", r.started_utc);
  json.Field("wall_seconds", r.wall_seconds);

  json.Key("config");
  json.BeginObject();
  json.IntField("workers", options.workers);
  json.IntField("store_workers", options.store_workers);
  json.IntField("users", options.users);
  json.IntField("connections", options.connections);
  json.IntField("client_threads", options.client_threads);
  json.StringField("fleet", options.fleet_in_child ? "process" : "threads");
  json.Field("duration_s", std::chrono::duration<double>(options.duration).count());
  json.Field("offered_rate", options.rate);
  json.IntField("seed", static_cast<std::int64_t>(options.seed));
  json.Field("blob_latency_ms", Ms(options.blob_latency));
  json.Field("cpu_cost_us", Ms(options.cpu_cost) * 1000.0);
  json.Field("fault", options.fault);
  json.Field("fault_delay_ms", Ms(options.fault_delay));
  json.Field("step_timeout_ms", Ms(options.step_timeout));
  json.Field("updater_tick_ms", Ms(options.updater_tick));
  json.StringField("updater_start",
                   options.updater_start == UpdaterStart::kSameTick ? "same_tick" : "next_tick");
  json.IntField("heavy_users", options.heavy_users);
  json.IntField("heavy_factor", options.heavy_factor);
  json.Field("drain_timeout_ms", Ms(options.drain_timeout));
  json.Field("spin_us", Ms(options.spin_before_park) * 1000.0);
  json.IntField("blob_payload", static_cast<std::int64_t>(options.blob_payload));
  json.StringField("backend", options.backend == BackendKind::kIoUring ? "io_uring" : "epoll");
  json.StringField("seeded_bug", ToString(options.seeded_bug));
  json.StringField("store", options.redis ? "redis" : "embedded");
  json.Field("redis_restart_at_s", std::chrono::duration<double>(options.redis_restart_at).count());
  json.IntField("server_processes", options.server_processes);
  json.EndObject();
  if (options.server_processes > 0) {
    // Each server process's CPU time (user + system) over its whole life.
    json.Key("server_process_cpu_seconds");
    json.BeginArray();
    for (double seconds : r.worker_cpu_seconds) json.Number(seconds);
    json.EndArray();
  }

  json.Key("nofile_limit");
  json.BeginObject();
  json.IntField("soft_before", static_cast<std::int64_t>(r.file_limit.soft_before));
  json.IntField("hard_before", static_cast<std::int64_t>(r.file_limit.hard_before));
  json.IntField("soft", static_cast<std::int64_t>(r.file_limit.soft));
  json.IntField("hard", static_cast<std::int64_t>(r.file_limit.hard));
  json.IntField("needed", static_cast<std::int64_t>(r.file_limit.needed));
  json.EndObject();

  LoadAverageJson(json, "loadavg_before", r.loadavg_before);
  LoadAverageJson(json, "loadavg_after", r.loadavg_after);

  json.Field("requests_per_second", r.requests_per_second);
  json.Field("seconds", r.fleet.seconds);
  json.IntField("arrivals", r.fleet.arrivals);
  json.IntField("sent", r.fleet.sent);
  json.IntField("unsent", r.fleet.unsent);
  json.IntField("max_backlog", r.fleet.max_backlog);
  json.IntField("acknowledged", r.fleet.ok());
  json.IntField("no_reply", r.fleet.no_reply);
  json.IntField("connect_failures", r.fleet.connect_failures);
  json.Key("replies");
  json.BeginObject();
  for (int s = 0; s < kSaveStatusCount; ++s) {
    json.IntField(ToString(static_cast<SaveStatus>(s)), r.fleet.replies[s]);
  }
  json.EndObject();
  json.IntField("faults_injected", r.faults_injected);
  json.IntField("fenced_uploads", r.fenced_uploads);
  if (r.design == Design::kUpdater) json.IntField("jobs_started_late", r.jobs_started_late);
  if (options.redis && options.redis_restart_at.count() > 0) {
    json.Key("redis_restart");
    json.BeginObject();
    json.IntField("restarted", r.redis_restarted ? 1 : 0);
    json.IntField("after_load", r.redis_restart_after_load ? 1 : 0);
    json.Field("down_ms", r.redis_down_ms);
    json.IntField("unsettled_applied", r.unsettled_applied);
    json.IntField("unsettled_not_applied", r.unsettled_not_applied);
    json.EndObject();
  }

  json.Key("latency_ms");
  json.BeginObject();
  LatencyJson(json, "acknowledged", r.fleet.ok_latency_us);
  LatencyJson(json, "all_replies", r.fleet.reply_latency_us);
  json.EndObject();

  bool wait_known = true;
  std::map<std::string, std::pair<double, double>> by_role;  // role -> cpu, wait
  json.Key("threads");
  json.BeginArray();
  for (const ThreadUsage& thread : r.threads) {
    json.BeginObject();
    json.StringField("name", thread.name);
    json.StringField("role", thread.role);
    json.IntField("tid", thread.tid);
    json.Field("cpu_seconds", thread.times.cpu_seconds);
    json.Key("runqueue_wait_seconds");
    if (thread.times.runqueue_wait_known) {
      json.Number(thread.times.runqueue_wait_seconds);
    } else {
      json.Null();
    }
    json.EndObject();
    wait_known = wait_known && thread.times.runqueue_wait_known;
    by_role[thread.role].first += thread.times.cpu_seconds;
    by_role[thread.role].second += thread.times.runqueue_wait_seconds;
  }
  json.EndArray();
  json.BoolField("runqueue_wait_available", wait_known);
  json.Key("by_role");
  json.BeginObject();
  for (const auto& [role, times] : by_role) {
    json.Key(role);
    json.BeginObject();
    json.Field("cpu_seconds", times.first);
    json.Key("runqueue_wait_seconds");
    if (wait_known) {
      json.Number(times.second);
    } else {
      json.Null();
    }
    json.EndObject();
  }
  json.EndObject();

  if (!r.scheduler_stats.empty()) {
    const auto bucket_us = [&](double q) {
      const std::size_t b = r.post_to_start.QuantileBucket(q);
      return static_cast<double>(LatencyHistogram::BucketUpperBound(b) + 1) / 1e3;
    };
    json.Key("scheduler");
    json.BeginObject();
    const bool sampled = r.post_to_start.Total() > 0;
    json.Field("post_to_start_p50_us_at_most", sampled ? bucket_us(0.5) : NAN);
    json.Field("post_to_start_p99_us_at_most", sampled ? bucket_us(0.99) : NAN);
    json.IntField("post_to_start_samples", static_cast<std::int64_t>(r.post_to_start.Total()));
    json.EndObject();
  }

  json.Key("check");
  json.BeginObject();
  json.BoolField("passed", r.check.passed);
  json.StringField("message", r.check.message);
  json.IntField("users_checked", r.check.users_checked);
  json.IntField("acknowledged", r.check.acknowledged);
  json.IntField("applied", r.check.applied);
  json.IntField("unknown", r.check.unknown);
  json.IntField("conflicts", r.check.conflicts);
  json.EndObject();
  json.EndObject();
  return json.Take() + "\n";
}

}  // namespace fairsched::savegame
