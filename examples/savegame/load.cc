// The client fleet, the check reader and the thread CPU reader (load.h).
#include "examples/savegame/load.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

#include "sync/primitives.h"

namespace fairsched::savegame {
namespace {

using Clock = std::chrono::steady_clock;

// A blocking TCP connection to `address` with TCP_NODELAY, or -1.
int ConnectBlocking(const SocketAddress& address) {
  const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, address.get(), address.length()) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      std::this_thread::yield();  // a 17-byte request on a fresh socket: does not happen
      continue;
    }
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

struct Connection {
  int fd = -1;
  FrameBuffer in;
  bool pending = false;
  std::uint64_t request_id = 0;
  std::uint32_t user = 0;
  Clock::time_point sent_at;
  std::uint64_t next_sequence = 0;
  std::uint64_t id_base = 0;
};

// What one fleet thread records. Counters are atomics the reporter reads while the thread
// writes (relaxed: statistics, no ordering with anything else); the latency window is
// swapped out by the reporter under `window_mu`.
struct ThreadRecord {
  Atomic<std::int64_t> ok{0};
  Atomic<std::int64_t> errors{0};
  Mutex window_mu;
  std::vector<std::uint32_t>
      window_us;  // guarded by window_mu: kOk latencies since the last report
  // Owned by the thread until it is joined:
  FleetResult result;
};

void FleetThread(const SocketAddress& server, const FleetOptions& options, int first_connection,
                 int connection_count, Clock::time_point stop_at, ThreadRecord* record) {
  FleetResult& result = record->result;
  result.acked.assign(options.users, 0);
  result.unknown.assign(options.users, 0);
  std::minstd_rand random(static_cast<std::uint32_t>(options.seed * 1000003 + first_connection));
  std::uniform_int_distribution<std::uint32_t> pick_user(0, options.users - 1);
  const int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  FAIRSCHED_CHECK(epoll_fd >= 0, "savegame fleet: epoll_create1 failed");
  std::vector<std::unique_ptr<Connection>> connections;
  std::string out;

  auto send_next = [&](Connection& connection) {
    connection.request_id = connection.id_base | connection.next_sequence++;
    connection.user = pick_user(random);
    out.clear();
    AppendSaveRequest({connection.request_id, connection.user}, &out);
    connection.sent_at = Clock::now();
    connection.pending = true;
    ++result.sent;
    if (!SendAll(connection.fd, out)) {
      ++result.no_reply;
      ++result.unknown[connection.user];
      connection.pending = false;
      ::close(std::exchange(connection.fd, -1));
    }
  };

  for (int i = 0; i < connection_count; ++i) {
    auto connection = std::make_unique<Connection>();
    connection->fd = ConnectBlocking(server);
    if (connection->fd < 0) {
      ++result.connect_failures;
      continue;
    }
    connection->id_base = static_cast<std::uint64_t>(first_connection + i + 1) << 32;
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = connection.get();
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, connection->fd, &event);
    connections.push_back(std::move(connection));
  }
  for (auto& connection : connections) send_next(*connection);

  const Clock::time_point drain_until = stop_at + options.drain_timeout;
  epoll_event events[64];
  while (true) {
    const Clock::time_point now = Clock::now();
    if (now >= drain_until) break;
    if (now >= stop_at &&
        std::none_of(connections.begin(), connections.end(),
                     [](const auto& connection) { return connection->pending; })) {
      break;
    }
    const int ready = ::epoll_wait(epoll_fd, events, 64, 5);
    for (int e = 0; e < ready; ++e) {
      Connection& connection = *static_cast<Connection*>(events[e].data.ptr);
      if (connection.fd < 0) continue;
      bool broken = false;
      while (true) {
        std::span<char> tail = connection.in.WritableTail();
        const ssize_t n = ::recv(connection.fd, tail.data(), tail.size(), MSG_DONTWAIT);
        if (n > 0) {
          connection.in.Commit(static_cast<std::size_t>(n));
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        broken = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        break;
      }
      while (std::optional<std::string_view> body = connection.in.NextFrame()) {
        std::optional<SaveReply> reply = ParseSaveReply(*body);
        if (!reply || !connection.pending || reply->request_id != connection.request_id) {
          broken = true;  // a reply we did not ask for: the server is broken
          break;
        }
        connection.pending = false;
        const auto status = static_cast<std::size_t>(reply->status);
        ++result.replies[status];
        if (reply->status == SaveStatus::kOk) {
          ++result.acked[connection.user];
          const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                                  Clock::now() - connection.sent_at)
                                  .count();
          result.ok_latency_us.push_back(static_cast<std::uint32_t>(micros));
          record->ok.fetch_add(1, std::memory_order_relaxed);
          MutexLock lock(record->window_mu);
          record->window_us.push_back(static_cast<std::uint32_t>(micros));
        } else {
          if (reply->status == SaveStatus::kUnknown) ++result.unknown[connection.user];
          record->errors.fetch_add(1, std::memory_order_relaxed);
        }
      }
      if (broken || connection.in.Corrupt()) {
        if (connection.pending) {
          ++result.no_reply;
          ++result.unknown[connection.user];
          connection.pending = false;
        }
        ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, connection.fd, nullptr);
        ::close(std::exchange(connection.fd, -1));
        continue;
      }
      if (!connection.pending && Clock::now() < stop_at) send_next(connection);
    }
  }
  for (auto& connection : connections) {
    if (connection->pending) {
      ++result.no_reply;
      ++result.unknown[connection->user];
    }
    if (connection->fd >= 0) ::close(connection->fd);
  }
  ::close(epoll_fd);
}

}  // namespace

