// Coroutine UDP sockets: UdpSocket<Scheduler> sends and receives datagrams from coroutines
// spawned on a scheduler whose IO backend is EpollBackend, IoUringBackend (Linux) or
// IocpBackend (Windows).
//
// It uses the socket layer's core and operations (io/internal/socket_core.h,
// io/internal/socket_io.h) as TcpStream does. The Linux backends use readiness here (IoOp's
// datagram kinds are IOCP's only):
//   - epoll: the core's standing edge-triggered watch; the non-blocking recvfrom/sendto is
//     tried first and a wait for the next edge happens only on EAGAIN (as TcpStream does).
//   - io_uring: the non-blocking syscall is tried first; on EAGAIN a one-shot Poll IoOp
//     (IORING_OP_POLL_ADD) is run to its final completion, then the syscall is retried.
//   - IOCP (a backend with kDatagramOps): every send / receive is one SendTo / ReceiveFrom
//     IoOp (WSASendTo / WSARecvFrom) run to its final completion, as TcpStream's operations.
//
// Contract, for users:
//   - A datagram is sent whole or not at all: SendTo returns data.size() or an error (one
//     larger than the protocol allows fails with kSystem/EMSGSIZE). UDP may drop datagrams
//     (a full receive buffer, the network); nothing here retransmits.
//   - ReceiveFrom never cuts a datagram silently: UdpDatagram::datagram_size is the
//     datagram's full length, and truncated() says that only `size` bytes of it fit in the
//     buffer (the rest is discarded by the kernel, as recvfrom does). Windows does not tell
//     the full length (WSAEMSGSIZE): there datagram_size is size + 1 for a truncated one.
//   - Deadlines, cancellation, Stop, errors as values: as for TcpStream (io/tcp.h): kTimeout,
//     kCancelled, kShutdown; the operation is released before the call returns.
//   - One receiving and one sending coroutine may use a socket at the same time; two
//     concurrent receives (or sends) are misuse, checked in debug builds. Close may come from
//     another coroutine while an operation waits: it returns kClosed. Close sockets before
//     the scheduler is destroyed.
//   - ICMP errors (Linux): a connected socket (Connect) reports a "port unreachable" for an
//     earlier datagram as kRefused (ECONNREFUSED) from its next receive or send; an unbound
//     peer is not reported to an unconnected socket (Bind) at all: its datagrams vanish.
//     Windows reports it as WSAECONNRESET, which the IOCP path turns into kRefused too (a
//     UDP socket has no connection to reset), and Bind turns the report off for unconnected
//     sockets (SIO_UDP_CONNRESET), so both platforms behave as Linux.
#ifndef FAIRSCHED_IO_UDP_H_
#define FAIRSCHED_IO_UDP_H_

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "coro/lazy.h"
#include "io/internal/socket_core.h"
#include "io/internal/socket_handle.h"
#include "io/internal/socket_io.h"
#include "io/internal/socket_ops.h"
#include "io/io_error.h"
#include "io/io_op.h"
#include "io/socket_address.h"
#include "io/socket_platform.h"
#include "sched/task.h"

