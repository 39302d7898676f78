// Coroutine combinators: run several Lazy coroutines at once and wait for all of them (WhenAll) or
// the first (WhenAny), bound a Lazy by a deadline (WithTimeout), wait for a JoinHandle with
// a deadline (JoinUntil), and cancel one operation without cancelling its caller
// (CancelSource + WithCancel).
//
// Contract (all of them; inside a spawned coroutine, `co_await Combinator(...)`):
//   - Each task given to a combinator runs as a *child coroutine* of the caller, spawned on
//     the caller's scheduler (SpawnHere). So children run in parallel with each other and
//     with the caller's other work, cancelling the caller cancels them (same reason), and
//     the caller's cancellation deadline bounds them.
//   - No child outlives the call: whatever ends the combinator (results, an exception, a
//     timeout, the caller's cancellation, Stop), it returns only after every child it
//     started has finished and its Lazy frame (locals and parameters) is destroyed.
//     Children that lost (WhenAny), that were still running when one failed (WhenAll) or
//     when the deadline passed (WithTimeout) are cancelled (CancelReason::kRequested, or
//     kDeadline for WithTimeout) and awaited; what they then return or throw is dropped.
//     Cancellation is cooperative: a child that never waits and never polls IsCancelled()
//     runs to its end, and the combinator waits for it.
//   - The caller waits uncancellably (like a join): its cancellation reaches the children,
//     which end, and then the combinator returns what they produced (values, or the first
//     exception), exactly as if they had ended on their own.
//   - WhenAll: every result, in argument order (a tuple, or a vector for a vector of tasks;
//     an empty vector returns at once).
//     Fail fast: the first child to throw (in time) makes the others be cancelled; once all
//     have finished, that first exception is rethrown and the others are dropped. (Asio's
//     `operator&&`, folly's collectAll with cancellation.)
//   - WhenAny: the first child to finish, value or exception, wins: the others are cancelled
//     and awaited, then its value is returned or its exception rethrown. Children of one
//     type (a vector, or several arguments of the same Lazy<T>) give WhenAnyResult<T>
//     {index, value}; arguments of different types give a std::variant whose index() is
//     the winner's position. The first to
//     *finish* wins, not the first to succeed (folly's collectAny; Asio's `operator||`
//     would wait for a success). An empty vector throws std::invalid_argument.
//   - WithTimeout(task, deadline): the task's value (TimeoutOr<T> holding it) or its
//     exception if it finished before `deadline`; else it is cancelled with reason
//     kDeadline at the deadline (it is spawned with SpawnOptions::deadline, so its waits,
//     IO operations and children see the deadline as the runtime reports it everywhere),
//     awaited, and the result is TimeoutOr<T>::timed_out(), whatever it then returned or
//     threw (dropped). Judged by the time it finished: a deadline already passed at the
//     call times out (the task still runs, cancelled from its start).
//   - JoinUntil(handle, deadline): the coroutine's result (it consumes the handle) or
//     timed_out(); on a timeout the coroutine is NOT cancelled and the handle stays valid
//     (the caller may Cancel it, join it again, or detach it). On a plain thread use
//     handle.WaitUntil(deadline) / WaitFor(timeout), then Get().
//   - WithCancel(task, token): runs the task as a child; CancelSource::Cancel() (any thread)
//     cancels that child only (reason kRequested), not the caller. The task sees an
//     ordinary cancellation (its cancellable waits return kCancelled, io/ operations fail
//     with IoErrorCode::kCancelled and release their IO operation) and WithCancel returns
//     whatever it then returns (or rethrows). A source cancels every WithCancel running
//     under its tokens and every later one at once (the task is still run, already
//     cancelled, so it reports its cancellation its own way).
//   - Cost: one spawn (two FrameAllocator blocks) per task, one scheduler trip for the
//     caller to wake; no thread ever blocks.
//   - Misuse (debug builds abort with a message): awaiting a combinator outside a spawned
//     coroutine, an empty or started Lazy, an empty JoinHandle, TimeoutOr::value() of a
//     timeout (checked in every build).
#ifndef FAIRSCHED_CORO_COMBINATORS_H_
#define FAIRSCHED_CORO_COMBINATORS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "coro/cancel.h"
#include "coro/runtime_types.h"
#include "coro/spawn.h"
#include "coro/lazy.h"
#include "coro/wait.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro {

// The value a Lazy<T> produces, with void as std::monostate (so results fit in tuples,
// variants and optionals).
template <typename T>
using ValueOf = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

