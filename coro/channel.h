// coro::Channel<T>: a bounded multi-producer multi-consumer queue of values between spawned
// coroutines, with Close, deadlines and strict FIFO order, whose full and empty waits do
// not block a worker.
//
// Contract:
//   - A channel holds at most capacity() values (capacity >= 1). Values come out in the
//     order they went in.
//   - `co_await channel.Send(value, deadline)` -> ChannelStatus. kOk: the value is in the
//     channel (buffered, or handed straight to a waiting receiver). While the channel is
//     full the sender waits (backpressure) until a receiver makes room, at most until
//     `deadline` (kDeadline), or until its coroutine is cancelled (kCancelled), the
//     scheduler stops (kShutdown) or the channel is closed (kClosed). On any result but kOk
//     the value was not sent and is destroyed with the awaiter (TrySend keeps it).
//   - `co_await channel.Receive(deadline)` -> Received<T>: ok() with the oldest value, or
//     the status that ended the wait: kClosed once the channel is closed and every
//     buffered value was received, kDeadline, kCancelled, kShutdown.
//   - Like Semaphore::AcquireUntil: an operation that can complete at once does so, even in
//     a cancelled coroutine and whatever its deadline; a deadline already passed makes it a
//     TrySend / TryReceive (with kDeadline instead of kFull / kEmpty). It only waits when
//     it cannot complete.
//   - `TrySend(value)` never waits: kOk (the value was moved in), kFull or kClosed (the
//     value is left untouched). `TryReceive()` never waits: a value, kEmpty or kClosed.
//     Any thread, coroutine or not.
//   - Close() (any thread): after it, every Send and TrySend returns kClosed; waiting
//     senders wake with kClosed (their values are not sent); receivers take what is
//     buffered, then get kClosed, and waiting receivers wake with kClosed. True if this
//     call closed the channel, false if it was closed already.
//   - FIFO waiters on both sides: waiting senders get room in the order they started
//     waiting, waiting receivers get values in that order, and nobody barges: while
//     senders wait the channel is full, while receivers wait it is empty, and what is freed
//     or sent goes to the oldest waiter first. A waiter that leaves (deadline,
//     cancellation, shutdown) leaves the queue; a value or room being handed to it goes to
//     the next one, so nothing is lost or delivered twice.
//   - A Send or Receive that completes without waiting spends one unit of the coroutine's
//     cooperative budget (coro/budget.h) and, when it is spent, yields once after
//     completing (the result is kept across the yield).
//   - Everything written before a successful Send is visible to the coroutine that
//     receives that value.
//   - T must be nothrow move-constructible (values move under the channel's lock).
//   - Debug builds abort with a message on: capacity 0, destroying a channel while
//     coroutines wait for it, a Send or Receive that has to wait outside a spawned
//     coroutine.
//   - Cost: an operation that completes at once takes the channel's lock once (a
//     fairsched::Mutex held for a few moves); one that waits takes it once more to queue,
//     and once more again if its wait ends without a transfer (to leave the queue).
#ifndef FAIRSCHED_CORO_CHANNEL_H_
#define FAIRSCHED_CORO_CHANNEL_H_

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "coro/budget.h"
#include "coro/runtime_types.h"
#include "coro/wait_list.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro {

// How a channel operation ended.
enum class ChannelStatus : std::uint8_t {
  kOk,         // sent / received
  kClosed,     // the channel is closed (a receiver: and drained)
  kFull,       // TrySend: no room
  kEmpty,      // TryReceive: nothing buffered
  kDeadline,   // the wait's deadline passed first
  kCancelled,  // the coroutine was cancelled
  kShutdown,   // the scheduler is stopping
};

inline const char* ToString(ChannelStatus status) {
  switch (status) {
    case ChannelStatus::kOk:
      return "ok";
    case ChannelStatus::kClosed:
      return "closed";
    case ChannelStatus::kFull:
      return "full";
    case ChannelStatus::kEmpty:
      return "empty";
    case ChannelStatus::kDeadline:
      return "deadline";
    case ChannelStatus::kCancelled:
      return "cancelled";
    case ChannelStatus::kShutdown:
      return "shutdown";
  }
  return "?";
}

// What a Receive or TryReceive got: a value (ok()) or the status that says why not.
template <typename T>
class Received {
 public:
  explicit Received(ChannelStatus status) : status_(status) {
    FAIRSCHED_DCHECK(status != ChannelStatus::kOk, "Received: kOk needs a value");
  }
  explicit Received(T value) : status_(ChannelStatus::kOk), value_(std::move(value)) {}

  bool ok() const { return status_ == ChannelStatus::kOk; }
  explicit operator bool() const { return ok(); }
  ChannelStatus status() const { return status_; }
  // The value; only when ok() (debug builds check).
  T& value() & {
    FAIRSCHED_DCHECK(ok(), "Received::value() without a value");
    return *value_;
  }
  T&& value() && {
    FAIRSCHED_DCHECK(ok(), "Received::value() without a value");
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }

 private:
  ChannelStatus status_;
  std::optional<T> value_;
};

