// The "Updater" baseline server (updater_server.h).
#include "examples/savegame/updater_server.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "examples/redis/resp.h"
#include "examples/savegame/redis_store.h"

namespace fairsched::savegame {
namespace {

using Clock = std::chrono::steady_clock;

bool WouldBlock() { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; }

// Appends what `fd` has to `in` without blocking; false at the end of the stream or on an
// error (what arrived before it is in `in`).
bool ReceiveBytes(int fd, std::string* in) {
  char chunk[16 * 1024];
  while (true) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n > 0) {
      in->append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return false;
    return WouldBlock();
  }
}

}  // namespace

struct UpdaterServer::ClientConnection {
  explicit ClientConnection(int socket) : fd(socket) {}
  ~ClientConnection() { ::close(fd); }
  const int fd;
  FrameBuffer in;  // only the owning thread reads
};

struct UpdaterServer::StoreConnection {
  ~StoreConnection() { ::close(fd); }
  int fd = -1;
  FrameBuffer in;         // the embedded store's frames
  std::string redis_in;   // Redis's replies (RESP)
};

struct UpdaterServer::Job {
  // kHeld: on Redis, an answer the fault injection holds back (until held_until).
  enum class State { kLock, kConnecting, kSending, kReceiving, kHeld, kReply };
  std::shared_ptr<ClientConnection> client;
  SaveRequest request;
  Clock::time_point read_at;  // when its request was read (for jobs_started_late)
  State state = State::kLock;
  Clock::time_point deadline;  // of the current step
  bool locked = false;
  // The current store call.
  StoreOp op = StoreOp::kGet;
  bool fencing = false;  // the current kPut is a fence
  int fence_attempts = 0;
  bool upload_sent = false;
  std::unique_ptr<StoreConnection> store;
  std::string out;  // the frame being sent (store request, then the reply)
  std::size_t out_done = 0;
  // What the download returned.
  std::uint64_t version = 0;
  std::string old_blob;
  // On Redis: the current kPut went as the whole script (after NOSCRIPT); the answer held
  // by a fault, and whether it is lost (dropped, or delayed past the step deadline).
  bool whole_script = false;
  std::string command_blob;  // the blob the current call sends (for a resend as EVAL)
  std::uint64_t command_version = 0;
  Clock::time_point held_until;
  bool held_lost = false;
  StoreStatus held_status = StoreStatus::kOk;
  std::uint64_t held_version = 0;
  std::string held_blob;
};

struct UpdaterServer::Worker {
  Mutex inbox_mu;
  std::vector<std::unique_ptr<Job>> job_inbox;                  // guarded by inbox_mu
  std::vector<std::shared_ptr<ClientConnection>> client_inbox;  // guarded by inbox_mu
  // The thread's own:
  std::vector<std::shared_ptr<ClientConnection>> clients;
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<std::unique_ptr<StoreConnection>> idle_store;  // clean, reusable
  Clock::time_point last_walk;  // when the thread's last walk over its jobs began
  std::thread thread;
};

UpdaterServer::UpdaterServer(UpdaterOptions options, SocketAddress store)
    : options_(options), store_(store), profile_locked_(options.server.users) {}

UpdaterServer::UpdaterServer(UpdaterOptions options, UpdaterRedis redis)
    : options_(options),
      store_(redis.address),
      redis_(std::move(redis)),
      profile_locked_(options.server.users) {}

UpdaterServer::~UpdaterServer() { Stop(); }

IoResult<SocketAddress> UpdaterServer::Start(const SocketAddress& address) {
  listen_fd_ = internal::OpenListeningSocket(address, 4096);
  if (listen_fd_ < 0) return IoError::FromErrno(-listen_fd_);
  IoResult<SocketAddress> bound = internal::LocalAddressOf(listen_fd_);
  if (!bound.ok()) return bound.error();
  for (int i = 0; i < options_.threads; ++i) workers_.push_back(std::make_unique<Worker>());
  for (int i = 0; i < options_.threads; ++i) {
    workers_[i]->thread = std::thread([this, i] { WorkerMain(i); });
  }
  return bound;
}

void UpdaterServer::Stop() {
  if (workers_.empty()) return;
  stopping_.store(true, std::memory_order_relaxed);  // the join orders everything after it
  for (auto& worker : workers_) worker->thread.join();
  workers_.clear();  // closes every socket the jobs and connections held
  ::close(listen_fd_);
}

