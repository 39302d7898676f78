// The typed test suite for the scheduler's IO backends (sched/io_backend.h) that runs on every
// platform: EpollBackend and IoUringBackend on Linux, IocpBackend as a Windows executable
// (`--config=mingw`, under Wine), and NoIoBackend for the tests that need no IO (the list is
// chosen in tests/io/io_test_util.h). Only loopback TCP sockets made through the socket seam
// (tests/io/loopback_pair.h); each backend waits for data the way it can (a one-byte Read,
// or a readability Poll on epoll). Linux-only cases (pipes, eventfds, Watch edges, seccomp,
// io_uring and epoll specifics) are in io_backend_linux_test.cc, IOCP-only ones in
// iocp_backend_test.cc. Where the process's fds can be counted (Linux), every test also
// checks that none leaked.
#include "sched/io_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "io/io_op.h"
#include "sched/task_scheduler.h"
#include "tests/io/io_test_util.h"
#include "tests/io/io_waiter.h"
#include "tests/io/loopback_pair.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::IoTestScheduler;
using testing::IoWaiter;
using testing::kDataResult;
using testing::kDataWaitConsumes;
using testing::LoopbackPair;
using testing::PrepareDataWait;
using testing::WaitUntilTrue;

template <typename Backend>
inline constexpr bool kDoesIo = !std::is_same_v<Backend, NoIoBackend>;

template <typename Backend>
class IoBackendTest : public testing::IoSchedulerTest<Backend> {
 protected:
  // A waiter whose op waits for data on `pair`, submitted.
  std::unique_ptr<IoWaiter<Backend>> WaitForData(LoopbackPair& pair, char* byte) {
    auto waiter = std::make_unique<IoWaiter<Backend>>(this->scheduler_.get());
    PrepareDataWait<Backend>(waiter->op(), pair.fd(), byte, waiter->task());
    waiter->Start();
    return waiter;
  }
};

TYPED_TEST_SUITE(IoBackendTest, testing::IoBackendsAndNoIo, testing::BackendNames);

std::uint64_t TotalRoleSleeps(const std::vector<WorkerStats>& stats) {
  std::uint64_t sleeps = 0;
  for (const WorkerStats& s : stats) sleeps += s.role_sleeps;
  return sleeps;
}

// The holder sleeps in the backend when idle, and a post wakes it (Notify through the
// backend's gate: the eventfd for epoll/io_uring, a posted packet for IOCP).
TYPED_TEST(IoBackendTest, PostsWakeASleepingRoleHolder) {
  auto& sched = this->sched();
  sched.Start(2);
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(milliseconds(2));  // everyone idle: the holder sleeps
    std::atomic<bool> ran{false};
    sched.PostOneShot([&] { ran = true; });
    ASSERT_TRUE(WaitUntilTrue([&] { return ran.load(); })) << "a post did not wake the holder";
  }
  sched.Stop();
  EXPECT_GT(TotalRoleSleeps(sched.Stats()), 0u);
}

// The holder waits in the backend with the nearest deadline as its timeout: timers fire,
// never early, also while a pending operation on an idle socket keeps the backend busy.
TYPED_TEST(IoBackendTest, TimersFireWhileTheHolderWaitsInTheBackend) {
  auto& sched = this->sched();
  sched.Start(2);
  std::unique_ptr<LoopbackPair> idle;
  std::unique_ptr<IoWaiter<TypeParam>> waiter;
  char byte = 0;
  if constexpr (kDoesIo<TypeParam>) {
    idle = std::make_unique<LoopbackPair>(sched.io());
    waiter = this->WaitForData(*idle, &byte);
  }
  for (int i = 0; i < 5; ++i) {
    std::atomic<bool> ran{false};
    std::atomic<bool> expired{false};
    Task timer([&](Task* self) {
      expired = self->IsExpired();
      ran = true;
    });
    const TaskDeadline due = TaskClock::now() + milliseconds(20);
    sched.PostDeadline(&timer, due);
    ASSERT_TRUE(WaitUntilTrue([&] { return ran.load(); })) << "a timer did not fire";
    EXPECT_GE(TaskClock::now(), due);
    EXPECT_TRUE(expired.load());
  }
  if constexpr (kDoesIo<TypeParam>) {
    EXPECT_EQ(waiter->finals(), 0);  // the idle socket never completed its op
    sched.Cancel(waiter->task());
    ASSERT_TRUE(WaitUntilTrue([&] { return waiter->finished(); }));
    EXPECT_EQ(waiter->result(), -ECANCELED);
  }
  sched.Stop();
}

