// PerThread<T>(): the calling thread's instance of T, made on first use and destroyed when
// the thread exits. Use it instead of a `thread_local T` whenever T has a destructor (the
// per-thread caches of sched/task_pool.h and coro/frame_allocator.h).
//
// Why not just `thread_local T`: with mingw-w64 gcc (the Windows build, tools/mingw/) a
// thread_local lives in emulated TLS, and at thread exit winpthreads runs the destructor
// that frees that storage and the one that runs the C++ destructors in no fixed order, so a
// C++ destructor can run on freed memory (GCC bug 80816, mingw-w64 bug 527; under Wine a
// third of such destructors saw freed memory in //tests/sync:per_thread_test before this
// header existed). There the instance lives on the heap, only a pointer to it is
// thread_local (no destructor, so nothing runs on emulated TLS at exit), and the instance is
// deleted by a thread-exit callback that is handed the pointer itself
// (sync/per_thread_windows.cc). Everywhere else this is a plain function-local thread_local.
//
// Destruction order: instances of one thread are destroyed in reverse order of creation.
// On Windows the main thread's instances are not destroyed at process exit (the process's
// memory goes with it); other threads' are, when the thread exits.
#ifndef FAIRSCHED_SYNC_PER_THREAD_H_
#define FAIRSCHED_SYNC_PER_THREAD_H_

namespace fairsched {

#if defined(_WIN32)
namespace per_thread_internal {
// Calls destroy(object) when the calling thread exits (sync/per_thread_windows.cc).
void DestroyAtThreadExit(void* object, void (*destroy)(void*));
}  // namespace per_thread_internal
#endif

template <typename T>
T& PerThread() {
#if defined(_WIN32)
  thread_local T* instance = nullptr;
  if (instance == nullptr) {
    instance = new T();
    per_thread_internal::DestroyAtThreadExit(instance,
                                             [](void* object) { delete static_cast<T*>(object); });
  }
  return *instance;
#else
  thread_local T instance;
  return instance;
#endif
}

}  // namespace fairsched

#endif  // FAIRSCHED_SYNC_PER_THREAD_H_