void UpdaterServer::WorkerMain(int index) {
  const std::string name = "updater-" + std::to_string(index);
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  Worker& worker = *workers_[index];
  Clock::time_point next_tick = Clock::now();
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (index == 0) AcceptAll();
    TakeConnections(worker);
    if (options_.start == UpdaterStart::kNextTick) TakeJobs(worker);
    // Poll every connection for requests.
    for (std::size_t i = 0; i < worker.clients.size();) {
      if (ReadRequests(worker.clients[i])) {
        ++i;
      } else {
        worker.clients[i] = std::move(worker.clients.back());
        worker.clients.pop_back();
      }
    }
    if (options_.start == UpdaterStart::kSameTick) TakeJobs(worker);
    // Update every job.
    worker.last_walk = Clock::now();
    for (std::size_t i = 0; i < worker.jobs.size();) {
      if (Advance(worker, *worker.jobs[i])) {
        worker.jobs[i] = std::move(worker.jobs.back());
        worker.jobs.pop_back();
      } else {
        ++i;
      }
    }
    next_tick += options_.tick;
    const Clock::time_point now = Clock::now();
    if (next_tick < now) next_tick = now;  // the walk took longer than a tick: no sleep
    std::this_thread::sleep_until(next_tick);
  }
}

void UpdaterServer::TakeConnections(Worker& worker) {
  MutexLock lock(worker.inbox_mu);
  for (auto& client : worker.client_inbox) worker.clients.push_back(std::move(client));
  worker.client_inbox.clear();
}

void UpdaterServer::TakeJobs(Worker& worker) {
  std::int64_t late = 0;
  {
    MutexLock lock(worker.inbox_mu);
    for (auto& job : worker.job_inbox) {
      if (job->read_at < worker.last_walk) ++late;  // an earlier walk began after its read
      worker.jobs.push_back(std::move(job));
    }
    worker.job_inbox.clear();
  }
  // Relaxed: a statistic, read after Stop (the join orders it).
  if (late > 0) jobs_started_late_.fetch_add(late, std::memory_order_relaxed);
}

void UpdaterServer::AcceptAll() {
  while (true) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: none pending (or a transient error: next tick)
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // Relaxed: only a round-robin counter.
    Worker& owner =
        *workers_[next_connection_.fetch_add(1, std::memory_order_relaxed) % workers_.size()];
    MutexLock lock(owner.inbox_mu);
    owner.client_inbox.push_back(std::make_shared<ClientConnection>(fd));
  }
}

bool UpdaterServer::ReadRequests(const std::shared_ptr<ClientConnection>& client) {
  if (!ReceiveAvailable(client->fd, client->in)) return false;  // end of stream or error
  while (std::optional<std::string_view> body = client->in.NextFrame()) {
    std::optional<SaveRequest> request = ParseSaveRequest(*body);
    if (!request) return false;
    auto job = std::make_unique<Job>();
    job->client = client;
    job->request = *request;
    job->read_at = Clock::now();
    job->deadline = job->read_at + options_.server.step_timeout;
    Pin(std::move(job));
  }
  return !client->in.Corrupt();
}

void UpdaterServer::Pin(std::unique_ptr<Job> job) {
  // Relaxed: only a round-robin counter.
  Worker& owner = *workers_[next_job_.fetch_add(1, std::memory_order_relaxed) % workers_.size()];
  MutexLock lock(owner.inbox_mu);
  owner.job_inbox.push_back(std::move(job));
}

