// For the Task-level IO backend tests (tests/io): IoWaiter, a task that waits for one IoOp
// (io/io_op.h) the way IO code at the Task level does, counting what the backend delivers
// to it, and IoSchedulerTest, the fixture that gives each test a fresh scheduler and checks
// afterwards that no fd leaked.
#ifndef FAIRSCHED_TESTS_IO_IO_WAITER_H_
#define FAIRSCHED_TESTS_IO_IO_WAITER_H_

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <vector>

#include "io/io_op.h"
#include "sched/task.h"
#include "tests/io/io_test_util.h"

namespace fairsched::testing {

// Waits for one IoOp. Non-final runs count readiness wakes (a Watch's edges); the final
// completion (a Signal) records the result and ends it; a scheduler Cancel makes it cancel
// the op and wait for that final completion. Start() may be called again once finished()
// (after preparing the op again).
template <typename Backend>
class IoWaiter {
 public:
  explicit IoWaiter(IoTestScheduler<Backend>* scheduler)
      : scheduler_(scheduler), task_(this, &IoWaiter::Run) {}
  ~IoWaiter() { EXPECT_TRUE(finished_.load()) << "an IoWaiter was left waiting"; }
  IoWaiter(const IoWaiter&) = delete;
  IoWaiter& operator=(const IoWaiter&) = delete;

  Task* task() { return &task_; }
  IoOp& op() { return op_; }
  void Start() {
    finished_ = false;
    scheduler_->PostDeadlineThroughStop(&task_, kTaskDeadlineInfinite);
    scheduler_->io().Submit(&op_);
  }
  int runs() const { return runs_.load(); }
  int finals() const { return finals_.load(); }
  bool finished() const { return finished_.load(); }
  std::int32_t result() const { return result_.load(); }
  std::uint32_t readiness() const { return readiness_.load(); }

 private:
  void Run(Task* self) {
    if (self->ReceiveSignal()) {  // the final completion: the backend is done with op_
      result_ = op_.Result();
      readiness_ |= op_.TakeReadiness();
      finals_.fetch_add(1);
      finished_ = true;
      return;
    }
    if (self->IsCancelled()) {
      if (!op_.IsSubmitted()) {  // nothing left to release
        finished_ = true;
        return;
      }
      scheduler_->io().Cancel(&op_);
    } else {
      readiness_ |= op_.TakeReadiness();
      runs_.fetch_add(1);
    }
    // Only the op (or a Cancel) ends this wait: Stop leaves it alone (see io/io_op.h).
    scheduler_->PostDeadlineThroughStop(self, kTaskDeadlineInfinite);
  }

  IoTestScheduler<Backend>* scheduler_;
  Task task_;
  IoOp op_;
  std::atomic<int> runs_{0};
  std::atomic<int> finals_{0};
  std::atomic<bool> finished_{true};
  std::atomic<std::int32_t> result_{0};
  std::atomic<std::uint32_t> readiness_{0};
};

// An IoOpHandler (io/io_op.h) that records what the sched-role hands it, and wakes `task`
// (when given) from inside OnIoFinished. It wakes with the scheduler's plain Wakeup, not
// through the sink, so the tests cover that path from inside the role too (the coroutine
// sockets use the sink).
template <typename Backend>
class RecordingHandler final : public IoOpHandler {
 public:
  explicit RecordingHandler(IoTestScheduler<Backend>* scheduler, Task* wake = nullptr)
      : scheduler_(scheduler), wake_(wake) {}
  void OnIoEvent(IoOp&, std::uint32_t readiness, IoReadySink&) override {
    readiness_ |= readiness;
    events_.fetch_add(1);
  }
  void OnIoFinished(IoOp& op, IoReadySink&) override {
    result_ = op.Result();
    finals_.fetch_add(1);
    if (wake_ != nullptr) scheduler_->Wakeup(wake_);
  }
  int events() const { return events_.load(); }
  int finals() const { return finals_.load(); }
  std::int32_t result() const { return result_.load(); }
  std::uint32_t readiness() const { return readiness_.load(); }

 private:
  IoTestScheduler<Backend>* scheduler_;
  Task* wake_;
  std::atomic<int> events_{0};
  std::atomic<int> finals_{0};
  std::atomic<std::int32_t> result_{0};
  std::atomic<std::uint32_t> readiness_{0};
};

// Stops `scheduler` with every waiter's op pending: Stop cancels them (CancelAll), so each
// must have ended with exactly one final completion, -ECANCELED, and the backend must hold
// nothing once Stop returned.
template <typename Backend>
void StopAndExpectEveryOpCancelled(IoTestScheduler<Backend>& scheduler,
                                   const std::vector<std::unique_ptr<IoWaiter<Backend>>>& waiters) {
  scheduler.Stop();
  for (const auto& waiter : waiters) {
    EXPECT_TRUE(waiter->finished());
    EXPECT_EQ(waiter->finals(), 1);
    EXPECT_EQ(waiter->result(), -ECANCELED);
  }
  EXPECT_EQ(scheduler.io().LiveCount(), 0);
}

// A scheduler per test (not started: the test picks its workers); once it is destroyed,
// the process's open fds are back to where they were (where they can be counted, see
// OpenFdCount).
template <typename Backend>
class IoSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fds_before_ = OpenFdCount();
    scheduler_ = std::make_unique<IoTestScheduler<Backend>>();
  }
  void TearDown() override {
    scheduler_.reset();
    EXPECT_EQ(OpenFdCount(), fds_before_) << "file descriptors leaked";
  }
  IoTestScheduler<Backend>& sched() { return *scheduler_; }

  std::unique_ptr<IoTestScheduler<Backend>> scheduler_;
  int fds_before_ = 0;
};

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_IO_WAITER_H_
