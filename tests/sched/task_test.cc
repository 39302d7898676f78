// Tests for //sched:task: size (one cache line), the callback forms and where they are
// stored (inline without allocation when small), callback replacement, deadline setters.
// The state machine is exercised through the scheduler in the other tests.
#include "sched/task.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>

namespace fairsched {
namespace {

static_assert(sizeof(Task) == 64, "a Task is one cache line");
static_assert(Task::kInlineCallbackSize == 24);

int g_plain_calls = 0;
void PlainFunction(Task*) { ++g_plain_calls; }

struct Stepper {
  int steps = 0;
  void Step(Task*) { ++steps; }
};

}  // namespace

// A friend of Task with the scheduler's template signature, used only to call Run().
template <>
class BasicTaskScheduler<void, void, void> {
 public:
  static void Run(Task* task) {
    task->BeginExecution();
    task->Run();
  }
};

namespace {
using Runner = BasicTaskScheduler<void, void, void>;

TEST(TaskTest, SizeIsOneCacheLine) { EXPECT_EQ(sizeof(Task), 64u); }

TEST(TaskTest, NewTaskHasNoCallbackAndRunsAsSoonAsPosted) {
  Task task;
  EXPECT_FALSE(task.HasCallback());
  EXPECT_EQ(task.Deadline(), kTaskDeadlineNow);
  EXPECT_EQ(task.next, nullptr);
  EXPECT_EQ(task.wait_index, kNotInWaitQueue);
}

TEST(TaskTest, FunctionPointerCallback) {
  Task task(&PlainFunction);
  g_plain_calls = 0;
  Runner::Run(&task);
  EXPECT_EQ(g_plain_calls, 1);
}

TEST(TaskTest, MemberFunctionCallbackIsInline) {
  static_assert(Task::kStoresInline<decltype([](Task*) {})>);
  Stepper stepper;
  Task task(&stepper, &Stepper::Step);
  Runner::Run(&task);
  Runner::Run(&task);
  EXPECT_EQ(stepper.steps, 2);
}

TEST(TaskTest, SmallLambdaIsStoredInlineWithoutAllocation) {
  int a = 0, b = 0, c = 0;
  auto lambda = [&a, &b, &c](Task*) { ++a, ++b, ++c; };  // three pointers: 24 bytes
  static_assert(Task::kStoresInline<decltype(lambda)>);
  Task task(lambda);
  Runner::Run(&task);
  EXPECT_EQ(a + b + c, 3);
}

TEST(TaskTest, NoArgumentLambda) {
  int calls = 0;
  Task task([&calls] { ++calls; });
  Runner::Run(&task);
  EXPECT_EQ(calls, 1);
}

TEST(TaskTest, LargeLambdaIsHeapAllocatedAndFreed) {
  std::array<unsigned char, 100> big{};
  big[7] = 5;
  int seen = 0;
  {
    auto lambda = [big, &seen](Task*) { seen = big[7]; };
    static_assert(!Task::kStoresInline<decltype(lambda)>);
    Task task(lambda);
    Runner::Run(&task);
  }  // ASan's leak check verifies the free
  EXPECT_EQ(seen, 5);
}

TEST(TaskTest, SetCallbackDestroysThePreviousCallable) {
  auto token = std::make_shared<int>(1);
  Task task([token](Task*) {});
  EXPECT_EQ(token.use_count(), 2);
  task.SetCallback([](Task*) {});
  EXPECT_EQ(token.use_count(), 1);
  task.SetCallback([token](Task*) {});
  EXPECT_EQ(token.use_count(), 2);
}

TEST(TaskTest, DestructorDestroysTheCallable) {
  auto token = std::make_shared<int>(1);
  {
    Task task([token](Task*) {});
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);
}

TEST(TaskTest, CallbackCanSwitchToNextStep) {
  Stepper stepper;
  int first = 0;
  Task task;
  task.SetCallback([&first, &stepper](Task* self) {
    ++first;
    self->SetCallback(&stepper, &Stepper::Step);  // captures are not touched after this
  });
  Runner::Run(&task);
  Runner::Run(&task);
  Runner::Run(&task);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(stepper.steps, 2);
}

TEST(TaskTest, DeadlineSetters) {
  Task task([](Task*) {});
  const auto before = TaskClock::now();
  task.SetDelay(std::chrono::milliseconds(50));
  EXPECT_GE(task.Deadline(), before + std::chrono::milliseconds(50));
  EXPECT_LE(task.Deadline(), TaskClock::now() + std::chrono::milliseconds(50));
  task.SetDelay(std::chrono::microseconds(250));  // sub-millisecond resolution
  EXPECT_LT(task.Deadline(), TaskClock::now() + std::chrono::milliseconds(1));
  const auto at = before + std::chrono::seconds(3);
  task.SetDeadline(at);
  EXPECT_EQ(task.Deadline(), at);
  task.SetWait();
  EXPECT_EQ(task.Deadline(), kTaskDeadlineInfinite);
  task.SetDelay(std::chrono::nanoseconds::max());  // saturates instead of overflowing
  EXPECT_EQ(task.Deadline(), kTaskDeadlineInfinite);
}

TEST(TaskTest, ExecutionResetsDeadlineToNow) {
  Task task([](Task*) {});
  task.SetDelay(std::chrono::seconds(5));
  Runner::Run(&task);
  EXPECT_EQ(task.Deadline(), kTaskDeadlineNow);
}

}  // namespace
}  // namespace fairsched