template <typename T>
class Channel {
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "coro::Channel<T>: T must be nothrow move-constructible");

  // What one waiting Send or Receive carries, in its awaiter. Its address is the wait
  // node's request. Touched only under the channel's lock (and by its own coroutine once
  // the wait has ended).
  struct Parcel {
    std::optional<T> value;  // a sender's value until it is taken; a receiver's once given
    bool sender = false;
    bool closed = false;  // Close ended the wait: nothing was transferred
  };

 public:
  explicit Channel(std::size_t capacity) : ring_(CheckedCapacity(capacity)) {}
  ~Channel() {
    [[maybe_unused]] bool has_waiters;
    {
      MutexLock lock(wait_list_.lock());
      has_waiters = !wait_list_.empty();
    }
    FAIRSCHED_DCHECK(!has_waiters, "a coro::Channel is destroyed while coroutines wait for it");
  }
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  class Operation;
  // co_await -> ChannelStatus. See the contract.
  class SendAwaiter;
  SendAwaiter Send(T value, TaskDeadline deadline = kTaskDeadlineInfinite) {
    return SendAwaiter(this, std::move(value), deadline);
  }

  // co_await -> Received<T>. See the contract.
  class ReceiveAwaiter;
  ReceiveAwaiter Receive(TaskDeadline deadline = kTaskDeadlineInfinite) {
    return ReceiveAwaiter(this, deadline);
  }

  ChannelStatus TrySend(T&& value) {
    MutexLock lock(wait_list_.lock());
    if (closed_) return ChannelStatus::kClosed;
    if (!ReceiversWaitLocked() && size_ == ring_.size()) return ChannelStatus::kFull;
    Parcel parcel{std::optional<T>(std::move(value)), /*sender=*/true};
    [[maybe_unused]] const bool sent = SendLocked(parcel);
    FAIRSCHED_DCHECK(sent && !parcel.closed, "TrySend: room was checked under the lock");
    return ChannelStatus::kOk;
  }
  ChannelStatus TrySend(const T& value) {
    T copy(value);
    return TrySend(std::move(copy));
  }

  Received<T> TryReceive() {
    MutexLock lock(wait_list_.lock());
    Parcel parcel;
    if (!ReceiveLocked(parcel)) return Received<T>(ChannelStatus::kEmpty);
    if (parcel.closed) return Received<T>(ChannelStatus::kClosed);
    return Received<T>(std::move(*parcel.value));
  }

  bool Close() {
    MutexLock lock(wait_list_.lock());
    if (closed_) return false;
    closed_ = true;
    // Everyone waiting: senders (the channel is full; their values stay theirs) or
    // receivers (it is empty). A waiter that already left needs nothing.
    while (internal::WaitNode* node = wait_list_.PopFront()) {
      ParcelOf(node)->closed = true;
      internal::WaitList::WakePopped(node);
    }
    return true;
  }

  // Snapshots, for tests and monitoring (each takes the lock).
  bool IsClosed() const {
    MutexLock lock(wait_list_.lock());
    return closed_;
  }
  std::size_t Size() const {
    MutexLock lock(wait_list_.lock());
    return size_;
  }
  std::size_t capacity() const { return ring_.size(); }

 private:
  template <typename Primitive>
  friend class internal::ListWaitAwaiter;

  static std::size_t CheckedCapacity(std::size_t capacity) {
    FAIRSCHED_DCHECK(capacity >= 1, "coro::Channel: capacity must be at least 1");
    return capacity >= 1 ? capacity : 1;
  }
  static std::uint64_t RequestOf(Parcel* parcel) {
    return reinterpret_cast<std::uintptr_t>(parcel);
  }
  static Parcel* ParcelOf(internal::WaitNode* node) {
    return reinterpret_cast<Parcel*>(static_cast<std::uintptr_t>(node->request));
  }
  static ChannelStatus StatusOf(WaitStatus status, const Parcel& parcel) {
    switch (status) {
      case WaitStatus::kOk:
        return parcel.closed ? ChannelStatus::kClosed : ChannelStatus::kOk;
      case WaitStatus::kDeadline:
        return ChannelStatus::kDeadline;
      case WaitStatus::kCancelled:
        return ChannelStatus::kCancelled;
      case WaitStatus::kShutdown:
        return ChannelStatus::kShutdown;
    }
    return ChannelStatus::kCancelled;
  }

  // The hooks of internal::ListWaitAwaiter (coro/wait_list.h). The channel has no
  // lock-free path: the "fast" try is the whole attempt under the lock, so an operation
  // that can complete takes the lock once.
  bool TryAcquireFast(std::uint64_t request) {
    MutexLock lock(wait_list_.lock());
    return TryAcquireLocked(request);
  }
  // True: done (transferred, or parcel.closed); false: the caller queues its node.
  bool TryAcquireLocked(std::uint64_t request) {
    Parcel* parcel = reinterpret_cast<Parcel*>(static_cast<std::uintptr_t>(request));
    return parcel->sender ? SendLocked(*parcel) : ReceiveLocked(*parcel);
  }
  // A linked waiter left: nothing was promised to it, so nothing moves.
  void WaiterLeftLocked() {}

  // Only one side ever waits (see the contract), so the front node says which.
  bool ReceiversWaitLocked() const {
    return !wait_list_.empty() && !ParcelOf(wait_list_.front())->sender;
  }
  bool SendersWaitLocked() const {
    return !wait_list_.empty() && ParcelOf(wait_list_.front())->sender;
  }

  // Lock held. Sends parcel.value: to the oldest waiting receiver, else into the ring.
  // False: full (the sender must wait).
  bool SendLocked(Parcel& parcel) {
    if (closed_) {
      parcel.closed = true;
      return true;
    }
    while (ReceiversWaitLocked()) {
      internal::WaitNode* node = wait_list_.PopFront();
      Parcel* receiver = ParcelOf(node);
      // The value is the receiver's before it wakes; its wakeup (release CAS on its wait
      // word, acquired when it resumes) hands it over with our writes.
      receiver->value.emplace(std::move(*parcel.value));
      parcel.value.reset();
      if (internal::WaitList::WakePopped(node)) return true;
      // It had left (deadline, cancellation, shutdown) and waits for this lock to clean
      // up: take the value back and try the next one.
      parcel.value.emplace(std::move(*receiver->value));
      receiver->value.reset();
    }
    if (size_ == ring_.size()) return false;
    PushBackLocked(std::move(*parcel.value));
    parcel.value.reset();
    return true;
  }

  // Lock held. Takes the oldest value into parcel.value, and refills the ring from the
  // oldest waiting sender. False: empty and open (the receiver must wait).
  bool ReceiveLocked(Parcel& parcel) {
    if (size_ == 0) {
      if (!closed_) return false;
      parcel.closed = true;
      return true;
    }
    parcel.value.emplace(PopFrontLocked());
    while (SendersWaitLocked()) {
      internal::WaitNode* node = wait_list_.PopFront();
      Parcel* sender = ParcelOf(node);
      PushBackLocked(std::move(*sender->value));
      sender->value.reset();
      if (internal::WaitList::WakePopped(node)) break;
      // That sender had left: its value goes back to it (it is the newest in the ring).
      sender->value.emplace(PopBackLocked());
    }
    return true;
  }

  void PushBackLocked(T&& value) {
    ring_[(head_ + size_) % ring_.size()].emplace(std::move(value));
    ++size_;
  }
  T PopFrontLocked() {
    std::optional<T>& slot = ring_[head_];
    T value(std::move(*slot));
    slot.reset();
    head_ = (head_ + 1) % ring_.size();
    --size_;
    return value;
  }
  T PopBackLocked() {
    --size_;
    std::optional<T>& slot = ring_[(head_ + size_) % ring_.size()];
    T value(std::move(*slot));
    slot.reset();
    return value;
  }

  // All guarded by wait_list_.lock(); no field is read without it, so nothing here is
  // atomic. Waiters: senders only while the ring is full, receivers only while it is empty.
  mutable internal::WaitList wait_list_;
  std::vector<std::optional<T>> ring_;  // capacity slots; [head_, head_ + size_) hold values
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  bool closed_ = false;
};

