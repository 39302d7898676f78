// Wait-queue benchmark for BinaryHeap (see wait_queue_bench.h for the three operations),
// against the trivial baseline for a deadline-ordered queue with removal: a std::set of
// (deadline, sequence, item) keys, O(log n) everything with a node allocation per insert.
#include <map>
#include <set>
#include <tuple>

#include "bench/queues/wait_queue_bench.h"
#include "queues/binary_heap.h"

namespace fairsched::bench {
namespace {

// std::set keyed by (deadline, push sequence, item); the item's key is kept beside it.
class SetWaitQueue {
 public:
  void Push(Item* item, WaitDeadline deadline) {
    item->payload = next_sequence_++;
    item->wait_index = 0;
    auto [it, inserted] = set_.emplace(deadline, item->payload, item);
    keys_[item] = it;
  }
  Item* PopExpired(WaitDeadline now) {
    if (set_.empty() || std::get<0>(*set_.begin()) > now) return nullptr;
    Item* item = std::get<2>(*set_.begin());
    set_.erase(set_.begin());
    keys_.erase(item);
    item->wait_index = kNotInWaitQueue;
    return item;
  }
  void Remove(Item* item) {
    auto node = keys_.extract(item);
    set_.erase(node.mapped());
    item->wait_index = kNotInWaitQueue;
  }
  WaitDeadline NextDeadline() const {
    return set_.empty() ? kNoDeadline : std::get<0>(*set_.begin());
  }

 private:
  using Key = std::tuple<WaitDeadline, std::uint64_t, Item*>;
  std::set<Key> set_;
  std::map<Item*, std::set<Key>::iterator> keys_;
  std::uint64_t next_sequence_ = 0;
};

using Heap = BinaryHeap<Item>;

FAIRSCHED_WAIT_BENCH(Insert, Heap);
FAIRSCHED_WAIT_BENCH(Insert, SetWaitQueue);
FAIRSCHED_WAIT_BENCH(Cancel, Heap);
FAIRSCHED_WAIT_BENCH(Cancel, SetWaitQueue);
FAIRSCHED_WAIT_BENCH(Expire, Heap);
FAIRSCHED_WAIT_BENCH(Expire, SetWaitQueue);

}  // namespace
}  // namespace fairsched::bench
