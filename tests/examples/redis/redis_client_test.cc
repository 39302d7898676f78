// The Redis client (examples/redis/redis_client.h) against a real private redis-server
// (examples/redis/redis_server_process.h, loopback, its own directory, appendonly): SET/GET
// with binary and large values, a pipeline of 200 commands answered in order, EVAL and
// EVALSHA (and NOSCRIPT), Redis errors that leave the connection usable, the deadline when
// the server hangs (SIGSTOP), and the pool reconnecting with backoff after the server was
// killed and restarted (the acknowledged write survives through the AOF). These skip, with
// the line that says what to install, only when redis-server is not installed. Then the
// client against a fake server (a plain socket thread) that sends a malformed or an
// oversized reply: a clear error, the connection closed, no hang (these always run).
#include "examples/redis/redis_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coro/runtime.h"
#include "examples/redis/redis_server_process.h"
#include "io/epoll_backend.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"

namespace fairsched::redis {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

using Sched = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, EpollBackend>;
using Conn = RedisConnection<Sched>;
using Pool = RedisPool<Sched>;

coro::Lazy<IoResult<Conn>> ConnectTo(Sched* sched, SocketAddress address,
                                     RedisClientOptions options = {}) {
  co_return co_await Conn::Connect(*sched, address, coro::DeadlineAfter(seconds(2)), options);
}
coro::Lazy<IoResult<Reply>> CallOn(Conn* conn, Command command, nanoseconds timeout) {
  co_return co_await conn->Call(std::move(command), coro::DeadlineAfter(timeout));
}
coro::Lazy<IoResult<std::vector<Reply>>> PipelineOn(Conn* conn, std::vector<Command> commands,
                                                    nanoseconds timeout) {
  co_return co_await conn->Pipeline(commands, coro::DeadlineAfter(timeout));
}
coro::Lazy<IoResult<std::unique_ptr<Conn>>> AcquireFrom(Pool* pool, nanoseconds timeout) {
  co_return co_await pool->Acquire(coro::DeadlineAfter(timeout));
}

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/redis.XXXXXX";
  FAIRSCHED_CHECK(mkdtemp(pattern.data()) != nullptr, "mkdtemp failed");
  return pattern;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override { sched_.Start(2); }
  void TearDown() override { sched_.Stop(); }

  Conn Connect(SocketAddress address, RedisClientOptions options = {}) {
    IoResult<Conn> conn = coro::Spawn(sched_, ConnectTo(&sched_, address, options)).Get();
    FAIRSCHED_CHECK(conn.ok(), "connect failed");
    return std::move(conn).value();
  }
  IoResult<Reply> Call(Conn& conn, Command command, nanoseconds timeout = seconds(5)) {
    return coro::Spawn(sched_, CallOn(&conn, std::move(command), timeout)).Get();
  }
  // The reply of a call that must succeed.
  Reply Must(Conn& conn, Command command) {
    IoResult<Reply> reply = Call(conn, command);
    EXPECT_TRUE(reply.ok()) << command[0] << ": " << reply.error().Message();
    return reply.ok() ? std::move(reply).value() : Reply{};
  }

  Sched sched_;
};

class RedisClientTest : public ClientTest {
 protected:
  void SetUp() override {
    if (FindRedisServer().empty()) GTEST_SKIP() << MissingMessage();
    std::string error;
    ASSERT_TRUE(redis_.Start(MakeTempDir(), &error)) << error;
    ClientTest::SetUp();
  }
  void TearDown() override {
    ClientTest::TearDown();
    redis_.Stop();
  }

  RedisServerProcess redis_;
};

TEST_F(RedisClientTest, SetGetBinaryAndLargeValues) {
  Conn conn = Connect(redis_.address());
  EXPECT_EQ(Must(conn, {"SET", "k", "v"}).DebugString(), "+OK");
  EXPECT_EQ(Must(conn, {"GET", "k"}).DebugString(), "$v");
  EXPECT_EQ(Must(conn, {"GET", "missing"}).type, Reply::Type::kNullBulk);
  const std::string binary("a\r\n\0$*\r\nb", 10);
  Must(conn, {"SET", "bin", binary});
  EXPECT_EQ(Must(conn, {"GET", "bin"}).text, binary);
  std::string large(3 * 1024 * 1024 + 7, 'x');  // over every buffer and read chunk
  for (std::size_t i = 0; i < large.size(); i += 4097) large[i] = static_cast<char>('a' + i % 26);
  Must(conn, {"SET", "large", large});
  const Reply got = Must(conn, {"GET", "large"});
  EXPECT_EQ(got.type, Reply::Type::kBulkString);
  EXPECT_TRUE(got.text == large) << "large value differs (" << got.text.size() << " bytes)";
  EXPECT_TRUE(conn.IsOpen());
}

