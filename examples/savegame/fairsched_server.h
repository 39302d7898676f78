// The savegame server, fairsched design: coroutines on a BasicTaskScheduler with an IO
// backend. One coroutine per client connection reads requests; each request runs in its own
// coroutine (spawned by the connection, which waits for it before reading the next one):
//
//   lock the user's profile      coro::Mutex::TryLockUntil(step deadline)
//   download the blob            kGet to the blob store (pooled connection), step deadline
//   change it                    ChangeBlob: CPU work + counter increment
//   upload it                    kPut compare-and-set, step deadline; on an unknown outcome
//                                the fence of protocol.h settles it
//   unlock, reply                MutexGuard, then the reply frame (step deadline)
//
// The store is the embedded one (blob_store.h, the binary protocol over pooled TCP
// connections) or Redis (redis_store.h: the same compare-and-set as a Lua script), chosen by
// the constructor; the steps, deadlines and the fence are the same for both.
//
// Every network step has its own deadline (`step_timeout`); when one passes, the request
// ends with a clean failure reply (SaveStatus) and, if it had uploaded, only after the fence
// proved whether the upload applied. A worker never blocks: waiting for the lock, the store
// or a socket suspends the coroutine and the worker runs other requests.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_FAIRSCHED_SERVER_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_FAIRSCHED_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coro/lazy.h"
#include "coro/mutex.h"
#include "coro/runtime.h"
#include "examples/savegame/protocol.h"
#include "examples/savegame/redis_store.h"
#include "examples/savegame/stream_frames.h"
#include "io/tcp.h"
#include "sync/primitives.h"

namespace fairsched::savegame {

// Bugs planted on purpose, for the tests that show the check (check.h) catches them
// (tests/examples/savegame_seeded_bug_test.sh). Only the fairsched design has them; never
// set outside those tests.
enum class SeededBug {
  kNone,
  kAckWithoutUpload,    // replies kOk after the download, without uploading
  kUploadTwice,         // after a successful upload, applies the change a second time
  kLockDoesNotExclude,  // skips the profile lock: saves of one user overlap
};

struct ServerOptions {
  int users = 1000;
  std::chrono::nanoseconds step_timeout = std::chrono::milliseconds(100);
  std::chrono::nanoseconds cpu_cost = std::chrono::microseconds(20);
  std::size_t blob_payload = 1024;  // bytes of save data in a new blob
  int fence_attempts = 10;          // fences tried before an upload is reported kUnknown
  SeededBug seeded_bug = SeededBug::kNone;
  // A skewed workload: users 0 .. heavy_users-1 are heavy; each of their saves is
  // heavy_factor times larger (payload and CPU work). The fleet also picks them
  // heavy_factor times as often (FleetOptions).
  int heavy_users = 0;
  int heavy_factor = 1;

  bool Heavy(std::uint32_t user) const { return user < static_cast<std::uint32_t>(heavy_users); }
  // The CPU work and the payload of one save of `user`.
  std::chrono::nanoseconds CpuCostOf(std::uint32_t user) const {
    return Heavy(user) ? cpu_cost * heavy_factor : cpu_cost;
  }
  std::size_t PayloadOf(std::uint32_t user) const {
    return Heavy(user) ? blob_payload * static_cast<std::size_t>(heavy_factor) : blob_payload;
  }
};

template <typename Scheduler>
class FairschedServer {
  using Stream = TcpStream<Scheduler>;

 public:
  FairschedServer(Scheduler& scheduler, ServerOptions options, SocketAddress store)
      : scheduler_(scheduler), options_(options), store_(store), profiles_(options.users) {}
  // The same server on Redis (`redis` outlives the server; it runs on `scheduler`).
  FairschedServer(Scheduler& scheduler, ServerOptions options, RedisStore<Scheduler>* redis)
      : scheduler_(scheduler), options_(options), redis_(redis), profiles_(options.users) {}
  ~FairschedServer() { Stop(); }
  FairschedServer(const FairschedServer&) = delete;
  FairschedServer& operator=(const FairschedServer&) = delete;

  IoResult<SocketAddress> Start(const SocketAddress& address) {
    IoResult<TcpListener<Scheduler>> listener = TcpListener<Scheduler>::Listen(scheduler_, address);
    if (!listener.ok()) return listener.error();
    IoResult<SocketAddress> bound = listener.value().LocalAddress();
    if (!bound.ok()) return bound.error();
    acceptor_ = coro::Spawn(scheduler_, AcceptLoop(std::move(listener).value()));
    return bound;
  }

  // Uploads whose answer was lost and that a fence settled (or tried to).
  std::int64_t fenced_uploads() const { return fenced_uploads_.load(std::memory_order_relaxed); }

  // Stops accepting, cancels every connection and request (a request cancelled after its
  // upload was sent may be left unsettled: stop only after the clients got their replies),
  // and closes the pooled store connections. Idempotent.
  void Stop() {
    if (!acceptor_.IsValid()) return;
    acceptor_.Cancel();
    acceptor_.Get();
    MutexLock lock(mu_);
    all_closed_.wait(lock, [this] { return open_ == 0; });
    MutexLock pool_lock(pool_mu_);
    pool_.clear();  // closes the sockets (no operation can be in progress any more)
  }

