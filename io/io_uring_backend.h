// IoUringBackend: the sched-role holder sleeps in io_uring_enter, and IO operations run in
// the kernel and complete into tasks. Models the IoBackend concept of sched/io_backend.h:
//   using UringTaskScheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>,
//                                                 IoUringBackend>;
//
// Supports every IoOp kind (io/io_op.h): Watch (multishot IORING_OP_POLL_ADD), Poll
// (one-shot poll), Read, Write, Accept (non-blocking, close-on-exec socket), Connect, the
// vectored ReadV (IORING_OP_READV) and SendV (IORING_OP_SENDMSG with MSG_NOSIGNAL; its
// msghdr is one small heap object per op, freed at the CQE), and the multishot
// AcceptMultishot and RecvMultishot (with an IoBufferRing, see below).
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
//   - One Poll or WaitUntil handles at most one completion queue's worth of CQEs (the rest
//     stay for the next), so the holder returns to the tasks it made ready.
// Multishot operations (io/io_op.h: AcceptMultishot, RecvMultishot): one SQE, many CQEs
// (IORING_CQE_F_MORE). Each CQE becomes an intermediate completion (an IoEvent in the op's
// queue and a Wakeup); the op's last CQE (no F_MORE) is turned into the one final completion,
// or, where the op should go on, the op is armed again:
//   - a CQE with a result but without F_MORE (the kernel ended the multishot on its own, e.g.
//     on CQ overflow, or the single-shot fallback below) is delivered and the op re-armed at
//     the end of that Reap, and not before the kernel holds no overflowed CQE any more (an
//     op armed into a backlog that is ready at once would be ended again, for ever);
//   - RecvMultishot out of ring buffers (-ENOBUFS, or no buffer in the ring when it is
//     armed) is PARKED: held by the backend, out of the kernel, and armed again by the role
//     as soon as ReleaseBuffer hands a buffer back; a cancel of a parked op completes it;
//   - end of stream (0 without a buffer), an error, or a cancel: the final completion.
// Provided buffer rings (IoBufferRing, IORING_REGISTER_PBUF_RING): registered by
// CreateBufferRing, owned by the backend. The kernel picks a buffer per CQE; the task owns it
// from its event until ReleaseBuffer(ring, id) (any thread), which marks it returned in an
// atomic bitmap; the role puts returned buffers back into the ring (it is the ring's only
// producer) at its next Poll/WaitUntil and unparks starved ops.
// Probes (constructor, from the kernel's opcode probe): IORING_OP_SOCKET (5.19) implies
// multishot accept and buffer rings; IORING_OP_SEND_ZC (6.0) implies multishot recv.
// Fallbacks: no multishot accept: a single-shot accept re-armed after each CQE; no multishot
// recv: a single-shot recv with buffer selection re-armed after each CQE; same events, same
// contract, one SQE per result instead of one in all. No buffer rings (before 5.19):
// CreateBufferRing fails with a reason, RecvMultishot cannot be used. SetMultishot(false)
// forces both fallbacks (tests, and the single-shot side of the benchmark).
//
// Notify writes an eventfd that an IORING_OP_READ in the ring always waits on, and only when
// the holder really sleeps (internal::RoleSleepGate).
//
// Thread safety: Submit, Cancel, Notify and LiveCount from any thread; the concept's role
// methods only from the sched-role holder (the scheduler does that).
#ifndef FAIRSCHED_IO_IO_URING_BACKEND_H_
#define FAIRSCHED_IO_IO_URING_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/internal/backend_facade.h"
#include "io/io_op.h"
#include "io/io_op_registry.h"
#include "io/role_sleep_gate.h"
#include "sched/io_backend.h"
#include "sched/task.h"

struct io_uring;
struct io_uring_sqe;
struct io_uring_cqe;
struct io_uring_params;
struct io_uring_buf_ring;

namespace fairsched {

namespace internal {
// io_uring_queue_init_params(entries, ring, params) with the setup flags the backend wants
// (see above), retried without IORING_SETUP_SUBMIT_ALL when the kernel refuses it with
// EINVAL. `init` is liburing's io_uring_queue_init_params (a test passes one that refuses
// the flag). Returns 0 or -errno; `*params` holds what the kernel accepted.
using RingInit = int (*)(unsigned entries, io_uring* ring, io_uring_params* params);
int InitRing(io_uring* ring, unsigned entries, RingInit init, io_uring_params* params);
}  // namespace internal

// A provided buffer ring: `count` buffers of `buffer_size` bytes the kernel receives into
// (see above). Created by IoUringBackend::CreateBufferRing, destroyed with the backend.
class IoBufferRing {
 public:
  IoBufferRing(const IoBufferRing&) = delete;
  IoBufferRing& operator=(const IoBufferRing&) = delete;
  ~IoBufferRing();

  unsigned count() const { return count_; }
  std::size_t buffer_size() const { return buffer_size_; }
  // The bytes of buffer `id`: the task's from the event that names it until ReleaseBuffer.
  char* Buffer(std::uint16_t id) { return storage_.get() + std::size_t{id} * buffer_size_; }

 private:
  friend class IoUringBackend;
  IoBufferRing(unsigned count, std::size_t buffer_size, std::uint16_t group);
  static constexpr unsigned kBitsPerWord = 64;

