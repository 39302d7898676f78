// SocketHandle: the owning part that TcpStream, TcpListener and UdpSocket share. It holds
// the socket's SocketCore (io/internal/socket_core.h): move-only, the destructor and
// move-assignment close the socket and drop the owner's reference (DropCore), and it
// offers IsOpen, fd, WithFd, Close and the accessors the socket classes use. A closed
// socket is an error value everywhere (kClosed); only fd() and the use of a moved-from
// object are misuse checks. `kName` is the class name those checks print ("use of a
// moved-from TcpStream").
// Internal: a base class of the public socket classes, never used on its own.
#ifndef FAIRSCHED_IO_INTERNAL_SOCKET_HANDLE_H_
#define FAIRSCHED_IO_INTERNAL_SOCKET_HANDLE_H_

#include <string>
#include <type_traits>
#include <utility>

#include "io/internal/socket_core.h"
#include "io/io_error.h"
#include "sched/task.h"

namespace fairsched::internal {

// The class names SocketHandle's misuse checks print.
inline constexpr char kTcpStreamName[] = "TcpStream";
inline constexpr char kTcpListenerName[] = "TcpListener";
inline constexpr char kUdpSocketName[] = "UdpSocket";

template <typename Scheduler, const char* kName>
class SocketHandle {
 public:
  using Core = SocketCore<Scheduler>;

  SocketHandle(const SocketHandle&) = delete;
  SocketHandle& operator=(const SocketHandle&) = delete;

  // Whether the socket is open: false once a Close has begun (on any thread), and for a
  // default-constructed or moved-from object. A snapshot: another coroutine may close the
  // socket right after it answered; every call then returns kClosed.
  bool IsOpen() const { return core_ != nullptr && !core_->IsClosed(); }
  // The fd number, for the caller's own system calls at a time when it knows that no Close
  // runs: after a Close the number may belong to another socket at once. Aborts with a
  // message on a closed or moved-from socket (every build). WithFd is the safe form.
  int fd() const {
    FAIRSCHED_CHECK(core_ != nullptr && !core_->IsClosed(),
                    (std::string("use of a closed or moved-from ") + kName).c_str());
    return core_->fd();
  }
  // Runs `call(fd)` while the fd is held open: a concurrent Close marks the socket closed
  // at once but closes the fd only after `call` returned, so the number cannot be reused
  // under it. Returns what `call` returns (an IoError or an IoResult<T>), or kClosed without
  // calling it when the socket is closed. `call` must not block, wait, or close the fd.
  template <typename Call>
  std::invoke_result_t<Call&, int> WithFd(Call&& call) const {
    const SocketUse<Core> use(Live());
    if (!use.ok()) return IoError(IoErrorCode::kClosed);
    return call(core_->fd());
  }

 protected:
  SocketHandle() = default;
  explicit SocketHandle(Core* core) : core_(core) {}
  SocketHandle(SocketHandle&& other) noexcept : core_(std::exchange(other.core_, nullptr)) {}
  SocketHandle& operator=(SocketHandle&& other) noexcept {
    if (this != &other) {
      DropCore(core_);
      core_ = std::exchange(other.core_, nullptr);
    }
    return *this;
  }
  // Closes (see SocketCore::CloseSocket) and drops the object's reference; an operation
  // still finishing in another coroutine keeps the socket's state alive until it returns.
  ~SocketHandle() { DropCore(core_); }

  // The socket's Close: any thread, idempotent (see SocketCore::CloseSocket).
  void CloseCore() {
    if (core_ != nullptr) core_->CloseSocket();
  }
  // The core, for the operations and SetIdleTimeout; they turn a closed socket into
  // kClosed. A moved-from (or default-constructed) object is misuse, checked in debug
  // builds; release builds get null, which the callers treat as closed.
  Core* Live() const {
    FAIRSCHED_DCHECK(core_ != nullptr,
                     (std::string("use of a moved-from (or never opened) ") + kName).c_str());
    return core_;
  }
  Core* core() const { return core_; }

 private:
  Core* core_ = nullptr;
};

}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_INTERNAL_SOCKET_HANDLE_H_
