// The one place where fairsched names its shared-memory primitives.
//
// Every atomic, mutex and condition variable in the library is spelled through these
// aliases, and so are the futex, the steady clock and threads. A model-checking or
// instrumented build (for example one that records every atomic access, or replaces the
// mutex with a checker's) swaps the definitions here and nothing else changes. Keep this
// header free of logic: it is a naming layer, not an abstraction (the futex wrappers only
// spell the system call; on Windows they are declared here and spelled in
// futex_windows.cc).
//
// With FAIRSCHED_EXPLORE defined (only the interleaving-explorer tests under tests/explore
// set it, for their own translation units) the names come from sync/explore/primitives.h
// instead: instrumented versions whose every operation is a scheduling point of the
// explorer. Production builds never define it and see exactly the aliases below.
#ifndef FAIRSCHED_SYNC_PRIMITIVES_H_
#define FAIRSCHED_SYNC_PRIMITIVES_H_

#ifdef FAIRSCHED_EXPLORE
#include "sync/explore/primitives.h"
#else

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#endif

namespace fairsched {

template <typename T>
using Atomic = std::atomic<T>;

// Atomic access to an object that is not declared atomic, such as an intrusive link field
// that users declare as a plain `T* next`. Between atomic accesses the object may be used
// with plain reads and writes, as long as no two threads race on it that way.
template <typename T>
using AtomicRef = std::atomic_ref<T>;

using Mutex = std::mutex;
using MutexLock = std::unique_lock<std::mutex>;
using ConditionVariable = std::condition_variable;

// Size that keeps two independently written variables off one cache line. 64 on every
// x86-64 and most ARM cores; not taken from std::hardware_destructive_interference_size
// because its value may differ between compilers and would change our ABI.
inline constexpr std::size_t kCacheLineSize = 64;

// A sequentially consistent fence: the store-load barrier of a Dekker handshake whose
// stores or loads are weaker than seq_cst (say, a queue's release publish and a relaxed
// re-check). Costs one full barrier (mfence on x86). gcc's ThreadSanitizer refuses
// atomic_thread_fence; there a seq_cst read-modify-write of a thread-local word stands in
// (the same full barrier on the hardware; TSan checks data races, which the fence is not
// used to order).
#if defined(__SANITIZE_THREAD__)
inline void FenceSeqCst() {
  thread_local std::atomic<int> barrier{0};
  barrier.fetch_add(0, std::memory_order_seq_cst);
}
#else
inline void FenceSeqCst() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif

// Tells the CPU that the caller is spinning, so a hyper-thread sibling can run.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A counter for coarse time budgets checked on hot paths, where a clock read costs too much
// (a virtual machine's clock source takes tens of nanoseconds): the x86 time-stamp counter
// (a few instructions, no system call; it ticks at a constant 1-5 GHz on the CPUs of the
// last decade), elsewhere the steady clock in nanoseconds. Not a time: only differences
// matter, and their unit is the counter's. The explore build's never moves.
inline std::uint64_t CycleCount() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
#endif
}

// --- Futex, clock, threads. The explore build models these too (sync/explore/futex.h):
// a futex whose waits and wakes are scheduling points, a logical clock that only timeouts
// move, and model threads.

using SteadyClock = std::chrono::steady_clock;
using Thread = std::thread;

// Gives the core to another thread (a wait for another thread's few instructions).
inline void YieldThread() { std::this_thread::yield(); }

#if defined(__linux__)
// futex(2) on a 32-bit atomic: an atomic 32-bit integer has the integer's size and
// representation on Linux's compilers, which is what the kernel reads and compares.
// Private futexes: the word is never shared between processes, and the kernel can then skip
// the shared-mapping lookup.
static_assert(sizeof(Atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
              Atomic<std::uint32_t>::is_always_lock_free);

// Sleeps while *word == expected: the kernel compares atomically with queueing the caller,
// and returns at once if they differ. Returns on a FutexWake, at `deadline`
// (SteadyClock::time_point::max(): none), on a signal, or spuriously; the caller re-checks
// its condition and the clock. FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC
// deadline, the clock behind std::chrono::steady_clock on Linux, so no conversion is needed
// and spurious returns do not stretch the deadline.
inline void FutexWait(Atomic<std::uint32_t>* word, std::uint32_t expected,
                      SteadyClock::time_point deadline) {
  timespec until{};
  timespec* until_arg = nullptr;
  if (deadline != SteadyClock::time_point::max()) {
    const auto since_epoch =
        std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch());
    until.tv_sec = static_cast<time_t>(since_epoch.count() / 1'000'000'000);
    until.tv_nsec = static_cast<long>(since_epoch.count() % 1'000'000'000);
    until_arg = &until;
  }
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_BITSET_PRIVATE, expected,
          until_arg, nullptr, FUTEX_BITSET_MATCH_ANY);
}

// Wakes up to `count` threads sleeping in FutexWait on `word`.
inline void FutexWake(Atomic<std::uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}
#elif defined(_WIN32)
// The futex's twin on Windows 8 and later: WaitOnAddress / WakeByAddressSingle, out of line
// in sync/futex_windows.cc so that <windows.h> and its macros stay out of every includer
// (the target links synchronization.lib). Same contract as the Linux functions above:
// FutexWait sleeps while *word == expected (the compare is atomic with queueing the caller
// against a wake of the same address) and may return early or spuriously; the caller
// re-checks its condition and the clock.
static_assert(sizeof(Atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
              Atomic<std::uint32_t>::is_always_lock_free);

void FutexWait(Atomic<std::uint32_t>* word, std::uint32_t expected,
               SteadyClock::time_point deadline);

// Wakes one thread sleeping in FutexWait on `word` when `count` is 1, every one otherwise
// (Windows wakes one or all; waking more than asked is a spurious return to the others).
void FutexWake(Atomic<std::uint32_t>* word, int count);
#endif  // __linux__, _WIN32

}  // namespace fairsched

#endif  // FAIRSCHED_EXPLORE
#endif  // FAIRSCHED_SYNC_PRIMITIVES_H_