  const unsigned count_;
  const std::size_t buffer_size_;
  const std::uint16_t group_;
  io_uring_buf_ring* kernel_ring_ = nullptr;  // page-aligned, shared with the kernel
  std::unique_ptr<char[]> storage_;
  // One bit per buffer. user_owned_: delivered to a task and not yet released (catches a
  // double or bogus ReleaseBuffer). returned_: released, not yet back in the kernel ring.
  std::unique_ptr<Atomic<std::uint64_t>[]> user_owned_;
  std::unique_ptr<Atomic<std::uint64_t>[]> returned_;
  // Sched-role only.
  unsigned available_ = 0;      // buffers in the kernel ring
  std::vector<IoOp*> starved_;  // parked RecvMultishot ops waiting for a buffer
};

class IoUringBackend : public internal::BackendFacade<IoUringBackend> {
 public:
  // Completion-based: the socket layer (io/internal/socket_io.h) runs each operation as one
  // IoOp.
  static constexpr bool kCompletionBased = true;

  // `entries`: submission queue size (the completion queue is twice that). Aborts with a
  // message if the kernel refuses a ring (io_uring disabled, or out of memory/fds).
  explicit IoUringBackend(unsigned entries = 256);
  // Whether this kernel and sandbox give a ring the constructor accepts (io_uring can be
  // disabled by sysctl or seccomp, as in many containers): sets up and tears down a small
  // ring, so ask once at start-up, not per connection.
  static bool Supported();
  // Ops still submitted are a bug (checked in debug builds). Stop cancels all of them first.
  ~IoUringBackend();
  IoUringBackend(const IoUringBackend&) = delete;
  IoUringBackend& operator=(const IoUringBackend&) = delete;

  // IoBackend concept (see sched/io_backend.h).
  void Poll(IoReadySink& sink);
  void WaitUntil(TaskDeadline deadline, IoReadySink& sink);
  // Notify: internal::BackendFacade.
  void CancelAll(IoReadySink& sink);
  // Role: whether completions wait in the completion queue (a read of the ring's shared
  // memory, no syscall).
  bool EventsReady();

  // Task-level IO (see io/io_op.h), any thread: Submit, Cancel and LiveCount come from
  // internal::BackendFacade.
  // Whether the kernel took IORING_SETUP_SUBMIT_ALL (Linux 5.18+).
  bool submit_all() const { return submit_all_; }

  // Multishot (see above). Probed kernel support, after SetMultishot.
  bool multishot_accept() const { return multishot_accept_; }
  bool multishot_recv() const { return multishot_recv_; }
  bool buffer_rings() const { return buffer_rings_; }
  // Why multishot is off where it is (empty when both are on).
  const std::string& multishot_note() const { return multishot_note_; }
  // false: use the single-shot fallbacks even where the kernel has multishot. Before any
  // multishot op is submitted (not synchronised with the role).
  void SetMultishot(bool enabled);
  // Registers a ring of `count` (a power of two, at most 32768) buffers of `buffer_size`
  // bytes. Any thread, before the ops that use it are submitted. nullptr (and the reason in
  // *error) if the kernel has no buffer rings or refuses it, or the arguments are invalid.
  IoBufferRing* CreateBufferRing(unsigned count, std::size_t buffer_size,
                                 std::string* error = nullptr);
  // Hands buffer `id` (named by an IoEvent) back to the kernel. Any thread; once per event.
  void ReleaseBuffer(IoBufferRing* ring, std::uint16_t id);

 private:
  void Drain(IoReadySink& sink);
  void Arm(IoOp* op);
  void Disarm(IoOp* op, IoReadySink& sink);
  void ArmWakeRead();
  void Handle(const io_uring_cqe& cqe, IoReadySink& sink);
  void HandleMultishot(IoOp* op, const io_uring_cqe& cqe, IoReadySink& sink);
  void Park(IoOp* op);
  void RearmLater(IoOp* op);
  // Arms every op of `parked` (ops held out of the kernel) again; `parked` is emptied.
  void ArmParked(std::vector<IoOp*>& parked);
  void ReturnToKernel(IoBufferRing* ring, std::uint16_t id);
  void ReclaimReturnedBuffers();
  void ProbeMultishot();
  void Reap(IoReadySink& sink);
  void SubmitPending();
  io_uring_sqe* GetSqe();
  friend class internal::BackendFacade<IoUringBackend>;
  // Wakes the holder out of its kernel sleep (BackendFacade::Notify calls it).
  void WakeHolder();

  std::unique_ptr<io_uring> ring_;
  int wake_fd_ = -1;
  std::uint64_t wake_value_ = 0;  // the eventfd read's buffer (role-only, kernel-written)
  bool submit_all_ = false;
  bool multishot_accept_ = false;
  bool multishot_recv_ = false;
  bool buffer_rings_ = false;
  std::string multishot_note_;
  Mutex rings_mutex_;  // guards rings_ and next_group_ (creation vs the role's reclaim)
  std::vector<std::unique_ptr<IoBufferRing>> rings_;
  std::uint16_t next_group_ = 0;
  // Role only: multishot ops the kernel ended on CQ overflow, out of the kernel until Reap
  // arms them again (backend_parked is set while they wait here).
  std::vector<IoOp*> rearm_;
  // Set by ReleaseBuffer after it marked a buffer returned; the role's cue to reclaim.
  Atomic<bool> returns_pending_{false};
  internal::RoleSleepGate gate_;
  internal::IoOpRegistry registry_;
};

static_assert(IoBackend<IoUringBackend>);

}  // namespace fairsched

#endif  // FAIRSCHED_IO_IO_URING_BACKEND_H_
