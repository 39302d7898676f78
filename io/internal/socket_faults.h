// A test seam in the socket layer's system calls: a test installs a SocketFaults, and the
// calls that can fail or fall short in ways a loopback test cannot provoke ask it first.
// Internal: for tests/io/socket_faults_test (and any fault-injection harness); production code
// never installs one, and then every call is made unchanged.
//
// Where the calls ask (Linux only; Windows has no seam):
//   - BeforeReceive: the readiness (epoll) path's recv and recvmsg (io/socket_ops_posix.cc).
//     -EINTR models a signal, any other -errno a socket error. (Not -EAGAIN while bytes
//     are there: the readiness path waits for the next edge after EAGAIN, and the kernel
//     sends one only when more bytes come.)
//   - BeforeSend: the readiness path's send and sendmsg, and io_uring's send and write
//     submissions (io/io_uring_backend.cc). Lowering `*limit` caps the bytes the call may
//     move (1: a short write of one byte); a -errno result fails a readiness-path call
//     without making it (io_uring uses only the cap).
//   - BeforeAccept: the readiness path's accept4 (EMFILE, ENFILE, ECONNABORTED, EINTR).
//   - FalseReadiness: asked by the epoll backend for each readiness edge it reports; true
//     reports both sides of the fd ready, whatever the kernel said: a wake-up for a side
//     with nothing to read or no room to write.
//   - BeforeRingSetup: io_uring_queue_init, in IoUringBackend::Supported() and its
//     constructor (ENOMEM, EAGAIN: what the kernel returns when it cannot pin the rings).
//   - BeforeRingSubmit: io_uring_submit when the backend hands queued entries to the kernel
//     between waits (EAGAIN, EBUSY); the entries stay queued for the next submit.
// Each returns 0 (false) to leave the call unchanged. The calls ask from any thread, concurrently:
// an implementation synchronises its own state (atomics).
//
// Contract: InstallSocketFaults(f) makes every later call ask `f` until the next
// InstallSocketFaults; `f` must outlive every socket call that may have loaded it, so a
// test uninstalls (nullptr) only after its servers and clients have stopped.
#ifndef FAIRSCHED_IO_INTERNAL_SOCKET_FAULTS_H_
#define FAIRSCHED_IO_INTERNAL_SOCKET_FAULTS_H_

#include <cstddef>

#include "sync/primitives.h"

namespace fairsched::internal {

class SocketFaults {
 public:
  virtual ~SocketFaults() = default;
  virtual int BeforeReceive(int /*fd*/) { return 0; }
  virtual int BeforeSend(int /*fd*/, std::size_t* /*limit*/) { return 0; }
  virtual int BeforeAccept(int /*listen_fd*/) { return 0; }
  virtual bool FalseReadiness(int /*fd*/) { return false; }
  virtual int BeforeRingSetup() { return 0; }
  virtual int BeforeRingSubmit() { return 0; }
};

// The installed faults, or null (the common case: one load and a predicted branch per call).
inline Atomic<SocketFaults*> installed_socket_faults{nullptr};

inline void InstallSocketFaults(SocketFaults* faults) {
  // Release: a call that loads the pointer (acquire, below) sees the object fully built.
  installed_socket_faults.store(faults, std::memory_order_release);
}

inline SocketFaults* InstalledSocketFaults() {
  // Acquire pairs with the release in InstallSocketFaults: without it a socket call on
  // another thread could see the pointer before the object's fields (its vtable).
  return installed_socket_faults.load(std::memory_order_acquire);
}

}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_INTERNAL_SOCKET_FAULTS_H_
