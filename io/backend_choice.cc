// Backend names, parsing and the support probe for io/backend_choice.h.
#include "io/backend_choice.h"

namespace fairsched {

std::string_view IoBackendName(IoBackendKind kind) {
  switch (kind) {
    case IoBackendKind::kEpoll:
      return "epoll";
    case IoBackendKind::kIoUring:
      return "io_uring";
    case IoBackendKind::kIocp:
      return "iocp";
  }
  return "unknown";
}

std::string_view IoBackendNames() {
#ifdef _WIN32
  return "iocp";
#else
  return "epoll|io_uring";
#endif
}

std::optional<IoBackendKind> ParseIoBackendKind(std::string_view name) {
#ifdef _WIN32
  if (name == "iocp") return IoBackendKind::kIocp;
#else
  if (name == "epoll") return IoBackendKind::kEpoll;
  if (name == "io_uring") return IoBackendKind::kIoUring;
#endif
  return std::nullopt;
}

bool IoBackendSupported(IoBackendKind kind) {
#ifdef _WIN32
  return kind == IoBackendKind::kIocp;
#else
  if (kind == IoBackendKind::kIoUring) {
    static const bool supported = IoUringBackend::Supported();  // one probe per process
    return supported;
  }
  return kind == IoBackendKind::kEpoll;
#endif
}

IoBackendKind DefaultIoBackend() {
#ifdef _WIN32
  return IoBackendKind::kIocp;
#else
  return IoBackendKind::kEpoll;
#endif
}

}  // namespace fairsched
