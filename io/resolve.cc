// io/resolve.h: the getaddrinfo call with its error mapping, and Resolve's background
// lookup coroutine.
#include "io/resolve.h"

#include <algorithm>
#include <cerrno>
#include <memory>
#include <utility>

#include "coro/event.h"
#include "coro/runtime.h"
#include "io/wait_error.h"

#ifdef _WIN32
#include "io/iocp_backend.h"  // EnsureWinsock; brings <winsock2.h>
#include <ws2tcpip.h>
#else
#include <netdb.h>
#include <sys/socket.h>
#endif

namespace fairsched {
namespace internal {
namespace {

IoError ErrorOfLookup(int status) {
  if (status == EAI_NONAME || status == EAI_FAMILY) return IoError(IoErrorCode::kInvalidAddress);
#ifdef EAI_NODATA
  if (status == EAI_NODATA) return IoError(IoErrorCode::kInvalidAddress);
#endif
#ifdef EAI_ADDRFAMILY
  if (status == EAI_ADDRFAMILY) return IoError(IoErrorCode::kInvalidAddress);
#endif
#ifdef _WIN32
  if (status == WSANO_DATA || status == WSAHOST_NOT_FOUND || status == WSAEAFNOSUPPORT) {
    return IoError(IoErrorCode::kInvalidAddress);
  }
#endif
  if (status == EAI_AGAIN) return IoError(IoErrorCode::kSystem, EAGAIN);
  if (status == EAI_MEMORY) return IoError(IoErrorCode::kSystem, ENOMEM);
#ifdef EAI_SYSTEM
  if (status == EAI_SYSTEM) return IoError::FromErrno(errno);
#endif
  return IoError(IoErrorCode::kSystem, EINVAL);
}

int FamilyOf(AddressFamily family) {
  switch (family) {
    case AddressFamily::kIPv4:
      return AF_INET;
    case AddressFamily::kIPv6:
      return AF_INET6;
    case AddressFamily::kAny:
      break;
  }
  return AF_UNSPEC;
}

}  // namespace

IoResult<std::vector<SocketAddress>> LookUpAddresses(const std::string& host,
                                                     std::uint16_t port, AddressFamily family) {
  if (host.empty()) return IoError(IoErrorCode::kInvalidAddress);
#ifdef _WIN32
  EnsureWinsock();
#endif
  addrinfo hints{};
  hints.ai_family = FamilyOf(family);
  hints.ai_socktype = SOCK_STREAM;  // one entry per address, not one per socket type
  hints.ai_flags = AI_NUMERICSERV;  // no AI_ADDRCONFIG: it hides localhost on a host with
                                    // only a loopback interface
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int status = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (status != 0) return ErrorOfLookup(status);
  std::vector<SocketAddress> addresses;
  for (const addrinfo* entry = list; entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_family != AF_INET && entry->ai_family != AF_INET6) continue;
    SocketAddress address = SocketAddress::FromSockaddr(
        entry->ai_addr, static_cast<socklen_t>(entry->ai_addrlen));
    const bool seen = std::any_of(addresses.begin(), addresses.end(), [&](const SocketAddress& a) {
      return a.ToString() == address.ToString();
    });
    if (!seen) addresses.push_back(std::move(address));
  }
  ::freeaddrinfo(list);
  if (addresses.empty()) return IoError(IoErrorCode::kInvalidAddress);
  return addresses;
}

TaskDeadline AttemptDeadline(TaskDeadline deadline, std::chrono::nanoseconds per_address) {
  if (per_address <= std::chrono::nanoseconds::zero()) return deadline;
  return std::min(deadline, coro::DeadlineAfter(per_address));
}

}  // namespace internal

namespace {

// What a lookup and the coroutine that asked for it share; the lookup's coroutine keeps it
// alive after the asker gave up.
struct LookupJob {
  std::string host;
  std::uint16_t port = 0;
  AddressFamily family = AddressFamily::kAny;
  IoResult<std::vector<SocketAddress>> result{IoError(IoErrorCode::kShutdown)};
  coro::Event done;  // set once `result` is final
};

coro::Lazy<void> RunLookup(coro::BlockingPool* pool, std::shared_ptr<LookupJob> job) {
  auto lookup = [job] { return internal::LookUpAddresses(job->host, job->port, job->family); };
  try {
    job->result = co_await coro::RunBlocking(*pool, lookup);
  } catch (const coro::BlockingCallCancelled&) {
    // Not the asker's child: only the scheduler's Stop cancels it. result stays kShutdown.
  } catch (const coro::BlockingPoolStopped&) {
    // The pool is stopping. result stays kShutdown.
  }
  job->done.Set();
}

}  // namespace

coro::Lazy<IoResult<std::vector<SocketAddress>>> Resolve(coro::BlockingPool& pool,
                                                         std::string host, std::uint16_t port,
                                                         TaskDeadline deadline,
                                                         AddressFamily family) {
  auto job = std::make_shared<LookupJob>();
  job->host = std::move(host);
  job->port = port;
  job->family = family;
  coro::SpawnHere(RunLookup(&pool, job), coro::SpawnOptions{.child_of_current = false})
      .Detach();
  const coro::WaitStatus status = co_await job->done.Wait(deadline);
  // kOk: the lookup coroutine wrote `result` before Set and no longer touches it.
  if (status == coro::WaitStatus::kOk) co_return std::move(job->result);
  co_return ErrorOfWaitStatus(status);
}

}  // namespace fairsched