// WithTimeout / JoinUntil: the task's value, or "timed out". Move-only if T is.
template <typename T>
class [[nodiscard]] TimeoutOr {
 public:
  using Value = ValueOf<T>;
  static TimeoutOr TimedOut() { return TimeoutOr(); }
  explicit TimeoutOr(Value value) : value_(std::move(value)) {}

  bool timed_out() const { return !value_.has_value(); }
  explicit operator bool() const { return value_.has_value(); }
  // The value; aborts (every build) on a timeout.
  Value& value() & { return *Checked(); }
  Value&& value() && { return std::move(*Checked()); }
  Value& operator*() & { return value(); }
  Value* operator->() { return Checked(); }

 private:
  TimeoutOr() = default;
  Value* Checked() {
    FAIRSCHED_CHECK(value_.has_value(), "TimeoutOr::value() of a timed-out result");
    return &*value_;
  }
  std::optional<Value> value_;
};

// WhenAny over children of one type (a vector, or same-typed arguments): the winner's
// position and value, so `auto [index, value] = co_await WhenAny(a(), b());` reads it.
template <typename T>
struct WhenAnyResult {
  std::size_t index;
  ValueOf<T> value;
};

namespace internal {

inline constexpr std::size_t kNoChild = std::numeric_limits<std::size_t>::max();

// The children of one combinator call, in the caller's frame (it outlives them: the caller
// waits until every child reported). Each child runs RunChild, which stores its value in
// the caller's slot, destroys its task, and reports to the group last. The caller waits
// through the runtime's wait primitive; a child wakes it only when what it waits for holds,
// so a group of n children costs the caller one wakeup, not n.
class ChildGroup {
 public:
  enum class Until : std::uint8_t { kAllDone, kFirstDone, kFirstFailure };

  ChildGroup() = default;
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;

  void Reserve(std::size_t n) { children_.reserve(n); }
  // Spawns `task` as a child of the running coroutine; its value goes to `*slot`.
  // noexcept: the children started before point into the caller's frame, so a failed
  // spawn (out of memory) must not unwind it; it terminates instead.
  template <typename T>
  void Start(Lazy<T> task, std::optional<ValueOf<T>>* slot, SpawnOptions options = {}) noexcept {
    FAIRSCHED_DCHECK(task.IsValid() && !task.IsDone(), "a combinator got an empty or started task");
    const std::size_t index = children_.size();
    {
      MutexLock lock(mu_);
      ++running_;
    }
    children_.push_back(SpawnHere(RunChild(std::move(task), slot, this, index), options));
  }

  // co_await: waits until `until` holds. Uncancellably: the children are cancelled with
  // the caller, and their ends bring the wakeup. A child wakes the caller only once
  // `until` holds, so one wakeup ends the wait.
  Lazy<void> Wait(Until until) {
    {
      MutexLock lock(mu_);
      if (Holds(until)) co_return;
      until_ = until;
      waker_ = PrepareWait(WaitMode::kUncancellable);
    }
    co_await WaitWoken();
  }

  // Cancels every child except `keep` (kNoChild: all). A finished one ignores it.
  void CancelOthers(std::size_t keep = kNoChild) {
    for (std::size_t i = 0; i < children_.size(); ++i) {
      if (i != keep) children_[i].Cancel();
    }
  }
  // Cancels and awaits every child: after this, none runs.
  Lazy<void> CancelAndDrain(std::size_t keep = kNoChild) {
    CancelOthers(keep);
    co_await Wait(Until::kAllDone);
  }

  CoroutineRef Child(std::size_t index) const { return children_[index].Ref(); }

  // After a Wait that holds (the lock orders the children's reports before the reads).
  std::size_t first_done() {
    MutexLock lock(mu_);
    return first_done_;
  }
  // The first child (in time) that threw, or null.
  std::exception_ptr first_error() {
    MutexLock lock(mu_);
    return first_error_;
  }
  // When the last child reported (TaskClock).
  TaskDeadline last_done_at() {
    MutexLock lock(mu_);
    return last_done_at_;
  }
  bool first_done_failed() {
    MutexLock lock(mu_);
    return first_done_ != kNoChild && first_done_ == first_failed_;
  }

 private:
  template <typename T>
  static Lazy<void> RunChild(Lazy<T> task, std::optional<ValueOf<T>>* slot, ChildGroup* group,
                             std::size_t index) {
    std::exception_ptr error;
    {
      Lazy<T> body = std::move(task);
      try {
        if constexpr (std::is_void_v<T>) {
          co_await std::move(body);
          slot->emplace();
        } else {
          slot->emplace(co_await std::move(body));
        }
      } catch (...) {
        error = std::current_exception();
      }
    }  // the task's frame (its parameters) is destroyed before the group hears of it
    group->ChildDone(index, std::move(error));
  }

