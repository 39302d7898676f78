// SocketHandle: the owning part that TcpStream, TcpListener and UdpSocket share. It holds
// the socket's SocketCore (io/internal/socket_core.h): move-only, the destructor and
// move-assignment close the socket and drop the owner's reference (DropCore), and it
// offers IsOpen, fd, Close and the two checked accessors the socket classes use. `kName`
// is the class name the misuse checks print ("use of a closed or moved-from TcpStream").
// Internal: a base class of the public socket classes, never used on its own.
#ifndef FAIRSCHED_IO_INTERNAL_SOCKET_HANDLE_H_
#define FAIRSCHED_IO_INTERNAL_SOCKET_HANDLE_H_

#include <string>
#include <utility>

#include "io/internal/socket_core.h"
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

  bool IsOpen() const { return core_ != nullptr && !core_->IsClosed(); }
  int fd() const { return Checked()->fd(); }

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
  // For the calls that use the fd at once (Shutdown, options, addresses, fd()).
  Core* Checked() const {
    FAIRSCHED_CHECK(core_ != nullptr && !core_->IsClosed(),
                    (std::string("use of a closed or moved-from ") + kName).c_str());
    return core_;
  }
  // For the operations: a closed socket is an error value there (kClosed), not misuse.
  Core* Live() const {
    FAIRSCHED_CHECK(core_ != nullptr, (std::string("use of a moved-from ") + kName).c_str());
    return core_;
  }
  Core* core() const { return core_; }

 private:
  Core* core_ = nullptr;
};

}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_INTERNAL_SOCKET_HANDLE_H_
