// IoUringBackend: the sched-role holder sleeps in io_uring_enter, and IO operations run in
// the kernel and complete into tasks. Models the IoBackend concept of sched/io_backend.h:
//   using UringTaskScheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>,
//                                                 IoUringBackend>;
//
// Supports every IoOp kind (io/io_op.h): Watch (multishot IORING_OP_POLL_ADD), Poll
// (one-shot poll), Read, Write, Accept (non-blocking, close-on-exec socket), Connect.
//
// Inside the box: the ring (its submission and completion queues) is touched only by the
// sched-role holder. Submit/Cancel from any worker go through the shared lock-free
// submission queue (internal::IoOpRegistry) and the holder turns them into SQEs at its next
// Poll/WaitUntil, so the SQ keeps the single producer liburing needs, whichever worker that
// is at the moment; the RoleLock hand-off publishes liburing's user-space ring state from
// one holder to the next. A non-blocking Poll reads the completion queue from shared memory
// and makes no syscall unless SQEs are waiting to be submitted.
//
// Setup flags, decided for a ring driven by a CHANGING thread (the current role holder):
//   - IORING_SETUP_SINGLE_ISSUER and IORING_SETUP_DEFER_TASKRUN: not used. Both require one
//     fixed submitting thread (the kernel records the first submitter and rejects others
//     with -EEXIST); our submitter is whichever worker holds the sched-role. They would fit
//     only a design with a dedicated IO thread, which the sched-role design avoids.
//   - IORING_SETUP_COOP_TASKRUN (and TASKRUN_FLAG, which needs it): not used. Completion
//     work is queued to the thread that SUBMITTED the request; with COOP_TASKRUN the kernel
//     does not interrupt that thread to run it. When the role has moved on and the old
//     submitter is parked on a futex, the completion would wait for that thread's next
//     kernel transition while the new holder sleeps waiting for it. Without the flag the
//     kernel notifies the submitter (like a signal) and completions arrive promptly.
//   - IORING_SETUP_SUBMIT_ALL (a bad SQE does not stop the rest of the batch: each op gets
//     its own error) where the kernel has it (5.18+); before that the ring is set up
//     without it (an SQE that fails at submission then stops the batch there, and the rest
//     go in with the next submission). IORING_SETUP_CLAMP (a too-large size is clamped,
//     not refused) everywhere. The real minimum is Linux 5.11 (IORING_FEAT_EXT_ARG).
//   - Timeouts use the EXT_ARG wait (io_uring_submit_and_wait_timeout), not timeout SQEs.
// Extensions for the socket layer (not built yet; the shape allows them): multishot accept
// and multishot receive with a provided buffer ring (io_uring_setup_buf_ring). A multishot
// op already fits: it is a Watch-like op that delivers several CQEs (IORING_CQE_F_MORE) and
// ends with one final completion; a buffer ring is role-only state registered once and
// replenished by the holder after the task returns a buffer through the submission queue.
//
// Notify writes an eventfd that an IORING_OP_READ in the ring always waits on, and only when
// the holder really sleeps (internal::RoleSleepGate).
//
// Thread safety: Submit, Cancel, Notify and LiveCount from any thread; the concept's role
// methods only from the sched-role holder (the scheduler does that).
#ifndef FAIRSCHED_IO_IO_URING_BACKEND_H_
#define FAIRSCHED_IO_IO_URING_BACKEND_H_

#include <cstdint>
#include <memory>

#include "io/io_op.h"
#include "io/io_op_registry.h"
#include "io/role_sleep_gate.h"
#include "sched/io_backend.h"
#include "sched/task.h"

struct io_uring;
struct io_uring_sqe;
struct io_uring_cqe;
struct io_uring_params;

namespace fairsched {

namespace internal {
// io_uring_queue_init_params(entries, ring, params) with the setup flags the backend wants
// (see above), retried without IORING_SETUP_SUBMIT_ALL when the kernel refuses it with
// EINVAL. `init` is liburing's io_uring_queue_init_params (a test passes one that refuses
// the flag). Returns 0 or -errno; `*params` holds what the kernel accepted.
using RingInit = int (*)(unsigned entries, io_uring* ring, io_uring_params* params);
int InitRing(io_uring* ring, unsigned entries, RingInit init, io_uring_params* params);
}  // namespace internal

class IoUringBackend {
 public:
  // Completion-based: io/tcp.h runs each operation as one IoOp.
  static constexpr bool kCompletionBased = true;

  // `entries`: submission queue size (the completion queue is twice that). Aborts with a
  // message if the kernel refuses a ring (io_uring disabled, or out of memory/fds).
  explicit IoUringBackend(unsigned entries = 256);
  // Ops still submitted are a bug (checked in debug builds). Stop cancels all of them first.
  ~IoUringBackend();
  IoUringBackend(const IoUringBackend&) = delete;
  IoUringBackend& operator=(const IoUringBackend&) = delete;

  // IoBackend concept (see sched/io_backend.h).
  void Poll(IoReadySink& sink);
  void WaitUntil(TaskDeadline deadline, IoReadySink& sink);
  void Notify() {
    if (gate_.Notify()) WriteWakeFd();
  }
  void CancelAll(IoReadySink& sink);
  // Role: whether completions wait in the completion queue (a read of the ring's shared
  // memory, no syscall).
  bool EventsReady();

  // Task-level IO (see io/io_op.h). Any thread.
  void Submit(IoOp* op) {
    if (registry_.Submit(op)) Notify();
  }
  void Cancel(IoOp* op) {
    if (registry_.Cancel(op)) Notify();
  }
  // Ops between Submit and their final completion.
  std::int64_t LiveCount() const { return registry_.LiveCount(); }
  // Whether the kernel took IORING_SETUP_SUBMIT_ALL (Linux 5.18+).
  bool submit_all() const { return submit_all_; }

 private:
  void Drain(IoReadySink& sink);
  void Arm(IoOp* op);
  void Disarm(IoOp* op);
  void ArmWakeRead();
  void Handle(const io_uring_cqe& cqe, IoReadySink& sink);
  void Reap(IoReadySink& sink);
  void SubmitPending();
  io_uring_sqe* GetSqe();
  void WriteWakeFd();

  std::unique_ptr<io_uring> ring_;
  int wake_fd_ = -1;
  std::uint64_t wake_value_ = 0;  // the eventfd read's buffer (role-only, kernel-written)
  bool submit_all_ = false;
  internal::RoleSleepGate gate_;
  internal::IoOpRegistry registry_;
};

static_assert(IoBackend<IoUringBackend>);

}  // namespace fairsched

#endif  // FAIRSCHED_IO_IO_URING_BACKEND_H_
