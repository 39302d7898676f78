// A test helper of tests/coro: an object that counts its live copies, to check when a
// coroutine's locals and parameters are destroyed (a combinator's children, a joined
// coroutine's root frame).
#ifndef FAIRSCHED_TESTS_CORO_ALIVE_H_
#define FAIRSCHED_TESTS_CORO_ALIVE_H_

#include <atomic>

namespace fairsched::testing {

// Counts itself in `*live` while it exists (every copy counts).
class Alive {
 public:
  explicit Alive(std::atomic<int>* live) : live_(live) { live_->fetch_add(1); }
  Alive(const Alive& other) : live_(other.live_) { live_->fetch_add(1); }
  Alive& operator=(const Alive&) = delete;
  ~Alive() { live_->fetch_sub(1); }

 private:
  std::atomic<int>* live_;
};

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_CORO_ALIVE_H_
