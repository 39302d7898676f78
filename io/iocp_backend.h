// IocpBackend (Windows only): the sched-role holder sleeps in GetQueuedCompletionStatusEx on
// one I/O completion port, and overlapped socket operations complete into tasks. Models the
// IoBackend concept of sched/io_backend.h:
//   using IocpTaskScheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>,
//                                                IocpBackend>;
//
// Supports the IoOp kinds (io/io_op.h) Read and Write (overlapped WSARecv / WSASend on a
// socket), Send (WSASend: Windows has no SIGPIPE, so it is Write), ReadV and SendV (the
// same calls with one WSABUF per slice: an IoSlice array is a WSABUF array), Accept
// (AcceptEx into a socket the backend creates; the accepted socket comes back attached),
// Connect (ConnectEx, after binding the socket to the wildcard address if it is not bound
// yet), and the datagram kinds SendTo / ReceiveFrom (WSASendTo / WSARecvFrom; a datagram
// longer than the buffer ends with -EMSGSIZE, its first bytes and its sender stored:
// io/udp.h).
// Watch and Poll complete at once with -EOPNOTSUPP (IOCP reports completions, not
// readiness). Results follow io/io_op.h: bytes, the accepted socket, 0, or -errno with the
// Winsock error mapped to the errno of the same meaning (internal::ErrnoOfWinsockError).
//
// Sockets: an `int fd` is a Winsock SOCKET (a kernel handle: Windows keeps them below 2^31
// so they fit, and the backend checks the sockets it creates). Every socket must be
// attached to the port once with Attach(fd) before its first op (the socket layer does it; Accept's
// sockets come attached). An op on an unattached socket would never complete: debug builds
// abort with a message instead.
//
// Inside the box: operations are issued (WSARecv, AcceptEx, ...) and cancelled (CancelIoEx)
// only by the sched-role holder, at the start of every Poll/WaitUntil, when it drains the
// shared submission queue (internal::IoOpRegistry), exactly like io_uring; the port itself
// is thread-safe, but the registry's op state machine wants one thread at a time there.
//
// Waiting: Poll dequeues with a zero timeout; WaitUntil with the time to the nearest
// deadline in milliseconds, ROUNDED UP (never early). The wait then ends up to one Windows
// timer tick late (15.6 ms by default, 1 ms where some process raised the timer resolution
// with timeBeginPeriod); a high-resolution waitable timer could do better and is left for
// when a measurement asks for it. Notify posts one completion packet with a reserved key
// (PostQueuedCompletionStatus), only when the holder really sleeps
// (internal::RoleSleepGate). EventsReady answers false: a port cannot be peeked without
// dequeuing, and the sleep catches what the spin misses.
//
// Cancellation: Disarm calls CancelIoEx on the op's own OVERLAPPED; the op's packet then
// arrives with ERROR_OPERATION_ABORTED (-> -ECANCELED), or with its real result if it
// finished first (CancelIoEx then fails with ERROR_NOT_FOUND and the packet is on its way).
// Either way that one packet is the final completion: exactly once.
//
// FILE_SKIP_COMPLETION_PORT_ON_SUCCESS: Attach sets it when every installed TCP provider is
// an IFS provider (XP1_IFS_HANDLES; a layered non-IFS provider would still queue a packet,
// the documented caveat), checked once at construction. Then an operation that succeeds at
// once (data already buffered, a send with buffer space) completes in the same drain with
// no packet and no extra wake. Without it the packet is awaited as for any other op.
//
// Memory: one small request (OVERLAPPED, the AcceptEx socket and address buffer) is
// allocated per issued operation and freed at its completion; IoOp::backend_request points
// at it meanwhile (CancelIoEx needs the OVERLAPPED).
//
// Thread safety: Submit, Cancel, Notify, Attach and LiveCount from any thread; the concept's
// role methods only from the sched-role holder (the scheduler does that).
#ifndef FAIRSCHED_IO_IOCP_BACKEND_H_
#define FAIRSCHED_IO_IOCP_BACKEND_H_

#include <cstdint>