  // The child's last touch of the group (and of the caller's frame).
  void ChildDone(std::size_t index, std::exception_ptr error) {
    Waker wake;
    {
      MutexLock lock(mu_);
      --running_;
      last_done_at_ = TaskClock::now();
      if (first_done_ == kNoChild) first_done_ = index;
      if (error != nullptr && first_failed_ == kNoChild) {
        first_failed_ = index;
        first_error_ = std::move(error);
      }
      if (waker_ && Holds(until_)) wake = std::move(waker_);
    }
    // After the unlock: the caller may run (and free the group) as soon as it is woken.
    if (wake) wake.Wakeup();
  }

  // mu_ held.
  bool Holds(Until until) const {
    switch (until) {
      case Until::kAllDone:
        return running_ == 0;
      case Until::kFirstDone:
        return first_done_ != kNoChild;
      case Until::kFirstFailure:
        return running_ == 0 || first_failed_ != kNoChild;
    }
    return true;
  }

  std::vector<JoinHandle<void>> children_;  // the caller's coroutine only
  fairsched::Mutex mu_;
  std::size_t running_ = 0;  // guarded by mu_, as are the fields below
  std::size_t first_done_ = kNoChild;
  std::size_t first_failed_ = kNoChild;
  std::exception_ptr first_error_;
  TaskDeadline last_done_at_{};
  Until until_ = Until::kAllDone;
  Waker waker_;  // the caller's open wait, if it waits
};

// Starts the variadic combinators' tasks, the i-th with its value going to slot i.
template <typename Slots, typename... Ts, std::size_t... Is>
void StartAll(ChildGroup& group, Slots& slots, std::index_sequence<Is...>, Lazy<Ts>... tasks) {
  (group.Start(std::move(tasks), &std::get<Is>(slots)), ...);
}

// Starts a vector of tasks, the i-th with its value going to slots[i].
template <typename T>
void StartEach(ChildGroup& group, std::vector<std::optional<ValueOf<T>>>& slots,
               std::vector<Lazy<T>> tasks) {
  slots.resize(tasks.size());
  group.Reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) group.Start(std::move(tasks[i]), &slots[i]);
}

// WhenAll: all finished, or the first failure cancels the rest; awaits them; rethrows it.
inline Lazy<void> SettleAll(ChildGroup& group) {
  co_await group.Wait(ChildGroup::Until::kFirstFailure);
  if (std::exception_ptr error = group.first_error()) {
    co_await group.CancelAndDrain();
    std::rethrow_exception(error);
  }
}

// WhenAny: the first to finish wins; the rest are cancelled and awaited. Returns the
// winner's index, or rethrows its exception.
inline Lazy<std::size_t> SettleAny(ChildGroup& group) {
  co_await group.Wait(ChildGroup::Until::kFirstDone);
  const std::size_t winner = group.first_done();
  co_await group.CancelAndDrain(winner);
  if (group.first_done_failed()) std::rethrow_exception(group.first_error());
  co_return winner;
}

// True when every type in Ts is the first one: the variadic WhenAny then returns
// WhenAnyResult instead of a variant of equal alternatives.
template <typename T, typename... Ts>
inline constexpr bool kAllSame = (std::is_same_v<T, Ts> && ...);

// The variadic WhenAny's result type (see the contract above).
template <typename T, typename... Ts>
using WhenAnyOf = std::conditional_t<kAllSame<T, Ts...>, WhenAnyResult<T>,
                                     std::variant<ValueOf<T>, ValueOf<Ts>...>>;

// The variadic WhenAny's result: the winner's value at the winner's index, as a variant
// alternative or, for one type (kOneType), as WhenAnyResult.
template <bool kOneType, typename Result, typename Slots, std::size_t... Is>
Result TakeWinner(Slots& slots, std::size_t winner, std::index_sequence<Is...>) {
  std::optional<Result> result;
  auto take = [&](auto index, auto& slot) {
    if constexpr (kOneType) {
      result.emplace(Result{winner, std::move(*slot)});
    } else {
      result.emplace(std::in_place_index<decltype(index)::value>, std::move(*slot));
    }
  };
  ((winner == Is ? take(std::integral_constant<std::size_t, Is>(), std::get<Is>(slots))
                 : static_cast<void>(0)),
   ...);
  return std::move(*result);
}

}  // namespace internal

