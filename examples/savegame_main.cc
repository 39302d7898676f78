// savegame: the talk's savegame service over real loopback sockets, fairsched against the
// "Updater" baseline on the same workload (examples/savegame/savegame.h). Prints a progress
// line every second and a table at the end; exits 1 if the correctness check fails
// (examples/savegame/check.h: the set of applied saves must be the acknowledged set).
//
//   savegame [--design=both|fairsched|updater] [--backend=epoll|io_uring] [--workers=2]
//            [--users=1000] [--connections=128] [--duration=10] (seconds per design)
//            [--rate=0] (open loop: offered requests/s, Poisson arrivals; 0: closed loop)
//            [--seed=1] [--client_threads=2]
//            [--blob_latency=0.5] (ms) [--cpu_cost=20] (us) [--fault=0] (fraction of store
//            answers dropped or delayed) [--step_timeout=100] (ms) [--updater_tick=5] (ms)
//            [--updater_start=same_tick|next_tick] (when the Updater starts a new job: in the
//            tick it arrives, the fair default, or in the next one, the earlier order)
//            [--heavy_users=0 --heavy_factor=1] (skewed load: users 0..N-1 save K times as
//            often, each save K times larger)
//            [--fleet=threads|process] (process: the client fleet in a child process, so
//            10,000 connections fit under a 20,000 open-file limit)
//            [--spin_us=20] (the fairsched schedulers' spin before a worker parks)
//            [--drain_timeout=10] (seconds to wait for replies after the load)
//            [--json=PATH] (write the run's JSON record; with both designs PATH gets
//            "-fairsched" / "-updater" before its ".json")
//            [--store=embedded|redis|redis://127.0.0.1:PORT] (the blob store: the embedded
//            one, a private redis-server started for the run, or a running Redis;
//            examples/savegame/redis_store.h; both designs, each on its own private server)
//            [--redis_restart_at=SECONDS] (with --store=redis: SIGKILL the private
//            redis-server that far into the load and restart it on its AOF)
//            [--server_processes=N] (N savegame server processes, children of this binary,
//            on the same store, the fleet's connections spread over them; 0: the server
//            in this process; examples/savegame/server_processes.h)
// A hidden flag plants a bug in the fairsched server for the tests that show the check
// catches it (tests/examples/savegame_seeded_bug_test.sh):
//            --seeded_bug=ack_without_upload|upload_twice|lock_does_not_exclude
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "examples/savegame/savegame.h"

namespace {

using namespace fairsched::savegame;

[[noreturn]] void Usage(const char* bad) {
  std::fprintf(stderr,
               "bad flag: %s\nusage: savegame [--design=both|fairsched|updater] "
               "[--backend=epoll|io_uring] [--workers=N] [--users=N] [--connections=N] "
               "[--duration=SECONDS] [--rate=REQUESTS_PER_S] [--seed=N] [--client_threads=N] "
               "[--blob_latency=MS] [--cpu_cost=US] [--fault=FRACTION] [--step_timeout=MS] "
               "[--updater_tick=MS] [--updater_start=same_tick|next_tick] [--heavy_users=N] "
               "[--heavy_factor=K] [--fleet=threads|process] [--spin_us=US] "
               "[--drain_timeout=SECONDS] [--json=PATH] "
               "[--store=embedded|redis|redis://HOST:PORT] [--redis_restart_at=SECONDS] "
               "[--server_processes=N]\n",
               bad);
  std::exit(2);
}

template <typename Duration>
std::chrono::nanoseconds Scaled(double value) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, typename Duration::period>(value));
}

// `path` for `design` when both designs run: "out.json" -> "out-fairsched.json".
std::string JsonPathFor(const std::string& path, Design design, bool both) {
  if (!both) return path;
  const std::size_t dot = path.rfind(".json");
  const std::string suffix = std::string("-") + ToString(design);
  return dot == std::string::npos ? path + suffix : path.substr(0, dot) + suffix + ".json";
}

}  // namespace