// The awaiters: a Parcel and the shared list awaiter that carries it. The parcel's address
// is the wait's request, so an awaiter is built in place and never copied or moved.
template <typename T>
class Channel<T>::Operation {
 public:
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  bool await_ready() {
    if (!wait_.await_ready()) return false;  // queued: suspend for the wait
    // Ended without suspending: one unit of the budget (coro/budget.h).
    yield_for_budget_ = !internal::SpendReadyBudget();
    return !yield_for_budget_;
  }
  void await_suspend(std::coroutine_handle<> handle) {
    if (yield_for_budget_) {
      internal::YieldForBudget(handle);
    } else {
      wait_.await_suspend(handle);
    }
  }

 protected:
  Operation(Channel* channel, Parcel parcel, TaskDeadline deadline)
      : parcel_(std::move(parcel)),
        wait_(channel, RequestOf(&parcel_), WaitMode::kCancellable, deadline) {}
  ChannelStatus Status() { return StatusOf(wait_.await_resume(), parcel_); }

  Parcel parcel_;  // before wait_: its address goes into wait_'s node

 private:
  internal::ListWaitAwaiter<Channel> wait_;
  bool yield_for_budget_ = false;
};

template <typename T>
class Channel<T>::SendAwaiter : public Channel<T>::Operation {
 public:
  SendAwaiter(Channel* channel, T value, TaskDeadline deadline)
      : Operation(channel, Parcel{std::optional<T>(std::move(value)), /*sender=*/true}, deadline) {}
  ChannelStatus await_resume() { return this->Status(); }
};

template <typename T>
class Channel<T>::ReceiveAwaiter : public Channel<T>::Operation {
 public:
  ReceiveAwaiter(Channel* channel, TaskDeadline deadline)
      : Operation(channel, Parcel{}, deadline) {}
  Received<T> await_resume() {
    const ChannelStatus status = this->Status();
    if (status != ChannelStatus::kOk) return Received<T>(status);
    return Received<T>(std::move(*this->parcel_.value));
  }
};

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_CHANNEL_H_
