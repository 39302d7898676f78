// BackendFacade: the any-thread calls every IO backend (epoll, io_uring, IOCP) has in the
// same form: Notify, Submit, Cancel and LiveCount, over the backend's shared submission
// registry (io/io_op_registry.h) and role sleep gate (io/role_sleep_gate.h). A backend
// derives from BackendFacade<Itself> (CRTP: inline calls, no virtual function, no data of
// its own, so the backend's layout is unchanged) and provides, to its friend the facade:
//   internal::RoleSleepGate gate_;       the holder's sleeping / notified word
//   internal::IoOpRegistry registry_;    the submission queue and op states
//   void WakeHolder();                   wakes the holder out of its kernel sleep
#ifndef FAIRSCHED_IO_INTERNAL_BACKEND_FACADE_H_
#define FAIRSCHED_IO_INTERNAL_BACKEND_FACADE_H_

#include <cstdint>

#include "io/io_op.h"

namespace fairsched::internal {

template <typename Backend>
class BackendFacade {
 public:
  // IoBackend concept (sched/io_backend.h), any thread: wakes the holder sleeping in the
  // backend, through the kernel only when it really sleeps (RoleSleepGate).
  void Notify() {
    if (self().gate_.Notify()) self().WakeHolder();
  }

  // Task-level IO (see io/io_op.h). Any thread.
  void Submit(IoOp* op) {
    if (self().registry_.Submit(op)) Notify();
  }
  void Cancel(IoOp* op) {
    if (self().registry_.Cancel(op)) Notify();
  }
  // Ops between Submit and their final completion.
  std::int64_t LiveCount() const { return self().registry_.LiveCount(); }

 protected:
  BackendFacade() = default;
  ~BackendFacade() = default;

 private:
  Backend& self() { return static_cast<Backend&>(*this); }
  const Backend& self() const { return static_cast<const Backend&>(*this); }
};

}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_INTERNAL_BACKEND_FACADE_H_