int main(int argc, char** argv) {
  SavegameOptions options;
  options.progress = stdout;
  std::string design = "both";
  std::string json_path;
  std::string server_process;  // the hidden flag of a server process (server_processes.h)
  std::string key_prefix;
  int server_index = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) Usage(argv[i]);
    const std::string name = arg.substr(2, eq - 2);
    const std::string value = arg.substr(eq + 1);
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    const bool numeric = !value.empty() && *end == '\0';
    const bool whole = numeric && number == static_cast<double>(static_cast<long>(number));
    if (name == "design" && (value == "both" || value == "fairsched" || value == "updater")) {
      design = value;
    } else if (name == "backend" && (value == "epoll" || value == "io_uring")) {
      options.backend = value == "epoll" ? BackendKind::kEpoll : BackendKind::kIoUring;
    } else if (name == "workers" && whole && number >= 1 && number <= 256) {
      options.workers = static_cast<int>(number);
    } else if (name == "users" && whole && number >= 1 && number <= 10'000'000) {
      options.users = static_cast<int>(number);
    } else if (name == "connections" && whole && number >= 1 && number <= 10'000) {
      options.connections = static_cast<int>(number);
    } else if (name == "duration" && numeric && number > 0 && number <= 3600) {
      options.duration = Scaled<std::chrono::seconds>(number);
    } else if (name == "blob_latency" && numeric && number >= 0 && number <= 10'000) {
      options.blob_latency = Scaled<std::chrono::milliseconds>(number);
    } else if (name == "cpu_cost" && numeric && number >= 0 && number <= 1'000'000) {
      options.cpu_cost = Scaled<std::chrono::microseconds>(number);
    } else if (name == "fault" && numeric && number >= 0 && number <= 1) {
      options.fault = number;
    } else if (name == "step_timeout" && numeric && number > 0 && number <= 60'000) {
      options.step_timeout = Scaled<std::chrono::milliseconds>(number);
    } else if (name == "spin_us" && numeric && number >= 0 && number <= 1000) {
      options.spin_before_park = Scaled<std::chrono::microseconds>(number);
    } else if (name == "updater_tick" && numeric && number >= 0 && number <= 10'000) {
      options.updater_tick = Scaled<std::chrono::milliseconds>(number);
    } else if (name == "updater_start" && (value == "same_tick" || value == "next_tick")) {
      options.updater_start =
          value == "same_tick" ? UpdaterStart::kSameTick : UpdaterStart::kNextTick;
    } else if (name == "fleet" && (value == "threads" || value == "process")) {
      options.fleet_in_child = value == "process";
    } else if (name == "heavy_users" && whole && number >= 0 && number <= 10'000'000) {
      options.heavy_users = static_cast<int>(number);
    } else if (name == "heavy_factor" && whole && number >= 1 && number <= 1000) {
      options.heavy_factor = static_cast<int>(number);
    } else if (name == "rate" && numeric && number >= 0 && number <= 10'000'000) {
      options.rate = number;
    } else if (name == "seed" && whole && number >= 0) {
      options.seed = static_cast<std::uint64_t>(number);
    } else if (name == "client_threads" && whole && number >= 1 && number <= 64) {
      options.client_threads = static_cast<int>(number);
    } else if (name == "drain_timeout" && numeric && number >= 0 && number <= 3600) {
      options.drain_timeout = Scaled<std::chrono::seconds>(number);
    } else if (name == "store" && value == "embedded") {
      options.redis = false;
    } else if (name == "store" && value == "redis") {
      options.redis = true;
      options.redis_address.clear();
    } else if (name == "store" && value.rfind("redis://", 0) == 0 && value.size() > 8) {
      options.redis = true;
      options.redis_address = value.substr(8);
    } else if (name == "redis_restart_at" && numeric && number > 0 && number <= 3600) {
      options.redis_restart_at = Scaled<std::chrono::seconds>(number);
    } else if (name == "server_processes" && whole && number >= 0 && number <= 64) {
      options.server_processes = static_cast<int>(number);
    } else if (name == "server_process" && !value.empty()) {
      server_process = value;
    } else if (name == "server_index" && whole && number >= 0 && number <= 64) {
      server_index = static_cast<int>(number);
    } else if (name == "redis_key_prefix" && !value.empty()) {
      key_prefix = value;
    } else if (name == "fault_delay" && numeric && number >= 0 && number <= 60'000) {
      options.fault_delay = Scaled<std::chrono::milliseconds>(number);
    } else if (name == "json" && !value.empty()) {
      json_path = value;
    } else if (name == "seeded_bug" && value == "ack_without_upload") {
      options.seeded_bug = SeededBug::kAckWithoutUpload;
    } else if (name == "seeded_bug" && value == "upload_twice") {
      options.seeded_bug = SeededBug::kUploadTwice;
    } else if (name == "seeded_bug" && value == "lock_does_not_exclude") {
      options.seeded_bug = SeededBug::kLockDoesNotExclude;
    } else {
      Usage(argv[i]);
    }
  }
  if (options.heavy_users > options.users) Usage("--heavy_users must not exceed --users");
  if (options.seeded_bug != SeededBug::kNone && design != "fairsched") {
    Usage("--seeded_bug needs --design=fairsched");
  }
  if (!server_process.empty()) {
    if (design == "both") Usage("--server_process needs --design=fairsched or updater");
    return ServeAsServerProcess(design == "updater" ? Design::kUpdater : Design::kFairsched,
                                options, server_process, key_prefix, server_index);
  }
  std::vector<Design> designs;
  if (design != "updater") designs.push_back(Design::kFairsched);
  if (design != "fairsched") designs.push_back(Design::kUpdater);

  std::vector<DesignReport> reports;
  for (Design d : designs) {
    reports.push_back(RunDesign(d, options));
    if (json_path.empty()) continue;
    const std::string path = JsonPathFor(json_path, d, designs.size() == 2);
    std::ofstream file(path);
    file << RunRecordJson(options, reports.back());
    if (!file.flush()) {
      std::fprintf(stderr, "savegame: cannot write %s\n", path.c_str());
      return 2;
    }
  }
  PrintReports(stdout, options, reports);
  int exit_code = 0;
  for (const DesignReport& report : reports) {
    if (!report.check.passed) {
      std::fprintf(stderr, "savegame: %s: correctness check FAILED: %s\n", ToString(report.design),
                   report.check.message.c_str());
      exit_code = 1;
    }
  }
  return exit_code;
}
