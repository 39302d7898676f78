// Redis as the savegame service's blob store (`//examples:savegame --store=redis`), in place
// of the embedded one (blob_store.h), through our client (examples/redis/redis_client.h).
// The fairsched server (fairsched_server.h) sends its kGet/kPut here when it was given a
// RedisStore; the Updater (updater_server.h, UpdaterRedis) sends the same commands
// (RedisStoreCommand) with its own non-blocking calls and decodes them the same way. The
// rule of protocol.h (compare-and-set on the version, the fence on an unknown outcome) is
// unchanged, and so is the check (check.h), which reads back from Redis.
//
// Keys, for user U of a run whose key prefix is P (hash tags keep one user's keys in one
// Redis Cluster slot):
//   P{U}:blob      a hash: "v" the version (missing: 0), "b" the blob (protocol.h's format)
//   P{U}:applied   a list: the request id (decimal) of every save applied to U, in order
//
//   download (kGet)  HMGET P{U}:blob v b
//   upload (kPut)    EVALSHA of kCasScript (EVAL when Redis answers NOSCRIPT, e.g. after a
//                    restart): if v == expected_version, it sets v = v + 1 and b = blob and,
//                    when the blob changed (a fence rewrites it unchanged: not a save),
//                    RPUSHes the request id to P{U}:applied, all in one atomic script;
//                    answers {1, new version} or, refused, {0, version, blob}.
// So Redis itself holds the log the check compares with the acknowledgements: a save is in
// P{U}:applied iff its compare-and-set applied, whatever the client saw of the answer.
//
// Fault injection (`--fault=F`): after Redis answered, a fraction F of kGet/kPut answers is
// dropped (half; the client waits until the call's deadline, then reports a timeout: the
// command applied, the caller cannot know) or delayed by `fault_delay` (the other half; if
// the deadline comes first, the answer is lost the same way). ReadBack has no faults.
// A restarted Redis answers LOADING (nothing run) until it has read its AOF: the call sends
// the command again after a backoff, within its deadline; the pool (redis_client.h) drops
// the dead connections and reconnects with backoff.
// Thread-safe: any number of coroutines on the scheduler call it at once (a pooled
// connection each).
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_REDIS_STORE_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_REDIS_STORE_H_

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "coro/lazy.h"
#include "coro/runtime.h"
#include "examples/redis/redis_client.h"
#include "examples/savegame/check.h"
#include "examples/savegame/protocol.h"
#include "sync/primitives.h"

namespace fairsched::savegame {

// The upload's compare-and-set. KEYS: blob hash, applied list; ARGV: expected version, new
// blob, request id.
inline constexpr const char* kCasScript = R"lua(
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  return {0, v, redis.call('HGET', KEYS[1], 'b') or ''}
end
local old = redis.call('HGET', KEYS[1], 'b') or ''
if old ~= ARGV[2] then redis.call('RPUSH', KEYS[2], ARGV[3]) end
redis.call('HSET', KEYS[1], 'v', v + 1, 'b', ARGV[2])
return {1, v + 1}
)lua";

struct RedisStoreOptions {
  std::string key_prefix = "savegame:";
  double fault = 0;
  std::chrono::nanoseconds fault_delay = std::chrono::milliseconds(300);
  std::uint64_t seed = 1;  // of the fault injection
};

// One kGet/kPut: `answered` when Redis's answer reached the caller (then status, version
// and blob); else `sent` says whether the command may have reached Redis, and `error` why
// the answer did not come.
struct RedisStoreCall {
  bool answered = false;
  bool sent = false;
  IoError error;
  StoreStatus status = StoreStatus::kOk;
  std::uint64_t version = 0;
  std::string blob;
};