TEST_F(RedisClientTest, PipelineRepliesComeInOrder) {
  Conn conn = Connect(redis_.address());
  std::vector<Command> commands;
  for (int i = 0; i < 200; ++i) commands.push_back({"INCR", "counter"});
  commands.push_back({"GET", "counter"});
  commands.push_back({"NOSUCHCOMMAND"});
  commands.push_back({"LRANGE", "nothing", "0", "-1"});
  IoResult<std::vector<Reply>> replies =
      coro::Spawn(sched_, PipelineOn(&conn, commands, seconds(5))).Get();
  ASSERT_TRUE(replies.ok()) << replies.error().Message();
  ASSERT_EQ(replies.value().size(), 203u);
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(replies.value()[i].type, Reply::Type::kInteger);
    EXPECT_EQ(replies.value()[i].integer, i + 1);
  }
  EXPECT_EQ(replies.value()[200].DebugString(), "$200");
  EXPECT_TRUE(replies.value()[201].IsError());
  EXPECT_EQ(replies.value()[202].DebugString(), "[]");
}

TEST_F(RedisClientTest, EvalAndEvalsha) {
  Conn conn = Connect(redis_.address());
  const std::string script = "redis.call('SET', KEYS[1], ARGV[1]) return {KEYS[1], ARGV[1], 42}";
  EXPECT_EQ(Must(conn, {"EVAL", script, "1", "key", "value"}).DebugString(), "[$key, $value, :42]");
  EXPECT_EQ(Must(conn, {"GET", "key"}).DebugString(), "$value");
  const Reply sha = Must(conn, {"SCRIPT", "LOAD", script});
  ASSERT_EQ(sha.type, Reply::Type::kBulkString);
  EXPECT_EQ(sha.text.size(), 40u);
  EXPECT_EQ(Must(conn, {"EVALSHA", sha.text, "1", "k2", "v2"}).DebugString(), "[$k2, $v2, :42]");
  const Reply unknown = Must(conn, {"EVALSHA", std::string(40, '0'), "0"});
  EXPECT_TRUE(unknown.IsError());
  EXPECT_EQ(unknown.text.rfind("NOSCRIPT", 0), 0u) << unknown.text;
  EXPECT_TRUE(conn.IsOpen());
}

TEST_F(RedisClientTest, RedisErrorsAreRepliesAndKeepTheConnection) {
  Conn conn = Connect(redis_.address());
  const Reply unknown = Must(conn, {"FROBNICATE", "x"});
  EXPECT_TRUE(unknown.IsError());
  EXPECT_NE(unknown.text.find("unknown command"), std::string::npos) << unknown.text;
  Must(conn, {"SET", "s", "text"});
  const Reply wrong = Must(conn, {"LPUSH", "s", "x"});
  EXPECT_TRUE(wrong.IsError());
  EXPECT_EQ(wrong.text.rfind("WRONGTYPE", 0), 0u) << wrong.text;
  const Reply script_error = Must(conn, {"EVAL", "return redis.error_reply('MINE failed')", "0"});
  EXPECT_EQ(script_error.DebugString(), "-MINE failed");
  EXPECT_TRUE(conn.IsOpen());
  EXPECT_EQ(Must(conn, {"PING"}).DebugString(), "+PONG");
}

TEST_F(RedisClientTest, DeadlineWhenTheServerHangs) {
  Conn conn = Connect(redis_.address());
  Must(conn, {"PING"});
  redis_.Pause();  // SIGSTOP: the connection stays up, no answer comes
  const auto start = steady_clock::now();
  IoResult<Reply> reply = Call(conn, {"GET", "k"}, milliseconds(200));
  const auto took = steady_clock::now() - start;
  redis_.Resume();
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code(), IoErrorCode::kTimeout) << reply.error().Message();
  EXPECT_GE(took, milliseconds(190));
  EXPECT_LT(took, seconds(3));
  // The late answer must never be read as another request's: the connection is closed.
  EXPECT_FALSE(conn.IsOpen());
  IoResult<Reply> after = Call(conn, {"PING"});
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code(), IoErrorCode::kClosed);
  // A new connection works once the server runs again.
  Conn fresh = Connect(redis_.address());
  EXPECT_EQ(Must(fresh, {"PING"}).DebugString(), "+PONG");
}