// co_await WhenAll(a(), b(), ...) -> std::tuple<ValueOf<A>, ValueOf<B>, ...>.
template <typename... Ts>
Lazy<std::tuple<ValueOf<Ts>...>> WhenAll(Lazy<Ts>... tasks) {
  std::tuple<std::optional<ValueOf<Ts>>...> slots;
  internal::ChildGroup group;
  internal::StartAll(group, slots, std::index_sequence_for<Ts...>(), std::move(tasks)...);
  co_await internal::SettleAll(group);
  co_return std::apply(
      [](auto&... slot) { return std::tuple<ValueOf<Ts>...>(std::move(*slot)...); }, slots);
}

// co_await WhenAll(std::move(tasks)) -> std::vector<T> in the tasks' order (void: nothing).
template <typename T>
Lazy<std::conditional_t<std::is_void_v<T>, void, std::vector<ValueOf<T>>>> WhenAll(
    std::vector<Lazy<T>> tasks) {
  std::vector<std::optional<ValueOf<T>>> slots;
  internal::ChildGroup group;
  internal::StartEach(group, slots, std::move(tasks));
  co_await internal::SettleAll(group);
  if constexpr (!std::is_void_v<T>) {
    std::vector<T> values;
    values.reserve(slots.size());
    for (auto& slot : slots) values.push_back(std::move(*slot));
    co_return values;
  }
}

// co_await WhenAny(a(), b(), ...) -> std::variant<ValueOf<A>, ValueOf<B>, ...> whose
// index() is the winner's position; when every task is a Lazy<T> of the same T,
// WhenAnyResult<T>{index, value} instead (no variant of equal alternatives to read by index).
template <typename T, typename... Ts>
Lazy<internal::WhenAnyOf<T, Ts...>> WhenAny(Lazy<T> first, Lazy<Ts>... rest) {
  std::tuple<std::optional<ValueOf<T>>, std::optional<ValueOf<Ts>>...> slots;
  internal::ChildGroup group;
  internal::StartAll(group, slots, std::index_sequence_for<T, Ts...>(), std::move(first),
                     std::move(rest)...);
  const std::size_t winner = co_await internal::SettleAny(group);
  co_return internal::TakeWinner<internal::kAllSame<T, Ts...>, internal::WhenAnyOf<T, Ts...>>(
      slots, winner, std::index_sequence_for<T, Ts...>());
}

// co_await WhenAny(std::move(tasks)) -> WhenAnyResult<T>{index, value}.
template <typename T>
Lazy<WhenAnyResult<T>> WhenAny(std::vector<Lazy<T>> tasks) {
  if (tasks.empty()) throw std::invalid_argument("coro::WhenAny of an empty vector of tasks");
  std::vector<std::optional<ValueOf<T>>> slots;
  internal::ChildGroup group;
  internal::StartEach(group, slots, std::move(tasks));
  const std::size_t winner = co_await internal::SettleAny(group);
  co_return WhenAnyResult<T>{winner, std::move(*slots[winner])};
}

// co_await WithTimeout(task, deadline) -> TimeoutOr<T> (see the contract above).
template <typename T>
Lazy<TimeoutOr<T>> WithTimeout(Lazy<T> task, TaskDeadline deadline) {
  std::optional<ValueOf<T>> slot;
  internal::ChildGroup group;
  // The child's cancellation deadline cancels it at `deadline`; the caller only waits for
  // it, and judges by when it finished (not by which wakeup came first).
  group.Start(std::move(task), &slot, SpawnOptions{.deadline = deadline});
  co_await group.Wait(internal::ChildGroup::Until::kAllDone);
  if (group.last_done_at() >= deadline) co_return TimeoutOr<T>::TimedOut();
  if (std::exception_ptr error = group.first_error()) std::rethrow_exception(error);
  co_return TimeoutOr<T>(std::move(*slot));
}
// The deadline is taken when WithTimeout is called.
template <typename T>
Lazy<TimeoutOr<T>> WithTimeout(Lazy<T> task, std::chrono::nanoseconds timeout) {
  return WithTimeout(std::move(task), DeadlineAfter(timeout));
}

// co_await JoinUntil(handle, deadline) -> TimeoutOr<T>: the result (the handle is consumed)
// or a timeout (the coroutine keeps running; the handle stays valid).
template <typename T>
Lazy<TimeoutOr<T>> JoinUntil(JoinHandle<T>& handle, TaskDeadline deadline) {
  const bool finished = co_await handle.Finished(deadline);
  if (!finished) co_return TimeoutOr<T>::TimedOut();
  if constexpr (std::is_void_v<T>) {
    co_await std::move(handle);
    co_return TimeoutOr<T>(std::monostate());
  } else {
    co_return TimeoutOr<T>(co_await std::move(handle));
  }
}
template <typename T>
Lazy<TimeoutOr<T>> JoinFor(JoinHandle<T>& handle, std::chrono::nanoseconds timeout) {
  return JoinUntil(handle, DeadlineAfter(timeout));
}