// A decimal u64, all of `text`; false otherwise (nothing throws).
inline bool ParseU64(std::string_view text, std::uint64_t* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

inline std::string BlobKey(const std::string& prefix, std::uint32_t user) {
  return prefix + "{" + std::to_string(user) + "}:blob";
}
inline std::string AppliedKey(const std::string& prefix, std::uint32_t user) {
  return prefix + "{" + std::to_string(user) + "}:applied";
}

// The Redis command of one kGet/kPut (the keys above): HMGET, or EVALSHA of kCasScript with
// `sha` (EVAL of the whole script when `whole_script`, after Redis answered NOSCRIPT). Shared
// by RedisStore and the Updater's non-blocking store calls (updater_server.h).
inline redis::Command RedisStoreCommand(const std::string& prefix, const StoreRequest& request,
                                        const std::string& sha, bool whole_script = false) {
  const std::string blob_key = BlobKey(prefix, request.user);
  if (request.op != StoreOp::kPut) return {"HMGET", blob_key, "v", "b"};
  return {whole_script ? "EVAL" : "EVALSHA",
          whole_script ? std::string(kCasScript) : sha,
          "2",
          blob_key,
          AppliedKey(prefix, request.user),
          std::to_string(request.expected_version),
          std::string(request.blob),
          std::to_string(ReadBlobHeader(request.blob).last_request_id)};
}

// Redis refused the command without running it: the script is not in its cache (NOSCRIPT:
// send the whole script) or it is still loading its data set (LOADING: send it again).
inline bool IsNoScript(const redis::Reply& reply) {
  return reply.IsError() && reply.text.rfind("NOSCRIPT", 0) == 0;
}
inline bool IsLoading(const redis::Reply& reply) {
  return reply.IsError() && reply.text.rfind("LOADING", 0) == 0;
}

// Redis's answer to a RedisStoreCommand as a store answer (status, version, blob into
// `call`); false if it is not one (a Redis error included).
inline bool DecodeRedisStoreReply(StoreOp op, redis::Reply& reply, RedisStoreCall* call) {
  using Type = redis::Reply::Type;
  if (reply.type != Type::kArray) return false;
  std::vector<redis::Reply>& e = reply.elements;
  if (op != StoreOp::kPut) {  // [v or nil, b or nil]
    if (e.size() != 2) return false;
    call->status = StoreStatus::kOk;
    call->version = 0;
    if (e[0].type == Type::kBulkString && !ParseU64(e[0].text, &call->version)) return false;
    call->blob = e[1].type == Type::kBulkString ? std::move(e[1].text) : std::string();
    return true;
  }
  if (e.size() < 2 || e[0].type != Type::kInteger || e[1].type != Type::kInteger) return false;
  call->version = static_cast<std::uint64_t>(e[1].integer);
  if (e[0].integer == 1) {
    call->status = StoreStatus::kOk;
    return true;
  }
  if (e.size() != 3 || e[2].type != Type::kBulkString) return false;
  call->status = StoreStatus::kConflict;
  call->blob = std::move(e[2].text);
  return true;
}

// The fault injected on the n-th answer of a run (`--fault`): none, or (each half of the
// `fault` fraction) the answer dropped or delayed. A pure function of (fault, seed, n):
// splitmix64 of (seed, n), its top 53 bits the uniform draw, its low bit the kind.
enum class RedisFault { kNone, kDrop, kDelay };
inline RedisFault DrawRedisFault(double fault, std::uint64_t seed, std::uint64_t n) {
  if (fault <= 0) return RedisFault::kNone;
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + n * 0xbf58476d1ce4e5b9ull + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const double unit = static_cast<double>(z >> 11) * 0x1.0p-53;
  if (unit >= fault) return RedisFault::kNone;
  return (z & 1) == 0 ? RedisFault::kDrop : RedisFault::kDelay;
}

template <typename Scheduler>
class RedisStore {
  using Connection = redis::RedisConnection<Scheduler>;

 public:
  RedisStore(Scheduler& scheduler, SocketAddress address, RedisStoreOptions options)
      : options_(std::move(options)), pool_(scheduler, address) {}
  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  // Loads the script (SCRIPT LOAD) so that uploads send its SHA1. Once, before the calls.
  coro::Lazy<IoError> Prepare(TaskDeadline deadline) {
    IoResult<std::unique_ptr<Connection>> connection = co_await pool_.Acquire(deadline);
    if (!connection.ok()) co_return connection.error();
    redis::Command load = {"SCRIPT", "LOAD", kCasScript};  // (not braced inside co_await: gcc 12)
    IoResult<redis::Reply> sha = co_await connection.value()->Call(std::move(load), deadline);
    if (!sha.ok()) co_return sha.error();
    if (sha.value().type != redis::Reply::Type::kBulkString) co_return redis::MalformedReplyError();
    sha_ = sha.value().text;
    pool_.Release(std::move(connection).value());
    co_return IoError();
  }

  coro::Lazy<RedisStoreCall> Call(const StoreRequest& request, TaskDeadline deadline) {
    RedisStoreCall call;
    IoResult<std::unique_ptr<Connection>> acquired = co_await pool_.Acquire(deadline);
    if (!acquired.ok()) {
      call.error = acquired.error();
      co_return call;
    }
    std::unique_ptr<Connection> connection = std::move(acquired).value();
    call.sent = true;
    IoResult<redis::Reply> reply = co_await Send(*connection, request, deadline);
    // A Redis that is loading its AOF (just restarted) refuses every command without running
    // it: try again after a backoff, within the deadline.
    std::chrono::nanoseconds backoff = std::chrono::milliseconds(1);
    while (reply.ok() && IsLoading(reply.value())) {
      loading_retries_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
      const TaskDeadline retry = coro::DeadlineAfter(backoff);
      if (retry >= deadline) break;
      const coro::WakeReason slept = co_await coro::SleepUntil(retry);
      if (slept != coro::WakeReason::kDeadline) break;
      backoff = std::min<std::chrono::nanoseconds>(2 * backoff, std::chrono::milliseconds(20));
      reply = co_await Send(*connection, request, deadline);
    }
    pool_.Release(std::move(connection));  // kept only if still open
    if (!reply.ok()) {
      call.error = reply.error();
      co_return call;
    }
    if (!DecodeRedisStoreReply(request.op, reply.value(), &call)) {
      call.error = redis::MalformedReplyError();
      co_return call;
    }
    const bool lost = co_await InjectFault(deadline);  // (not in the condition: gcc 12)
    if (lost) {
      call.error = IoError(IoErrorCode::kTimeout);
      co_return call;
    }
    call.answered = true;
    co_return call;
  }

  std::int64_t faults_injected() const { return faults_.load(std::memory_order_relaxed); }
  // Commands sent again because Redis was loading its data set (after a restart).
  std::int64_t loading_retries() const { return loading_retries_.load(std::memory_order_relaxed); }
  std::int64_t connects() const { return pool_.connects(); }
  // The upload script's SHA1 (after Prepare).
  const std::string& script_sha() const { return sha_; }

  // Drops the idle connections (before the scheduler stops).
  void Stop() { pool_.Clear(); }

 private:
  coro::Lazy<IoResult<redis::Reply>> Send(Connection& connection, const StoreRequest& request,
                                          TaskDeadline deadline) {
    redis::Command command = RedisStoreCommand(options_.key_prefix, request, sha_);
    IoResult<redis::Reply> reply = co_await connection.Call(command, deadline);
    if (request.op == StoreOp::kPut && reply.ok() && IsNoScript(reply.value())) {
      // Redis lost its script cache (a restart): the script did not run; send it whole.
      command = RedisStoreCommand(options_.key_prefix, request, sha_, /*whole_script=*/true);
      reply = co_await connection.Call(command, deadline);
    }
    co_return reply;
  }

  // With probability `fault`: drop the answer (wait until the deadline) or delay it (lost
  // too if the deadline comes first). True when the answer is lost.
  coro::Lazy<bool> InjectFault(TaskDeadline deadline) {
    if (options_.fault <= 0) co_return false;
    // Relaxed: a distinct draw per call is all it needs.
    const RedisFault fault = DrawRedisFault(
        options_.fault, options_.seed, draws_.fetch_add(1, std::memory_order_relaxed));
    if (fault == RedisFault::kNone) co_return false;
    faults_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    const bool drop = fault == RedisFault::kDrop;
    const TaskDeadline delayed = coro::DeadlineAfter(options_.fault_delay);
    const coro::WakeReason slept =
        co_await coro::SleepUntil(drop ? deadline : std::min(delayed, deadline));
    if (slept != coro::WakeReason::kDeadline) co_return true;  // cancelled, shutdown
    co_return drop || delayed >= deadline;
  }

  const RedisStoreOptions options_;
  std::string sha_;  // written by Prepare, before any Call
  redis::RedisPool<Scheduler> pool_;
  Atomic<std::uint64_t> draws_{0};
  Atomic<std::int64_t> faults_{0};
  Atomic<std::int64_t> loading_retries_{0};
};

// For the check: every user's counter (from its blob) and every save Redis logged, read
// over one connection in pipelines of `batch` users. Runs on any IO scheduler.
template <typename Scheduler>
coro::Lazy<IoError> ReadBackFromRedis(Scheduler* scheduler, SocketAddress address,
                                      std::string prefix, int users,
                                      std::vector<std::uint64_t>* counters,
                                      std::vector<AppliedSave>* applied) {
  constexpr int kBatch = 256;
  IoResult<redis::RedisConnection<Scheduler>> connection =
      co_await redis::RedisConnection<Scheduler>::Connect(
          *scheduler, address, coro::DeadlineAfter(std::chrono::seconds(5)));
  if (!connection.ok()) co_return connection.error();
  counters->assign(users, 0);
  for (int first = 0; first < users; first += kBatch) {
    const int last = std::min(users, first + kBatch);
    std::vector<redis::Command> commands;
    for (int u = first; u < last; ++u) {
      commands.push_back({"HGET", BlobKey(prefix, u), "b"});
      commands.push_back({"LRANGE", AppliedKey(prefix, u), "0", "-1"});
    }
    IoResult<std::vector<redis::Reply>> replies = co_await connection.value().Pipeline(
        commands, coro::DeadlineAfter(std::chrono::seconds(10)));
    if (!replies.ok()) co_return replies.error();
    for (int u = first; u < last; ++u) {
      const redis::Reply& blob = replies.value()[2 * (u - first)];
      const redis::Reply& log = replies.value()[2 * (u - first) + 1];
      if (blob.IsError() || log.type != redis::Reply::Type::kArray) {
        co_return redis::MalformedReplyError();
      }
      (*counters)[u] = ReadBlobHeader(blob.text).counter;
      for (const redis::Reply& id : log.elements) {
        std::uint64_t request_id = 0;
        if (!ParseU64(id.text, &request_id)) co_return redis::MalformedReplyError();
        applied->push_back({static_cast<std::uint32_t>(u), request_id});
      }
    }
  }
  co_return IoError();
}

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_REDIS_STORE_H_