#include "io/internal/backend_facade.h"
#include "io/io_op.h"
#include "io/io_op_registry.h"
#include "io/role_sleep_gate.h"
#include "io/socket_platform.h"
#include "sched/io_backend.h"
#include "sched/task.h"

namespace fairsched {

namespace internal {
// WSAStartup (version 2.2), once per process, the first time it is called from anywhere;
// never undone (Winsock is released at process exit). Aborts with a message if Winsock is
// missing.
void EnsureWinsock();
// The errno of the same meaning as a Winsock / Win32 error code (WSAECONNRESET ->
// ECONNRESET, ERROR_OPERATION_ABORTED -> ECANCELED, ...); EIO for codes with no errno twin.
int ErrnoOfWinsockError(int error);
// The SOCKET an IoOp / TcpStream `int fd` stands for.
inline SOCKET SocketOf(int fd) { return static_cast<SOCKET>(static_cast<std::intptr_t>(fd)); }
// -errno of the calling thread's last Winsock error (the socket seam's failure value).
inline int LastSocketError() { return -ErrnoOfWinsockError(WSAGetLastError()); }
// An overlapped, non-inheritable socket (Winsock started first) as an `int fd`, or
// -errno. Socket handles are small in practice; one that does not fit in an int aborts.
int OpenOverlappedSocket(int family, int type, int protocol);
}  // namespace internal

class IocpBackend : public internal::BackendFacade<IocpBackend> {
 public:
  // Completion-based: the socket layer (io/internal/socket_io.h) runs each operation as one
  // IoOp.
  static constexpr bool kCompletionBased = true;
  // Runs SendTo / ReceiveFrom ops: io/udp.h sends and receives datagrams with them.
  static constexpr bool kDatagramOps = true;

  // Aborts with a message if Winsock or the port cannot be set up.
  IocpBackend();
  // Ops still submitted are a bug (checked in debug builds). Stop cancels all of them first.
  ~IocpBackend();
  IocpBackend(const IocpBackend&) = delete;
  IocpBackend& operator=(const IocpBackend&) = delete;

  // IoBackend concept (see sched/io_backend.h).
  void Poll(IoReadySink& sink);
  void WaitUntil(TaskDeadline deadline, IoReadySink& sink);
  // Notify: internal::BackendFacade.
  void CancelAll(IoReadySink& sink);
  bool EventsReady() { return false; }

  // Task-level IO (see io/io_op.h), any thread: Submit, Cancel and LiveCount come from
  // internal::BackendFacade.
  // Associates socket `fd` with the port (once per socket, before its first op). Returns 0
  // or -errno.
  int Attach(int fd);
  // Whether sockets are attached with FILE_SKIP_COMPLETION_PORT_ON_SUCCESS.
  bool skips_port_on_success() const { return skip_on_success_; }

 private:
  struct Request;

  void Drain(IoReadySink& sink);
  void Arm(IoOp* op, IoReadySink& sink);
  void Disarm(IoOp* op);
  // After issuing `request`'s operation: `issued` is what the call returned (true: it
  // completed at once) and `error` its WSAGetLastError otherwise.
  void AfterIssue(Request* request, bool issued, int error, IoReadySink& sink);
  // The final completion of `request`'s op: from the status in its OVERLAPPED, or from an
  // error / byte count the caller has.
  void Finish(Request* request, IoReadySink& sink);
  void Finish(Request* request, int error, std::uint32_t bytes, IoReadySink& sink);
  // Dequeues and handles packets; blocks up to `timeout_ms` for the first one.
  void Reap(unsigned long timeout_ms, IoReadySink& sink);
  friend class internal::BackendFacade<IocpBackend>;
  // Wakes the holder out of its kernel sleep (BackendFacade::Notify calls it).
  void WakeHolder();

  HANDLE port_ = nullptr;
  LPFN_ACCEPTEX accept_ex_ = nullptr;
  LPFN_CONNECTEX connect_ex_ = nullptr;
  bool skip_on_success_ = false;
  internal::RoleSleepGate gate_;
  internal::IoOpRegistry registry_;
};

static_assert(IoBackend<IocpBackend>);

}  // namespace fairsched

#endif  // FAIRSCHED_IO_IOCP_BACKEND_H_
