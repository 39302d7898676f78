// soak: a mixed load in one process for a chosen time, sampled into a JSON-lines file.
//
//   soak --seconds=3600 --interval=60 --out=FILE [--workers=2] [--warmup=0.2]
//        [--note=TEXT] [--plant_leak=fd|task|fd,task]
//
// The load, all on one scheduler (epoll backend):
//   - tasks: a pool of tasks posted by a plain thread with Post, PostDelay (a deadline
//     0-2 ms away, sometimes woken early with Wakeup), PostWait + Signal, and chains that
//     re-post themselves from their own callback (busy re-posters); plus one-shots. Each
//     pooled task carries an in-flight flag, so a second run of one post counts as
//     duplicated; a run marked expired before its deadline counts as early;
//   - coroutines: rounds of producer/consumer pairs over coro::Channel, each step under a
//     shared coro::Mutex; the consumer checks the sequence (gap: lost, repeat: duplicated);
//   - the framed echo server and the kv server (examples/) on loopback, driven by normal
//     clients that check every answer (echo: byte for byte; kv: the value last stored) and
//     by hostile clients (tools/soak/clients.h): garbage and over-long lines, resets in the
//     middle of a frame or a value, half-closes (whose answers count like normal ones),
//     slow readers, oversized frames, slow-loris idlers.
// Every `interval` seconds the main thread appends one sample: RSS, open fds, live
// coroutines, IO operations and connections, and the exactly-once counters. At the end the
// load stops, everything drains, and a last sample ("phase": "final") holds the balances.
// The first line is a header (command, machine, load average, note). The pass rules are
// applied by tools/soak/soak_report.py; this program only records.
// --plant_leak (tests only) leaks one fd (fd), one parked coroutine (task) or one of each
// per second, until the load stops (then they are released, so the drain still completes).
#include <dirent.h>
#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "coro/channel.h"
#include "coro/frame_allocator.h"
#include "coro/lazy.h"
#include "coro/mutex.h"
#include "coro/spawn.h"
#include "examples/echo_server.h"
#include "examples/kv_server.h"
#include "io/epoll_backend.h"
#include "io/tcp.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "sync/sanitizers.h"
#include "tools/soak/clients.h"

namespace fairsched::soak {
namespace {

// The sanitizer this binary was built with ("none" without), for the header line and for
// sizing the coroutine rounds.
#if defined(FAIRSCHED_ASAN)
constexpr const char* kSanitizer = "asan";
#elif defined(FAIRSCHED_TSAN)
constexpr const char* kSanitizer = "tsan";
#else
constexpr const char* kSanitizer = "none";
#endif
constexpr bool kSanitized = kSanitizer[0] != 'n';

using Scheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, EpollBackend>;
using std::chrono::milliseconds;
using Counter = std::atomic<std::int64_t>;

struct Flags {
  double seconds = 10;
  double interval = 60;
  double warmup = 0.2;
  int workers = 2;
  std::string out;
  std::string note;
  std::string plant_leak;
};

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "soak: %s\n", message.c_str());
  std::exit(2);
}

