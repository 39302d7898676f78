// The plain byte echo over TLS (io/tls_stream.h): every connection is a TlsStream over its
// TcpStream; whatever plaintext arrives is sent back. Try it with Debian's openssl:
//   tls_echo_server --cert=server.crt --key=server.key --port=7443
//   openssl s_client -connect 127.0.0.1:7443 -quiet
// Flags: --cert=PEM --key=PEM (required) --backend=epoll|io_uring --workers=2
//        --address=127.0.0.1 --port=7443 --handshake_timeout_ms=5000 --idle_timeout_ms=30000
//        --write_timeout_ms=10000 --seconds=N (run N seconds, then stop; default: until
//        SIGINT/SIGTERM)
// Limits as in the plain echo (examples/echo_server.h): a handshake deadline, an idle
// deadline, a write deadline, one 16 KiB buffer per connection. The client's close_notify is
// answered with the server's; at an idle timeout the server sends close_notify and closes.
// Prints the bound address, then, at exit, how many connections ended how.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/byte_stream.h"
#include "io/backend_choice.h"
#include "io/signal_wait.h"
#include "io/tcp.h"
#include "io/tcp_server.h"
#include "io/tls_stream.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"

namespace {

using namespace fairsched;
using std::chrono::milliseconds;

// --name=value flags; every value a string, numbers parsed where used.
std::map<std::string, std::string> ParseFlags(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"backend", "epoll"},
                                              {"workers", "2"},
                                              {"address", "127.0.0.1"},
                                              {"port", "7443"},
                                              {"cert", ""},
                                              {"key", ""},
                                              {"handshake_timeout_ms", "5000"},
                                              {"idle_timeout_ms", "30000"},
                                              {"write_timeout_ms", "10000"},
                                              {"seconds", "0"}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos ||
        !flags.contains(arg.substr(2, eq - 2))) {
      std::fprintf(stderr,
                   "tls_echo_server: unknown flag %s (see the comment at the top of "
                   "examples/tls_echo_server.cc)\n",
                   argv[i]);
      std::exit(2);
    }
    flags[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
  }
  return flags;
}

// The non-negative number in flag `name`, or exit with a message.
long Number(const std::map<std::string, std::string>& flags, const std::string& name) {
  const std::string& text = flags.at(name);
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0) {
    std::fprintf(stderr, "tls_echo_server: --%s=%s is not a non-negative number\n", name.c_str(),
                 text.c_str());
    std::exit(2);
  }
  return value;
}

struct Limits {
  milliseconds handshake;
  milliseconds idle;
  milliseconds write;
};

// How connections ended (relaxed counters: statistics).
struct Endings {
  Atomic<std::int64_t> clean{0};       // the client's close_notify
  Atomic<std::int64_t> tls_failed{0};  // handshake failure, bad record, no close_notify
  Atomic<std::int64_t> timed_out{0};   // handshake, idle or write deadline
  Atomic<std::int64_t> other{0};       // reset, stop, ...
};

template <typename Scheduler>
coro::Lazy<void> EchoOverTls(TcpStream<Scheduler> tcp, const TlsContext* context, Limits limits,
                             Endings* endings) {
  using Tls = TlsStream<TcpStream<Scheduler>>;
  Tls tls = Tls::Server(*context, std::move(tcp));
  IoError error = co_await tls.Handshake(coro::DeadlineAfter(limits.handshake));
  std::vector<char> buffer(16 * 1024);
  while (error.ok()) {
    IoResult<std::size_t> received =
        co_await tls.ReadSome(buffer, coro::DeadlineAfter(limits.idle));
    if (!received.ok()) {
      error = received.error();
      break;
    }
    error = co_await WriteAll(tls, std::span<const char>(buffer.data(), received.value()),
                              coro::DeadlineAfter(limits.write));
  }
  Atomic<std::int64_t>* ending = &endings->other;
  if (error.code() == IoErrorCode::kEndOfStream) {
    ending = &endings->clean;
  } else if (IsTlsError(error)) {
    ending = &endings->tls_failed;
    std::fprintf(stderr, "tls_echo_server: %s\n", tls.ErrorMessage().c_str());
  } else if (error.code() == IoErrorCode::kTimeout) {
    ending = &endings->timed_out;
  }
  ending->fetch_add(1, std::memory_order_relaxed);
  // close_notify (a no-op on a broken session, whose calls fail at once), then the TCP close
  // that lets the client read it.
  (void)co_await tls.Shutdown(coro::DeadlineAfter(limits.write));
  CloseGracefully(tls.stream());
}

template <typename Backend>
int Serve(const std::map<std::string, std::string>& flags) {
  using Scheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;
  const TlsContext context = TlsContext::Server(flags.at("cert"), flags.at("key"));
  if (!context.ok()) {
    std::fprintf(stderr, "tls_echo_server: %s\n", context.error().c_str());
    return 2;
  }
  IoResult<SocketAddress> address = SocketAddress::FromHostPort(
      flags.at("address"), static_cast<std::uint16_t>(Number(flags, "port")));
  if (!address.ok()) {
    std::fprintf(stderr, "tls_echo_server: --address: %s\n", address.error().Message().c_str());
    return 2;
  }
  const Limits limits{milliseconds(Number(flags, "handshake_timeout_ms")),
                      milliseconds(Number(flags, "idle_timeout_ms")),
                      milliseconds(Number(flags, "write_timeout_ms"))};
  SignalWait stop_signal;  // SIGINT / SIGTERM from here on end the server gracefully

  Scheduler scheduler;
  scheduler.Start(static_cast<int>(std::max(1L, Number(flags, "workers"))));
  Endings endings;
  {
    TcpServer<Scheduler> server(scheduler, [&](TcpStream<Scheduler> tcp) {
      return EchoOverTls(std::move(tcp), &context, limits, &endings);
    });
    IoResult<SocketAddress> bound = server.Start(address.value());
    if (!bound.ok()) {
      std::fprintf(stderr, "tls_echo_server: listen: %s\n", bound.error().Message().c_str());
      return 1;
    }
    std::printf("tls_echo_server: %s, listening on %s\n", flags.at("backend").c_str(),
                bound.value().ToString().c_str());
    std::fflush(stdout);
    (void)stop_signal.WaitBlocking(std::chrono::seconds(Number(flags, "seconds")));
    server.Stop();
  }
  scheduler.Stop();
  std::printf(
      "tls_echo_server: connections ended cleanly %lld, TLS failure %lld, timeout %lld, "
      "other %lld\n",
      static_cast<long long>(endings.clean.load(std::memory_order_relaxed)),
      static_cast<long long>(endings.tls_failed.load(std::memory_order_relaxed)),
      static_cast<long long>(endings.timed_out.load(std::memory_order_relaxed)),
      static_cast<long long>(endings.other.load(std::memory_order_relaxed)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::string> flags = ParseFlags(argc, argv);
  if (flags.at("cert").empty() || flags.at("key").empty()) {
    std::fprintf(stderr, "tls_echo_server: --cert=PEM and --key=PEM are required\n");
    return 2;
  }
  const std::optional<IoBackendKind> backend = ParseIoBackendKind(flags.at("backend"));
  if (!backend) {
    std::fprintf(stderr, "tls_echo_server: --backend must be %s\n",
                 std::string(IoBackendNames()).c_str());
    return 2;
  }
  if (!IoBackendSupported(*backend)) {
    std::fprintf(stderr, "tls_echo_server: %s is not available on this kernel or sandbox\n",
                 flags.at("backend").c_str());
    return 1;
  }
  return WithIoBackend(*backend, [&]<typename Backend>() { return Serve<Backend>(flags); });
}