 private:
  coro::Lazy<void> AcceptLoop(TcpListener<Scheduler> listener) {
    while (true) {
      IoResult<Stream> accepted = co_await listener.Accept(kTaskDeadlineInfinite);
      if (!accepted.ok()) {
        const IoErrorCode code = accepted.error().code();
        if (code == IoErrorCode::kCancelled || code == IoErrorCode::kShutdown) break;
        co_await coro::SleepFor(std::chrono::milliseconds(1));
        continue;
      }
      {
        MutexLock lock(mu_);
        ++open_;
      }
      coro::Spawn(scheduler_, ServeConnection(std::move(accepted).value())).Detach();
    }
  }

  coro::Lazy<void> ServeConnection(Stream client) {
    FrameBuffer in;
    while (true) {
      IoResult<std::string_view> frame = co_await ReadFrame(client, in, kTaskDeadlineInfinite);
      if (!frame.ok()) break;
      std::optional<SaveRequest> request = ParseSaveRequest(frame.value());
      if (!request) break;  // a bad client: drop the connection
      // One coroutine per request (a child: cancelled with the connection); the reply is
      // written by the request, so the connection waits for it before reading on.
      co_await coro::Spawn(scheduler_, HandleRequest(&client, *request));
    }
    client.Close();
    MutexLock lock(mu_);
    --open_;
    all_closed_.notify_all();
  }

  coro::Lazy<void> HandleRequest(Stream* client, SaveRequest request) {
    const SaveStatus status = co_await Save(request);
    std::string reply;
    AppendSaveReply({request.request_id, status}, &reply);
    // A failed reply write leaves the client to notice the broken connection.
    (void)co_await client->Write(reply, coro::DeadlineAfter(options_.step_timeout));
  }

  coro::Lazy<SaveStatus> Save(SaveRequest request) {
    if (request.user >= profiles_.size()) co_return SaveStatus::kBadRequest;
    coro::Mutex& profile = profiles_[request.user];
    coro::MutexGuard guard;
    if (options_.seeded_bug != SeededBug::kLockDoesNotExclude) {
      const coro::WaitStatus locked =
          co_await profile.TryLockUntil(coro::DeadlineAfter(options_.step_timeout));
      if (locked == coro::WaitStatus::kDeadline) co_return SaveStatus::kLockTimeout;
      if (locked != coro::WaitStatus::kOk) co_return SaveStatus::kShuttingDown;
      guard = coro::MutexGuard(profile, std::adopt_lock);
    }

    // Download.
    StoreCall download = co_await CallStore({StoreOp::kGet, request.user, 0, {}});
    if (!download.ok) co_return download.status;
    const std::uint64_t version = download.version;
    const std::string old_blob = std::move(download.blob);
    if (options_.seeded_bug == SeededBug::kAckWithoutUpload) co_return SaveStatus::kOk;

    // Change (CPU work) and upload (compare-and-set on the downloaded version).
    const std::string new_blob =
        ChangeBlob(old_blob, request.request_id, options_.PayloadOf(request.user),
                   options_.CpuCostOf(request.user));
    StoreCall upload = co_await CallStore({StoreOp::kPut, request.user, version, new_blob});
    if (upload.ok && options_.seeded_bug == SeededBug::kUploadTwice) {
      const std::string twice = ChangeBlob(new_blob, request.request_id,
                                           options_.PayloadOf(request.user),
                                           std::chrono::nanoseconds(0));
      (void)co_await CallStore({StoreOp::kPut, request.user, version + 1, twice});
    }
    if (upload.ok) co_return SaveStatus::kOk;
    if (upload.status == SaveStatus::kConflict || !upload.sent) co_return upload.status;
    // Relaxed: a statistic, read after Stop.
    fenced_uploads_.fetch_add(1, std::memory_order_relaxed);
    co_return co_await Fence(request, version, old_blob);
  }

  // The result of one request/answer exchange with the store (CallStore).
  struct StoreCall {
    bool ok = false;                      // the store answered kOk
    bool sent = false;                    // the request may have reached the store
    SaveStatus status = SaveStatus::kOk;  // when !ok: the failure to report
    std::uint64_t version = 0;
    std::string blob;
  };

  // The upload's outcome is unknown: settle it (protocol.h). Still under the profile lock.
  coro::Lazy<SaveStatus> Fence(SaveRequest request, std::uint64_t version,
                               const std::string& old_blob) {
    for (int attempt = 0; attempt < options_.fence_attempts; ++attempt) {
      StoreCall fence = co_await CallStore({StoreOp::kPut, request.user, version, old_blob});
      if (fence.ok) co_return SaveStatus::kUploadNotApplied;  // the upload can never apply now
      if (fence.status == SaveStatus::kConflict)
        co_return SettledByConflict(request, version, fence);
      if (fence.status == SaveStatus::kShuttingDown) break;
    }
    co_return SaveStatus::kUnknown;
  }