bool UpdaterServer::Advance(Worker& worker, Job& job) {
  while (true) {
    const Clock::time_point now = Clock::now();
    switch (job.state) {
      case Job::State::kLock: {
        if (job.request.user >= profile_locked_.size()) {
          Finish(job, SaveStatus::kBadRequest);
          break;
        }
        bool expected = false;
        // Acquire: the previous holder's writes (its whole save) happen before ours.
        if (profile_locked_[job.request.user].compare_exchange_strong(
                expected, true, std::memory_order_acquire, std::memory_order_relaxed)) {
          job.locked = true;
          StartCall(worker, job, StoreOp::kGet, 0, {});
          break;
        }
        if (now >= job.deadline) {
          Finish(job, SaveStatus::kLockTimeout);
          break;
        }
        return false;  // next tick
      }
      case Job::State::kConnecting: {
        pollfd probe{job.store->fd, POLLOUT, 0};
        const int ready = ::poll(&probe, 1, 0);
        if (ready == 0) {
          if (now >= job.deadline) CallFailed(worker, job, SaveStatus::kStoreUnavailable);
          if (job.state == Job::State::kConnecting) return false;
          break;
        }
        int error = 0;
        socklen_t length = sizeof(error);
        ::getsockopt(job.store->fd, SOL_SOCKET, SO_ERROR, &error, &length);
        if (error != 0) {
          CallFailed(worker, job, SaveStatus::kStoreUnavailable);
          break;
        }
        job.state = Job::State::kSending;
        break;
      }
      case Job::State::kSending: {
        if (job.op == StoreOp::kPut && !job.fencing) job.upload_sent = true;
        const ssize_t n = ::send(job.store->fd, job.out.data() + job.out_done,
                                 job.out.size() - job.out_done, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && !WouldBlock()) {
          CallFailed(worker, job, SaveStatus::kStoreUnavailable);
          break;
        }
        if (n > 0) job.out_done += static_cast<std::size_t>(n);
        if (job.out_done == job.out.size()) {
          job.state = Job::State::kReceiving;
          break;
        }
        if (now >= job.deadline) {
          CallFailed(worker, job, SaveStatus::kStoreUnavailable);
          break;
        }
        return false;
      }
      case Job::State::kReceiving: {
        if (redis_) {
          if (!ReceiveFromRedis(worker, job, now)) return false;
          break;
        }
        StoreConnection& store = *job.store;
        const bool broken = !ReceiveAvailable(store.fd, store.in);
        if (std::optional<std::string_view> body = store.in.NextFrame()) {
          std::optional<StoreResponse> response = ParseStoreResponse(*body);
          if (response && response->status != StoreStatus::kBadRequest) {
            CallAnswered(worker, job, *response);
          } else {
            CallFailed(worker, job, SaveStatus::kStoreUnavailable);
          }
          break;
        }
        if (broken || store.in.Corrupt() || now >= job.deadline) {
          CallFailed(worker, job, SaveStatus::kStoreUnavailable);
          break;
        }
        return false;
      }
      case Job::State::kHeld: {
        if (now < job.held_until) return false;
        if (job.held_lost) {
          CallFailed(worker, job, SaveStatus::kStoreUnavailable);
        } else {
          CallAnswered(worker, job, {job.held_status, job.held_version, job.held_blob});
        }
        break;
      }
      case Job::State::kReply: {
        const ssize_t n = ::send(job.client->fd, job.out.data() + job.out_done,
                                 job.out.size() - job.out_done, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) job.out_done += static_cast<std::size_t>(n);
        if (job.out_done == job.out.size()) return true;
        if ((n < 0 && !WouldBlock()) || now >= job.deadline) return true;  // client's problem
        return false;
      }
    }
  }
}

void UpdaterServer::StartCall(Worker& worker, Job& job, StoreOp op, std::uint64_t version,
                              std::string_view blob) {
  job.op = op;
  job.whole_script = false;
  EncodeCall(job, version, blob);
  job.deadline = Clock::now() + options_.server.step_timeout;
  if (!worker.idle_store.empty()) {
    job.store = std::move(worker.idle_store.back());
    worker.idle_store.pop_back();
    job.state = Job::State::kSending;
    return;
  }
  job.store = std::make_unique<StoreConnection>();
  job.store->fd = internal::OpenTcpSocket(store_.family());
  if (job.store->fd < 0) {
    CallFailed(worker, job, SaveStatus::kStoreUnavailable);
    return;
  }
  const int one = 1;
  ::setsockopt(job.store->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::connect(job.store->fd, store_.get(), store_.length()) == 0) {
    job.state = Job::State::kSending;
  } else if (errno == EINPROGRESS) {
    job.state = Job::State::kConnecting;
  } else {
    CallFailed(worker, job, SaveStatus::kStoreUnavailable);
  }
}

void UpdaterServer::EncodeCall(Job& job, std::uint64_t version, std::string_view blob) {
  job.out.clear();
  job.out_done = 0;
  if (!redis_) {
    AppendStoreRequest({job.op, job.request.user, version, blob}, &job.out);
    return;
  }
  if (job.command_blob.data() != blob.data()) job.command_blob.assign(blob);
  job.command_version = version;
  const redis::Command command =
      RedisStoreCommand(redis_->key_prefix, {job.op, job.request.user, version, job.command_blob},
                        redis_->script_sha, job.whole_script);
  std::vector<std::string_view> args(command.begin(), command.end());
  redis::AppendCommand(args, &job.out);
}

