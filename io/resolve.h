// Names to addresses: Resolve(host, port) runs getaddrinfo(3) on a coro::BlockingPool
// (coro/blocking_pool.h) with a deadline, and Connect(host, port) resolves and then tries
// each address in turn until one connects. ConnectToAny is that second step alone, for a
// list of addresses the caller already has.
//
//   coro::BlockingPool pool({.threads = 2});
//   IoResult<TcpStream<Sched>> stream = co_await Connect(scheduler, pool, "db.internal", 5432,
//                                                        coro::DeadlineAfter(seconds(5)));
//
// Contract:
//   - `co_await Resolve(pool, host, port, deadline, family)` (inside a spawned coroutine):
//     the addresses getaddrinfo returns for `host` (a name or a numeric address) with
//     `port` set, in its order (RFC 6724 preference on glibc), one per address (stream
//     sockets' entries: no duplicates per socket type); never empty when ok. Errors:
//     kInvalidAddress when the name does not resolve (EAI_NONAME, EAI_NODATA, an empty
//     host, or no address of `family`), kTimeout when `deadline` passes first, kCancelled
//     / kShutdown when the coroutine is cancelled / the scheduler stops, kSystem for the
//     rest (EAI_AGAIN as EAGAIN: the name server did not answer; EAI_SYSTEM's errno).
//   - The lookup itself cannot be interrupted. It runs in a coroutine of its own, spawned
//     on the caller's scheduler and not its child: when the caller's wait ends early
//     (deadline, cancellation) the caller returns at once and the lookup finishes in the
//     background, its result dropped; it owns everything it uses. Shut down in this
//     order: pool.Stop() (it runs the lookups still queued and waits for the running
//     ones, which end within the system resolver's own timeout, so no pool thread is still
//     waking a coroutine), then the scheduler's Stop / destruction, then the pool object.
//   - `co_await ConnectToAny(scheduler, addresses, deadline, per_address)`: connects to
//     each address in order until one succeeds and returns that stream; `deadline` bounds
//     the whole, `per_address` (> 0) each attempt as well, so an address that drops
//     packets does not use up the time of the next ones. If all fail: the last error
//     (kRefused, kTimeout, ...); kInvalidAddress for an empty list; kCancelled / kShutdown
//     as soon as the coroutine is cancelled / the scheduler stops (no further attempt).
//   - `co_await Connect(scheduler, pool, host, port, deadline, per_address)`: Resolve, then
//     ConnectToAny, both within `deadline`.
#ifndef FAIRSCHED_IO_RESOLVE_H_
#define FAIRSCHED_IO_RESOLVE_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "coro/blocking_pool.h"
#include "coro/lazy.h"
#include "io/io_error.h"
#include "io/socket_address.h"
#include "io/tcp.h"
#include "sched/task.h"

namespace fairsched {

enum class AddressFamily { kAny, kIPv4, kIPv6 };

coro::Lazy<IoResult<std::vector<SocketAddress>>> Resolve(
    coro::BlockingPool& pool, std::string host, std::uint16_t port, TaskDeadline deadline,
    AddressFamily family = AddressFamily::kAny);

namespace internal {
// The blocking getaddrinfo call and its error mapping (see Resolve); any thread.
IoResult<std::vector<SocketAddress>> LookUpAddresses(const std::string& host,
                                                     std::uint16_t port, AddressFamily family);
// The earlier of `deadline` and now + `per_address` (when per_address > 0).
TaskDeadline AttemptDeadline(TaskDeadline deadline, std::chrono::nanoseconds per_address);
}  // namespace internal

template <typename Scheduler>
coro::Lazy<IoResult<TcpStream<Scheduler>>> ConnectToAny(
    Scheduler& scheduler, std::span<const SocketAddress> addresses, TaskDeadline deadline,
    std::chrono::nanoseconds per_address = std::chrono::nanoseconds::zero()) {
  IoError last(IoErrorCode::kInvalidAddress);
  for (const SocketAddress& address : addresses) {
    IoResult<TcpStream<Scheduler>> stream = co_await TcpStream<Scheduler>::Connect(
        scheduler, address, internal::AttemptDeadline(deadline, per_address));
    if (stream.ok()) co_return stream;
    last = stream.error();
    const IoErrorCode code = last.code();
    if (code == IoErrorCode::kCancelled || code == IoErrorCode::kShutdown) break;
    if (code == IoErrorCode::kTimeout && TaskClock::now() >= deadline) break;
  }
  co_return last;
}

template <typename Scheduler>
coro::Lazy<IoResult<TcpStream<Scheduler>>> Connect(
    Scheduler& scheduler, coro::BlockingPool& pool, std::string host, std::uint16_t port,
    TaskDeadline deadline, std::chrono::nanoseconds per_address = std::chrono::nanoseconds::zero()) {
  IoResult<std::vector<SocketAddress>> addresses =
      co_await Resolve(pool, std::move(host), port, deadline);
  if (!addresses.ok()) co_return addresses.error();
  co_return co_await ConnectToAny(scheduler, std::span<const SocketAddress>(addresses.value()),
                                  deadline, per_address);
}

}  // namespace fairsched

#endif  // FAIRSCHED_IO_RESOLVE_H_