namespace fairsched {

// What ReceiveFrom got.
struct UdpDatagram {
  std::size_t size = 0;           // bytes stored in the buffer
  std::size_t datagram_size = 0;  // the datagram's full length (>= size)
  SocketAddress from;             // the sender
  bool truncated() const { return datagram_size > size; }
};

namespace internal {
// The UDP socket calls (io/udp.cc, POSIX; io/udp_windows.cc, Winsock). Each returns its
// result or -errno.
// A UDP socket of `family`: POSIX non-blocking and close-on-exec; Windows overlapped and
// not inheritable.
int OpenUdpSocket(int family);
// bind(2); on Windows also SIO_UDP_CONNRESET off (see the file comment).
int BindSocket(int fd, const SocketAddress& address);
// connect(2) of a UDP socket (fixes the peer; sends nothing, never waits).
int ConnectDatagramSocket(int fd, const SocketAddress& address);
// POSIX only (the readiness paths):
// One non-blocking recvfrom: the datagram's full length (MSG_TRUNC: may exceed `size`, of
// which only `size` bytes were stored), its sender in `*from`.
std::ptrdiff_t ReceiveFromNow(int fd, char* buffer, std::size_t size, SocketAddress* from);
// One non-blocking sendto (MSG_NOSIGNAL) to `to`, or to the connected peer if `to` is null.
std::ptrdiff_t SendToNow(int fd, const char* data, std::size_t size, const SocketAddress* to);

// How UdpSocket sends and receives one datagram, chosen by the backend: with datagram IoOps
// (IOCP: one SendTo / ReceiveFrom IoOp run to its final completion) or with the
// non-blocking recvfrom / sendto (TransferSyscall: epoll and io_uring).
// (The lambdas are named before the co_await: gcc 12 destroys a lambda written inside a
// co_await expression twice.)
template <typename Scheduler>
class DatagramIo {
  using Core = SocketCore<Scheduler>;
  static constexpr bool kDatagramOps = HasDatagramOps<Scheduler>();

 public:
  // IOCP: one ReceiveFrom IoOp (WSARecvFrom) run to its final completion. Otherwise
  // recvfrom with MSG_TRUNC: the length it returns is the datagram's full length.
  static coro::Lazy<IoResult<UdpDatagram>> ReceiveFrom(Core* core, std::span<char> buffer,
                                                       TaskDeadline deadline) {
    UdpDatagram datagram;
    if constexpr (kDatagramOps) {
      const SocketUse<Core> use(core);  // the fd stays open until we return
      if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
      sockaddr_storage from{};
      core->op(Core::kReadSide)
          .PrepareReceiveFrom(core->fd(), buffer.data(), buffer.size(), &from, core->handler());
      IoResult<std::int32_t> result = co_await core->RunOp(Core::kReadSide, deadline);
      if (!result.ok()) co_return result.error();
      const bool truncated = result.value() == -EMSGSIZE;
      if (result.value() < 0 && !truncated) co_return DatagramError(result.value());
      datagram.from = SocketAddress::FromSockaddr(
          reinterpret_cast<const sockaddr*>(&from),
          from.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
      datagram.size = truncated ? buffer.size() : static_cast<std::size_t>(result.value());
      // The full length is unknown when truncated: one byte more is all that is known.
      datagram.datagram_size = truncated ? buffer.size() + 1 : datagram.size;
    } else {
      auto receive = [&](int fd) {
        return ReceiveFromNow(fd, buffer.data(), buffer.size(), &datagram.from);
      };
      IoResult<std::size_t> length =
          co_await TransferSyscall(core, Core::kReadSide, deadline, receive);
      if (!length.ok()) co_return length.error();
      datagram.datagram_size = length.value();
      datagram.size = std::min(length.value(), buffer.size());
    }
    co_return datagram;
  }

  // One datagram to `*to` (null: the connected peer). IOCP: one SendTo IoOp (WSASendTo);
  // otherwise sendto.
  static coro::Lazy<IoResult<std::size_t>> Send(Core* core, std::span<const char> data,
                                                const SocketAddress* to, TaskDeadline deadline) {
    if constexpr (kDatagramOps) {
      const SocketUse<Core> use(core);  // the fd stays open until we return
      if (IoError refused = Refusal(use); !refused.ok()) co_return refused;
      core->op(Core::kWriteSide)
          .PrepareSendTo(core->fd(), data.data(), data.size(), to != nullptr ? to->get() : nullptr,
                         to != nullptr ? to->length() : 0, core->handler());
      IoResult<std::int32_t> result = co_await core->RunOp(Core::kWriteSide, deadline);
      if (!result.ok()) co_return result.error();
      if (result.value() < 0) co_return DatagramError(result.value());
      co_return static_cast<std::size_t>(result.value());
    } else {
      auto send = [&](int fd) { return SendToNow(fd, data.data(), data.size(), to); };
      co_return co_await TransferSyscall(core, Core::kWriteSide, deadline, send);
    }
  }

 private:
  // A datagram op's -errno as an error. Windows reports an ICMP "port unreachable" as
  // ECONNRESET (WSAECONNRESET); for UDP, which has no connection, it means refused.
  static IoError DatagramError(std::int32_t result) {
    return ErrorOfResult(result == -ECONNRESET ? -ECONNREFUSED : result, false);
  }
};
}  // namespace internal

// A UDP socket. Move-only; the destructor closes it.
template <typename Scheduler>
class UdpSocket : public internal::SocketHandle<Scheduler, internal::kUdpSocketName> {
  using Handle = internal::SocketHandle<Scheduler, internal::kUdpSocketName>;
  using Core = internal::SocketCore<Scheduler>;
  using Datagrams = internal::DatagramIo<Scheduler>;

