// The explorer's memory model (implementation only): happens-before through vector clocks
// for both models, and for Options::MemoryModel::kCpp20 the store history of every atomic
// location and the rules that say which of its stores a load may read (coherence, the
// seq_cst total order S, seq_cst fences, the history bound). The runtime
// (sync/explore/internal/runtime.h) calls it with the model thread holding the baton, under
// its lock; which store a load reads among those allowed is the search's choice
// (sync/explore/internal/search.h). sync/explore/README.md says what is modelled and what is
// approximated.
#ifndef FAIRSCHED_SYNC_EXPLORE_INTERNAL_MEMORY_MODEL_H_
#define FAIRSCHED_SYNC_EXPLORE_INTERNAL_MEMORY_MODEL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sync/explore/internal/ops.h"

namespace fairsched::explore::internal {

inline bool IsAcquire(std::memory_order order) {
  return order == std::memory_order_acquire || order == std::memory_order_acq_rel ||
         order == std::memory_order_seq_cst || order == std::memory_order_consume;
}
inline bool IsRelease(std::memory_order order) {
  return order == std::memory_order_release || order == std::memory_order_acq_rel ||
         order == std::memory_order_seq_cst;
}
inline bool IsSeqCst(std::memory_order order) { return order == std::memory_order_seq_cst; }

// What the memory model keeps per model thread.
struct ThreadMemory {
  // Happens-before (see MemoryModel::Synchronize).
  VectorClock clock{};
  VectorClock acquired_relaxed{};  // released clocks read by relaxed loads: an acquire
                                   // fence joins them
  VectorClock release_fence{};     // the clock at the last release fence
  bool release_fenced = false;
  // kCpp20: locations loaded since the last CpuRelax, and those loaded in the round
  // before it (their next load reads the newest store; see MemoryModel::ReadableStores).
  std::vector<const void*> loaded_since_relax;
  std::vector<const void*> spin_locations;
  bool read_stale = false;  // a load since the last CpuRelax read an older store
};

// --- kCpp20 state of the current schedule. ---
// One store of a location, in modification order: its value and the clock an acquire
// that reads it synchronises with (its release sequence's, empty when none).
struct StoreEvent {
  std::uint64_t value;
  VectorClock released;
};
// One load or store of a location: by `thread` (-1: the initial value) when its clock
// entry was `time`, reading or writing the store at `index` of the modification order.
struct AccessEvent {
  int thread;
  std::uint32_t time;
  std::uint32_t index;
};
struct Location {
  std::vector<StoreEvent> stores;  // modification order; [0] is the value found first
  std::vector<AccessEvent> accesses;
  // Newest store a seq_cst operation on it read or wrote (a seq_cst load may not read
  // older: [atomics.order] p4.1).
  std::uint32_t sc_floor = 0;
  // Newest store that happened before some seq_cst fence so far (p4.2).
  std::uint32_t fence_floor = 0;
};
// A seq_cst fence: its thread and clock entry, and per location the oldest store a load
// after it in happens-before may read.
struct ScFence {
  int thread = -1;
  std::uint32_t time = 0;
  std::unordered_map<const void*, std::uint32_t> floors;
};

// The memory state of one schedule. Every call is made by the model thread holding the
// baton (no other model thread runs meanwhile), `self` being its ThreadMemory.
class MemoryModel {
 public:
  // A new schedule: no atomic object touched yet.
  void Reset() {
    sync_.clear();
    locations_.clear();
    sc_fences_.clear();
  }

  // --- Happens-before. ---

  // After an atomic access to `object` (its address names it) with `order`: a load (also a
  // failed compare-exchange) acquires, a store releases, a read-modify-write does both and
  // continues the release sequence it reads from. Relaxed accesses acquire only at a later
  // acquire fence, and release only what an earlier release fence covered. Sequentially
  // consistent model only (every load reads the latest store, whose released clock is the
  // object's); kCpp20 keeps a clock per store instead (ReadStore, Store).
  void Synchronize(OpKind kind, const void* object, std::memory_order order, ThreadMemory& self) {
    VectorClock& released = sync_[object];
    const bool acquire = IsAcquire(order);
    const bool release = IsRelease(order);
    if (kind == OpKind::kLoad || kind == OpKind::kReadModifyWrite) {
      JoinClock(acquire ? self.clock : self.acquired_relaxed, released);
    }
    if (kind == OpKind::kStore || kind == OpKind::kReadModifyWrite) {
      // A plain store heads a new release sequence (or none); an RMW extends the one it
      // read from (C++20: only RMWs continue a release sequence).
      VectorClock published{};
      if (release) {
        published = self.clock;
      } else if (self.release_fenced) {
        published = self.release_fence;
      }
      if (kind == OpKind::kReadModifyWrite) JoinClock(published, released);
      released = published;
      if (release) ++self.clock[t_model_thread];
    }
  }

