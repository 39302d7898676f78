// The README examples, one class per example, following the original's shape (member-
// function steps, SetCallback + re-post, Signal for "async work done"). See the header.
#include "examples/readme_examples.h"

#include <cassert>
#include <string>
#include <thread>

#include "examples/notification.h"
#include "queues/mpsc_queue.h"
#include "sync/primitives.h"

namespace fairsched::examples {

using namespace std::chrono_literals;

// ---- 1. One-shot task ------------------------------------------------------------------

int RunOneShot(TaskScheduler& sched, int count) {
  if (count <= 0) return 0;
  Atomic<int> ran{0};
  Notification all_ran;
  for (int i = 0; i < count; ++i) {
    sched.Post(new Task([&ran, &all_ran, count](Task* self) {
      // The work. acq_rel: the task that completes the count must see the others'
      // increments and publish its own; the notification carries everything to the waiter.
      const bool last = ran.fetch_add(1, std::memory_order_acq_rel) + 1 == count;
      Notification* notify = last ? &all_ran : nullptr;
      // The README's `delete aTask`. It also destroys this lambda, captures included, so
      // only locals are used after it; the scheduler never touches the task again.
      delete self;
      if (notify != nullptr) notify->Notify();
    }));
  }
  all_ran.WaitForNotification();
  return ran.load(std::memory_order_acquire);
}

// ---- 2. Multi-step task, coroutine -------------------------------------------------------

namespace {

class MultiStepCoroutine {
 public:
  MultiStepCoroutine(TaskScheduler& sched, FakeAsyncClient& client, std::vector<std::string>* log,
                     Notification* done)
      : sched_(sched),
        client_(client),
        log_(log),
        done_(done),
        task_(this, &MultiStepCoroutine::Step1) {
    sched_.Post(&task_);
  }

 private:
  void Step1(Task* task) {
    assert(task == &task_);
    log_->push_back("step1: GET sent");
    // When woken next time, do the next step.
    task_.SetCallback(this, &MultiStepCoroutine::Step2);
    // Post self again when the request completes (on the client's thread). Nothing of
    // `this` may be touched after this call: step 2 can already be running.
    TaskScheduler* sched = &sched_;
    client_.Call(1ms, [sched, task] { sched->Post(task); });
  }

  void Step2(Task* task) {
    assert(task == &task_);
    log_->push_back("step2: GET done, HEAD sent");
    task_.SetCallback(this, &MultiStepCoroutine::Step3);
    TaskScheduler* sched = &sched_;
    client_.Call(1ms, [sched, task] { sched->Post(task); });
  }

  void Step3(Task* task) {
    assert(task == &task_);
    (void)task;
    log_->push_back("step3: HEAD done, finished");
    Notification* done = done_;
    delete this;
    done->Notify();
  }

  TaskScheduler& sched_;
  FakeAsyncClient& client_;
  std::vector<std::string>* log_;
  Notification* done_;
  Task task_;
};

}  // namespace

std::vector<std::string> RunMultiStep(TaskScheduler& sched, FakeAsyncClient& client) {
  std::vector<std::string> log;
  Notification done;
  new MultiStepCoroutine(sched, client, &log, &done);
  done.WaitForNotification();
  return log;
}

// ---- 3. Async work with a deadline ---------------------------------------------------------

namespace {

class DeadlineCoroutine {
 public:
  DeadlineCoroutine(TaskScheduler& sched, FakeAsyncClient& client, std::chrono::nanoseconds latency,
                    std::chrono::nanoseconds timeout, DeadlineOutcome* outcome, Notification* done)
      : sched_(sched),
        client_(client),
        latency_(latency),
        timeout_(timeout),
        outcome_(outcome),
        done_(done),
        task_(this, &DeadlineCoroutine::Start) {
    request_.url = "https://example.com/save";
    sched_.Post(&task_);
  }

 private:
  void Start(Task* task) {
    assert(task == &task_);
    (void)task;
    // When woken next time, check the result.
    task_.SetCallback(this, &DeadlineCoroutine::Wait);
    // The request gets a timeout.
    task_.SetDelay(timeout_);
    client_.Get(&request_, latency_, [this] {
      // Atomically wake the task and tell it the request completed. A plain "ready = true;
      // Wakeup()" could let the deadline fire in between, the task see `ready`, delete
      // itself, and Wakeup touch freed memory.
      sched_.Signal(&task_);
    });
    // Start waiting (until the deadline, or the Signal, whichever comes first).
    sched_.Post(&task_);
  }