 public:
  UdpSocket() = default;
  UdpSocket(UdpSocket&&) noexcept = default;
  UdpSocket& operator=(UdpSocket&&) noexcept = default;

  // A socket bound to `local` ("0.0.0.0:0": any address, any free port; see LocalAddress).
  // Any thread. Receives from anyone; sends with SendTo.
  static IoResult<UdpSocket> Bind(Scheduler& scheduler, const SocketAddress& local) {
    return Open(scheduler, local, /*connect=*/false);
  }
  // A socket connected to `remote` (bound to a free local port): Send goes there, only
  // `remote`'s datagrams are received, and ICMP errors are reported (kRefused). Any thread;
  // connecting a UDP socket sends nothing, so it does not wait.
  static IoResult<UdpSocket> Connect(Scheduler& scheduler, const SocketAddress& remote) {
    return Open(scheduler, remote, /*connect=*/true);
  }

  // Sends `data` as one datagram to `to`: data.size(), or kTimeout, kCancelled, kShutdown,
  // kSystem (EMSGSIZE: too large), kRefused (connected socket, see the file comment).
  coro::Lazy<IoResult<std::size_t>> SendTo(std::span<const char> data, SocketAddress to,
                                           TaskDeadline deadline) {
    co_return co_await Datagrams::Send(this->Live(), data, &to, deadline);  // `to` lives here
  }
  // Connected sockets: sends `data` as one datagram to the peer.
  coro::Lazy<IoResult<std::size_t>> Send(std::span<const char> data, TaskDeadline deadline) {
    co_return co_await Datagrams::Send(this->Live(), data, nullptr, deadline);
  }
  // Waits for the next datagram and stores (the start of) it in `buffer`; see UdpDatagram.
  // An empty datagram is a success with size 0.
  coro::Lazy<IoResult<UdpDatagram>> ReceiveFrom(std::span<char> buffer, TaskDeadline deadline) {
    return Datagrams::ReceiveFrom(this->Live(), buffer, deadline);
  }

  // The addresses; kClosed on a closed socket (also one that races with Close).
  IoResult<SocketAddress> LocalAddress() const {
    return this->WithFd([](int fd) { return internal::LocalAddressOf(fd); });
  }
  // Connected sockets: the peer.
  IoResult<SocketAddress> PeerAddress() const {
    return this->WithFd([](int fd) { return internal::PeerAddressOf(fd); });
  }
  // (IsOpen(), fd() and WithFd() come from internal::SocketHandle.)
  // Closes the socket, as TcpStream::Close: any thread, idempotent; a pending receive or
  // send of another coroutine returns kClosed, later ones fail at once with kClosed.
  void Close() { this->CloseCore(); }