// The number `text` is, or a clear error naming `flag`.
double Number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') Die("--" + flag + " wants a number, not '" + text + "'");
  return number;
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  using Setter = std::function<void(const std::string& name, const std::string& value)>;
  const std::map<std::string, Setter> setters = {
      {"seconds", [&](auto& name, auto& value) { flags.seconds = Number(name, value); }},
      {"interval", [&](auto& name, auto& value) { flags.interval = Number(name, value); }},
      {"warmup", [&](auto& name, auto& value) { flags.warmup = Number(name, value); }},
      {"workers",
       [&](auto& name, auto& value) {
         flags.workers = static_cast<int>(std::clamp(Number(name, value), -1.0, 1e3));
       }},
      {"out", [&](auto&, auto& value) { flags.out = value; }},
      {"note", [&](auto&, auto& value) { flags.note = value; }},
      {"plant_leak", [&](auto&, auto& value) { flags.plant_leak = value; }},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const std::size_t equals = arg.find('=');
    const auto setter = arg.starts_with("--") && equals != std::string_view::npos
                            ? setters.find(std::string(arg.substr(2, equals - 2)))
                            : setters.end();
    if (setter == setters.end()) Die("unknown flag " + std::string(arg) + " (see soak.cc's top)");
    setter->second(setter->first, std::string(arg.substr(equals + 1)));
  }
  if (flags.out.empty()) Die("--out=FILE is required");
  if (!(flags.seconds > 0 && flags.seconds <= 7 * 24 * 3600)) Die("--seconds out of range");
  if (!(flags.interval >= 0.1)) Die("--interval must be at least 0.1");
  if (!(flags.warmup >= 0 && flags.warmup < 1)) Die("--warmup is a fraction in [0, 1)");
  if (flags.workers < 1 || flags.workers > 64) Die("--workers must be 1..64");
  if (!flags.plant_leak.empty() && flags.plant_leak != "fd" && flags.plant_leak != "task" &&
      flags.plant_leak != "fd,task") {
    Die("--plant_leak must be fd, task or fd,task");
  }
  return flags;
}

// The exactly-once counters and gauges every part updates. Relaxed everywhere: they are
// statistics read by the sampler; the final sample is taken after every thread that
// writes them was joined and the scheduler drained (join and WaitEmpty order them).
struct Counters {
  Counter task_posted{0}, task_ran{0}, task_duplicated{0}, task_early{0};
  Counter one_shot_posted{0};  // of task_posted
  Counter coro_sent{0}, coro_received{0}, coro_lost{0}, coro_duplicated{0};
  Counter live_coroutines{0};
  // live_coroutines when the last round had joined all its coroutines (-1: no round yet).
  Counter coroutines_between_rounds{-1};
  Counter echo_sent{0}, echo_echoed{0}, echo_lost{0}, echo_duplicated{0};
  Counter kv_requests{0}, kv_answers{0}, kv_lost{0}, kv_wrong{0};
  Counter hostile_connections{0}, hostile_unexpected{0};
};

// ---- tasks ----

// A pooled task and its in-flight flag: 0 never posted, 1 posted, 3 running, 2 done (the
// poster may post it again). Only the poster posts a task in state 0 or 2; only its own
// callback posts it while running (a chain link).
struct Tracked {
  Task task;
  std::atomic<int> in_flight{0};
  int chain = 0;       // re-posts still to make from its own callback
  TaskDeadline due{};  // deadline of a PostDelay post (else the epoch)
  Counters* counters = nullptr;
};

void RunTracked(Tracked* self, Task* task) {
  Counters& c = *self->counters;
  // acq_rel: pairs with the poster's release exchange (the post's fields are visible) and
  // orders this run's check against a second run of the same post.
  if (self->in_flight.exchange(3, std::memory_order_acq_rel) != 1) {
    c.task_duplicated.fetch_add(1, std::memory_order_relaxed);
  }
  c.task_ran.fetch_add(1, std::memory_order_relaxed);
  (void)task->ReceiveSignal();
  if (task->IsExpired() && TaskClock::now() < self->due) {
    c.task_early.fetch_add(1, std::memory_order_relaxed);
  }
  if (self->chain > 0) {  // busy re-poster: the next link, from its own callback
    --self->chain;
    self->due = TaskDeadline{};
    self->in_flight.store(1, std::memory_order_relaxed);  // only this callback posts it now
    c.task_posted.fetch_add(1, std::memory_order_relaxed);
    Scheduler::Current()->Post(task);
    return;
  }
  // Release: the last touch of this post; the poster's acquire load sees it before posting.
  self->in_flight.store(2, std::memory_order_release);
}

