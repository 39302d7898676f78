// IocpBackend (see iocp_backend.h): the Windows half: the port, the overlapped calls the
// role's drain issues, CancelIoEx, and the completion packets turned into final completions.
#include "io/iocp_backend.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <vector>

namespace fairsched {

namespace {

// Completion keys: every attached socket uses kSocketKey; Notify's packet kWakeKey.
constexpr ULONG_PTR kSocketKey = 0;
constexpr ULONG_PTR kWakeKey = 1;

// Packets dequeued per call; the loop continues while calls come back full.
constexpr ULONG kReapBatch = 64;

// AcceptEx wants room for each address plus 16 bytes.
constexpr DWORD kAcceptAddressSize = sizeof(sockaddr_in6) + 16;

// The port's concurrency limit. The port releases packets only while fewer threads than
// this that dequeued from it are running; a worker that dequeued, gave the role away and
// now runs tasks still counts. The role holder changes between role takes, so any small
// limit would make the next holder's dequeue wait for an unrelated busy worker. Only one
// thread waits at a time anyway (the holder), so no limit is wanted.
constexpr DWORD kNoConcurrencyLimit = 0x7FFFFFFF;

void* LoadExtension(SOCKET socket, GUID guid) {
  void* function = nullptr;
  DWORD bytes = 0;
  const int status = WSAIoctl(socket, SIO_GET_EXTENSION_FUNCTION_POINTER, &guid, sizeof(guid),
                              &function, sizeof(function), &bytes, nullptr, nullptr);
  FAIRSCHED_CHECK(status == 0 && function != nullptr,
                  "IocpBackend: WSAIoctl(SIO_GET_EXTENSION_FUNCTION_POINTER) failed for "
                  "AcceptEx/ConnectEx");
  return function;
}

// Whether every installed TCP and UDP provider hands out IFS handles (then a skipped
// completion packet is really skipped; a layered non-IFS provider would queue one anyway).
bool AllTcpProvidersAreIfs() {
  int protocols[] = {IPPROTO_TCP, IPPROTO_UDP, 0};
  DWORD size = 0;
  if (WSAEnumProtocolsW(protocols, nullptr, &size) != SOCKET_ERROR ||
      WSAGetLastError() != WSAENOBUFS) {
    return false;
  }
  std::vector<WSAPROTOCOL_INFOW> infos(size / sizeof(WSAPROTOCOL_INFOW) + 1);
  size = static_cast<DWORD>(infos.size() * sizeof(WSAPROTOCOL_INFOW));
  const int count = WSAEnumProtocolsW(protocols, infos.data(), &size);
  if (count <= 0) return false;
  return std::all_of(infos.begin(), infos.begin() + count, [](const WSAPROTOCOL_INFOW& info) {
    return (info.dwServiceFlags1 & XP1_IFS_HANDLES) != 0;
  });
}

// Time to `deadline` in whole milliseconds, rounded up so the wait never ends early.
DWORD TimeoutMs(TaskDeadline deadline) {
  if (deadline == kNoDeadline) return INFINITE;
  const auto left = deadline - TaskClock::now();
  if (left <= TaskClock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<DWORD>(std::min<std::int64_t>(ms, INFINITE - 1));
}

ULONG Length(const IoOp* op) {
  return static_cast<ULONG>(std::min<std::size_t>(op->length(), ULONG_MAX));
}

}  // namespace

namespace internal {

void EnsureWinsock() {
  // A function-local static: initialised once, thread-safely, by whoever comes first.
  static const int started = [] {
    WSADATA data;
    return WSAStartup(MAKEWORD(2, 2), &data);
  }();
  FAIRSCHED_CHECK(started == 0, "WSAStartup(2.2) failed: Winsock 2 is not available");
}

int ErrnoOfWinsockError(int error) {
  switch (error) {
    case 0:
      return 0;
    case ERROR_OPERATION_ABORTED:  // == WSA_OPERATION_ABORTED: CancelIoEx, or socket closed
      return ECANCELED;
    case WSAECONNRESET:
    case WSAECONNABORTED:
    case WSAENETRESET:
    case ERROR_NETNAME_DELETED:
    case ERROR_CONNECTION_ABORTED:
      return ECONNRESET;
    case WSAESHUTDOWN:
      return EPIPE;
    case WSAECONNREFUSED:
    case ERROR_CONNECTION_REFUSED:
      return ECONNREFUSED;
    case WSAETIMEDOUT:
    case ERROR_SEM_TIMEOUT:
      return ETIMEDOUT;
    case WSAEADDRINUSE:
      return EADDRINUSE;
    case WSAEADDRNOTAVAIL:
      return EADDRNOTAVAIL;
    case WSAEAFNOSUPPORT:
      return EAFNOSUPPORT;
    case WSAENETUNREACH:
      return ENETUNREACH;
    case WSAEHOSTUNREACH:
      return EHOSTUNREACH;
    case WSAENOTCONN:
      return ENOTCONN;
    case WSAEISCONN:
      return EISCONN;
    case WSAENOTSOCK:
    case ERROR_INVALID_HANDLE:
      return ENOTSOCK;
    case WSAEINVAL:
    case ERROR_INVALID_PARAMETER:
      return EINVAL;
    case WSAEMFILE:
      return EMFILE;
    case WSAENOBUFS:
    case ERROR_NOT_ENOUGH_MEMORY:
      return ENOBUFS;
    case WSAEACCES:
      return EACCES;
    case WSAEWOULDBLOCK:
      return EWOULDBLOCK;
    case WSAEOPNOTSUPP:
      return EOPNOTSUPP;
    case WSAEFAULT:
      return EFAULT;
    case WSAEMSGSIZE:  // a datagram too large to send, or longer than the receive buffer
      return EMSGSIZE;
    default:
      return EIO;
  }
}

}  // namespace internal

// One issued operation: the OVERLAPPED Windows writes its status into, until its packet is
// dequeued (or, with FILE_SKIP_COMPLETION_PORT_ON_SUCCESS, until it succeeded at once).
struct IocpBackend::Request {
  OVERLAPPED overlapped{};  // first member: a packet's OVERLAPPED* is the Request*
  IoOp* op = nullptr;
  SOCKET accepted = INVALID_SOCKET;             // Accept: the socket AcceptEx connects
  char addresses[2 * kAcceptAddressSize] = {};  // Accept: where AcceptEx puts both addresses
  INT from_length = 0;  // ReceiveFrom: the sender address's size, written by WSARecvFrom
};

IocpBackend::IocpBackend() {
  internal::EnsureWinsock();
  port_ = CreateIoCompletionPort(INVALID_HANDLE_VALUE, nullptr, 0, kNoConcurrencyLimit);
  FAIRSCHED_CHECK(port_ != nullptr, "IocpBackend: CreateIoCompletionPort failed");
  // The extension functions come from the TCP provider; any TCP socket can fetch them.
  const SOCKET probe = WSASocketW(AF_INET, SOCK_STREAM, IPPROTO_TCP, nullptr, 0,
                                  WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
  FAIRSCHED_CHECK(probe != INVALID_SOCKET, "IocpBackend: cannot create a TCP socket");
  accept_ex_ = reinterpret_cast<LPFN_ACCEPTEX>(LoadExtension(probe, WSAID_ACCEPTEX));
  connect_ex_ = reinterpret_cast<LPFN_CONNECTEX>(LoadExtension(probe, WSAID_CONNECTEX));
  closesocket(probe);
  skip_on_success_ = AllTcpProvidersAreIfs();
}

IocpBackend::~IocpBackend() {
  FAIRSCHED_DCHECK(registry_.LiveCount() == 0,
                   "IocpBackend destroyed with IoOps still submitted (cancel them and wait for "
                   "their final completion before destroying the scheduler)");
  CloseHandle(port_);
}

int IocpBackend::Attach(int fd) {
  const auto handle = reinterpret_cast<HANDLE>(internal::SocketOf(fd));
  if (CreateIoCompletionPort(handle, port_, kSocketKey, 0) == nullptr) {
    return -internal::ErrnoOfWinsockError(static_cast<int>(GetLastError()));
  }
  // If this fails the socket would mix the two modes: refuse it (the caller closes it).
  if (skip_on_success_ &&
      !SetFileCompletionNotificationModes(
          handle, FILE_SKIP_COMPLETION_PORT_ON_SUCCESS | FILE_SKIP_SET_EVENT_ON_HANDLE)) {
    return -internal::ErrnoOfWinsockError(static_cast<int>(GetLastError()));
  }
  return 0;
}

void IocpBackend::Poll(IoReadySink& sink) {
  Drain(sink);
  // No syscall while nothing is in flight: a stale Notify packet left in the port only
  // makes a later sleep return early once (allowed).
  if (registry_.HasInFlight()) Reap(0, sink);
}

void IocpBackend::WaitUntil(TaskDeadline deadline, IoReadySink& sink) {
  registry_.TakeWoken();
  Drain(sink);
  // Do not block when the drain woke a task (it waits for the holder to publish it) or a
  // Notify came in; still report what is already complete.
  if (registry_.TakeWoken() || !gate_.PrepareSleep()) {
    Reap(0, sink);
    return;
  }
  Reap(TimeoutMs(deadline), sink);
  gate_.FinishSleep();
}

void IocpBackend::CancelAll(IoReadySink& sink) {
  Drain(sink);
  registry_.CancelAll([&](IoOp* op) { Disarm(op); });
}

void IocpBackend::Drain(IoReadySink& sink) {
  registry_.Drain(
      sink, [&](IoOp* op) { Arm(op, sink); }, [&](IoOp* op) { Disarm(op); });
}

void IocpBackend::Arm(IoOp* op, IoReadySink& sink) {
  if (op->kind() == IoOpKind::kWatch || op->kind() == IoOpKind::kPoll ||
      IsMultishot(op->kind())) {
    // IOCP reports completions, not readiness, and has no multishot operations.
    registry_.Complete(op, -EOPNOTSUPP, sink);
    return;
  }
  const SOCKET socket = internal::SocketOf(op->fd());
  // Only an unattached socket can be associated with a port: if this succeeds, the op
  // would have waited forever for a packet.
  FAIRSCHED_DCHECK(
      CreateIoCompletionPort(reinterpret_cast<HANDLE>(socket), port_, kSocketKey, 0) == nullptr,
      "IocpBackend: IoOp on a socket that was not attached (call Attach(fd) once "
      "before its first op)");
  auto* request = new Request;
  request->op = op;
  op->backend_request = request;
  DWORD bytes = 0;
  bool done = false;
  switch (op->kind()) {
    case IoOpKind::kRead: {
      WSABUF buffer{Length(op), static_cast<char*>(op->buffer())};
      DWORD flags = 0;
      done = WSARecv(socket, &buffer, 1, &bytes, &flags, &request->overlapped, nullptr) == 0;
      break;
    }
    case IoOpKind::kWrite:
    case IoOpKind::kSend: {
      WSABUF buffer{Length(op), static_cast<char*>(op->buffer())};
      done = WSASend(socket, &buffer, 1, &bytes, 0, &request->overlapped, nullptr) == 0;
      break;
    }
    case IoOpKind::kReadV: {
      DWORD flags = 0;
      done = WSARecv(socket, op->slices(), static_cast<DWORD>(op->slice_count()), &bytes, &flags,
                     &request->overlapped, nullptr) == 0;
      break;
    }
    case IoOpKind::kSendV:
      done = WSASend(socket, op->slices(), static_cast<DWORD>(op->slice_count()), &bytes, 0,
                     &request->overlapped, nullptr) == 0;
      break;
    case IoOpKind::kAccept: {
      sockaddr_storage local{};
      int length = sizeof(local);
      if (getsockname(socket, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
        request->accepted = WSASocketW(local.ss_family, SOCK_STREAM, IPPROTO_TCP, nullptr, 0,
                                       WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
      }
      if (request->accepted == INVALID_SOCKET) break;
      done = accept_ex_(socket, request->accepted, request->addresses, 0, kAcceptAddressSize,
                        kAcceptAddressSize, &bytes, &request->overlapped) != FALSE;
      break;
    }
    case IoOpKind::kConnect: {
      // ConnectEx needs a bound socket: the wildcard address of the family, any port.
      // WSAEINVAL: it was bound already.
      sockaddr_storage any{};
      any.ss_family = op->address()->sa_family;
      const int length = any.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
      if (bind(socket, reinterpret_cast<sockaddr*>(&any), length) != 0 &&
          WSAGetLastError() != WSAEINVAL) {
        break;
      }
      done = connect_ex_(socket, op->address(), op->address_length(), nullptr, 0, nullptr,
                         &request->overlapped) != FALSE;
      break;
    }
    case IoOpKind::kSendTo: {
      WSABUF buffer{Length(op), static_cast<char*>(op->buffer())};
      done = WSASendTo(socket, &buffer, 1, &bytes, 0, op->address(), op->address_length(),
                       &request->overlapped, nullptr) == 0;
      break;
    }
    case IoOpKind::kReceiveFrom: {
      WSABUF buffer{Length(op), static_cast<char*>(op->buffer())};
      DWORD flags = 0;
      // The address and its length are written at completion: both outlive the call (the
      // op's storage, the request).
      request->from_length = op->address_length();
      done = WSARecvFrom(socket, &buffer, 1, &bytes, &flags,
                         const_cast<sockaddr*>(op->address()), &request->from_length,
                         &request->overlapped, nullptr) == 0;
      break;
    }
    case IoOpKind::kWatch:
    case IoOpKind::kPoll:
    case IoOpKind::kAcceptMultishot:
    case IoOpKind::kRecvMultishot:
      break;  // handled above
  }
  AfterIssue(request, done, done ? 0 : WSAGetLastError(), sink);
}

void IocpBackend::AfterIssue(Request* request, bool issued, int error, IoReadySink& sink) {
  if (issued) {
    // Succeeded at once: with the skip mode no packet comes, so this is the completion.
    if (skip_on_success_) Finish(request, sink);
    return;
  }
  if (error == WSA_IO_PENDING) return;  // the packet brings the completion
  // Failed at once: no packet is queued for a call that did not return pending.
  Finish(request, error, 0, sink);
}

void IocpBackend::Finish(Request* request, IoReadySink& sink) {
  // The status and byte count Windows wrote into the OVERLAPPED (the packet's count is the
  // same number; a synchronous success has no packet).
  DWORD bytes = 0;
  DWORD flags = 0;
  const bool ok = WSAGetOverlappedResult(internal::SocketOf(request->op->fd()),
                                         &request->overlapped, &bytes, FALSE, &flags);
  Finish(request, ok ? 0 : WSAGetLastError(), bytes, sink);
}

void IocpBackend::Finish(Request* request, int error, std::uint32_t bytes, IoReadySink& sink) {
  IoOp* const op = request->op;
  const SOCKET socket = internal::SocketOf(op->fd());
  std::int32_t result = static_cast<std::int32_t>(std::min<std::uint32_t>(bytes, INT32_MAX));
  if (error == 0 && op->kind() == IoOpKind::kAccept) {
    // The accepted socket inherits the listener's properties only after this.
    if (setsockopt(request->accepted, SOL_SOCKET, SO_UPDATE_ACCEPT_CONTEXT,
                   reinterpret_cast<const char*>(&socket), sizeof(socket)) != 0) {
      error = WSAGetLastError();
    } else {
      FAIRSCHED_CHECK(request->accepted <= static_cast<SOCKET>(INT_MAX),
                      "IocpBackend: a socket handle does not fit in an int");
      const int accepted = static_cast<int>(request->accepted);
      result = Attach(accepted);
      if (result == 0) {
        result = accepted;
        request->accepted = INVALID_SOCKET;  // handed to the op's owner
      }
    }
  } else if (error == 0 && op->kind() == IoOpKind::kConnect) {
    result = 0;
    // Makes getpeername, shutdown etc. work on a ConnectEx socket.
    if (setsockopt(socket, SOL_SOCKET, SO_UPDATE_CONNECT_CONTEXT, nullptr, 0) != 0) {
      error = WSAGetLastError();
    }
  }
  if (error != 0) result = -internal::ErrnoOfWinsockError(error);
  if (request->accepted != INVALID_SOCKET) closesocket(request->accepted);
  op->backend_request = nullptr;
  delete request;
  registry_.Complete(op, result, sink);
}

void IocpBackend::Disarm(IoOp* op) {
  auto* request = static_cast<Request*>(op->backend_request);
  if (request == nullptr) return;  // completed within its Arm; nothing in the kernel
  // Asynchronous: the op's own packet (ERROR_OPERATION_ABORTED, or its real result if it
  // won the race) brings the final completion. ERROR_NOT_FOUND: it already finished and
  // its packet is queued.
  CancelIoEx(reinterpret_cast<HANDLE>(internal::SocketOf(op->fd())), &request->overlapped);
}

void IocpBackend::Reap(unsigned long timeout_ms, IoReadySink& sink) {
  OVERLAPPED_ENTRY entries[kReapBatch];
  while (true) {
    ULONG count = 0;
    // FALSE: WAIT_TIMEOUT, or nothing dequeued (a zero timeout on an empty port).
    if (!GetQueuedCompletionStatusEx(port_, entries, kReapBatch, &count, timeout_ms, FALSE)) {
      return;
    }
    for (ULONG i = 0; i < count; ++i) {
      if (entries[i].lpCompletionKey == kWakeKey) continue;  // Notify: only ends the sleep
      Finish(reinterpret_cast<Request*>(entries[i].lpOverlapped), sink);
    }
    if (count < kReapBatch) return;
    timeout_ms = 0;  // a full batch: more may wait
  }
}

void IocpBackend::WakeHolder() { PostQueuedCompletionStatus(port_, 0, kWakeKey, nullptr); }

}  // namespace fairsched