  // --- Options. Each returns an error value: kClosed on a closed socket (never an abort),
  // kSystem with the errno the kernel gave (EINVAL: a value it refuses), else success. ---
  // SO_BROADCAST: allows SendTo to a broadcast address (255.255.255.255, a subnet's).
  IoError SetBroadcast(bool on);
  IoResult<bool> Broadcast() const;
  // SO_RCVBUF / SO_SNDBUF in bytes: a request (Linux doubles it for its bookkeeping and
  // clamps it to net.core.rmem_max / wmem_max); the getters return what the kernel uses.
  IoError SetReceiveBufferSize(int bytes);
  IoError SetSendBufferSize(int bytes);
  IoResult<int> ReceiveBufferSize() const;
  IoResult<int> SendBufferSize() const;
  // Multicast, for the socket's family (IPv4: IP_*, IPv6: IPV6_*). `group` is a multicast
  // address (its port is not used); `interface_index` picks the interface (if_nametoindex;
  // 0: the kernel's choice, from the routing table). To receive a group's datagrams, Bind
  // to the wildcard address (or the group) and the group's port, then join.
  IoError JoinMulticastGroup(const SocketAddress& group, unsigned interface_index = 0);
  IoError LeaveMulticastGroup(const SocketAddress& group, unsigned interface_index = 0);
  // The interface the socket's multicast datagrams leave by (0: from the routing table).
  IoError SetMulticastInterface(unsigned interface_index);
  // Hops (TTL) of sent multicast datagrams, 0..255 (1, the default: this network only).
  IoError SetMulticastTtl(int hops);
  // Whether this host's own members of a group receive what the socket sends (default on).
  IoError SetMulticastLoopback(bool on);

 private:
  explicit UdpSocket(Core* core) : Handle(core) {}

  // The options' access to the fd: kClosed once the socket is closed, else call(fd,
  // family) (0 or -errno) with the fd held open (SocketHandle::WithFd).
  template <typename Call>
  IoError WithOpenFd(Call call) const;
  // One int-valued option (Option: internal::UdpOption, declared after the class).
  template <typename Option>
  IoError SetOption(Option option, int value);
  template <typename Option>
  IoResult<int> GetOption(Option option) const;