// Data on one of several sockets completes exactly the op waiting on it, exactly once;
// the others stay pending until cancelled.
TYPED_TEST(IoBackendTest, DataCompletesTheRightOpExactlyOnce) {
  if constexpr (kDoesIo<TypeParam>) {
    auto& sched = this->sched();
    sched.Start(2);
    std::vector<std::unique_ptr<LoopbackPair>> pairs;
    std::vector<std::unique_ptr<IoWaiter<TypeParam>>> waiters;
    char bytes[3] = {};
    for (char& byte : bytes) {
      pairs.push_back(std::make_unique<LoopbackPair>(sched.io()));
      waiters.push_back(this->WaitForData(*pairs.back(), &byte));
    }
    ASSERT_TRUE(WaitUntilTrue([&] { return sched.io().LiveCount() == 3; }));
    std::this_thread::sleep_for(milliseconds(20));  // every op waits in the kernel now
    pairs[1]->SendByte('d');
    ASSERT_TRUE(WaitUntilTrue([&] { return waiters[1]->finished(); }));
    std::this_thread::sleep_for(milliseconds(30));  // room for a wrong second completion
    EXPECT_EQ(waiters[0]->finals(), 0);
    EXPECT_EQ(waiters[1]->finals(), 1);
    EXPECT_EQ(waiters[2]->finals(), 0);
    EXPECT_EQ(waiters[1]->result(), kDataResult<TypeParam>);
    if constexpr (kDataWaitConsumes<TypeParam>) {
      EXPECT_EQ(bytes[1], 'd');
    }
    for (int i : {0, 2}) sched.Cancel(waiters[i]->task());
    for (auto& waiter : waiters) {
      ASSERT_TRUE(WaitUntilTrue([&] { return waiter->finished(); }));
      EXPECT_EQ(waiter->finals(), 1);
    }
    EXPECT_EQ(waiters[0]->result(), -ECANCELED);
    EXPECT_EQ(waiters[2]->result(), -ECANCELED);
    EXPECT_EQ(sched.io().LiveCount(), 0);
    sched.Stop();
  } else {
    GTEST_SKIP() << "NoIoBackend does no IO";
  }
}