// Posts pooled tasks in the ways listed in the file comment, and one-shots, until `stop`.
void PostTasks(Scheduler& sched, Counters& c, std::atomic<bool>& stop) {
  constexpr int kPool = 256;
  constexpr std::int64_t kMaxOneShotsInFlight = 4096;
  std::vector<std::unique_ptr<Tracked>> pool(kPool);
  for (auto& t : pool) {
    t = std::make_unique<Tracked>();
    t->counters = &c;
    Tracked* self = t.get();
    t->task.SetCallback([self](Task* task) { RunTracked(self, task); });
  }
  std::minstd_rand random(1);
  Counter one_shots_in_flight{0};
  std::uint64_t round = 0;
  // Relaxed: a stop flag polled once per round; the join after it orders the rest.
  while (!stop.load(std::memory_order_relaxed)) {
    for (auto& t : pool) {
      // Acquire: pairs with RunTracked's release store (the previous run is over).
      const int state = t->in_flight.load(std::memory_order_acquire);
      if (state != 0 && state != 2) continue;
      t->in_flight.store(1, std::memory_order_relaxed);  // published by the post itself
      t->due = TaskDeadline{};
      c.task_posted.fetch_add(1, std::memory_order_relaxed);
      switch (random() % 5) {
        case 0:
          t->chain = 0;
          sched.Post(&t->task);
          break;
        case 1: {
          const auto delay = std::chrono::microseconds(random() % 2000);
          t->chain = 0;
          t->due = TaskClock::now() + delay;
          sched.PostDelay(&t->task, delay);
          if (random() % 4 == 0) sched.Wakeup(&t->task);
          break;
        }
        case 2:
          t->chain = 0;
          sched.PostWait(&t->task);
          sched.Signal(&t->task);
          break;
        default:
          t->chain = 16;
          sched.Post(&t->task);
          break;
      }
    }
    for (int i = 0;
         i < 64 && one_shots_in_flight.load(std::memory_order_relaxed) < kMaxOneShotsInFlight;
         ++i) {
      one_shots_in_flight.fetch_add(1, std::memory_order_relaxed);
      c.task_posted.fetch_add(1, std::memory_order_relaxed);
      c.one_shot_posted.fetch_add(1, std::memory_order_relaxed);
      sched.PostOneShot([&c, &one_shots_in_flight] {
        c.task_ran.fetch_add(1, std::memory_order_relaxed);
        one_shots_in_flight.fetch_sub(1, std::memory_order_relaxed);
      });
    }
    if (++round % 8 == 0) std::this_thread::yield();
  }
  // Drain before the pool goes: every pooled task and one-shot has run (or 60 s passed:
  // then the missing runs are lost, and the process ends at once, before a late run could
  // touch the freed pool).
  const auto drained = [&] {
    for (const auto& t : pool) {
      const int state = t->in_flight.load(std::memory_order_acquire);  // see the loop above
      if (state != 0 && state != 2) return false;
    }
    return one_shots_in_flight.load(std::memory_order_acquire) == 0;
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!drained()) {
    if (std::chrono::steady_clock::now() > give_up) Die("the task load did not drain in 60 s");
    std::this_thread::sleep_for(milliseconds(1));
  }
}

// ---- coroutines ----

struct LiveGuard {
  explicit LiveGuard(Counter& live) : live(live) { live.fetch_add(1, std::memory_order_relaxed); }
  ~LiveGuard() { live.fetch_sub(1, std::memory_order_relaxed); }
  Counter& live;
};

coro::Lazy<void> Produce(coro::Channel<std::uint64_t>& channel, coro::Mutex& mutex,
                         std::uint64_t& shared_steps, int count, Counters& c) {
  const LiveGuard live(c.live_coroutines);
  for (int i = 0; i < count; ++i) {
    {
      auto guard = co_await mutex.LockGuard();
      ++shared_steps;
    }
    if (co_await channel.Send(static_cast<std::uint64_t>(i)) != coro::ChannelStatus::kOk) break;
    c.coro_sent.fetch_add(1, std::memory_order_relaxed);
  }
  channel.Close();
}