  void Wait(Task* task) {
    assert(task == &task_);
    (void)task;
    if (task_.ReceiveSignal()) {
      // Completed (or cancelled and then completed).
      outcome_->signaled = true;
      outcome_->result = request_.result;
      outcome_->cancelled = request_.cancelled;
      Notification* done = done_;
      delete this;
      done->Notify();
      return;
    }
    // The only other reason to wake up here is the deadline. Cancel the request so that
    // it completes sooner and sends the signal, and keep waiting.
    assert(task_.IsExpired());
    ++outcome_->expirations;
    client_.Cancel(&request_);
    sched_.PostWait(&task_);
  }

  TaskScheduler& sched_;
  FakeAsyncClient& client_;
  const std::chrono::nanoseconds latency_;
  const std::chrono::nanoseconds timeout_;
  DeadlineOutcome* outcome_;
  Notification* done_;
  FakeAsyncClient::Request request_;
  Task task_;
};

}  // namespace

DeadlineOutcome RunAsyncWithDeadline(TaskScheduler& sched, FakeAsyncClient& client,
                                     std::chrono::nanoseconds request_latency,
                                     std::chrono::nanoseconds timeout) {
  DeadlineOutcome outcome;
  Notification done;
  new DeadlineCoroutine(sched, client, request_latency, timeout, &outcome, &done);
  done.WaitForNotification();
  return outcome;
}

// ---- 4. Task as a long-living async work executor ------------------------------------------

namespace {

struct Request {
  std::string data;
  Request* next = nullptr;  // MpscQueue link
};

// Counts the PUT acknowledgements, which arrive on the client thread after the connection
// may already be gone.
struct Acks {
  explicit Acks(int expected) : expected(expected) {}
  const int expected;
  Atomic<int> count{0};
  Notification all;
  void Add() {
    // acq_rel: the last ack publishes to the waiter through the notification.
    if (count.fetch_add(1, std::memory_order_acq_rel) + 1 == expected) all.Notify();
  }
};

class Connection {
 public:
  Connection(TaskScheduler& sched, FakeAsyncClient& client, ExecutorOutcome* outcome, Acks* acks,
             Notification* closed)
      : sched_(sched),
        client_(client),
        outcome_(outcome),
        acks_(acks),
        closed_(closed),
        task_(this, &Connection::Execute) {
    sched_.Post(&task_);
  }

  // Any thread. Queues the request and wakes the task to let it know there is work.
  void Send(Request* request) {
    queue_.Push(request);
    sched_.Wakeup(&task_);
  }

  // Once, after the last Send. The task drains the queue one last time, stops re-posting
  // itself and notifies `closed`; then the owner may delete the connection.
  void Close() {
    // Release: pairs with the acquire in Execute, so every Send before Close is drained.
    closing_.store(true, std::memory_order_release);
    sched_.Wakeup(&task_);
  }

 private:
  void Execute(Task* task) {
    assert(task == &task_);
    (void)task;
    ++outcome_->executions;
    // Read before draining: if Close() is seen, so are all requests sent before it.
    const bool closing = closing_.load(std::memory_order_acquire);
    // Execute all queued requests. Pop may return nullptr while a Send is still inside
    // Push; that Send's Wakeup comes after its Push completes, so the next run gets it.
    while (Request* request = queue_.Pop()) {
      outcome_->processed.push_back(request->data);
      Acks* acks = acks_;
      client_.Call(50us, [acks] { acks->Add(); });  // the README's myClient.Put(...)
      delete request;
    }
    if (closing) {
      closed_->Notify();  // last touch: the owner deletes us after this
      return;
    }
    // Wait for more work.
    sched_.PostWait(&task_);
  }

  TaskScheduler& sched_;
  FakeAsyncClient& client_;
  ExecutorOutcome* outcome_;
  Acks* acks_;
  Notification* closed_;
  MpscQueue<Request> queue_;
  Atomic<bool> closing_{false};
  Task task_;
};

}  // namespace

ExecutorOutcome RunLongLivedExecutor(TaskScheduler& sched, FakeAsyncClient& client,
                                     int request_count) {
  ExecutorOutcome outcome;
  Acks acks(request_count);
  Notification closed;
  auto* connection = new Connection(sched, client, &outcome, &acks, &closed);
  for (int i = 0; i < request_count; ++i) {
    connection->Send(new Request{"data" + std::to_string(i)});
    // Pause now and then, so the task sees both single requests and batches.
    if (i % 16 == 15) std::this_thread::sleep_for(200us);
  }
  connection->Close();
  closed.WaitForNotification();
  delete connection;
  if (request_count > 0) acks.all.WaitForNotification();
  return outcome;
}

}  // namespace fairsched::examples