// Under load the role holder never sleeps (the ready queue is never empty), so IO is seen
// only because every role take polls the backend: the op's task must run within a bounded
// number of task executions, not when the scheduler goes idle (it never does here).
TYPED_TEST(IoBackendTest, IoIsPolledUnderLoad) {
  if constexpr (kDoesIo<TypeParam>) {
    auto& sched = this->sched();
    sched.Start(2);
    std::atomic<bool> stop_load{false};
    std::atomic<std::int64_t> executions{0};
    constexpr int kLoadTasks = 8;
    std::vector<std::unique_ptr<Task>> load;
    for (int i = 0; i < kLoadTasks; ++i) {
      load.push_back(std::make_unique<Task>([&](Task* self) {
        executions.fetch_add(1);
        const auto until = TaskClock::now() + std::chrono::microseconds(20);
        while (TaskClock::now() < until) {
        }
        if (!stop_load.load()) sched.Post(self);
      }));
      sched.Post(load.back().get());
    }
    LoopbackPair pair(sched.io());
    const int rounds = static_cast<int>(testing::StressIterations(20, 2));
    std::int64_t worst = 0;
    for (int round = 0; round < rounds; ++round) {
      char byte = 0;
      std::unique_ptr<IoWaiter<TypeParam>> waiter = this->WaitForData(pair, &byte);
      ASSERT_TRUE(WaitUntilTrue([&] { return sched.io().LiveCount() == 1; }));
      std::this_thread::sleep_for(milliseconds(1));  // let the role issue it
      const std::int64_t before = executions.load();
      pair.SendByte('l');
      ASSERT_TRUE(WaitUntilTrue([&] { return waiter->finished(); }, seconds(10)))
          << "IO starved under load";
      worst = std::max(worst, executions.load() - before);
      EXPECT_EQ(waiter->result(), kDataResult<TypeParam>);
      if constexpr (!kDataWaitConsumes<TypeParam>) {
        ASSERT_TRUE(pair.ReceiveByte(&byte));
      }
    }
    // Between two role takes a worker executes at most execute_batch_size (64) tasks; the
    // epoll backend adds its busy-poll interval (50 us), io_uring the time until the thread
    // that submitted the op gets the CPU to post the completion (its task work), which on
    // an overloaded machine is the larger term (measured worst: ~150 epoll, ~800 io_uring
    // at load 11 on 2 cores). Without a poll per role take this never finishes.
    EXPECT_LT(worst, 5000) << "IO seen only after " << worst << " task executions";
    this->RecordProperty("worst_task_executions_before_io", static_cast<int>(worst));
    stop_load = true;
    sched.Stop();
  } else {
    GTEST_SKIP() << "NoIoBackend does no IO";
  }
}

// Cancelling the waiting task releases its op: the final completion comes with -ECANCELED,
// the backend holds nothing, no byte is taken, and a new op on the socket sees the data.
TYPED_TEST(IoBackendTest, CancelReleasesTheOperation) {
  if constexpr (kDoesIo<TypeParam>) {
    auto& sched = this->sched();
    sched.Start(2);
    LoopbackPair pair(sched.io());
    char byte = 0;
    {
      std::unique_ptr<IoWaiter<TypeParam>> waiter = this->WaitForData(pair, &byte);
      ASSERT_TRUE(WaitUntilTrue([&] { return sched.io().LiveCount() == 1; }));
      std::this_thread::sleep_for(milliseconds(20));  // pending in the kernel by now
      sched.Cancel(waiter->task());
      ASSERT_TRUE(WaitUntilTrue([&] { return waiter->finished(); }));
      EXPECT_EQ(waiter->result(), -ECANCELED);
      EXPECT_EQ(waiter->finals(), 1);
      EXPECT_EQ(sched.io().LiveCount(), 0);
      EXPECT_FALSE(waiter->op().IsSubmitted());
    }
    std::unique_ptr<IoWaiter<TypeParam>> again = this->WaitForData(pair, &byte);
    pair.SendByte('a');
    ASSERT_TRUE(WaitUntilTrue([&] { return again->finished(); }));
    EXPECT_EQ(again->result(), kDataResult<TypeParam>);
    if constexpr (kDataWaitConsumes<TypeParam>) {
      EXPECT_EQ(byte, 'a');
    }
    sched.Stop();
  } else {
    GTEST_SKIP() << "NoIoBackend does no IO";
  }
}

