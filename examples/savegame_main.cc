// savegame: the talk's savegame service over real loopback sockets, fairsched against the
// "Updater" baseline on the same workload (examples/savegame/savegame.h). Prints a progress
// line every second and a table at the end; exits 1 if any user's blob counter does not
// match the acknowledged saves.
//
//   savegame [--design=both|fairsched|updater] [--backend=epoll|io_uring] [--workers=2]
//            [--users=1000] [--connections=128] [--duration=10] (seconds per design)
//            [--blob_latency=0.5] (ms) [--cpu_cost=20] (us) [--fault=0] (fraction of store
//            answers dropped or delayed) [--step_timeout=100] (ms) [--updater_tick=5] (ms)
//            [--spin_us=20] (the fairsched schedulers' spin before a worker parks)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "examples/savegame/savegame.h"

namespace {

using namespace fairsched::savegame;

[[noreturn]] void Usage(const char* bad) {
  std::fprintf(stderr,
               "bad flag: %s\nusage: savegame [--design=both|fairsched|updater] "
               "[--backend=epoll|io_uring] [--workers=N] [--users=N] [--connections=N] "
               "[--duration=SECONDS] [--blob_latency=MS] [--cpu_cost=US] [--fault=FRACTION] "
               "[--step_timeout=MS] [--updater_tick=MS] [--spin_us=US]\n",
               bad);
  std::exit(2);
}

template <typename Duration>
std::chrono::nanoseconds Scaled(double value) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, typename Duration::period>(value));
}

}  // namespace

int main(int argc, char** argv) {
  SavegameOptions options;
  options.progress = stdout;
  std::string design = "both";
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
    } else {
      Usage(argv[i]);
    }
  }
  std::vector<Design> designs;
  if (design != "updater") designs.push_back(Design::kFairsched);
  if (design != "fairsched") designs.push_back(Design::kUpdater);

  std::vector<DesignReport> reports;
  for (Design d : designs) reports.push_back(RunDesign(d, options));
  PrintReports(stdout, options, reports);
  for (const DesignReport& report : reports) {
    if (!report.check_passed) {
      std::fprintf(stderr, "savegame: %s: correctness check FAILED: %s\n", ToString(report.design),
                   report.check_message.c_str());
      return 1;
    }
  }
  return 0;
}