TEST_F(RedisClientTest, PoolReconnectsWithBackoffAfterARestart) {
  RedisPoolOptions options;
  options.initial_backoff = milliseconds(5);
  Pool pool(sched_, redis_.address(), options);
  {
    // Three connections, all idle in the pool afterwards.
    std::vector<std::unique_ptr<Conn>> held;
    for (int i = 0; i < 3; ++i) {
      IoResult<std::unique_ptr<Conn>> conn =
          coro::Spawn(sched_, AcquireFrom(&pool, seconds(2))).Get();
      ASSERT_TRUE(conn.ok()) << conn.error().Message();
      held.push_back(std::move(conn).value());
    }
    EXPECT_EQ(Must(*held[0], {"SET", "durable", "yes"}).DebugString(), "+OK");
    for (std::unique_ptr<Conn>& conn : held) pool.Release(std::move(conn));
    EXPECT_EQ(pool.connects(), 3);
  }
  redis_.Kill();  // SIGKILL: only the AOF keeps the acknowledged SET
  {
    // An idle connection is dead: a call on it fails (and closes it); Release drops it and,
    // since the server ended it, the two other idle ones (dead too).
    IoResult<std::unique_ptr<Conn>> stale =
        coro::Spawn(sched_, AcquireFrom(&pool, seconds(1))).Get();
    ASSERT_TRUE(stale.ok());
    EXPECT_FALSE(Call(*stale.value(), {"PING"}, seconds(1)).ok());
    EXPECT_FALSE(stale.value()->IsOpen());
    const IoErrorCode code = stale.value()->failure().code();
    EXPECT_TRUE(code == IoErrorCode::kEndOfStream || code == IoErrorCode::kResetByPeer)
        << ToString(code);
    pool.Release(std::move(stale).value());
  }
  // Nobody listens: Acquire retries until its deadline, then reports the refusal.
  const auto start = steady_clock::now();
  IoResult<std::unique_ptr<Conn>> refused =
      coro::Spawn(sched_, AcquireFrom(&pool, milliseconds(300))).Get();
  EXPECT_FALSE(refused.ok());
  EXPECT_LT(steady_clock::now() - start, seconds(2));
  EXPECT_GE(pool.failed_connects(), 2) << "it retried (no dead idle connection was handed out)";
  // The server comes back 300 ms into a longer Acquire, which then connects. (Restarted from
  // this thread: the server dies with the thread that started it.)
  coro::JoinHandle<IoResult<std::unique_ptr<Conn>>> acquiring =
      coro::Spawn(sched_, AcquireFrom(&pool, seconds(15)));
  std::this_thread::sleep_for(milliseconds(300));
  std::string error;
  ASSERT_TRUE(redis_.Restart(&error)) << error;
  IoResult<std::unique_ptr<Conn>> again = acquiring.Get();
  ASSERT_TRUE(again.ok()) << again.error().Message();
  EXPECT_EQ(Must(*again.value(), {"GET", "durable"}).DebugString(), "$yes")
      << "appendonly kept the acknowledged write across SIGKILL";
}

// --- A fake server that misbehaves: no redis-server needed ---

// Listens on 127.0.0.1 and, for one connection, reads a little and sends `answer`, then
// keeps the connection open until the client closes it.
class FakeServer {
 public:
  explicit FakeServer(std::string answer) : answer_(std::move(answer)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    FAIRSCHED_CHECK(
        bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), length) == 0 &&
            listen(listen_fd_, 1) == 0 &&
            getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0,
        "fake server cannot listen");
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      char buffer[256];
      (void)recv(fd, buffer, sizeof(buffer), 0);
      (void)send(fd, answer_.data(), answer_.size(), MSG_NOSIGNAL);
      while (recv(fd, buffer, sizeof(buffer), 0) > 0) {  // until the client closes
      }
      close(fd);
    });
  }
  ~FakeServer() {
    thread_.join();
    close(listen_fd_);
  }
  SocketAddress address() const { return SocketAddress::FromHostPort("127.0.0.1", port_).value(); }

 private:
  std::string answer_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

TEST_F(ClientTest, MalformedReplyClosesTheConnection) {
  for (const char* answer : {"!what\r\n", "+OK\n", "$3\r\nabcd\r\n", ":12x\r\n"}) {
    SCOPED_TRACE(answer);
    FakeServer fake(answer);
    Conn conn = Connect(fake.address());
    IoResult<Reply> reply = Call(conn, {"PING"}, seconds(5));
    ASSERT_FALSE(reply.ok());
    EXPECT_TRUE(IsMalformedReply(reply.error())) << reply.error().Message();
    EXPECT_FALSE(conn.IsOpen());
  }
}

TEST_F(ClientTest, OversizedReplyIsRefusedOnItsHeader) {
  RedisClientOptions options;
  options.limits.max_bulk = 1024;
  options.limits.max_depth = 3;
  for (const char* answer : {"$1025\r\n", "$99999999999\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n"}) {
    SCOPED_TRACE(answer);
    FakeServer fake(answer);  // only the header comes: refusing must not wait for the rest
    Conn conn = Connect(fake.address(), options);
    const auto start = steady_clock::now();
    IoResult<Reply> reply = Call(conn, {"GET", "k"}, seconds(5));
    ASSERT_FALSE(reply.ok());
    EXPECT_TRUE(IsReplyTooLarge(reply.error())) << reply.error().Message();
    EXPECT_LT(steady_clock::now() - start, seconds(2)) << "refused at once, not at the deadline";
    EXPECT_FALSE(conn.IsOpen());
  }
}

TEST_F(ClientTest, IncompleteReplyEndsAtTheDeadline) {
  FakeServer fake("$10\r\nabc");  // 7 bytes short, then silence
  Conn conn = Connect(fake.address());
  IoResult<Reply> reply = Call(conn, {"GET", "k"}, milliseconds(150));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code(), IoErrorCode::kTimeout);
  EXPECT_FALSE(conn.IsOpen());
}

}  // namespace
}  // namespace fairsched::redis