  // A fence was refused: version `version` was already replaced, by exactly one of our
  // compare-and-sets on it (we hold the lock): the upload (the blob names this request) or
  // an earlier fence whose answer was lost (the blob is the old one).
  static SaveStatus SettledByConflict(const SaveRequest& request, std::uint64_t version,
                                      const StoreCall& fence) {
    if (fence.version != version + 1) return SaveStatus::kUnknown;  // not ours: cannot tell
    return ReadBlobHeader(fence.blob).last_request_id == request.request_id
               ? SaveStatus::kOk
               : SaveStatus::kUploadNotApplied;
  }

  coro::Lazy<StoreCall> CallStore(StoreRequest request) {
    StoreCall call;
    const SaveStatus io_failure =
        request.op == StoreOp::kGet ? SaveStatus::kDownloadFailed : SaveStatus::kUploadNotApplied;
    if (redis_ != nullptr) co_return co_await CallRedis(request, io_failure);
    std::unique_ptr<PooledConnection> connection = TakePooled();
    if (connection == nullptr) {
      IoResult<Stream> connected =
          co_await Stream::Connect(scheduler_, store_, coro::DeadlineAfter(options_.step_timeout));
      if (!connected.ok()) {
        call.status = ShutdownOr(connected.error(), SaveStatus::kStoreUnavailable);
        co_return call;
      }
      connection = std::make_unique<PooledConnection>();
      connection->stream = std::move(connected).value();
    }
    std::string frame;
    AppendStoreRequest(request, &frame);
    call.sent = true;
    const IoError written =
        co_await connection->stream.Write(frame, coro::DeadlineAfter(options_.step_timeout));
    if (!written.ok()) {
      call.status = ShutdownOr(written, io_failure);
      co_return call;  // the connection is dropped: its state is unknown
    }
    IoResult<std::string_view> answer = co_await ReadFrame(
        connection->stream, connection->in, coro::DeadlineAfter(options_.step_timeout));
    if (!answer.ok()) {
      call.status = ShutdownOr(answer.error(), io_failure);
      co_return call;  // a late answer must never be read as the next request's: drop it
    }
    std::optional<StoreResponse> response = ParseStoreResponse(answer.value());
    if (!response || response->status == StoreStatus::kBadRequest) {
      call.status = io_failure;
      co_return call;
    }
    call.version = response->version;
    call.blob.assign(response->blob);
    call.ok = response->status == StoreStatus::kOk;
    if (!call.ok) call.status = SaveStatus::kConflict;
    ReturnPooled(std::move(connection));
    co_return call;
  }

  // CallStore on Redis: the same outcomes (a command that may have reached Redis is `sent`).
  coro::Lazy<StoreCall> CallRedis(StoreRequest request, SaveStatus io_failure) {
    StoreCall call;
    RedisStoreCall answer =
        co_await redis_->Call(request, coro::DeadlineAfter(options_.step_timeout));
    call.sent = answer.sent;
    if (!answer.answered) {
      call.status =
          ShutdownOr(answer.error, answer.sent ? io_failure : SaveStatus::kStoreUnavailable);
      co_return call;
    }
    call.version = answer.version;
    call.blob = std::move(answer.blob);
    call.ok = answer.status == StoreStatus::kOk;
    if (!call.ok) call.status = SaveStatus::kConflict;
    co_return call;
  }

  static SaveStatus ShutdownOr(const IoError& error, SaveStatus otherwise) {
    return error.code() == IoErrorCode::kCancelled || error.code() == IoErrorCode::kShutdown
               ? SaveStatus::kShuttingDown
               : otherwise;
  }

  struct PooledConnection {
    Stream stream;
    FrameBuffer in;
  };
  std::unique_ptr<PooledConnection> TakePooled() {
    MutexLock lock(pool_mu_);
    if (pool_.empty()) return nullptr;
    std::unique_ptr<PooledConnection> connection = std::move(pool_.back());
    pool_.pop_back();
    return connection;
  }
  void ReturnPooled(std::unique_ptr<PooledConnection> connection) {
    MutexLock lock(pool_mu_);
    pool_.push_back(std::move(connection));
  }

  Scheduler& scheduler_;
  const ServerOptions options_;
  const SocketAddress store_;  // the embedded store, when redis_ is null
  RedisStore<Scheduler>* redis_ = nullptr;
  std::vector<coro::Mutex> profiles_;  // index: user
  coro::JoinHandle<void> acceptor_;
  Mutex pool_mu_;
  std::vector<std::unique_ptr<PooledConnection>> pool_;  // guarded by pool_mu_: idle, clean
  Mutex mu_;
  ConditionVariable all_closed_;
  int open_ = 0;  // guarded by mu_: client connections being served
  Atomic<std::int64_t> fenced_uploads_{0};
};

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_FAIRSCHED_SERVER_H_
