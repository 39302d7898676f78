// The coroutine echo server (examples/echo_server.h) as a program:
//   echo_server --backend=epoll|io_uring --workers=2 --address=127.0.0.1 --port=7000
//               (Windows, `--config=mingw`: --backend=iocp, the only one there)
//               [--framed]  (4-byte length-prefixed frames; default: plain byte echo)
//               [--idle_timeout_ms=30000] [--write_timeout_ms=10000]
//               [--buffer=16384] (plain: per-connection buffer) [--max_frame=65536] (framed)
//               [--seconds=N]  (run N seconds, then Stop; default: until SIGINT/SIGTERM)
//               [--spin_us=0] (TaskSchedulerOptions::spin_before_park, in microseconds;
//               0 by default here, unlike the scheduler's 20 us: see Flags::spin_us)
// Prints the bound address, then, at exit, the server's counters.
#include "examples/echo_server.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "examples/stop_wait.h"
#include "io/backend_choice.h"
#include "io/tcp.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"

namespace {

using namespace fairsched;


struct Flags {
  std::string backend = std::string(IoBackendName(DefaultIoBackend()));
  int workers = 2;
  std::string address = "127.0.0.1";
  int port = 7000;
  long idle_timeout_ms = 30000;
  long write_timeout_ms = 10000;
  bool framed = false;
  long buffer = 16 * 1024;
  long max_frame = 64 * 1024;
  long seconds = 0;
  // Not the scheduler's default (20 us): an echo server is IO-bound, and its idle worker
  // spinning for the next readiness edge polls the epoll fd (EventsReady, a syscall per
  // microsecond: 1.3-1.5 per request at 64 and 1,000 connections) and takes the CPU the
  // peers (in the benchmark, the load generator on the same cores) need. The recorded echo
  // table (bench/results/io.md, run 3, the -spin20 columns) shows the trade: on epoll no spin is
  // the faster setting at 64 and 1,000 connections, the spin at one connection (and on
  // io_uring everywhere). Pass --spin_us=20 for a server with few, latency-bound clients.
  long spin_us = 0;
};

[[noreturn]] void Usage(const char* bad) {
  std::fprintf(stderr,
               "bad flag: %s\nusage: echo_server --backend=epoll|io_uring --workers=N "
               "--address=IP --port=P [--framed] [--idle_timeout_ms=MS] [--write_timeout_ms=MS] "
               "[--buffer=BYTES] [--max_frame=BYTES] [--seconds=N] [--spin_us=US]\n",
               bad);
  std::exit(2);
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--framed") {
      flags.framed = true;
      continue;
    }
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) Usage(argv[i]);
    const std::string name = arg.substr(2, eq - 2);
    const std::string value = arg.substr(eq + 1);
    char* end = nullptr;
    const long number = std::strtol(value.c_str(), &end, 10);
    const bool numeric = !value.empty() && *end == '\0';
    if (name == "backend" && ParseIoBackendKind(value)) {
      flags.backend = value;
    } else if (name == "address") {
      flags.address = value;
    } else if (name == "workers" && numeric && number >= 1 && number <= 256) {
      flags.workers = static_cast<int>(number);
    } else if (name == "port" && numeric && number >= 0 && number <= 65535) {
      flags.port = static_cast<int>(number);
    } else if (name == "idle_timeout_ms" && numeric && number > 0) {
      flags.idle_timeout_ms = number;
    } else if (name == "write_timeout_ms" && numeric && number > 0) {
      flags.write_timeout_ms = number;
    } else if (name == "buffer" && numeric && number > 0 && number <= (1L << 30)) {
      flags.buffer = number;
    } else if (name == "max_frame" && numeric && number > 0 && number <= (1L << 30)) {
      flags.max_frame = number;
    } else if (name == "seconds" && numeric && number >= 0) {
      flags.seconds = number;
    } else if (name == "spin_us" && numeric && number >= 0 && number <= 1000) {
      flags.spin_us = number;
    } else {
      Usage(argv[i]);
    }
  }
  return flags;
}

template <typename Backend>
int Serve(const Flags& flags) {
  using Scheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;
  IoResult<SocketAddress> address =
      SocketAddress::FromHostPort(flags.address, static_cast<std::uint16_t>(flags.port));
  if (!address.ok()) {
    std::fprintf(stderr, "echo_server: %s: %s\n", flags.address.c_str(),
                 address.error().Message().c_str());
    return 2;
  }
  SignalWait stop_signal;  // SIGINT / SIGTERM from here on end the server gracefully

  TaskSchedulerOptions scheduler_options;
  scheduler_options.spin_before_park = std::chrono::microseconds(flags.spin_us);
  Scheduler scheduler(scheduler_options);
  scheduler.Start(flags.workers);
  examples::EchoServerOptions options;
  options.idle_timeout = std::chrono::milliseconds(flags.idle_timeout_ms);
  options.write_timeout = std::chrono::milliseconds(flags.write_timeout_ms);
  options.protocol =
      flags.framed ? examples::EchoProtocol::kFramed : examples::EchoProtocol::kPlain;
  options.max_frame = static_cast<std::uint32_t>(flags.max_frame);
  options.plain_buffer = static_cast<std::size_t>(flags.buffer);
  examples::EchoServer<Scheduler> server(scheduler, options);
  IoResult<SocketAddress> bound = server.Start(address.value());
  if (!bound.ok()) {
    std::fprintf(stderr, "echo_server: listen on %s: %s\n", address.value().ToString().c_str(),
                 bound.error().Message().c_str());
    return 1;
  }
  std::printf("echo_server: %s, %s echo, %d workers, listening on %s\n", flags.backend.c_str(),
              flags.framed ? "framed" : "plain", flags.workers, bound.value().ToString().c_str());
  const examples::EchoServerStats stats =
      examples::ServeUntilStop(stop_signal, server, scheduler, flags.seconds);
  std::printf(
      "echo_server: accepted %lld, answered %lld (%lld bytes), closed by peer %lld, idle %lld, "
      "slow reader %lld, oversized %lld, closed by stop %lld\n",
      static_cast<long long>(stats.accepted), static_cast<long long>(stats.answered),
      static_cast<long long>(stats.bytes_echoed), static_cast<long long>(stats.closed_by_peer),
      static_cast<long long>(stats.dropped_idle), static_cast<long long>(stats.dropped_slow_reader),
      static_cast<long long>(stats.dropped_oversized),
      static_cast<long long>(stats.closed_by_stop));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  const IoBackendKind backend = *ParseIoBackendKind(flags.backend);
  if (!IoBackendSupported(backend)) {
    std::fprintf(stderr, "echo_server: %s is not available on this kernel or sandbox\n",
                 flags.backend.c_str());
    return 1;
  }
  return WithIoBackend(backend, [&]<typename Backend>() { return Serve<Backend>(flags); });
}
