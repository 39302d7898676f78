// coro::Lazy<T>: a lazy C++20 coroutine that produces a T (or void), and the resume loop
// that runs chains of them without growing the stack.
//
// Contract:
//   - Lazy: calling a coroutine that returns Lazy<T> allocates its frame (through
//     FrameAllocator) and runs nothing. The body starts when the task is co_awaited (or
//     handed to RunSync, or to coro::Spawn in coro/spawn.h).
//   - `co_await task` (on an rvalue Lazy) runs the task to completion and returns its value,
//     or rethrows the exception that escaped its body. A Lazy is awaited at most once; it
//     is move-only, and destroying one destroys its frame (a task never started simply
//     never runs). Awaiting an empty or already awaited Lazy aborts in debug builds.
//   - Stack depth: control passes between coroutines (awaiter -> awaited task at the start,
//     finished task -> its awaiter at the end) through a per-thread resume loop
//     (RunResumeLoop): the coroutine that suspends names the next one and returns to the
//     loop, which resumes it. The stack therefore does not grow with the depth of a chain
//     of nested awaits, nor with a long sequence of awaits that complete synchronously, in
//     every build. (gcc 12 does not turn symmetric transfer -- await_suspend returning a
//     handle -- into a tail call at -O0 or under ASan/TSan; relying on it overflows the
//     stack after some 10^5 transfers there.) Outside a resume loop (a Lazy awaited by a
//     foreign coroutine type) symmetric transfer is used instead.
//   - Destroying a suspended chain destroys it recursively (each frame destroys the task it
//     awaits): that recursion is as deep as the chain. Finished frames are destroyed at once.
//   - Not thread-safe by itself: one thread runs the chain at a time (the runtime moves it
//     between threads only while it is suspended).
#ifndef FAIRSCHED_CORO_LAZY_H_
#define FAIRSCHED_CORO_LAZY_H_

#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "coro/frame_allocator.h"
#include "sched/task.h"

namespace fairsched::coro {

template <typename T = void>
class Lazy;

namespace internal {

// The per-thread resume loop. `t_resume_loop_depth` > 0 while a loop runs on this thread;
// `t_next_resume` is the coroutine a suspending coroutine asks the loop to resume next.
inline thread_local int t_resume_loop_depth = 0;
inline thread_local std::coroutine_handle<> t_next_resume = nullptr;
// The runtime's coroutine (coro/internal/coroutine_state.h) whose task is running on this
// thread, or null. Kept here so RunSync can hide it: a task driven by RunSync is not that
// coroutine.
inline thread_local void* t_current_coroutine = nullptr;

// Resumes `handle`, then every coroutine it hands control to, until one suspends without
// naming a successor. A nested loop (started from inside a running coroutine) saves and
// restores nothing: the outer loop's slot is empty while its coroutine runs.
inline void RunResumeLoop(std::coroutine_handle<> handle) {
  ++t_resume_loop_depth;
  while (handle) {
    t_next_resume = nullptr;
    handle.resume();
    handle = t_next_resume;
  }
  t_next_resume = nullptr;
  --t_resume_loop_depth;
}

// Hands control from a suspending coroutine to `next`: through the loop when one runs on
// this thread (the return value then resumes nothing), else by symmetric transfer. Not
// inlined into coroutine bodies: a compiler that splits coroutines after optimising
// (clang) could otherwise reuse a thread-local address computed before a suspension, on
// the thread the coroutine ran on then.
[[gnu::noinline]] inline std::coroutine_handle<> TransferTo(std::coroutine_handle<> next) {
  if (t_resume_loop_depth > 0) {
    t_next_resume = next;
    return std::noop_coroutine();
  }
  return next;
}

// Every coroutine frame is allocated with kFrameHeader bytes in front of it, in the same
// block: room for the spawned-coroutine state (coro/internal/coroutine_state.h), so that
// spawning a Lazy allocates nothing more (one allocation per coroutine: state and root frame
// together, the state's scheduler task on the block's first cache line). A frame that is
// never spawned (a nested Lazy) leaves its header unused. The frame starts kFrameHeader
// bytes into a 64-byte aligned block, so it starts on a cache line as well.
inline constexpr std::size_t kFrameHeader = 128;

class PromiseBase {
 public:
  static void* operator new(std::size_t size) {
    return static_cast<char*>(FrameAllocator::Allocate(size + kFrameHeader)) + kFrameHeader;
  }
  static void operator delete(void* pointer, std::size_t size) {
    FrameAllocator::Deallocate(static_cast<char*>(pointer) - kFrameHeader, size + kFrameHeader);
  }

