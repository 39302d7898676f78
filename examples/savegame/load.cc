// The client fleet (closed and open loop), the check reader and the thread time readers
// (load.h).
#include "examples/savegame/load.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

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
  Clock::time_point sent_at;  // closed loop: the send; open loop: the arrival
  std::uint64_t next_sequence = 0;
  std::uint64_t id_base = 0;
};

// An open-loop request that arrived and waits for an idle connection.
struct Arrival {
  Clock::time_point at;
  std::uint32_t user = 0;
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

// The measured window of one fleet run. It opens when every fleet thread has connected all
// its connections: a storm of thousands of blocking connects (and, after a listen-queue
// overflow, the kernel's 1 s SYN retransmit) must not count as time in which the server
// answered nothing. Before that fix a 2 s run at 10,000 connections could end before the
// last connect and then sent exactly one request per connection (5,000 req/s reported for
// a server doing ~11,000).
class FleetWindow {
 public:
  explicit FleetWindow(int threads) : not_connected_(threads) {}

  // A fleet thread, after its connects: waits until the window is open, returns it.
  std::pair<Clock::time_point, Clock::time_point> ConnectedWaitForStart() {
    MutexLock lock(mu_);
    if (--not_connected_ == 0) changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
    return {start_, stop_at_};
  }
  // RunFleet: waits for every thread's connects, then opens a window of `duration`.
  std::pair<Clock::time_point, Clock::time_point> OpenWhenConnected(
      Clock::duration duration) {
    MutexLock lock(mu_);
    changed_.wait(lock, [this] { return not_connected_ == 0; });
    start_ = Clock::now();
    stop_at_ = start_ + duration;
    open_ = true;
    changed_.notify_all();
    return {start_, stop_at_};
  }

 private:
  Mutex mu_;
  ConditionVariable changed_;
  int not_connected_;  // guarded by mu_, like the fields below
  bool open_ = false;
  Clock::time_point start_;
  Clock::time_point stop_at_;
};

std::uint32_t MicrosSince(Clock::time_point then) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - then).count();
  return static_cast<std::uint32_t>(std::max<std::int64_t>(0, micros));
}

// One fleet thread: its share of the connections (and, open loop, of the offered rate).
class FleetThread {
 public:
  FleetThread(const SocketAddress& server, const FleetOptions& options, int index,
              int first_connection, int connection_count, double rate,
              FleetWindow* window, ThreadRecord* record)
      : server_(server),
        options_(options),
        first_connection_(first_connection),
        connection_count_(connection_count),
        rate_(rate),
        window_(window),
        record_(record),
        result_(record->result),
        random_(options.seed * 1000003 + static_cast<std::uint64_t>(index)),
        pick_user_(options.users, options.heavy_users, options.heavy_factor) {
    const std::string name = "client-" + std::to_string(index);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    result_.acked.assign(options.users, 0);
    result_.unknown.assign(options.users, 0);
  }

  void Run() {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    FAIRSCHED_CHECK(epoll_fd_ >= 0, "savegame fleet: epoll_create1 failed");
    Connect();
    std::tie(start_, stop_at_) = window_->ConnectedWaitForStart();
    if (rate_ > 0) {
      RunOpenLoop();
    } else {
      for (auto& connection : connections_) {
        Send(*connection, Clock::now(), pick_user_.Pick(random_));
      }
      Loop();
    }
    for (auto& connection : connections_) {
      if (connection->pending) NoReply(*connection);
      if (connection->fd >= 0) ::close(connection->fd);
    }
    result_.unsent = static_cast<std::int64_t>(backlog_.size());
    ::close(epoll_fd_);
    result_.client_threads.push_back(
        ThreadSample{static_cast<int>(::gettid()), "client", OwnThreadTimes()});
  }