// An op with an IoOpHandler instead of a task: the sched-role calls OnIoFinished exactly
// once, with the result, in place of the final Signal; a task the handler wakes from there
// runs. One worker, so that worker is the role holder asleep in the backend when the data
// comes: a wake from inside the handler goes straight to the ready queue, and must be
// published before the holder sleeps again (else the task would never run).
TYPED_TEST(IoBackendTest, AHandlerReplacesTheTaskAndMayWakeOthers) {
  if constexpr (kDoesIo<TypeParam>) {
    auto& sched = this->sched();
    sched.Start(1);
    std::atomic<int> woken_runs{0};
    Task woken;
    woken.SetCallback([&](Task*) { woken_runs.fetch_add(1); });
    sched.PostDeadline(&woken, kTaskDeadlineInfinite);
    testing::RecordingHandler<TypeParam> handler(&sched, &woken);
    LoopbackPair pair(sched.io());
    char byte = 0;
    IoOp op;
    for (int round = 0; round < 3; ++round) {
      if (round > 0) sched.PostDeadline(&woken, kTaskDeadlineInfinite);
      PrepareDataWait<TypeParam>(op, pair.fd(), &byte, &handler);
      sched.io().Submit(&op);
      ASSERT_TRUE(WaitUntilTrue([&] { return sched.io().LiveCount() == 1; }));
      std::this_thread::sleep_for(milliseconds(20));  // the holder sleeps in the backend
      EXPECT_EQ(handler.finals(), round);
      pair.SendByte(static_cast<char>('a' + round));
      ASSERT_TRUE(WaitUntilTrue([&] { return woken_runs.load() == round + 1; }))
          << "the task the handler woke did not run (round " << round << ")";
      EXPECT_EQ(handler.finals(), round + 1);
      EXPECT_EQ(handler.result(), kDataResult<TypeParam>);
      if constexpr (kDataWaitConsumes<TypeParam>) {
        EXPECT_EQ(byte, 'a' + round);
      } else {
        char taken = 0;
        ASSERT_TRUE(pair.ReceiveByte(&taken));  // the Poll left the byte in the socket
        EXPECT_EQ(taken, 'a' + round);
      }
    }
    std::this_thread::sleep_for(milliseconds(30));  // room for a wrong second completion
    EXPECT_EQ(handler.finals(), 3);
    EXPECT_EQ(handler.events(), 0);
    EXPECT_EQ(woken_runs.load(), 3);
    EXPECT_EQ(sched.io().LiveCount(), 0);
    sched.Stop();
  } else {
    GTEST_SKIP() << "NoIoBackend does no IO";
  }
}

// Stop with ops pending: Stop cancels them (CancelAll), each waiting task gets its final
// completion, and Stop returns.
TYPED_TEST(IoBackendTest, StopWithOperationsPending) {
  if constexpr (kDoesIo<TypeParam>) {
    auto& sched = this->sched();
    sched.Start(2);
    std::vector<std::unique_ptr<LoopbackPair>> pairs;
    std::vector<std::unique_ptr<IoWaiter<TypeParam>>> waiters;
    char bytes[4] = {};
    for (char& byte : bytes) {
      pairs.push_back(std::make_unique<LoopbackPair>(sched.io()));
      waiters.push_back(this->WaitForData(*pairs.back(), &byte));
    }
    ASSERT_TRUE(WaitUntilTrue([&] { return sched.io().LiveCount() == 4; }));
    std::this_thread::sleep_for(milliseconds(20));
    testing::StopAndExpectEveryOpCancelled(sched, waiters);
  } else {
    GTEST_SKIP() << "NoIoBackend does no IO";
  }
}

