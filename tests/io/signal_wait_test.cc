// SignalWait (io/signal_wait.h): a signal raised in the process reaches the coroutine that
// waits for it (and WaitBlocking), Cancel and the coroutine's own cancellation end a wait
// that no signal ends, the scheduler's Stop is not held up, and the previous handlers come
// back when the SignalWait goes. Linux: the POSIX handler. Windows (under Wine): the C
// runtime's handlers for raise(), and the console control handler, through a child process
// that has a console (ConsoleControlEventReachesTheWait).
#include "io/signal_wait.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#ifdef _WIN32
#include "io/socket_platform.h"  // <windows.h>
#endif

#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

coro::Lazy<IoResult<int>> WaitFor(SignalWait* signals, TaskDeadline deadline) {
  co_return co_await signals->Wait(deadline);
}

TEST(SignalWaitTest, RaisedSigtermReachesTheWaitingCoroutine) {
  TaskScheduler scheduler;
  scheduler.Start(2);
  SignalWait signals;
  coro::JoinHandle<IoResult<int>> waiter =
      coro::Spawn(scheduler, WaitFor(&signals, coro::DeadlineAfter(seconds(20))));
  // Most likely waiting by now; a signal that comes first is returned at once as well.
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_EQ(std::raise(SIGTERM), 0);  // the default action would end the test process
  IoResult<int> got = waiter.Get();
  ASSERT_TRUE(got.ok()) << ToString(got.error().code());
  EXPECT_EQ(got.value(), SIGTERM);
  EXPECT_EQ(signals.received(), SIGTERM);
  // Later waits return the same signal at once.
  EXPECT_EQ(coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite)).Get().value(),
            SIGTERM);
  scheduler.Stop();
}

TEST(SignalWaitTest, SigintReachesAPlainThread) {
  SignalWait signals;
  ASSERT_EQ(std::raise(SIGINT), 0);
  IoResult<int> got = signals.WaitBlocking(seconds(20));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got.value(), SIGINT);
}

TEST(SignalWaitTest, CancelEndsPendingAndLaterWaits) {
  TaskScheduler scheduler;
  scheduler.Start(2);
  SignalWait signals;
  coro::JoinHandle<IoResult<int>> waiter =
      coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite));
  std::this_thread::sleep_for(milliseconds(20));
  signals.Cancel();
  IoResult<int> got = waiter.Get();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), IoErrorCode::kCancelled);
  IoResult<int> later = coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite)).Get();
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().code(), IoErrorCode::kCancelled);
  EXPECT_EQ(signals.WaitBlocking(seconds(20)).error().code(), IoErrorCode::kCancelled);
  ASSERT_EQ(std::raise(SIGTERM), 0);  // still handled, but Cancel came first
  EXPECT_EQ(signals.received(), 0);
  scheduler.Stop();
}

TEST(SignalWaitTest, DeadlineAndCoroutineCancellationEndTheWait) {
  TaskScheduler scheduler;
  scheduler.Start(2);
  SignalWait signals;
  IoResult<int> timed_out =
      coro::Spawn(scheduler, WaitFor(&signals, coro::DeadlineAfter(milliseconds(30)))).Get();
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.error().code(), IoErrorCode::kTimeout);
  EXPECT_EQ(signals.WaitBlocking(milliseconds(30)).error().code(), IoErrorCode::kTimeout);

  coro::JoinHandle<IoResult<int>> waiter =
      coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite));
  std::this_thread::sleep_for(milliseconds(20));
  waiter.Cancel();
  IoResult<int> cancelled = waiter.Get();
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.error().code(), IoErrorCode::kCancelled);
  scheduler.Stop();
}

// A coroutine still waiting when the scheduler stops ends (kShutdown): Stop returns.
TEST(SignalWaitTest, AWaitingCoroutineDoesNotHoldUpStop) {
  TaskScheduler scheduler;
  scheduler.Start(1);
  SignalWait signals;
  coro::JoinHandle<IoResult<int>> waiter =
      coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite));
  std::this_thread::sleep_for(milliseconds(20));
  scheduler.Stop();
  IoResult<int> got = waiter.Get();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), IoErrorCode::kShutdown);
}

void CountSignal(int) {}

// The handler installed before comes back; a new SignalWait after it works again and does
// not see a signal that arrived for its predecessor.
TEST(SignalWaitTest, RestoresThePreviousHandlerAndCanBeMadeAgain) {
  const auto before = std::signal(SIGTERM, &CountSignal);
  ASSERT_NE(before, SIG_ERR);
  {
    SignalWait first;
    ASSERT_EQ(std::raise(SIGTERM), 0);
    ASSERT_TRUE(first.WaitBlocking(seconds(20)).ok());
    ASSERT_EQ(std::raise(SIGTERM), 0);  // a second one (POSIX: left in the pipe)
  }
  EXPECT_EQ(std::signal(SIGTERM, &CountSignal), &CountSignal);
  {
    SignalWait second;
    EXPECT_EQ(second.WaitBlocking(milliseconds(50)).error().code(), IoErrorCode::kTimeout);
    ASSERT_EQ(std::raise(SIGINT), 0);
    IoResult<int> got = second.WaitBlocking(seconds(20));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got.value(), SIGINT);
  }
  EXPECT_EQ(std::signal(SIGTERM, before), &CountSignal);
}