 private:
  void Connect() {
    if (first_connection_ == 0) std::this_thread::sleep_for(options_.first_connect_delay);
    for (int i = 0; i < connection_count_; ++i) {
      auto connection = std::make_unique<Connection>();
      const int number = first_connection_ + i;
      connection->fd = ConnectBlocking(
          options_.servers.empty() ? server_ : options_.servers[number % options_.servers.size()]);
      if (connection->fd < 0) {
        ++result_.connect_failures;
        continue;
      }
      connection->id_base = static_cast<std::uint64_t>(first_connection_ + i + 1) << 32;
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.ptr = connection.get();
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, connection->fd, &event);
      connections_.push_back(std::move(connection));
    }
  }

  // Open loop: the first arrival, then the event loop (which generates the rest).
  void RunOpenLoop() {
    result_.open_loop = true;
    for (auto& connection : connections_) idle_.push_back(connection.get());
    next_arrival_ = start_ + NextGap();
    Loop();
  }

  // An exponential inter-arrival time at this thread's rate.
  Clock::duration NextGap() {
    const double seconds = std::exponential_distribution<double>(rate_)(random_);
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  // Open loop: moves every arrival due by `now` into the backlog, and the backlog onto idle
  // connections.
  void Dispatch(Clock::time_point now) {
    while (next_arrival_ < stop_at_ && next_arrival_ <= now) {
      backlog_.push_back(Arrival{next_arrival_, pick_user_.Pick(random_)});
      ++result_.arrivals;
      next_arrival_ += NextGap();
    }
    result_.max_backlog =
        std::max(result_.max_backlog, static_cast<std::int64_t>(backlog_.size()));
    while (!backlog_.empty() && !idle_.empty()) {
      Connection& connection = *idle_.back();
      idle_.pop_back();
      const Arrival arrival = backlog_.front();
      backlog_.pop_front();
      Send(connection, arrival.at, arrival.user);
    }
  }

  void Send(Connection& connection, Clock::time_point measured_from, std::uint32_t user) {
    connection.request_id = connection.id_base | connection.next_sequence++;
    connection.user = user;
    out_.clear();
    AppendSaveRequest({connection.request_id, connection.user}, &out_);
    connection.sent_at = measured_from;
    connection.pending = true;
    ++result_.sent;
    if (rate_ == 0) ++result_.arrivals;
    if (!SendAll(connection.fd, out_)) {
      NoReply(connection);
      ::close(std::exchange(connection.fd, -1));
    }
  }

  void NoReply(Connection& connection) {
    ++result_.no_reply;
    ++result_.unknown[connection.user];
    result_.requests.push_back({connection.request_id, connection.user, kNoReplyOutcome});
    connection.pending = false;
  }

  bool AnyPending() const {
    return std::any_of(connections_.begin(), connections_.end(),
                       [](const auto& connection) { return connection->pending; });
  }

  // Until the sending phase ended and every request was answered (and, open loop, the
  // backlog sent), or the drain timeout passed. Open loop: the backlog is sent until
  // `drain_timeout` after the end, and the replies to what was sent are awaited for one
  // more `drain_timeout` (a request the client gave up sending is "unsent", never sent;
  // "no reply" is kept for what the server did not answer).
  void Loop() {
    const Clock::time_point stop_sending = stop_at_ + options_.drain_timeout;
    const Clock::time_point give_up =
        rate_ > 0 ? stop_sending + options_.drain_timeout : stop_sending;
    epoll_event events[64];
    while (true) {
      Clock::time_point now = Clock::now();
      if (rate_ > 0 && now < stop_sending) Dispatch(now);
      if (now >= give_up) break;
      if (now >= stop_at_ && (backlog_.empty() || now >= stop_sending) && !AnyPending()) break;
      // Sleep until a reply, the next arrival (open loop), or 5 ms (to notice the end).
      Clock::time_point wake = now + std::chrono::milliseconds(5);
      if (rate_ > 0 && next_arrival_ < stop_at_) wake = std::min(wake, next_arrival_);
      const auto wait_ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::max(wake - now, {})).count();
      const timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000),
                             static_cast<long>(wait_ns % 1'000'000'000)};
      const int ready = ::epoll_pwait2(epoll_fd_, events, 64, &timeout, nullptr);
      for (int e = 0; e < ready; ++e) {
        Receive(*static_cast<Connection*>(events[e].data.ptr));
      }
    }
  }

  // Reads what `connection` has, records its reply, and sends its next request (closed
  // loop) or returns it to the idle list (open loop).
  void Receive(Connection& connection) {
    if (connection.fd < 0) return;
    bool broken = !ReceiveAvailable(connection.fd, connection.in);
    while (std::optional<std::string_view> body = connection.in.NextFrame()) {
      std::optional<SaveReply> reply = ParseSaveReply(*body);
      if (!reply || !connection.pending || reply->request_id != connection.request_id) {
        broken = true;  // a reply we did not ask for: the server is broken
        break;
      }
      Record(connection, reply->status);
    }
    if (broken || connection.in.Corrupt()) {
      if (connection.pending) NoReply(connection);
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, connection.fd, nullptr);
      ::close(std::exchange(connection.fd, -1));
      return;
    }
    if (connection.pending) return;
    if (rate_ > 0) {
      idle_.push_back(&connection);
    } else if (Clock::now() < stop_at_) {
      Send(connection, Clock::now(), pick_user_.Pick(random_));
    }
  }

  void Record(Connection& connection, SaveStatus status) {
    connection.pending = false;
    const std::uint32_t micros = MicrosSince(connection.sent_at);
    ++result_.replies[static_cast<std::size_t>(status)];
    result_.requests.push_back(
        {connection.request_id, connection.user, static_cast<std::uint8_t>(status)});
    result_.reply_latency_us.push_back(micros);
    if (status == SaveStatus::kOk) {
      ++result_.acked[connection.user];
      result_.ok_latency_us.push_back(micros);
      record_->ok.fetch_add(1, std::memory_order_relaxed);
      MutexLock lock(record_->window_mu);
      record_->window_us.push_back(micros);
    } else {
      if (status == SaveStatus::kUnknown) ++result_.unknown[connection.user];
      record_->errors.fetch_add(1, std::memory_order_relaxed);
    }
  }

  const SocketAddress& server_;
  const FleetOptions& options_;
  const int first_connection_;
  const int connection_count_;
  const double rate_;  // this thread's share; 0: closed loop
  FleetWindow* const window_;
  Clock::time_point start_;    // the measured window, set once connected
  Clock::time_point stop_at_;
  ThreadRecord* const record_;
  FleetResult& result_;
  std::mt19937_64 random_;
  UserPicker pick_user_;
  int epoll_fd_ = -1;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::string out_;
  // Open loop.
  std::vector<Connection*> idle_;
  std::deque<Arrival> backlog_;
  Clock::time_point next_arrival_;
};

}  // namespace