// Cancel racing with the byte that completes the op, from a thread that is not a worker
// (IOCP: CancelIoEx against the arriving data; io_uring: ASYNC_CANCEL; epoll: the DEL).
// Every op ends with exactly one final completion, its data result or -ECANCELED, and no
// byte is lost: each round's byte was taken by the op or is still in the socket.
TYPED_TEST(IoBackendTest, CancelRacingWithCompletionEndsOnceAndLosesNoByte) {
  if constexpr (kDoesIo<TypeParam>) {
    auto& sched = this->sched();
    sched.Start(2);
    LoopbackPair pair(sched.io());
    const int rounds = static_cast<int>(testing::StressIterations(200, 5));
    int cancelled = 0;
    int completed = 0;
    for (int round = 0; round < rounds; ++round) {
      char byte = 0;
      std::unique_ptr<IoWaiter<TypeParam>> waiter = this->WaitForData(pair, &byte);
      std::thread sender([&] { pair.SendByte('z'); });
      if (round % 3 != 0) std::this_thread::yield();
      sched.io().Cancel(&waiter->op());
      sender.join();
      ASSERT_TRUE(WaitUntilTrue([&] { return waiter->finished(); }, seconds(5)))
          << "round " << round << " live " << sched.io().LiveCount();
      EXPECT_EQ(waiter->finals(), 1);
      const bool took_the_byte = kDataWaitConsumes<TypeParam> && waiter->result() == 1;
      if (waiter->result() == -ECANCELED) {
        ++cancelled;
      } else {
        EXPECT_EQ(waiter->result(), kDataResult<TypeParam>) << "round " << round;
        ++completed;
      }
      if (!took_the_byte) {
        ASSERT_TRUE(pair.ReceiveByte(&byte)) << "round " << round << ": the byte was lost";
      }
      EXPECT_EQ(byte, 'z') << "round " << round;
      EXPECT_TRUE(pair.IsDrained()) << "round " << round;
    }
    EXPECT_EQ(cancelled + completed, rounds);
    EXPECT_EQ(sched.io().LiveCount(), 0);
    this->RecordProperty("cancelled_first", cancelled);
    sched.Stop();
  } else {
    GTEST_SKIP() << "NoIoBackend does no IO";
  }
}

// Submissions from every worker at once: chains of data waits, each resubmitted from inside
// its task's final completion (so from whichever worker ran it), over several sockets.
// Every chain must complete every round exactly once, and the backend must end empty.
template <typename Backend>
class DataChain {
 public:
  DataChain(IoTestScheduler<Backend>* scheduler, int rounds)
      : scheduler_(scheduler), rounds_(rounds), pair_(scheduler->io()),
        task_(this, &DataChain::Run) {}
  void Start() {
    pair_.SendByte('c');
    Submit(&task_);
  }
  int completed() const { return completed_.load(); }
  bool failed() const { return failed_.load(); }

 private:
  void Submit(Task* self) {
    PrepareDataWait<Backend>(op_, pair_.fd(), &byte_, self);
    scheduler_->PostWait(self);
    scheduler_->io().Submit(&op_);
  }
  void Run(Task* self) {
    if (!self->ReceiveSignal()) {  // only final completions wake this task
      failed_ = true;
      return;
    }
    if (op_.Result() != kDataResult<Backend>) failed_ = true;
    if (!kDataWaitConsumes<Backend> && !pair_.ReceiveByte(&byte_)) failed_ = true;
    if (completed_.fetch_add(1) + 1 == rounds_) return;
    pair_.SendByte('c');
    Submit(self);
  }

  IoTestScheduler<Backend>* scheduler_;
  const int rounds_;
  testing::LoopbackPair pair_;
  Task task_;
  IoOp op_;
  char byte_ = 0;
  std::atomic<int> completed_{0};
  std::atomic<bool> failed_{false};
};

TYPED_TEST(IoBackendTest, SubmissionsFromEveryWorker) {
  if constexpr (kDoesIo<TypeParam>) {
    auto& sched = this->sched();
    sched.Start(2);
    const int rounds = static_cast<int>(testing::StressIterations(200, 5));
    std::vector<std::unique_ptr<DataChain<TypeParam>>> chains;
    for (int i = 0; i < 16; ++i) {
      chains.push_back(std::make_unique<DataChain<TypeParam>>(&sched, rounds));
    }
    for (auto& chain : chains) chain->Start();
    ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
    for (auto& chain : chains) {
      EXPECT_EQ(chain->completed(), rounds);
      EXPECT_FALSE(chain->failed());
    }
    EXPECT_EQ(sched.io().LiveCount(), 0);
    sched.Stop();
  } else {
    GTEST_SKIP() << "NoIoBackend does no IO";
  }
}

}  // namespace
}  // namespace fairsched