bool UpdaterServer::ReceiveFromRedis(Worker& worker, Job& job, Clock::time_point now) {
  StoreConnection& store = *job.store;
  const bool broken = !ReceiveBytes(store.fd, &store.redis_in);
  redis::Reply reply;
  const redis::ParseResult parsed = redis::ParseReply(store.redis_in, redis::ReplyLimits{}, &reply);
  if (parsed.status == redis::ParseStatus::kIncomplete && !broken && now < job.deadline) {
    return false;  // next tick
  }
  if (parsed.status != redis::ParseStatus::kComplete) {
    CallFailed(worker, job, SaveStatus::kStoreUnavailable);
    return true;
  }
  store.redis_in.erase(0, parsed.consumed);
  if (job.op == StoreOp::kPut && !job.whole_script && IsNoScript(reply)) {
    // Redis lost its script cache (a restart): nothing ran; send the whole script now.
    job.whole_script = true;
    EncodeCall(job, job.command_version, job.command_blob);
    job.state = Job::State::kSending;
    return true;
  }
  if (IsLoading(reply)) {
    // A restarted Redis still reading its AOF ran nothing: send again in the next tick.
    if (now >= job.deadline) {
      CallFailed(worker, job, SaveStatus::kStoreUnavailable);
      return true;
    }
    job.out_done = 0;
    job.state = Job::State::kSending;
    return false;
  }
  RedisStoreCall call;
  if (!DecodeRedisStoreReply(job.op, reply, &call)) {
    CallFailed(worker, job, SaveStatus::kStoreUnavailable);
    return true;
  }
  worker.idle_store.push_back(std::move(job.store));  // answered whole: clean, reusable
  // Relaxed: a distinct draw per answer is all it needs.
  const RedisFault fault = DrawRedisFault(redis_->fault, redis_->seed,
                                          fault_draws_.fetch_add(1, std::memory_order_relaxed));
  job.held_status = call.status;
  job.held_version = call.version;
  job.held_blob = std::move(call.blob);
  if (fault == RedisFault::kNone) {
    CallAnswered(worker, job, {job.held_status, job.held_version, job.held_blob});
    return true;
  }
  faults_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
  const Clock::time_point delayed = now + redis_->fault_delay;
  job.held_lost = fault == RedisFault::kDrop || delayed >= job.deadline;
  job.held_until = job.held_lost ? job.deadline : delayed;
  job.state = Job::State::kHeld;
  return true;
}

void UpdaterServer::CallFailed(Worker& worker, Job& job, SaveStatus io_status) {
  job.store.reset();  // unknown state (a late answer may come): never reuse it
  if (job.op == StoreOp::kGet) {
    Finish(job, io_status == SaveStatus::kStoreUnavailable && job.out_done > 0
                    ? SaveStatus::kDownloadFailed
                    : io_status);
    return;
  }
  if (!job.upload_sent) {
    Finish(job, io_status);  // the upload never left: nothing applied
    return;
  }
  // The upload's outcome is unknown: fence (protocol.h), a bounded number of times.
  if (job.fence_attempts >= options_.server.fence_attempts) {
    Finish(job, SaveStatus::kUnknown);
    return;
  }
  if (job.fence_attempts++ == 0) fenced_uploads_.fetch_add(1, std::memory_order_relaxed);
  job.fencing = true;
  StartCall(worker, job, StoreOp::kPut, job.version, job.old_blob);
}

void UpdaterServer::CallAnswered(Worker& worker, Job& job, const StoreResponse& response) {
  // `response` points into the connection's buffer: read it before the connection is reused.
  const bool ok = response.status == StoreStatus::kOk;
  const std::uint64_t answer_version = response.version;
  const std::string answer_blob(response.blob);
  // (On Redis the connection went back when the answer was read.)
  if (job.store) worker.idle_store.push_back(std::move(job.store));
  if (job.op == StoreOp::kGet) {
    job.version = answer_version;
    job.old_blob = answer_blob;
    const std::uint32_t user = job.request.user;
    const std::string new_blob =
        ChangeBlob(job.old_blob, job.request.request_id, options_.server.PayloadOf(user),
                   options_.server.CpuCostOf(user));
    StartCall(worker, job, StoreOp::kPut, job.version, new_blob);
    return;
  }
  if (!job.fencing) {
    Finish(job, ok ? SaveStatus::kOk : SaveStatus::kConflict);
    return;
  }
  if (ok) {
    Finish(job, SaveStatus::kUploadNotApplied);  // the fence applied: the upload never will
    return;
  }
  // Refused: version job.version was replaced by exactly one of our compare-and-sets on it
  // (the upload, or an earlier fence whose answer was lost); the blob tells which.
  if (answer_version != job.version + 1) {
    Finish(job, SaveStatus::kUnknown);
    return;
  }
  Finish(job, ReadBlobHeader(answer_blob).last_request_id == job.request.request_id
                  ? SaveStatus::kOk
                  : SaveStatus::kUploadNotApplied);
}

void UpdaterServer::Finish(Job& job, SaveStatus status) {
  job.store.reset();
  if (job.locked) {
    // Release: our save happens before the next holder's acquire.
    profile_locked_[job.request.user].store(false, std::memory_order_release);
    job.locked = false;
  }
  job.out.clear();
  job.out_done = 0;
  AppendSaveReply({job.request.request_id, status}, &job.out);
  job.deadline = Clock::now() + options_.server.step_timeout;
  job.state = Job::State::kReply;
}

}  // namespace fairsched::savegame