double QuantileMs(const std::vector<std::uint32_t>& sorted_us, double p) {
  if (sorted_us.empty()) return 0;
  const auto index = static_cast<std::size_t>(p * static_cast<double>(sorted_us.size() - 1));
  return sorted_us[index] / 1000.0;
}

UserPicker::UserPicker(int users, int heavy_users, int heavy_factor)
    : users_(static_cast<std::uint32_t>(users)),
      heavy_users_(static_cast<std::uint32_t>(heavy_users)),
      slot_(0, static_cast<std::uint64_t>(users) +
                   static_cast<std::uint64_t>(heavy_users) * (heavy_factor - 1) - 1) {
  FAIRSCHED_CHECK(users >= 1 && heavy_users >= 0 && heavy_users <= users && heavy_factor >= 1,
                  "UserPicker: needs users >= 1, 0 <= heavy_users <= users, heavy_factor >= 1");
}

std::uint32_t UserPicker::Pick(std::mt19937_64& random) {
  const std::uint64_t slot = slot_(random);
  if (slot < users_) return static_cast<std::uint32_t>(slot);
  return static_cast<std::uint32_t>((slot - users_) % heavy_users_);
}

FleetResult RunFleet(const SocketAddress& server, const FleetOptions& options) {
  const int threads = std::max(1, std::min(options.threads, options.connections));
  std::vector<std::unique_ptr<ThreadRecord>> records;
  std::vector<std::thread> workers;
  FleetWindow window(threads);
  int first = 0;
  for (int t = 0; t < threads; ++t) {
    const int count = options.connections / threads + (t < options.connections % threads ? 1 : 0);
    records.push_back(std::make_unique<ThreadRecord>());
    // Each thread offers an equal share of the rate: independent Poisson processes add up
    // to one at the total rate.
    const double rate = options.rate / threads;
    workers.emplace_back([&server, &options, t, first, count, rate, &window,
                          record = records.back().get()] {
      FleetThread(server, options, t, first, count, rate, &window, record).Run();
    });
    first += count;
  }

  const auto [start, stop_at] = window.OpenWhenConnected(
      std::chrono::duration_cast<Clock::duration>(options.duration));
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
    total.open_loop = part.open_loop;
    total.arrivals += part.arrivals;
    total.unsent += part.unsent;
    total.max_backlog += part.max_backlog;
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
    total.reply_latency_us.insert(total.reply_latency_us.end(), part.reply_latency_us.begin(),
                                  part.reply_latency_us.end());
    total.requests.insert(total.requests.end(), part.requests.begin(), part.requests.end());
    for (ThreadSample sample : part.client_threads) {
      sample.name += "-" + std::to_string(t);
      total.client_threads.push_back(sample);
    }
  }
  total.offered_rate = options.rate;
  total.seconds = std::chrono::duration<double>(options.duration).count();
  std::sort(total.ok_latency_us.begin(), total.ok_latency_us.end());
  std::sort(total.reply_latency_us.begin(), total.reply_latency_us.end());
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

namespace {

// The times of the thread whose /proc directory is `dir` (.../task/<tid> or thread-self).
ThreadTimes TimesOf(const std::string& dir) {
  ThreadTimes times;
  // schedstat: nanoseconds on a CPU, nanoseconds waiting on a run queue, time slices.
  double on_cpu = 0, waiting = 0;
  if (std::ifstream(dir + "/schedstat") >> on_cpu >> waiting) {
    times.cpu_seconds = on_cpu / 1e9;
    times.runqueue_wait_seconds = waiting / 1e9;
    return times;
  }
  // stat: utime and stime (fields 14 and 15) in clock ticks; the name (field 2) is in
  // parentheses and may hold spaces, so count fields after the last ')'.
  std::string stat;
  std::getline(std::ifstream(dir + "/stat"), stat);
  const std::size_t close = stat.rfind(')');
  std::istringstream fields(close == std::string::npos ? std::string() : stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int number = 3; number <= 15 && fields >> field; ++number) {
    if (number >= 14) ticks += std::strtod(field.c_str(), nullptr);
  }
  times.cpu_seconds = ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
  times.runqueue_wait_known = false;
  return times;
}

}  // namespace

std::vector<ThreadSample> SampleThreads() {
  std::vector<ThreadSample> result;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return result;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const std::string base = std::string("/proc/self/task/") + entry->d_name;
    ThreadSample sample;
    sample.tid = std::atoi(entry->d_name);
    std::getline(std::ifstream(base + "/comm"), sample.name);
    sample.times = TimesOf(base);
    result.push_back(sample);
  }
  ::closedir(dir);
  return result;
}

ThreadTimes OwnThreadTimes() { return TimesOf("/proc/thread-self"); }

}  // namespace fairsched::savegame