  // A fence with `order` (FenceSeqCst: seq_cst, both halves): its happens-before effect.
  void Fence(std::memory_order order, ThreadMemory& self) {
    if (order != std::memory_order_release) JoinClock(self.clock, self.acquired_relaxed);
    if (order != std::memory_order_acquire && order != std::memory_order_consume) {
      self.release_fence = self.clock;
      self.release_fenced = true;
      ++self.clock[t_model_thread];
    }
  }

  // --- kCpp20: atomic accesses with their values. `object` names the location,
  // `in_memory` is the value in memory now (its bits), which is always the newest store in
  // modification order unless plain code wrote the object meanwhile. ---

  // A load, first half: how many stores of `object` it may read (the newest and up to
  // count - 1 older ones), within the newest `history_bound`. `latest_only`: a failed
  // compare-exchange, which reads the newest.
  int ReadableStores(const void* object, std::uint64_t in_memory, std::memory_order order,
                     bool latest_only, int history_bound, ThreadMemory& self) {
    Location& location = LocationOf(object, in_memory);
    const std::uint32_t latest = static_cast<std::uint32_t>(location.stores.size() - 1);
    std::uint32_t oldest = CoherenceFloor(location, object, IsSeqCst(order), self);
    // A spin loop's re-read (the first load of a location the thread loaded before its
    // CpuRelax) reads the newest store: stores become visible in finite time, and a spin
    // that kept reading one stale value would only delay, never change, what follows.
    for (std::size_t i = 0; i < self.spin_locations.size(); ++i) {
      if (self.spin_locations[i] == object) {
        oldest = latest;
        self.spin_locations.erase(self.spin_locations.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
    if (latest_only) oldest = latest;
    const std::uint32_t bound = static_cast<std::uint32_t>(history_bound);
    if (latest + 1 > bound && oldest < latest + 1 - bound) oldest = latest + 1 - bound;
    return static_cast<int>(latest - oldest + 1);
  }

  // A load, second half (right after ReadableStores for the same load): reads the store
  // `behind` older than the newest and returns its bits.
  std::uint64_t ReadStore(const void* object, std::memory_order order, int behind,
                          ThreadMemory& self) {
    Location& location = locations_[object];
    const std::uint32_t latest = static_cast<std::uint32_t>(location.stores.size() - 1);
    const std::uint32_t index = latest - static_cast<std::uint32_t>(behind);
    if (behind > 0) self.read_stale = true;
    const StoreEvent& store = location.stores[index];
    JoinClock(IsAcquire(order) ? self.clock : self.acquired_relaxed, store.released);
    location.accesses.push_back({t_model_thread, self.clock[t_model_thread], index});
    if (IsSeqCst(order) && index > location.sc_floor) location.sc_floor = index;
    self.loaded_since_relax.push_back(object);
    return store.value;
  }

  // A store (`rmw`: the write of a successful read-modify-write, which read `in_memory`) of
  // the bits `value`.
  void Store(const void* object, std::uint64_t in_memory, std::uint64_t value,
             std::memory_order order, bool rmw, ThreadMemory& self) {
    Location& location = LocationOf(object, in_memory);
    const int me = t_model_thread;
    // A read-modify-write reads the newest store (atomicity: the one just before its own
    // write in modification order) and continues its release sequence.
    const StoreEvent& previous = location.stores.back();
    if (rmw) JoinClock(IsAcquire(order) ? self.clock : self.acquired_relaxed, previous.released);
    VectorClock published{};
    if (IsRelease(order)) {
      published = self.clock;
    } else if (self.release_fenced) {
      published = self.release_fence;
    }
    if (rmw) JoinClock(published, previous.released);
    const std::uint32_t index = static_cast<std::uint32_t>(location.stores.size());
    location.stores.push_back({value, published});
    location.accesses.push_back({me, self.clock[me], index});
    if (IsSeqCst(order)) location.sc_floor = index;
    if (IsRelease(order)) ++self.clock[me];
  }

  // A new atomic object at `object` (its constructor): forget any history a destroyed
  // object at the same address left in this schedule.
  void Forget(const void* object) {
    locations_.erase(object);
    ForgetFenceFloors(object);
  }

  // A seq_cst atomic_thread_fence's place in S (before its happens-before effect, Fence).
  void SeqCstFence(const ThreadMemory& self) {
    const int me = t_model_thread;
    // C++20 [atomics.order] p4, with S the order in which the steps run. The fence X
    // records, per location, the newest store that a load after X (in happens-before)
    // must not read below: what seq_cst operations before X read or wrote (4.3), and what
    // happened before earlier seq_cst fences (4.4). Then what happens-before X itself
    // becomes a floor for later seq_cst loads (4.2) and fences (4.4).
    ScFence fence;
    fence.thread = me;
    fence.time = self.clock[me];
    for (auto& [address, location] : locations_) {
      fence.floors[address] =
          location.sc_floor > location.fence_floor ? location.sc_floor : location.fence_floor;
    }
    for (auto& [address, location] : locations_) {
      const std::uint32_t seen = HappensBeforeFloor(location, self);
      if (seen > location.fence_floor) location.fence_floor = seen;
    }
    sc_fences_.push_back(std::move(fence));
  }

 private:
  // Whether an event of `thread` at clock entry `time` happens before the calling thread's
  // next step (its own events are sequenced before it; the initial value precedes all).
  static bool HappensBefore(int thread, std::uint32_t time, const ThreadMemory& self) {
    return thread < 0 || thread == t_model_thread || time <= self.clock[thread];
  }

  // The newest store of `location` that the calling thread has seen through happens-before:
  // one it wrote or read itself, or one written or read by an access that happens before
  // (write-read and read-read coherence forbid reading older).
  static std::uint32_t HappensBeforeFloor(const Location& location, const ThreadMemory& self) {
    std::uint32_t floor = 0;
    for (const AccessEvent& event : location.accesses) {
      if (event.index > floor && HappensBefore(event.thread, event.time, self)) {
        floor = event.index;
      }
    }
    return floor;
  }

  // The oldest store a load by the calling thread may read: coherence, plus for a seq_cst
  // load the seq_cst floors, plus the floors of every seq_cst fence that happens before.
  std::uint32_t CoherenceFloor(const Location& location, const void* object, bool seq_cst,
                               const ThreadMemory& self) {
    std::uint32_t floor = HappensBeforeFloor(location, self);
    if (seq_cst) {
      if (location.sc_floor > floor) floor = location.sc_floor;
      if (location.fence_floor > floor) floor = location.fence_floor;
    }
    for (const ScFence& fence : sc_fences_) {
      if (!HappensBefore(fence.thread, fence.time, self)) continue;
      const auto found = fence.floors.find(object);
      if (found != fence.floors.end() && found->second > floor) floor = found->second;
    }
    return floor;
  }

  // The location at `object`, created (or restarted) with `in_memory` as its one store when
  // unknown or when memory no longer holds its newest store (plain code wrote the object,
  // as an intrusive link between its atomic uses may be): that write is taken to happen
  // before everything, like an initial value.
  Location& LocationOf(const void* object, std::uint64_t in_memory) {
    Location& location = locations_[object];
    if (location.stores.empty() || location.stores.back().value != in_memory) {
      location = Location{};
      location.stores.push_back({in_memory, VectorClock{}});
      location.accesses.push_back({-1, 0, 0});
      ForgetFenceFloors(object);
    }
    return location;
  }

  // The fences' floors name stores of a location's previous history: drop them with it.
  void ForgetFenceFloors(const void* object) {
    for (ScFence& fence : sc_fences_) fence.floors.erase(object);
  }

  // Released clock of every atomic object touched in this schedule, by address.
  std::unordered_map<const void*, VectorClock> sync_;
  // kCpp20: every atomic location touched in this schedule, and its seq_cst fences in S.
  std::unordered_map<const void*, Location> locations_;
  std::vector<ScFence> sc_fences_;
};

// explore::Data: a read or write by the calling thread (its clock `clock`) of `data`. The
// data race it makes (an access not ordered by happens-before after a conflicting access
// of another thread), or "" when none, and then the access is recorded. `threads`: the
// model threads of the schedule.
inline std::string DataReadRace(DataAccesses* data, const VectorClock& clock) {
  const int me = t_model_thread;
  if (data->writer >= 0 && data->writer != me && data->write_time > clock[data->writer]) {
    return "data race: a read is not ordered after thread " + std::to_string(data->writer) +
           "'s write (happens-before)";
  }
  data->read_times[me] = clock[me];
  return "";
}
inline std::string DataWriteRace(DataAccesses* data, const VectorClock& clock, int threads) {
  const int me = t_model_thread;
  if (data->writer >= 0 && data->writer != me && data->write_time > clock[data->writer]) {
    return "data race: a write is not ordered after thread " + std::to_string(data->writer) +
           "'s write (happens-before)";
  }
  for (int t = 0; t < threads; ++t) {
    if (t != me && data->read_times[t] != 0 && data->read_times[t] > clock[t]) {
      return "data race: a write is not ordered after thread " + std::to_string(t) +
             "'s read (happens-before)";
    }
  }
  data->writer = me;
  data->write_time = clock[me];
  data->read_times = {};
  return "";
}

}  // namespace fairsched::explore::internal

#endif  // FAIRSCHED_SYNC_EXPLORE_INTERNAL_MEMORY_MODEL_H_
