// Proves an outside workspace can build against one fairsched target and use it.
#include <gtest/gtest.h>

#include "queues/mpsc_queue.h"

namespace {

struct Job {
  int id = 0;
  Job* next = nullptr;
};

TEST(ConsumerTest, FrontQueueKeepsOrder) {
  fairsched::MpscQueue<Job> queue;
  Job jobs[3] = {{1}, {2}, {3}};
  EXPECT_TRUE(queue.Push(&jobs[0]));
  EXPECT_FALSE(queue.Push(&jobs[1]));
  EXPECT_FALSE(queue.Push(&jobs[2]));
  int expected = 1;
  while (Job* j = queue.Pop()) EXPECT_EQ(j->id, expected++);
  EXPECT_EQ(expected, 4);
  EXPECT_TRUE(queue.IsEmpty());
}

}  // namespace
