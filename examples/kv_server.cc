// The key-value server (examples/kv_server.h) as a program:
//   kv_server [--backend=epoll|io_uring|iocp] [--port=7001] [--workers=2] [--seconds=N]
// The backend is chosen as in the other example servers (io/backend_choice.h); the default
// is the platform's (epoll, IOCP). Listens on 127.0.0.1, runs until SIGINT/SIGTERM (or N
// seconds), then prints its counters.
// Try it with any line client:  printf 'SET a 2\nhi\nGET a\nQUIT\n' | nc 127.0.0.1 7001
#include "examples/kv_server.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "examples/stop_wait.h"
#include "io/backend_choice.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"

namespace {

using namespace fairsched;

struct Flags {
  IoBackendKind backend = DefaultIoBackend();
  long port = 7001;
  long workers = 2;
  long seconds = 0;
};

// "--name=<number>" into *number within [low, high]; false if `arg` is not that flag.
bool NumberFlag(std::string_view arg, std::string_view name, long low, long high, long* number) {
  if (arg.substr(0, name.size()) != name) return false;
  char* end = nullptr;
  const std::string text(arg.substr(name.size()));
  *number = std::strtol(text.c_str(), &end, 10);
  return !text.empty() && *end == '\0' && *number >= low && *number <= high;
}

template <typename Backend>
int Run(const Flags& flags) {
  using Scheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;
  SignalWait stop_signal;  // SIGINT / SIGTERM from here on end the server gracefully
  Scheduler scheduler;
  scheduler.Start(static_cast<int>(flags.workers));
  examples::KvServer<Scheduler> server(scheduler, {});
  IoResult<SocketAddress> bound = server.Start(
      SocketAddress::FromHostPort("127.0.0.1", static_cast<std::uint16_t>(flags.port)).value());
  if (!bound.ok()) {
    std::fprintf(stderr, "kv_server: %s\n", bound.error().Message().c_str());
    return 1;
  }
  std::printf("kv_server: %s, listening on %s\n", std::string(IoBackendName(flags.backend)).c_str(),
              bound.value().ToString().c_str());
  const examples::KvServerStats stats = examples::ServeUntilStop(stop_signal, server, scheduler, flags.seconds);
  std::printf(
      "kv_server: accepted %lld, commands %lld, closed %lld, bad input %lld, idle %lld, "
      "slow reader %lld, stopped %lld\n",
      static_cast<long long>(stats.accepted), static_cast<long long>(stats.commands),
      static_cast<long long>(stats.closed), static_cast<long long>(stats.dropped_bad_input),
      static_cast<long long>(stats.dropped_idle), static_cast<long long>(stats.dropped_slow_reader),
      static_cast<long long>(stats.closed_by_stop));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    constexpr std::string_view kBackend = "--backend=";
    if (arg.substr(0, kBackend.size()) == kBackend &&
        ParseIoBackendKind(arg.substr(kBackend.size()))) {
      flags.backend = *ParseIoBackendKind(arg.substr(kBackend.size()));
    } else if (!NumberFlag(arg, "--port=", 0, 65535, &flags.port) &&
               !NumberFlag(arg, "--workers=", 1, 256, &flags.workers) &&
               !NumberFlag(arg, "--seconds=", 0, 1L << 30, &flags.seconds)) {
      std::fprintf(stderr,
                   "bad flag: %s\nusage: kv_server [--backend=%s] [--port=P] [--workers=N] "
                   "[--seconds=N]\n",
                   argv[i], std::string(IoBackendNames()).c_str());
      return 2;
    }
  }
  if (!IoBackendSupported(flags.backend)) {
    std::fprintf(stderr, "kv_server: %s is not available on this kernel or sandbox\n",
                 std::string(IoBackendName(flags.backend)).c_str());
    return 1;
  }
  return WithIoBackend(flags.backend, [&]<typename Backend>() { return Run<Backend>(flags); });
}