coro::Lazy<void> Consume(coro::Channel<std::uint64_t>& channel, coro::Mutex& mutex,
                         std::uint64_t& shared_steps, Counters& c) {
  const LiveGuard live(c.live_coroutines);
  std::uint64_t expected = 0;
  while (true) {
    coro::Received<std::uint64_t> received = co_await channel.Receive();
    if (!received.ok()) break;
    const std::uint64_t value = received.value();
    c.coro_received.fetch_add(1, std::memory_order_relaxed);
    if (value < expected) {
      c.coro_duplicated.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (value > expected) {
      c.coro_lost.fetch_add(static_cast<std::int64_t>(value - expected), std::memory_order_relaxed);
    }
    expected = value + 1;
    auto guard = co_await mutex.LockGuard();
    ++shared_steps;
  }
}

// A coroutine that waits until `channel` closes (the planted task leak).
coro::Lazy<void> Park(coro::Channel<int>& channel, Counters& c) {
  const LiveGuard live(c.live_coroutines);
  (void)co_await channel.Receive();
}

void RunCoroutineRounds(Scheduler& sched, Counters& c, std::atomic<bool>& stop) {
  // coroutines_between_rounds is only sampled when a round ends, and a sanitizer makes a
  // round of 512 values per pair take seconds (TSan: about 6 s on the 2-core machine), too
  // few round ends for a 10-second run to show a growth: sanitizer builds use 64.
  constexpr int kPairs = 4, kValues = kSanitized ? 64 : 512;
  while (!stop.load(std::memory_order_relaxed)) {  // relaxed: see PostTasks
    coro::Mutex mutex;
    std::uint64_t shared_steps = 0;  // guarded by `mutex`
    std::vector<std::unique_ptr<coro::Channel<std::uint64_t>>> channels;
    std::vector<coro::JoinHandle<void>> handles;
    for (int p = 0; p < kPairs; ++p) {
      channels.push_back(std::make_unique<coro::Channel<std::uint64_t>>(8));
      auto& channel = *channels.back();
      handles.push_back(coro::Spawn(sched, Produce(channel, mutex, shared_steps, kValues, c)));
      handles.push_back(coro::Spawn(sched, Consume(channel, mutex, shared_steps, c)));
    }
    for (auto& handle : handles) handle.Get();
    c.coroutines_between_rounds.store(c.live_coroutines.load(std::memory_order_relaxed),
                                      std::memory_order_relaxed);
    if (shared_steps != static_cast<std::uint64_t>(2 * kPairs * kValues)) {
      c.coro_lost.fetch_add(1, std::memory_order_relaxed);  // a step under the mutex went missing
    }
  }
}

// ---- sockets ----

std::string EchoFrame(std::uint64_t sequence, std::size_t filler) {
  std::string frame(examples::kEchoHeaderSize + 8 + filler, '\0');
  examples::EncodeFrameLength(static_cast<std::uint32_t>(8 + filler), frame.data());
  for (int i = 0; i < 8; ++i) frame[4 + i] = static_cast<char>(sequence >> (8 * i));
  for (std::size_t i = 0; i < filler; ++i)
    frame[12 + i] = static_cast<char>('a' + (sequence + i) % 26);
  return frame;
}

// Sends `frames` frames (pipelined `depth` at a time) and checks each echo; the counters.
bool EchoExchange(ClientSocket& socket, std::uint64_t& sequence, int depth,
                  std::minstd_rand& random, Counters& c) {
  std::vector<std::string> sent;
  std::string batch;
  for (int i = 0; i < depth; ++i) {
    sent.push_back(EchoFrame(sequence++, random() % 200));
    batch += sent.back();
  }
  c.echo_sent.fetch_add(depth, std::memory_order_relaxed);
  if (!socket.SendAll(batch)) {
    c.echo_lost.fetch_add(depth, std::memory_order_relaxed);
    return false;
  }
  for (int i = 0; i < depth; ++i) {
    std::string echo;
    if (!socket.ReceiveExactly(sent[static_cast<std::size_t>(i)].size(), &echo)) {
      c.echo_lost.fetch_add(depth - i, std::memory_order_relaxed);
      return false;
    }
    if (echo == sent[static_cast<std::size_t>(i)]) {
      c.echo_echoed.fetch_add(1, std::memory_order_relaxed);
    } else {
      c.echo_duplicated.fetch_add(1, std::memory_order_relaxed);  // wrong bytes: not this frame
    }
  }
  return true;
}

void RunEchoClient(std::uint16_t port, int id, Counters& c, std::atomic<bool>& stop) {
  std::minstd_rand random(100 + id);
  std::uint64_t sequence = 0;
  while (!stop.load(std::memory_order_relaxed)) {  // relaxed: see PostTasks
    ClientSocket socket(port);
    // A new connection every 2000 exchanges (the hostile clients churn far more).
    for (int i = 0; i < 2000 && socket.ok() && !stop.load(std::memory_order_relaxed); ++i) {
      if (!EchoExchange(socket, sequence, 1 + static_cast<int>(random() % 4), random, c)) break;
    }
  }
}

// SET then GET of a key of this client's own; both answers checked.
bool KvExchange(ClientSocket& socket, int id, std::uint64_t step, Counters& c) {
  const std::string key = "c" + std::to_string(id) + "k" + std::to_string(step % 64);
  const std::string value(1 + step % 100, static_cast<char>('A' + step % 26));
  c.kv_requests.fetch_add(2, std::memory_order_relaxed);
  if (!socket.SendAll("SET " + key + " " + std::to_string(value.size()) + "\n" + value + "\nGET " +
                      key + "\n")) {
    c.kv_lost.fetch_add(2, std::memory_order_relaxed);
    return false;
  }
  std::string stored, header, body;
  if (!socket.ReceiveLine(&stored)) {
    c.kv_lost.fetch_add(2, std::memory_order_relaxed);
    return false;
  }
  c.kv_answers.fetch_add(1, std::memory_order_relaxed);
  if (stored != "STORED\n") c.kv_wrong.fetch_add(1, std::memory_order_relaxed);
  if (!socket.ReceiveLine(&header) || !socket.ReceiveExactly(value.size() + 1, &body)) {
    c.kv_lost.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  c.kv_answers.fetch_add(1, std::memory_order_relaxed);
  if (header != "VALUE " + std::to_string(value.size()) + "\n" || body != value + "\n") {
    c.kv_wrong.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

void RunKvClient(std::uint16_t port, int id, Counters& c, std::atomic<bool>& stop) {
  std::uint64_t step = 0;
  while (!stop.load(std::memory_order_relaxed)) {  // relaxed: see PostTasks
    ClientSocket socket(port);
    bool open = true;
    for (int i = 0; i < 1000 && open && socket.ok() && !stop.load(std::memory_order_relaxed); ++i) {
      open = KvExchange(socket, id, step++, c);
    }
    std::string bye;
    if (open && socket.ok() &&
        (!socket.SendAll("QUIT\n") || !socket.ReceiveLine(&bye) || bye != "BYE\n")) {
      c.kv_wrong.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

// One hostile connection of kind `kind`; true if the server behaved as documented.
bool HostileConnection(int kind, std::uint16_t echo_port, std::uint16_t kv_port,
                       std::uint64_t& sequence, std::minstd_rand& random, Counters& c) {
  switch (kind) {
    case 0: {  // garbage line, then a line longer than max_line: error answers, then closed
      ClientSocket socket(kv_port);
      std::string garbage(1 + random() % 64, '\0');
      for (char& ch : garbage) ch = static_cast<char>(0x80 | (random() & 0x7f));
      std::string answer;
      return socket.SendAll(garbage + "\n") && socket.ReceiveLine(&answer) &&
             answer == "ERROR unknown command\n" && socket.SendAll(std::string(2048, 'x') + "\n") &&
             socket.SeesEnd();
    }
    case 1: {  // reset in the middle of a frame
      ClientSocket socket(echo_port);
      const std::string frame = EchoFrame(0, 100);
      const bool sent = socket.SendAll(frame.substr(0, 30));
      socket.Reset();
      return sent;
    }
    case 2: {  // half-close after three frames: all three answered, then the end
      ClientSocket socket(echo_port);
      std::string frames;
      std::vector<std::string> sent;
      for (int i = 0; i < 3; ++i) {
        sent.push_back(EchoFrame(sequence++, random() % 100));
        frames += sent.back();
      }
      c.echo_sent.fetch_add(3, std::memory_order_relaxed);
      if (!socket.SendAll(frames)) {
        c.echo_lost.fetch_add(3, std::memory_order_relaxed);
        return false;
      }
      socket.ShutdownWrite();
      for (int i = 0; i < 3; ++i) {
        std::string echo;
        if (!socket.ReceiveExactly(sent[static_cast<std::size_t>(i)].size(), &echo)) {
          c.echo_lost.fetch_add(3 - i, std::memory_order_relaxed);
          return false;
        }
        (echo == sent[static_cast<std::size_t>(i)] ? c.echo_echoed : c.echo_duplicated)
            .fetch_add(1, std::memory_order_relaxed);
      }
      return socket.SeesEnd();
    }
    case 3: {  // slow reader: fills both directions, never reads; dropped by write_timeout
      ClientSocket socket(echo_port, /*receive_buffer=*/4096);
      std::string frames;
      for (int i = 0; i < 64; ++i) frames += EchoFrame(0, 1000);
      socket.SendUntilFull(frames, std::size_t{4} << 20);
      // Not a byte read until the server's write has waited past write_timeout (1 s).
      std::this_thread::sleep_for(milliseconds(1500));
      return socket.SeesEnd();
    }
    case 4: {  // oversized frame: disconnected
      ClientSocket socket(echo_port);
      std::string header(examples::kEchoHeaderSize, '\0');
      examples::EncodeFrameLength(1u << 24, header.data());
      return socket.SendAll(header + "abc") && socket.SeesEnd();
    }
    case 5: {  // slow loris: half a command, then nothing; closed by idle_timeout
      ClientSocket socket(kv_port);
      return socket.SendAll("GE") && socket.SeesEnd();
    }
    default: {  // reset in the middle of a SET value
      ClientSocket socket(kv_port);
      const bool sent = socket.SendAll("SET k 100\nabc");
      socket.Reset();
      return sent;
    }
  }
}

void RunHostileClient(std::uint16_t echo_port, std::uint16_t kv_port, int id, Counters& c,
                      std::atomic<bool>& stop) {
  std::minstd_rand random(200 + id);
  std::uint64_t sequence = 0;
  for (int kind = id; !stop.load(std::memory_order_relaxed); kind = (kind + 1) % 7) {
    c.hostile_connections.fetch_add(1, std::memory_order_relaxed);
    if (!HostileConnection(kind, echo_port, kv_port, sequence, random, c)) {
      c.hostile_unexpected.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

// ---- sampling ----

std::int64_t RssKilobytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

std::int64_t OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  std::int64_t count = 0;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count - 3;  // ".", ".." and the directory's own fd
}

// The 1-minute load average (the machine's, not only this process's load).
double LoadAverage() {
  std::ifstream loadavg("/proc/loadavg");
  double one_minute = -1;
  loadavg >> one_minute;
  return one_minute;
}

// One sample as a JSON line: the gauges, then the exactly-once counters.
std::string Sample(double t, const char* phase, Scheduler& sched, const Counters& c,
                   const examples::EchoServerStats& echo, const examples::KvServerStats& kv,
                   std::int64_t planted) {
  auto v = [](const Counter& counter) { return counter.load(std::memory_order_relaxed); };
  const std::pair<const char*, std::int64_t> fields[] = {
      {"rss_kb", RssKilobytes()},
      {"fds", OpenFds()},
      {"live_coroutines", v(c.live_coroutines)},
      {"coroutines_between_rounds", v(c.coroutines_between_rounds)},
      {"frame_pool_bytes", static_cast<std::int64_t>(coro::FrameAllocator::PooledBytes())},
      {"io_ops", sched.io().LiveCount()},
      {"echo_open", echo.open},
      {"kv_open", kv.open},
      {"tasks_in_flight", v(c.task_posted) - v(c.task_ran)},
      {"one_shot_posted", v(c.one_shot_posted)},
      {"one_shot_allocations", static_cast<std::int64_t>(sched.OneShotAllocations())},
      {"planted_leaks", planted},
      {"task_posted", v(c.task_posted)},
      {"task_ran", v(c.task_ran)},
      {"task_duplicated", v(c.task_duplicated)},
      {"task_early", v(c.task_early)},
      {"coro_sent", v(c.coro_sent)},
      {"coro_received", v(c.coro_received)},
      {"coro_lost", v(c.coro_lost)},
      {"coro_duplicated", v(c.coro_duplicated)},
      {"echo_sent", v(c.echo_sent)},
      {"echo_echoed", v(c.echo_echoed)},
      {"echo_lost", v(c.echo_lost)},
      {"echo_duplicated", v(c.echo_duplicated)},
      {"kv_requests", v(c.kv_requests)},
      {"kv_answers", v(c.kv_answers)},
      {"kv_lost", v(c.kv_lost)},
      {"kv_wrong", v(c.kv_wrong)},
      {"hostile_connections", v(c.hostile_connections)},
      {"hostile_unexpected", v(c.hostile_unexpected)},
      {"echo_accepted", echo.accepted},
      {"kv_accepted", kv.accepted},
      {"echo_dropped_idle", echo.dropped_idle},
      {"echo_dropped_slow_reader", echo.dropped_slow_reader},
      {"echo_dropped_oversized", echo.dropped_oversized},
      {"kv_dropped", kv.dropped_bad_input + kv.dropped_idle + kv.dropped_slow_reader},
  };
  char start[96];
  std::snprintf(start, sizeof(start), "{\"t\": %.2f, \"phase\": \"%s\", \"load1\": %.2f", t, phase,
                LoadAverage());
  std::string line = start;
  for (const auto& [name, value] : fields) {
    line += ", \"" + std::string(name) + "\": " + std::to_string(value);
  }
  return line + "}\n";
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    out += ch;
  }
  return out + "\"";
}

std::string Header(const Flags& flags, int argc, char** argv) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  std::ifstream loadavg_file("/proc/loadavg");
  std::string loadavg;
  std::getline(loadavg_file, loadavg);
  utsname machine{};
  uname(&machine);
  char line[4096];
  std::snprintf(
      line, sizeof(line),
      "{\"header\": {\"command\": %s, \"seconds\": %.1f, \"interval\": %.2f, "
      "\"warmup\": %.3f, \"workers\": %d, \"cpus\": %ld, \"machine\": %s, "
      "\"loadavg_at_start\": %s, \"sanitizer\": \"%s\", \"plant_leak\": %s, "
      "\"note\": %s}}\n",
      JsonString(command).c_str(), flags.seconds, flags.interval, flags.warmup, flags.workers,
      sysconf(_SC_NPROCESSORS_ONLN),
      JsonString(std::string(machine.sysname) + " " + machine.release + " " + machine.machine)
          .c_str(),
      JsonString(loadavg).c_str(), kSanitizer, JsonString(flags.plant_leak).c_str(),
      JsonString(flags.note).c_str());
  return line;
}

int Run(const Flags& flags, int argc, char** argv) {
  std::FILE* out = std::fopen(flags.out.c_str(), "w");
  if (out == nullptr) Die("cannot write " + flags.out);
  std::fputs(Header(flags, argc, argv).c_str(), out);
  std::fflush(out);

  Counters counters;
  Scheduler sched;
  sched.Start(flags.workers);
  examples::EchoServerOptions echo_options;
  echo_options.protocol = examples::EchoProtocol::kFramed;
  echo_options.idle_timeout = std::chrono::seconds(2);
  echo_options.write_timeout = std::chrono::seconds(1);
  echo_options.max_frame = 64 * 1024;
  examples::KvServerOptions kv_options;
  kv_options.idle_timeout = std::chrono::seconds(2);
  kv_options.write_timeout = std::chrono::seconds(1);
  auto echo = std::make_unique<examples::EchoServer<Scheduler>>(sched, echo_options);
  auto kv = std::make_unique<examples::KvServer<Scheduler>>(sched, kv_options);
  const SocketAddress loopback = SocketAddress::Parse("127.0.0.1:0").value();
  IoResult<SocketAddress> echo_bound = echo->Start(loopback);
  IoResult<SocketAddress> kv_bound = kv->Start(loopback);
  if (!echo_bound.ok() || !kv_bound.ok()) Die("cannot listen on 127.0.0.1");
  const std::uint16_t echo_port = echo_bound.value().port();
  const std::uint16_t kv_port = kv_bound.value().port();

  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.emplace_back([&] { PostTasks(sched, counters, stop); });
  threads.emplace_back([&] { RunCoroutineRounds(sched, counters, stop); });
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] { RunEchoClient(echo_port, i, counters, stop); });
  }
  threads.emplace_back([&] { RunKvClient(kv_port, 0, counters, stop); });
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] { RunHostileClient(echo_port, kv_port, i * 3, counters, stop); });
  }

  // Planted leaks (tests): fds to /dev/null, or coroutines parked on a channel nobody sends to.
  std::vector<int> leaked_fds;
  coro::Channel<int> never_sent(1);
  std::vector<coro::JoinHandle<void>> leaked_coroutines;

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  double next_sample = flags.interval, next_leak = 1.0;
  while (true) {
    const double now = elapsed();
    if (!flags.plant_leak.empty() && now >= next_leak) {
      next_leak += 1.0;
      if (flags.plant_leak != "task") {
        leaked_fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      }
      if (flags.plant_leak != "fd") {
        leaked_coroutines.push_back(coro::Spawn(sched, Park(never_sent, counters)));
      }
    }
    if (now >= next_sample) {
      next_sample += flags.interval;
      const std::int64_t planted =
          static_cast<std::int64_t>(leaked_fds.size() + leaked_coroutines.size());
      std::fputs(Sample(now, "run", sched, counters, echo->Stats(), kv->Stats(), planted).c_str(),
                 out);
      std::fflush(out);
    }
    if (now >= flags.seconds) break;
    std::this_thread::sleep_for(milliseconds(20));
  }

  // Drain: clients finish their exchange, the posters wait for their work, servers stop.
  stop.store(true, std::memory_order_relaxed);
  for (auto& thread : threads) thread.join();
  never_sent.Close();
  for (auto& handle : leaked_coroutines) handle.Get();
  for (const int fd : leaked_fds) ::close(fd);
  const examples::EchoServerStats echo_stats = echo->Stats();
  const examples::KvServerStats kv_stats = kv->Stats();
  echo->Stop();
  kv->Stop();
  if (!sched.WaitEmpty(std::chrono::seconds(60))) Die("the scheduler did not drain in 60 s");
  const std::string final_sample =
      Sample(elapsed(), "final", sched, counters, echo_stats, kv_stats, 0);
  std::fputs(final_sample.c_str(), out);
  std::fclose(out);
  echo.reset();
  kv.reset();
  sched.Stop();
  std::printf("soak: %.0f s, final: %s", elapsed(), final_sample.c_str());
  return 0;
}

}  // namespace
}  // namespace fairsched::soak

int main(int argc, char** argv) {
  const fairsched::soak::Flags flags = fairsched::soak::ParseFlags(argc, argv);
  return fairsched::soak::Run(flags, argc, argv);
}
