// Choosing the IO backend at run time (a flag or a config file) for a server written once.
//
// Backends differ at compile time: a socket operation runs on readiness (epoll) or as one
// submitted operation (io_uring, IOCP), chosen by the backend's traits
// (io/internal/socket_io.h), with no dispatch per operation. So the scheduler type names
// its backend, and a server that lets the user pick one is a template instantiated once per
// backend it may run on. This header keeps that to one line: write the server as a
// function template over the backend, and WithIoBackend calls the instantiation the run
// asked for.
//
//   template <typename Backend>
//   int Serve(const Flags& flags) {
//     BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend> sched;  ...
//   }
//   std::optional<IoBackendKind> kind = ParseIoBackendKind(flags.backend);
//   if (!kind || !IoBackendSupported(*kind)) { /* print IoBackendNames(), exit */ }
//   return WithIoBackend(*kind, [&]<typename Backend>() { return Serve<Backend>(flags); });
//
// The price is code size: each backend's instantiation of the server is in the binary.
// Contract:
//   - ParseIoBackendKind accepts "epoll", "io_uring" (Linux) and "iocp" (Windows), and
//     returns nothing for any other name, including a backend of the other platform.
//   - IoBackendSupported(kind): the kind is built for this platform and, for io_uring, the
//     kernel gives a ring (IoUringBackend::Supported: sysctl or seccomp can disable it).
//     A backend constructed where it is not supported aborts with a message, so ask first.
//   - DefaultIoBackend(): epoll on Linux, IOCP on Windows.
//   - WithIoBackend(kind, fn) calls fn.template operator()<Backend>() for the kind's
//     backend class and returns its result; every instantiation must return the same type.
//     `kind` must be built for this platform (checked, with a message).
#ifndef FAIRSCHED_IO_BACKEND_CHOICE_H_
#define FAIRSCHED_IO_BACKEND_CHOICE_H_

#include <optional>
#include <string_view>
#include <utility>

#include "sched/task.h"
#ifdef _WIN32
#include "io/iocp_backend.h"
#else
#include "io/epoll_backend.h"
#include "io/io_uring_backend.h"
#endif

namespace fairsched {

enum class IoBackendKind { kEpoll, kIoUring, kIocp };

// "epoll", "io_uring" or "iocp".
std::string_view IoBackendName(IoBackendKind kind);
// The names this platform builds, for a usage message: "epoll|io_uring" or "iocp".
std::string_view IoBackendNames();
std::optional<IoBackendKind> ParseIoBackendKind(std::string_view name);
bool IoBackendSupported(IoBackendKind kind);
IoBackendKind DefaultIoBackend();

template <typename Fn>
decltype(auto) WithIoBackend(IoBackendKind kind, Fn&& fn) {
#ifdef _WIN32
  FAIRSCHED_CHECK(kind == IoBackendKind::kIocp, "WithIoBackend: only iocp is built on Windows");
  return std::forward<Fn>(fn).template operator()<IocpBackend>();
#else
  FAIRSCHED_CHECK(kind != IoBackendKind::kIocp, "WithIoBackend: iocp is built on Windows only");
  if (kind == IoBackendKind::kIoUring) {
    return std::forward<Fn>(fn).template operator()<IoUringBackend>();
  }
  return std::forward<Fn>(fn).template operator()<EpollBackend>();
#endif
}

}  // namespace fairsched

#endif  // FAIRSCHED_IO_BACKEND_CHOICE_H_
