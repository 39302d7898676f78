// The one place where fairsched names its shared-memory primitives.
//
// Every atomic, mutex and condition variable in the library is spelled through these
// aliases. A model-checking or instrumented build (for example one that records every
// atomic access, or replaces the mutex with a checker's) swaps the definitions here and
// nothing else changes. Keep this header free of logic: it is a naming layer, not an
// abstraction.
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
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <new>

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

}  // namespace fairsched

#endif  // FAIRSCHED_EXPLORE
#endif  // FAIRSCHED_SYNC_PRIMITIVES_H_