  std::suspend_always initial_suspend() noexcept { return {}; }

  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <typename Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> self) noexcept {
      std::coroutine_handle<> continuation = self.promise().continuation_;
      // A root task (nobody awaits it: RunSync or the runtime drives it) just stops; its
      // driver notices that it is done.
      if (!continuation) return std::noop_coroutine();
      return TransferTo(continuation);
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }

  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  void SetContinuation(std::coroutine_handle<> continuation) { continuation_ = continuation; }
  bool HasException() const { return exception_ != nullptr; }
  void RethrowIfFailed() {
    if (exception_) std::rethrow_exception(exception_);
  }

 private:
  std::coroutine_handle<> continuation_ = nullptr;
  std::exception_ptr exception_;
};

template <typename T>
class Promise final : public PromiseBase {
 public:
  Lazy<T> get_return_object() noexcept;
  template <typename U>
  requires std::is_convertible_v<U&&, T>
  void return_value(U&& value) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    value_.emplace(std::forward<U>(value));
  }
  T TakeResult() {
    RethrowIfFailed();
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <>
class Promise<void> final : public PromiseBase {
 public:
  Lazy<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void TakeResult() { RethrowIfFailed(); }
};

}  // namespace internal

template <typename T>
class [[nodiscard]] Lazy {
 public:
  using promise_type = internal::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Lazy() = default;
  Lazy(Lazy&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Lazy& operator=(Lazy&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~Lazy() { Reset(); }

  // True if the task holds a frame (not moved from, not default-constructed).
  bool IsValid() const { return static_cast<bool>(handle_); }
  // True once the body has finished (returned or thrown).
  bool IsDone() const { return handle_ && handle_.done(); }

  auto operator co_await() && noexcept {
    struct Awaiter {
      Handle handle;
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
        handle.promise().SetContinuation(awaiter);
        return internal::TransferTo(handle);
      }
      T await_resume() { return handle.promise().TakeResult(); }
    };
    FAIRSCHED_DCHECK(handle_ && !handle_.done(), "co_await of an empty or finished coro::Lazy");
    return Awaiter{handle_};
  }

  // For drivers (RunSync, the runtime): the frame, which the Lazy keeps owning.
  Handle handle() const { return handle_; }
  // For the runtime (Spawn): gives up the frame; the caller destroys it.
  Handle Release() { return std::exchange(handle_, nullptr); }
  // The finished task's value (or its exception, rethrown). Only after IsDone().
  T TakeResult() {
    FAIRSCHED_DCHECK(IsDone(), "TakeResult of a coro::Lazy that has not finished");
    return handle_.promise().TakeResult();
  }

 private:
  friend class internal::Promise<T>;
  explicit Lazy(Handle handle) : handle_(handle) {}
  void Reset() {
    if (handle_) handle_.destroy();
    handle_ = nullptr;
  }

  Handle handle_ = nullptr;
};

namespace internal {
template <typename T>
Lazy<T> Promise<T>::get_return_object() noexcept {
  return Lazy<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Lazy<void> Promise<void>::get_return_object() noexcept {
  return Lazy<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}
}  // namespace internal

// Runs `task` to completion on the calling thread and returns its value (or rethrows).
// For tasks that only await other Lazy coroutines (pure computation, tests): a task that waits for
// the runtime (Yield, SleepFor, WaitSignal, ...) must be spawned instead, and doing that
// here aborts in debug builds.
template <typename T>
T RunSync(Lazy<T> task) {
  FAIRSCHED_DCHECK(task.IsValid() && !task.IsDone(), "RunSync of an empty or finished task");
  void* const outer = std::exchange(internal::t_current_coroutine, nullptr);
  internal::RunResumeLoop(task.handle());
  internal::t_current_coroutine = outer;
  FAIRSCHED_CHECK(task.IsDone(),
                  "RunSync: the task suspended on something other than a Lazy (spawn it)");
  return task.TakeResult();
}

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_LAZY_H_