  static IoResult<UdpSocket> Open(Scheduler& scheduler, const SocketAddress& address,
                                  bool connect) {
    const int fd = internal::OpenUdpSocket(address.family());
    if (fd < 0) return IoError::FromErrno(-fd);
    int result = connect ? internal::ConnectDatagramSocket(fd, address)
                         : internal::BindSocket(fd, address);
    if (result == 0) result = internal::AttachSocket(scheduler.io(), fd);
    if (result < 0) {
      internal::CloseFd(fd);
      return IoError::FromErrno(-result);
    }
    return UdpSocket(new Core(&scheduler, fd));
  }
};

// --- UdpSocket's options (declared at the end of the class) ---

namespace internal {
// The int-valued UDP options; io/udp.cc and io/udp_windows.cc map each to its platform's
// level and name, the multicast ones by `family` (AF_INET: IPPROTO_IP, AF_INET6:
// IPPROTO_IPV6). setsockopt / getsockopt: 0 or -errno.
enum class UdpOption : std::uint8_t {
  kBroadcast,           // SO_BROADCAST (0/1)
  kReceiveBuffer,       // SO_RCVBUF (bytes)
  kSendBuffer,          // SO_SNDBUF (bytes)
  kMulticastInterface,  // IP_MULTICAST_IF / IPV6_MULTICAST_IF (interface index)
  kMulticastHops,       // IP_MULTICAST_TTL / IPV6_MULTICAST_HOPS
  kMulticastLoop,       // IP_MULTICAST_LOOP / IPV6_MULTICAST_LOOP (0/1)
};
// The level and name of `option` on a socket of `family`; false if there is none.
bool UdpOptionId(int family, UdpOption option, int* level, int* name);
int SetUdpOption(int fd, int family, UdpOption option, int value);
int GetUdpOption(int fd, int family, UdpOption option, int* value);
// IP_ADD_MEMBERSHIP / IPV6_JOIN_GROUP (`join`) or IP_DROP_MEMBERSHIP / IPV6_LEAVE_GROUP of
// `group` on `interface_index`: 0 or -errno (-EAFNOSUPPORT: group and socket differ).
int ChangeMulticastMembership(int fd, int family, const SocketAddress& group,
                              unsigned interface_index, bool join);
}  // namespace internal

template <typename Scheduler>
template <typename Call>
IoError UdpSocket<Scheduler>::WithOpenFd(Call call) const {
  // Through WithFd: a concurrent Close cannot close (or let the system reuse) the fd
  // while the option call uses it.
  return this->WithFd([&](int fd) -> IoError {
    IoResult<SocketAddress> local = internal::LocalAddressOf(fd);
    if (!local.ok()) return local.error();
    const int result = call(fd, local.value().family());
    return result < 0 ? IoError::FromErrno(-result) : IoError();
  });
}

template <typename Scheduler>
template <typename Option>
IoError UdpSocket<Scheduler>::SetOption(Option option, int value) {
  return WithOpenFd(
      [&](int fd, int family) { return internal::SetUdpOption(fd, family, option, value); });
}
template <typename Scheduler>
template <typename Option>
IoResult<int> UdpSocket<Scheduler>::GetOption(Option option) const {
  int value = 0;
  const IoError error = WithOpenFd(
      [&](int fd, int family) { return internal::GetUdpOption(fd, family, option, &value); });
  if (!error.ok()) return error;
  return value;
}

template <typename Scheduler>
IoError UdpSocket<Scheduler>::SetBroadcast(bool on) {
  return SetOption(internal::UdpOption::kBroadcast, on ? 1 : 0);
}
template <typename Scheduler>
IoResult<bool> UdpSocket<Scheduler>::Broadcast() const {
  IoResult<int> value = GetOption(internal::UdpOption::kBroadcast);
  if (!value.ok()) return value.error();
  return value.value() != 0;
}
template <typename Scheduler>
IoError UdpSocket<Scheduler>::SetReceiveBufferSize(int bytes) {
  return SetOption(internal::UdpOption::kReceiveBuffer, bytes);
}
template <typename Scheduler>
IoError UdpSocket<Scheduler>::SetSendBufferSize(int bytes) {
  return SetOption(internal::UdpOption::kSendBuffer, bytes);
}
template <typename Scheduler>
IoResult<int> UdpSocket<Scheduler>::ReceiveBufferSize() const {
  return GetOption(internal::UdpOption::kReceiveBuffer);
}
template <typename Scheduler>
IoResult<int> UdpSocket<Scheduler>::SendBufferSize() const {
  return GetOption(internal::UdpOption::kSendBuffer);
}
template <typename Scheduler>
IoError UdpSocket<Scheduler>::JoinMulticastGroup(const SocketAddress& group,
                                                 unsigned interface_index) {
  return WithOpenFd([&](int fd, int family) {
    return internal::ChangeMulticastMembership(fd, family, group, interface_index, true);
  });
}
template <typename Scheduler>
IoError UdpSocket<Scheduler>::LeaveMulticastGroup(const SocketAddress& group,
                                                  unsigned interface_index) {
  return WithOpenFd([&](int fd, int family) {
    return internal::ChangeMulticastMembership(fd, family, group, interface_index, false);
  });
}
template <typename Scheduler>
IoError UdpSocket<Scheduler>::SetMulticastInterface(unsigned interface_index) {
  return SetOption(internal::UdpOption::kMulticastInterface, static_cast<int>(interface_index));
}
template <typename Scheduler>
IoError UdpSocket<Scheduler>::SetMulticastTtl(int hops) {
  return SetOption(internal::UdpOption::kMulticastHops, hops);
}
template <typename Scheduler>
IoError UdpSocket<Scheduler>::SetMulticastLoopback(bool on) {
  return SetOption(internal::UdpOption::kMulticastLoop, on ? 1 : 0);
}

}  // namespace fairsched

#endif  // FAIRSCHED_IO_UDP_H_
