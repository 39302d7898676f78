// The thread-exit callbacks behind PerThread<T>() on Windows (see sync/per_thread.h): one
// winpthreads key whose per-thread value is the list of (object, destroy) pairs the thread
// registered. winpthreads calls the key's destructor with that value at thread exit; the
// list and the objects are on the heap, so it does not matter whether the emulated TLS of
// the thread has been freed by then.
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "sync/per_thread.h"

namespace fairsched::per_thread_internal {
namespace {

struct ExitList {
  std::vector<std::pair<void*, void (*)(void*)>> entries;
};

// Key destructor: destroys in reverse order of registration, like thread_locals. (An entry
// whose destructor registers a new object makes a new list; winpthreads then calls this
// again for it, as POSIX allows for a few rounds.)
void RunExitList(void* value) {
  ExitList* list = static_cast<ExitList*>(value);
  for (auto entry = list->entries.rbegin(); entry != list->entries.rend(); ++entry) {
    entry->second(entry->first);
  }
  delete list;
}

pthread_key_t ExitListKey() {
  static const pthread_key_t key = [] {
    pthread_key_t made;
    if (pthread_key_create(&made, &RunExitList) != 0) {
      std::fprintf(stderr, "fairsched: PerThread: pthread_key_create failed\n");
      std::abort();
    }
    return made;
  }();
  return key;
}

}  // namespace

void DestroyAtThreadExit(void* object, void (*destroy)(void*)) {
  const pthread_key_t key = ExitListKey();
  ExitList* list = static_cast<ExitList*>(pthread_getspecific(key));
  if (list == nullptr) {
    list = new ExitList();
    pthread_setspecific(key, list);
  }
  list->entries.emplace_back(object, destroy);
}

}  // namespace fairsched::per_thread_internal