#ifdef _WIN32
// The console control path. The test process has no console under Wine (its standard
// handles are files), so GenerateConsoleCtrlEvent fails there (ERROR_INVALID_ACCESS) and
// AllocConsole cannot make one headless; a child started with CREATE_NO_WINDOW gets a
// headless console, in which GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0) reaches the
// handlers. Wine does not generate CTRL_BREAK_EVENT (ERROR_INVALID_HANDLE for any process
// group) nor the close, logoff and shutdown events, so only Ctrl-C is tested.
// The child runs ConsoleChild below: it writes "ok" to the file named by the environment
// variable only after every assertion held; the parent checks that and the exit code.
constexpr char kChildResultVariable[] = "FAIRSCHED_SIGNAL_WAIT_CHILD_RESULT";

Atomic<int> probe_events{0};
BOOL WINAPI CountProbeEvent(DWORD) {
  // Relaxed: a count read after the wait below; the handler thread publishes nothing else.
  probe_events.fetch_add(1, std::memory_order_relaxed);
  return TRUE;
}

// Sends Ctrl-C to this console and waits (bounded) until `seen` holds.
template <typename Seen>
bool CtrlCReaches(Seen seen) {
  if (!GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0)) {
    ADD_FAILURE() << "GenerateConsoleCtrlEvent: error " << GetLastError();
    return false;
  }
  const auto give_up = std::chrono::steady_clock::now() + seconds(20);
  while (!seen()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

TEST(SignalWaitConsoleChild, CtrlCReachesTheWaitAndTheHandlerGoesWithTheSignalWait) {
  const char* result_path = std::getenv(kChildResultVariable);
  if (result_path == nullptr) GTEST_SKIP() << "runs in ConsoleControlEventReachesTheWait's child";
  // A handler installed before the SignalWait: the system calls the last installed first,
  // so it sees an event only when no SignalWait handles it.
  ASSERT_TRUE(SetConsoleCtrlHandler(&CountProbeEvent, TRUE));
  ASSERT_TRUE(SetConsoleCtrlHandler(nullptr, FALSE));  // Ctrl-C enabled in this process
  {
    TaskScheduler scheduler;
    scheduler.Start(2);
    SignalWait signals;
    coro::JoinHandle<IoResult<int>> waiter =
        coro::Spawn(scheduler, WaitFor(&signals, coro::DeadlineAfter(seconds(20))));
    ASSERT_TRUE(CtrlCReaches([&] { return signals.received() != 0; }));
    IoResult<int> got = waiter.Get();
    ASSERT_TRUE(got.ok()) << ToString(got.error().code());
    EXPECT_EQ(got.value(), SIGINT);
    scheduler.Stop();
  }
  EXPECT_EQ(probe_events.load(std::memory_order_relaxed), 0) << "SignalWait did not handle it";
  // Without the SignalWait the next Ctrl-C goes on to the probe.
  ASSERT_TRUE(CtrlCReaches([] { return probe_events.load(std::memory_order_relaxed) > 0; }));
  ASSERT_FALSE(HasFailure());
  std::FILE* result = std::fopen(result_path, "w");
  ASSERT_NE(result, nullptr);
  std::fputs("ok", result);
  std::fclose(result);
}

TEST(SignalWaitTest, ConsoleControlEventReachesTheWait) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  ASSERT_NE(tmp, nullptr);
  const std::string result_path = std::string(tmp) + "\\signal_wait_child_result";
  std::remove(result_path.c_str());
  char self[MAX_PATH];
  ASSERT_GT(GetModuleFileNameA(nullptr, self, MAX_PATH), 0u);
  std::string command = std::string("\"") + self +
                        "\" --gtest_filter=SignalWaitConsoleChild.*";
  // The child is a second GoogleTest run: it must not write or delete this run's files
  // (the premature-exit marker, the XML report, the shard status) that Bazel reads.
  const char* const kHarnessVariables[] = {"TEST_PREMATURE_EXIT_FILE", "XML_OUTPUT_FILE",
                                           "GTEST_SHARD_STATUS_FILE"};
  std::string saved[3];
  for (int i = 0; i < 3; ++i) {
    const char* value = std::getenv(kHarnessVariables[i]);
    saved[i] = value == nullptr ? "" : value;
    SetEnvironmentVariableA(kHarnessVariables[i], nullptr);
  }
  ASSERT_TRUE(SetEnvironmentVariableA(kChildResultVariable, result_path.c_str()));
  STARTUPINFOA startup = {};
  startup.cb = sizeof(startup);
  startup.dwFlags = STARTF_USESTDHANDLES;  // the child's output goes to this test's log
  startup.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  startup.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
  startup.hStdError = GetStdHandle(STD_ERROR_HANDLE);
  PROCESS_INFORMATION child = {};
  const BOOL started = CreateProcessA(nullptr, command.data(), nullptr, nullptr, TRUE,
                                      CREATE_NO_WINDOW, nullptr, nullptr, &startup, &child);
  SetEnvironmentVariableA(kChildResultVariable, nullptr);
  for (int i = 0; i < 3; ++i) {
    if (!saved[i].empty()) SetEnvironmentVariableA(kHarnessVariables[i], saved[i].c_str());
  }
  ASSERT_TRUE(started) << "CreateProcess: error " << GetLastError();
  if (WaitForSingleObject(child.hProcess, 60000) != WAIT_OBJECT_0) {
    TerminateProcess(child.hProcess, 1);
    ADD_FAILURE() << "the child did not end within 60 s";
  }
  DWORD exit_code = 1;
  GetExitCodeProcess(child.hProcess, &exit_code);
  CloseHandle(child.hThread);
  CloseHandle(child.hProcess);
  EXPECT_EQ(exit_code, 0u);
  std::FILE* result = std::fopen(result_path.c_str(), "r");
  ASSERT_NE(result, nullptr) << "the child did not finish its test";
  char text[8] = {};
  std::fgets(text, sizeof(text), result);
  std::fclose(result);
  EXPECT_STREQ(text, "ok");
}
#endif  // _WIN32

}  // namespace
}  // namespace fairsched