// ---- Cancelling one operation: CancelSource, CancelToken, WithCancel ----

namespace internal {
// One WithCancel waiting under a source: the child to cancel. Lives in WithCancel's frame;
// linked only under the source's lock.
struct CancelNode {
  CoroutineRef child;
  CancelNode* prev = nullptr;
  CancelNode* next = nullptr;
  bool linked = false;
};

class CancelSourceState {
 public:
  // Links `node`, or returns false if the source is already cancelled.
  bool Add(CancelNode* node) {
    MutexLock lock(mu_);
    if (cancelled_.load(std::memory_order_relaxed)) return false;  // written under mu_
    node->next = head_;
    if (head_ != nullptr) head_->prev = node;
    head_ = node;
    node->linked = true;
    return true;
  }
  // Unlinks `node` if Cancel has not taken it. Afterwards nobody refers to it.
  void Remove(CancelNode* node) {
    MutexLock lock(mu_);
    if (node->linked) Unlink(node);
  }
  bool Cancel() {
    std::vector<CoroutineRef> children;
    {
      MutexLock lock(mu_);
      // Release: pairs with IsCancelled's acquire (what the canceller wrote before is
      // visible to whoever sees the flag). Under mu_, so Add cannot link a node after it.
      if (cancelled_.exchange(true, std::memory_order_release)) return false;
      while (head_ != nullptr) {
        children.push_back(head_->child);
        Unlink(head_);
      }
    }
    // Not under the lock: a cancellation runs the child's callbacks (io/ cancels its IO
    // operation), which may do anything, even cancel this source again.
    for (const CoroutineRef& child : children) child.Cancel();
    return true;
  }
  bool IsCancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  void Unlink(CancelNode* node) {
    if (node->prev != nullptr) node->prev->next = node->next;
    if (node->next != nullptr) node->next->prev = node->prev;
    if (head_ == node) head_ = node->next;
    node->prev = node->next = nullptr;
    node->linked = false;
  }

  fairsched::Mutex mu_;
  Atomic<bool> cancelled_{false};
  CancelNode* head_ = nullptr;  // guarded by mu_
};
}  // namespace internal

// A handle that lets WithCancel operations be cancelled by whoever holds the source.
// Copyable; keeps the source's state alive. Default-constructed: never cancelled.
class CancelToken {
 public:
  CancelToken() = default;
  bool IsCancelled() const { return state_ != nullptr && state_->IsCancelled(); }

 private:
  friend class CancelSource;
  template <typename T>
  friend Lazy<T> WithCancel(Lazy<T> task, CancelToken token);
  explicit CancelToken(std::shared_ptr<internal::CancelSourceState> state)
      : state_(std::move(state)) {}
  std::shared_ptr<internal::CancelSourceState> state_;
};

// Cancels the operations run by WithCancel under its tokens. Thread-safe; one-shot.
class CancelSource {
 public:
  CancelSource() : state_(std::make_shared<internal::CancelSourceState>()) {}
  CancelToken Token() const { return CancelToken(state_); }
  // Cancels every WithCancel running under this source's tokens, and makes later ones
  // start cancelled. True if this call did it (false: it already was cancelled).
  bool Cancel() const { return state_->Cancel(); }
  bool IsCancelled() const { return state_->IsCancelled(); }

 private:
  std::shared_ptr<internal::CancelSourceState> state_;
};

// co_await WithCancel(task, token) -> T: runs `task` as a child that token's source can
// cancel without cancelling the caller (see the contract above).
template <typename T>
Lazy<T> WithCancel(Lazy<T> task, CancelToken token) {
  std::optional<ValueOf<T>> slot;
  internal::ChildGroup group;
  group.Start(std::move(task), &slot);
  internal::CancelNode node{.child = group.Child(0)};
  if (token.state_ != nullptr && !token.state_->Add(&node)) node.child.Cancel();
  co_await group.Wait(internal::ChildGroup::Until::kAllDone);
  if (token.state_ != nullptr) token.state_->Remove(&node);
  if (std::exception_ptr error = group.first_error()) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<T>) co_return std::move(*slot);
}

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_COMBINATORS_H_
