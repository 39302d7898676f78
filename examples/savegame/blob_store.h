// The blob store of the savegame service: an in-memory, versioned key -> blob store behind a
// fairsched coroutine TCP server (io/tcp_server.h: its accept loop, one coroutine per
// connection, Stop). Each kGet/kPut answer waits
// `latency` first (a simulated storage round trip: a coroutine sleep, the worker runs other
// connections meanwhile). Fault injection: a `fault` fraction of kGet/kPut answers is dropped
// (half of them; the operation still applied) or delayed by `fault_delay` (the other half).
// kCheck reads have neither. Protocol and compare-and-set rule: protocol.h. For the check
// (check.h) it logs every applied upload that changed a blob: the save of the request the
// new blob names.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_BLOB_STORE_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_BLOB_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "examples/savegame/check.h"
#include "examples/savegame/protocol.h"
#include "examples/savegame/stream_frames.h"
#include "io/tcp.h"
#include "io/tcp_server.h"
#include "sync/primitives.h"

namespace fairsched::savegame {

struct BlobStoreOptions {
  int users = 1000;
  std::chrono::nanoseconds latency = std::chrono::microseconds(500);
  double fault = 0;  // fraction of kGet/kPut answers dropped or delayed
  std::chrono::nanoseconds fault_delay = std::chrono::milliseconds(300);
};

template <typename Scheduler>
class BlobStore {
 public:
  BlobStore(Scheduler& scheduler, BlobStoreOptions options)
      : options_(options),
        shards_(kShards),
        entries_(options.users),
        server_(scheduler, [this](TcpStream<Scheduler> stream) { return Serve(std::move(stream)); },
                TcpServerOptions{.backlog = kBacklog}) {}
  ~BlobStore() { Stop(); }
  BlobStore(const BlobStore&) = delete;
  BlobStore& operator=(const BlobStore&) = delete;

  // Listens on `address` (port 0: any) and serves; returns the bound address.
  IoResult<SocketAddress> Start(const SocketAddress& address) { return server_.Start(address); }

  // Closes the listener and every connection; returns when all are closed. Idempotent.
  void Stop() { server_.Stop(); }

  std::int64_t faults_injected() const { return faults_.load(std::memory_order_relaxed); }

  // Every save applied so far (per shard in order; shards concatenated).
  std::vector<AppliedSave> AppliedSaves() {
    std::vector<AppliedSave> saves;
    for (int shard = 0; shard < kShards; ++shard) {
      MutexLock lock(shards_[shard]);
      saves.insert(saves.end(), applied_[shard].begin(), applied_[shard].end());
    }
    return saves;
  }

 private:
  static constexpr int kShards = 64;
  static constexpr int kBacklog = 1024;
  struct Entry {
    std::uint64_t version = 0;
    std::string blob;
  };

  // One connection (TcpServer's handler). Each gets its own fault-injection random stream,
  // seeded by its number (1, 2, ... in the order the handlers start).
  coro::Lazy<void> Serve(TcpStream<Scheduler> stream) {
    // Relaxed: a counter whose only use is a distinct seed per connection.
    const std::uint64_t seed = next_seed_.fetch_add(1, std::memory_order_relaxed);
    FrameBuffer in;
    std::string out;
    std::minstd_rand random(static_cast<std::uint32_t>(seed * 7919 + 1));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    while (true) {
      IoResult<std::string_view> frame = co_await ReadFrame(stream, in, kTaskDeadlineInfinite);
      if (!frame.ok()) break;  // closed by the peer, or Stop
      std::optional<StoreRequest> request = ParseStoreRequest(frame.value());
      out.clear();
      if (!request || request->user >= static_cast<std::uint32_t>(options_.users)) {
        AppendStoreResponse({StoreStatus::kBadRequest, 0, {}}, &out);
      } else if (request->op == StoreOp::kCheck) {
        Apply(*request, &out);
      } else {
        // The request's blob points into `in`: copy it before sleeping (nothing reads
        // meanwhile, but keep the rule simple: apply from owned bytes).
        std::string blob(request->blob);
        request->blob = blob;
        if (options_.latency.count() > 0) {
          const coro::WakeReason slept = co_await coro::SleepFor(options_.latency);
          if (slept != coro::WakeReason::kDeadline) break;
        }
        Apply(*request, &out);
        if (options_.fault > 0 && unit(random) < options_.fault) {
          faults_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
          if (unit(random) < 0.5) continue;                 // drop the answer
          const coro::WakeReason slept = co_await coro::SleepFor(options_.fault_delay);
          if (slept != coro::WakeReason::kDeadline) break;
        }
      }
      const IoError written =
          co_await stream.Write(out, coro::DeadlineAfter(std::chrono::seconds(5)));
      if (!written.ok()) break;
    }
    stream.Close();
  }

  // Runs one request against the table and encodes the answer into `out`.
  void Apply(const StoreRequest& request, std::string* out) {
    const std::uint32_t shard = request.user % kShards;
    MutexLock lock(shards_[shard]);
    Entry& entry = entries_[request.user];
    if (request.op == StoreOp::kPut) {
      if (entry.version != request.expected_version) {
        AppendStoreResponse({StoreStatus::kConflict, entry.version, entry.blob}, out);
        return;
      }
      if (request.blob != entry.blob) {  // a fence rewrites the blob unchanged
        applied_[shard].push_back({request.user, ReadBlobHeader(request.blob).last_request_id});
      }
      entry.blob.assign(request.blob);
      ++entry.version;
      AppendStoreResponse({StoreStatus::kOk, entry.version, {}}, out);
      return;
    }
    AppendStoreResponse({StoreStatus::kOk, entry.version, entry.blob}, out);
  }

  const BlobStoreOptions options_;
  std::vector<Mutex> shards_;   // shard i guards entries_[u] for u % kShards == i, applied_[i]
  std::vector<Entry> entries_;  // index: user
  // Guarded by shards_[i]: the saves applied to shard i's users.
  std::vector<std::vector<AppliedSave>> applied_ = std::vector<std::vector<AppliedSave>>(kShards);
  Atomic<std::int64_t> faults_{0};
  Atomic<std::uint64_t> next_seed_{1};
  // Last member: ~BlobStore stops it (every connection closed) before the table goes away.
  TcpServer<Scheduler> server_;
};

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_BLOB_STORE_H_