double QuantileMs(const std::vector<std::uint32_t>& sorted_us, double p) {
  if (sorted_us.empty()) return 0;
  const auto index = static_cast<std::size_t>(p * static_cast<double>(sorted_us.size() - 1));
  return sorted_us[index] / 1000.0;
}

FleetResult RunFleet(const SocketAddress& server, const FleetOptions& options) {
  const int threads = std::max(1, std::min(options.threads, options.connections));
  std::vector<std::unique_ptr<ThreadRecord>> records;
  std::vector<std::thread> workers;
  const Clock::time_point start = Clock::now();
  const Clock::time_point stop_at = start + options.duration;
  int first = 0;
  for (int t = 0; t < threads; ++t) {
    const int count = options.connections / threads + (t < options.connections % threads ? 1 : 0);
    records.push_back(std::make_unique<ThreadRecord>());
    workers.emplace_back(FleetThread, std::cref(server), std::cref(options), first, count, stop_at,
                         records.back().get());
    first += count;
  }

  // Progress, once a second, until the sending phase ends.
  const bool terminal = options.progress != nullptr && ::isatty(::fileno(options.progress));
  std::int64_t last_ok = 0;
  for (int second = 1; options.progress != nullptr; ++second) {
    const Clock::time_point tick = start + std::chrono::seconds(second);
    if (tick > stop_at) break;
    std::this_thread::sleep_until(tick);
    std::int64_t ok = 0, errors = 0;
    std::vector<std::uint32_t> window;
    for (auto& record : records) {
      ok += record->ok.load(std::memory_order_relaxed);
      errors += record->errors.load(std::memory_order_relaxed);
      MutexLock lock(record->window_mu);
      window.insert(window.end(), record->window_us.begin(), record->window_us.end());
      record->window_us.clear();
    }
    std::sort(window.begin(), window.end());
    std::fprintf(options.progress,
                 "%s  %-9s %3d/%llds  %7lld req/s  p50 %7.2f ms  p99 %7.2f ms  errors %lld%s",
                 terminal ? "\r" : "", options.label.c_str(), second,
                 static_cast<long long>(
                     std::chrono::duration_cast<std::chrono::seconds>(options.duration).count()),
                 static_cast<long long>(ok - last_ok), QuantileMs(window, 0.5),
                 QuantileMs(window, 0.99), static_cast<long long>(errors), terminal ? "" : "\n");
    std::fflush(options.progress);
    last_ok = ok;
  }
  if (terminal) std::fprintf(options.progress, "\n");

  FleetResult total;
  total.acked.assign(options.users, 0);
  total.unknown.assign(options.users, 0);
  for (std::size_t t = 0; t < workers.size(); ++t) {
    workers[t].join();
    const FleetResult& part = records[t]->result;
    total.sent += part.sent;
    total.no_reply += part.no_reply;
    total.connect_failures += part.connect_failures;
    for (int s = 0; s < kSaveStatusCount; ++s) total.replies[s] += part.replies[s];
    for (int u = 0; u < options.users; ++u) {
      total.acked[u] += part.acked[u];
      total.unknown[u] += part.unknown[u];
    }
    total.ok_latency_us.insert(total.ok_latency_us.end(), part.ok_latency_us.begin(),
                               part.ok_latency_us.end());
  }
  total.seconds = std::chrono::duration<double>(options.duration).count();
  std::sort(total.ok_latency_us.begin(), total.ok_latency_us.end());
  return total;
}

std::optional<std::vector<std::uint64_t>> ReadAllCounters(const SocketAddress& store, int users,
                                                          std::string* error) {
  const int fd = ConnectBlocking(store);
  if (fd < 0) {
    *error = "cannot connect to the blob store";
    return std::nullopt;
  }
  std::vector<std::uint64_t> counters;
  counters.reserve(users);
  FrameBuffer in;
  constexpr int kBatch = 64;  // requests in flight: bounded, so neither side's buffer fills
  for (int first = 0; first < users && error->empty(); first += kBatch) {
    const int last = std::min(users, first + kBatch);
    std::string out;
    for (int u = first; u < last; ++u) {
      AppendStoreRequest({StoreOp::kCheck, static_cast<std::uint32_t>(u), 0, {}}, &out);
    }
    if (!SendAll(fd, out)) *error = "blob store connection broke";
    for (int u = first; u < last && error->empty();) {
      if (std::optional<std::string_view> body = in.NextFrame()) {
        std::optional<StoreResponse> response = ParseStoreResponse(*body);
        if (!response || response->status != StoreStatus::kOk) {
          *error = "bad answer from the blob store for user " + std::to_string(u);
          break;
        }
        counters.push_back(ReadBlobHeader(response->blob).counter);
        ++u;
        continue;
      }
      std::span<char> tail = in.WritableTail();
      const ssize_t n = ::recv(fd, tail.data(), tail.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || in.Corrupt()) {
        *error = "blob store connection broke";
        break;
      }
      in.Commit(static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  if (!error->empty()) return std::nullopt;
  return counters;
}

std::map<std::string, ThreadTimes> ThreadTimesOf(const std::string& prefix) {
  std::map<std::string, ThreadTimes> result;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return result;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const std::string base = std::string("/proc/self/task/") + entry->d_name;
    std::string name;
    std::ifstream(base + "/comm") >> name;
    if (name.rfind(prefix, 0) != 0) continue;
    // schedstat: nanoseconds on the CPU, nanoseconds waiting on a run queue, time slices.
    double on_cpu = 0, waiting = 0;
    std::ifstream(base + "/schedstat") >> on_cpu >> waiting;
    result[name] = ThreadTimes{on_cpu / 1e9, waiting / 1e9};
  }
  ::closedir(dir);
  return result;
}

}  // namespace fairsched::savegame
