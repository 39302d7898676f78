// loadgen: the load generator for the echo servers (examples/echo_server.cc,
// bench/io/asio_echo_server.cc). Deliberately NOT built on fairsched: it is the measuring
// tool, so it is plain Linux: a few threads, each with its own epoll set (level-triggered)
// and its share of the connections, non-blocking sockets, no locks on the hot path.
//
//   loadgen --address=127.0.0.1 --port=7000 --connections=64 --size=64 --seconds=5
//           [--threads=1] [--warmup_seconds=1] [--server_pid=PID]
//           [--flood_connections=0] [--flood_depth=64]
//
// Each connection runs a closed loop: send one frame (4-byte little-endian length + `size`
// payload bytes), wait for the complete echo (checked byte for byte), record the latency,
// repeat. A flood connection keeps `flood_depth` frames in flight instead (it floods the
// server); its latencies are reported apart, so the others' latency shows the fairness.
// A readable connection yields at most its frames in flight of echoes per round of the
// thread's epoll loop (tools/loadgen/connection.h), so the load generator itself serves its
// connections in turn and a flooder cannot hold it.
// Every second it prints the requests of that second; at the end, requests/s, latency
// p50/p99/p999 of the normal connections, and CPU time per request of the server (from
// /proc/PID/stat, when --server_pid is given) and of loadgen itself. The last line is one
// machine-readable "RESULT key=value ..." line. Bounded: loopback addresses only, at most
// 5,000 connections and 60 seconds.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/loadgen/connection.h"

namespace {

using fairsched::loadgen::Clock;
using fairsched::loadgen::Connection;
using fairsched::loadgen::Pump;
using fairsched::loadgen::ReceiveEchoes;

struct Flags {
  std::string address = "127.0.0.1";
  int port = 7000;
  int connections = 64;
  int size = 64;
  int seconds = 5;
  int threads = 1;
  int warmup_seconds = 1;
  long server_pid = 0;
  int flood_connections = 0;
  int flood_depth = 64;
};

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "loadgen: %s\n", message.c_str());
  std::exit(2);
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) Die("bad flag " + arg);
    const std::string name = arg.substr(2, eq - 2);
    const std::string value = arg.substr(eq + 1);
    if (name == "address") {
      flags.address = value;
      continue;
    }
    char* end = nullptr;
    const long number = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') Die("not a number: " + arg);
    auto in = [&](long low, long high) {
      if (number < low || number > high) {
        Die(name + " must be in [" + std::to_string(low) + ", " + std::to_string(high) + "]");
      }
      return static_cast<int>(number);
    };
    if (name == "port") {
      flags.port = in(1, 65535);
    } else if (name == "connections") {
      flags.connections = in(1, 5000);
    } else if (name == "size") {
      flags.size = in(1, 1 << 20);
    } else if (name == "seconds") {
      flags.seconds = in(1, 60);
    } else if (name == "threads") {
      flags.threads = in(1, 64);
    } else if (name == "warmup_seconds") {
      flags.warmup_seconds = in(0, 10);
    } else if (name == "server_pid") {
      flags.server_pid = in(1, 1 << 30);
    } else if (name == "flood_connections") {
      flags.flood_connections = in(0, 100);
    } else if (name == "flood_depth") {
      flags.flood_depth = in(1, 1024);
    } else {
      Die("unknown flag " + arg);
    }
  }
  if (flags.flood_connections >= flags.connections) Die("flood_connections >= connections");
  return flags;
}

// Log-linear latency histogram: 64 sub-buckets per power of two of nanoseconds (error < 2%).
class Histogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kSub = 1 << kSubBits;
  void Add(std::int64_t ns) {
    ++counts_[Index(std::max<std::int64_t>(ns, 1))];
    ++total_;
  }
  void Merge(const Histogram& other) {
    for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
  }
  std::int64_t total() const { return total_; }
  // The value at quantile q (upper edge of its bucket), in ns.
  double Quantile(double q) const {
    if (total_ == 0) return 0;
    const auto rank = static_cast<std::int64_t>(std::ceil(q * static_cast<double>(total_)));
    std::int64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return UpperEdge(static_cast<int>(i));
    }
    return UpperEdge(static_cast<int>(counts_.size()) - 1);
  }

 private:
  static int Index(std::int64_t v) {
    const int log = 63 - __builtin_clzll(static_cast<unsigned long long>(v));
    if (log < kSubBits) return static_cast<int>(v);
    const int sub = static_cast<int>((v >> (log - kSubBits)) & (kSub - 1));
    return (log - kSubBits + 1) * kSub + sub;
  }
  static double UpperEdge(int index) {
    if (index < kSub) return index + 1;
    const int log = index / kSub + kSubBits - 1;
    const int sub = index % kSub;
    return std::ldexp(static_cast<double>(kSub + sub + 1), log - kSubBits);
  }
  std::array<std::int64_t, 64 * kSub> counts_{};
  std::int64_t total_ = 0;
};

std::atomic<bool> g_measuring{false};
std::atomic<bool> g_stop{false};

struct Worker {
  std::vector<Connection*> connections;
  std::atomic<std::int64_t> requests{0};  // completed while measuring (relaxed: a counter)
  std::atomic<std::int64_t> errors{0};
  Histogram normal;
  Histogram flood;
};

