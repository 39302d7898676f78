// Scenarios that run the production classes with explore::Data payloads, so that a memory
// order weakened in the library is a data race the explorer reports: the ready queue's
// publication (McspQueue), the role's handover (RoleLock), Task's PENDING -> WAITING step
// and the local batch's Append. Shared by memory_order_test.cc (which expects them to pass
// on the shipped code) and mutation_subset_test.cc (which compiles tools/mutate's CI subset
// of mutated headers first and expects each scenario to fail on its mutation).
#ifndef FAIRSCHED_TESTS_EXPLORE_REAL_CODE_ORDER_SCENARIOS_H_
#define FAIRSCHED_TESTS_EXPLORE_REAL_CODE_ORDER_SCENARIOS_H_

#include <cstdint>
#include <string>

#include "queues/mcsp_queue.h"
#include "sched/internal/local_batch.h"
#include "sched/task.h"
#include "sync/primitives.h"
#include "tests/explore/real_task_ops.h"

namespace fairsched::testing {

using explore::Check;
using explore::Thread;

// The ready queue (queues/mcsp_queue.h), one block per item so that the consumers also
// step through StartNewBlock's link: one producer publishes two items whose payloads are
// explore::Data, two consumers pop once each, the main thread pops the rest. Under the
// C++20 model its relaxed begin/next/end loads and relaxed CAS run with stale values.
struct Payload {
  explore::Data<int> value{0};
};

void ReadyQueueOneProducerTwoConsumers() {
  McspQueue<Payload> ready(/*block_size=*/1);
  Payload items[2];
  int taken = 0;  // per consumer below, summed after the joins
  int taken_by[2] = {0, 0};
  {
    McspQueue<Payload>::Consumer first(ready);
    McspQueue<Payload>::Consumer second(ready);
    Thread producer([&] {
      for (Payload& item : items) {
        item.value.Write(1);
        ready.Push(&item);
      }
    });
    auto consume = [&](McspQueue<Payload>::Consumer& consumer, int k) {
      if (Payload* item = consumer.Pop()) {
        Check(item->value.Read() == 1, "ready queue: a popped item's payload is stale");
        ++taken_by[k];
      }
    };
    Thread a([&] { consume(first, 0); });
    Thread b([&] { consume(second, 1); });
    producer.Join();
    a.Join();
    b.Join();
    taken = taken_by[0] + taken_by[1];
    // What the consumers left is still there for a late pop (nothing lost, nothing twice).
    while (Payload* item = first.Pop()) {
      Check(item->value.Read() == 1, "ready queue: a popped item's payload is stale");
      ++taken;
    }
  }
  Check(taken == 2, "ready queue: " + std::to_string(taken) + " items popped of 2");
}

// Two workers take the role in turn and update sched-only state (explore::Data). `Lock`
// is the real RoleLock or memory_order_test.cc's copy with the orders as parameters.
template <typename Lock>
void RoleHandoverOf(Lock& role) {
  explore::Data<int> sched_state(0);
  auto worker = [&] {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (role.TryLock()) {
        sched_state.Write(sched_state.Read() + 1);
        role.Unlock();
        return;
      }
      CpuRelax();
    }
  };
  Thread a(worker);
  Thread b(worker);
  a.Join();
  b.Join();
}

// The sched-role moves a task PENDING -> WAITING after writing its fields (explore::Data
// stands for them); a waker whose TryWake wins then owns the task and pushes it into the
// front queue, writing its link. The CAS's release, read by TryWake's acquire, orders the
// role's writes before the waker's.
void PendingToWaitingPublishesTheRolesWrites() {
  Task task;
  explore::Data<int> task_fields(0);
  Thread role([&] {
    task_fields.Write(1);
    RealTaskOps::TryPendingToWaiting(task);
  });
  Thread waker([&] {
    if (RealTaskOps::TryWake(task, RealTaskOps::kWoken)) task_fields.Write(2);
  });
  role.Join();
  waker.Join();
}

// The owner writes a task's fields and appends it to its local batch; an idle worker takes
// the batch over and reads them. Append's release store of the tail, read by the take-over's
// acquire load, orders the two.
struct HeldTask {
  explore::Data<int> fields{0};
};

void LocalBatchPublishesTheOwnersWrites() {
  internal::LocalBatch<HeldTask, 2> batch;
  HeldTask tasks[2];
  int taken = 0;
  const auto publish = [&](HeldTask** items, std::uint32_t count) {
    for (std::uint32_t i = 0; i < count; ++i) {
      Check(items[i]->fields.Read() == 1, "local batch: a taken task's fields are stale");
    }
    taken += static_cast<int>(count);
  };
  Thread owner([&] {
    for (HeldTask& task : tasks) {
      task.fields.Write(1);
      batch.Append(&task);
    }
  });
  Thread idle([&] { batch.TryTakeOver(publish); });
  owner.Join();
  idle.Join();
  batch.TakeOver(publish);  // whatever is left, after the joins
  Check(taken == 2, "local batch: tasks lost or taken twice");
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_REAL_CODE_ORDER_SCENARIOS_H_
