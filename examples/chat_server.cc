// The chat room (examples/chat_server.h) as a program:
//   chat_server [--backend=epoll|io_uring] (Windows: iocp) [--workers=2]
//               [--address=127.0.0.1] [--port=7001] [--idle_timeout_ms=0] (0: none)
//               [--max_line=1024] [--client_queue=512] [--max_clients=10000]
//               [--cert=server.pem --key=server.key] (TLS on every connection)
//               [--seconds=N] (run N seconds; default: until SIGINT/SIGTERM)
// Try it with `nc 127.0.0.1 7001` in two terminals (TLS: `openssl s_client -quiet
// -connect 127.0.0.1:7001`). Prints the bound address, then, at exit, the room's counters.
#include "examples/chat_server.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "examples/stop_wait.h"
#include "io/backend_choice.h"
#include "io/signal_wait.h"
#include "io/tcp.h"
#ifndef _WIN32
#include "examples/chat_tls.h"  // TLS: Linux only (no OpenSSL for mingw-w64 in Debian)
#endif
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"

namespace {

using namespace fairsched;

// --name=value flags with their defaults; a flag not listed here is an error.
using Flags = std::map<std::string, std::string>;

[[noreturn]] void Usage(const std::string& bad) {
  std::fprintf(stderr,
               "bad flag: %s\nusage: chat_server [--backend=%s] [--workers=N] [--address=IP] "
               "[--port=P] [--idle_timeout_ms=MS] [--max_line=BYTES] [--client_queue=LINES] "
               "[--max_clients=N] [--cert=PEM --key=PEM] [--seconds=N]\n",
               bad.c_str(), std::string(IoBackendNames()).c_str());
  std::exit(2);
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags = {{"backend", std::string(IoBackendName(DefaultIoBackend()))},
                 {"workers", "2"},
                 {"address", "127.0.0.1"},
                 {"port", "7001"},
                 {"idle_timeout_ms", "0"},
                 {"max_line", "1024"},
                 {"client_queue", "512"},
                 {"max_clients", "10000"},
                 {"cert", ""},
                 {"key", ""},
                 {"seconds", "0"}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) Usage(arg);
    const std::string name = arg.substr(2, eq - 2);
    if (flags.count(name) == 0) Usage(arg);
    flags[name] = arg.substr(eq + 1);
  }
  return flags;
}

// A numeric flag in [low, high], or the usage message.
long Number(const Flags& flags, const std::string& name, long low, long high) {
  const std::string& text = flags.at(name);
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < low || value > high) Usage("--" + name + "=" + text);
  return value;
}

// Where TLS is built, the context if --cert/--key were given; nullptr for plain text.
struct Tls {
#ifndef _WIN32
  std::optional<TlsContext> context;
#endif
  bool on = false;
};

template <typename Backend>
int Serve(const Flags& flags, const ChatOptions& options, const Tls& tls,
          int workers, long seconds, std::int64_t max_clients) {
  using Sched = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;
  IoResult<SocketAddress> address =
      SocketAddress::Parse(flags.at("address") + ":" + flags.at("port"));
  if (!address.ok()) {
    std::fprintf(stderr, "chat_server: bad address: %s\n", address.error().Message().c_str());
    return 2;
  }
  SignalWait stop_signal;  // SIGINT / SIGTERM from here on end the server gracefully
  Sched scheduler;
  scheduler.Start(workers);
  TcpServerOptions server_options;
  server_options.max_connections = max_clients;
  typename ChatServer<Sched>::Session session = ChatServer<Sched>::PlainSession();
#ifndef _WIN32
  if (tls.on) session = TlsChatSession<Sched>(&*tls.context);
#endif
  ChatServer<Sched> server(scheduler, options, server_options, std::move(session));
  IoResult<SocketAddress> bound = server.Start(address.value());
  if (!bound.ok()) {
    std::fprintf(stderr, "chat_server: cannot listen: %s\n", bound.error().Message().c_str());
    return 1;
  }
  std::printf("chat_server: %s%s, %d workers, listening on %s\n", flags.at("backend").c_str(),
              tls.on ? ", TLS" : "", workers, bound.value().ToString().c_str());
  const ChatStats stats = examples::ServeUntilStop(stop_signal, server, scheduler, seconds);
  std::printf(
      "chat_server: joined %lld, left %lld, lines in %lld, lines out %lld, dropped slow "
      "reader %lld, dropped long line %lld\n",
      static_cast<long long>(stats.joined), static_cast<long long>(stats.left),
      static_cast<long long>(stats.lines_in), static_cast<long long>(stats.lines_out),
      static_cast<long long>(stats.dropped_slow_reader),
      static_cast<long long>(stats.dropped_long_line));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  const std::optional<IoBackendKind> backend = ParseIoBackendKind(flags.at("backend"));
  if (!backend) Usage("--backend=" + flags.at("backend"));
  if (!IoBackendSupported(*backend)) {
    std::fprintf(stderr, "chat_server: %s is not available on this kernel or sandbox\n",
                 flags.at("backend").c_str());
    return 1;
  }
  ChatOptions options;
  options.idle_timeout = std::chrono::milliseconds(Number(flags, "idle_timeout_ms", 0, 86400000));
  options.max_line = static_cast<std::size_t>(Number(flags, "max_line", 1, 1 << 20));
  options.client_queue = static_cast<std::size_t>(Number(flags, "client_queue", 1, 1 << 20));
  const int workers = static_cast<int>(Number(flags, "workers", 1, 256));
  const long seconds = Number(flags, "seconds", 0, 1L << 30);
  const std::int64_t max_clients = Number(flags, "max_clients", 0, 1L << 30);
  Tls tls;
  if (!flags.at("cert").empty() || !flags.at("key").empty()) {
#ifdef _WIN32
    std::fprintf(stderr, "chat_server: TLS is not built on Windows\n");
    return 1;
#else
    tls.context.emplace(TlsContext::Server(flags.at("cert"), flags.at("key")));
    if (!tls.context->ok()) {
      std::fprintf(stderr, "chat_server: TLS: %s\n", tls.context->error().c_str());
      return 1;
    }
    tls.on = true;
#endif
  }
  return WithIoBackend(*backend, [&]<typename Backend>() {
    return Serve<Backend>(flags, options, tls, workers, seconds, max_clients);
  });
}