void RunWorker(Worker* worker, const std::string& frame) {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  for (Connection* c : worker->connections) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = c;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &event);
    c->in.assign(frame.size(), 0);
    c->out_frames = c->depth;
    if (!Pump(epoll_fd, c, frame)) worker->errors.fetch_add(1, std::memory_order_relaxed);
  }
  std::vector<epoll_event> events(256);
  while (!g_stop.load(std::memory_order_relaxed)) {
    const int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), 100);
    for (int i = 0; i < n; ++i) {
      auto* c = static_cast<Connection*>(events[i].data.ptr);
      if (c->fd < 0) continue;
      bool ok = true;
      if ((events[i].events & EPOLLOUT) != 0) ok = Pump(epoll_fd, c, frame);
      if (ok && (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
        ok = ReceiveEchoes(epoll_fd, c, frame, [&](std::int64_t latency) {
          if (g_measuring.load(std::memory_order_relaxed)) {
            (c->flood ? worker->flood : worker->normal).Add(latency);
            worker->requests.fetch_add(1, std::memory_order_relaxed);
          }
        });
      }
      if (!ok) {
        worker->errors.fetch_add(1, std::memory_order_relaxed);
        epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
        ::close(c->fd);
        c->fd = -1;
      }
    }
  }
  ::close(epoll_fd);
}

// utime + stime of `pid`, in seconds; negative if unreadable.
double ProcessCpuSeconds(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  long long utime = 0;
  long long stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::atoll(field.c_str());
    if (i == 15) stime = std::atoll(field.c_str());
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  sockaddr_storage storage{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET, flags.address.c_str(), &v4->sin_addr) == 1) {
    if ((ntohl(v4->sin_addr.s_addr) >> 24) != 127) Die("loopback addresses only (127.x.x.x, ::1)");
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(flags.port));
    length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, flags.address.c_str(), &v6->sin6_addr) == 1) {
    if (!IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr)) Die("loopback addresses only (127.x.x.x, ::1)");
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(flags.port));
    length = sizeof(sockaddr_in6);
  } else {
    Die("bad address " + flags.address);
  }
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < static_cast<rlim_t>(flags.connections + 64)) {
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, flags.connections + 64);
    setrlimit(RLIMIT_NOFILE, &limit);
  }

  std::string frame(4 + static_cast<std::size_t>(flags.size), '\0');
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((flags.size >> (8 * i)) & 0xff);
  for (int i = 0; i < flags.size; ++i) frame[4 + i] = static_cast<char>('a' + i % 26);

  std::vector<std::unique_ptr<Connection>> connections;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < flags.threads; ++t) workers.push_back(std::make_unique<Worker>());
  for (int i = 0; i < flags.connections; ++i) {
    auto c = std::make_unique<Connection>();
    c->fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) Die(std::string("socket: ") + std::strerror(errno));
    if (::connect(c->fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
      Die("connect " + flags.address + ":" + std::to_string(flags.port) + ": " +
          std::strerror(errno));
    }
    const int on = 1;
    ::setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    ::fcntl(c->fd, F_SETFL, ::fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    c->flood = i < flags.flood_connections;
    c->depth = c->flood ? flags.flood_depth : 1;
    workers[i % flags.threads]->connections.push_back(c.get());
    connections.push_back(std::move(c));
  }

  std::vector<std::thread> threads;
  for (auto& worker : workers) threads.emplace_back(RunWorker, worker.get(), std::cref(frame));
  std::this_thread::sleep_for(std::chrono::seconds(flags.warmup_seconds));

  g_measuring.store(true);
  const Clock::time_point start = Clock::now();
  const double server_cpu_start = flags.server_pid > 0 ? ProcessCpuSeconds(flags.server_pid) : 0;
  const double self_cpu_start = SelfCpuSeconds();
  std::int64_t last = 0;
  for (int s = 1; s <= flags.seconds; ++s) {
    std::this_thread::sleep_until(start + std::chrono::seconds(s));
    std::int64_t total = 0;
    std::int64_t errors = 0;
    for (auto& worker : workers) {
      total += worker->requests.load(std::memory_order_relaxed);
      errors += worker->errors.load(std::memory_order_relaxed);
    }
    std::printf("loadgen: second %d: %lld requests/s, %lld errors\n", s,
                static_cast<long long>(total - last), static_cast<long long>(errors));
    std::fflush(stdout);
    last = total;
  }
  g_measuring.store(false);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const double server_cpu =
      flags.server_pid > 0 ? ProcessCpuSeconds(flags.server_pid) - server_cpu_start : -1;
  const double self_cpu = SelfCpuSeconds() - self_cpu_start;
  g_stop.store(true);
  for (auto& thread : threads) thread.join();

  Histogram normal;
  Histogram flood;
  std::int64_t requests = 0;
  std::int64_t errors = 0;
  for (auto& worker : workers) {
    normal.Merge(worker->normal);
    flood.Merge(worker->flood);
    requests += worker->requests.load();
    errors += worker->errors.load();
  }
  for (auto& c : connections) {
    if (c->fd >= 0) ::close(c->fd);
  }
  const double rps = static_cast<double>(requests) / elapsed;
  const double per_request = requests > 0 ? 1e6 / static_cast<double>(requests) : 0;
  std::printf(
      "RESULT connections=%d size=%d seconds=%.2f requests=%lld rps=%.0f p50_us=%.1f "
      "p99_us=%.1f p999_us=%.1f server_cpu_us_per_req=%.2f loadgen_cpu_us_per_req=%.2f "
      "flood_connections=%d flood_requests=%lld flood_p99_us=%.1f errors=%lld\n",
      flags.connections, flags.size, elapsed, static_cast<long long>(requests), rps,
      normal.Quantile(0.50) / 1e3, normal.Quantile(0.99) / 1e3, normal.Quantile(0.999) / 1e3,
      server_cpu >= 0 ? server_cpu * per_request : -1.0, self_cpu * per_request,
      flags.flood_connections, static_cast<long long>(flood.total()), flood.Quantile(0.99) / 1e3,
      static_cast<long long>(errors));
  return errors > 0 ? 1 : 0;
}
