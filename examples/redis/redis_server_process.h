// A private redis-server for tests and for the savegame job (`--store=redis`): started from
// this process on a free loopback port, in a directory of its own, with `appendonly yes`,
// and stopped by its PID. tools/redis/private_redis.sh does the same from a shell (and
// installs the package). Linux only.
//
//   RedisServerProcess redis;
//   std::string error;
//   if (!redis.Start(dir, &error)) { ... }   // error: "redis-server not found: ..." etc.
//   SocketAddress address = redis.address(); // 127.0.0.1:port
//   redis.Pause(); redis.Resume();           // SIGSTOP / SIGCONT: a server that hangs
//   redis.Kill(); redis.Restart(&error);     // SIGKILL, then the same port, dir and AOF
//
// Contract:
//   - FindRedisServer() is the path of the redis-server binary ($REDIS_SERVER, else the
//     PATH, else /usr/bin and /usr/sbin), or "" when it is not installed; MissingMessage()
//     says in one line what to install.
//   - Start picks a free port (bind to 127.0.0.1:0, then the server binds it: a race with
//     another process taking the port in between is retried, 3 attempts), starts the server
//     with `--bind 127.0.0.1 --port P --dir DIR --appendonly yes --appendfsync always` (no
//     RDB snapshots; `always` because with the default `everysec` Redis may answer a write
//     whose AOF write is still postponed behind a slow fsync, and a SIGKILL then loses an
//     acknowledged save: seen in savegame_processes_test under ASan), its log
//     in DIR/redis.log, and returns once it answers PING (+PONG; not while it loads its
//     AOF) or fails after 10 s with the log's tail in `*error`.
//   - The server gets SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG): a
//     crashed test leaves no server behind. Start it from a thread that outlives its use
//     (a test's main thread, main()).
//   - Stop (SIGTERM, then waits; SIGKILL after 5 s) and the destructor end it; Kill ends it
//     at once (SIGKILL: the AOF keeps what it acknowledged). Restart starts it again on the
//     same port and directory, so it reloads its AOF. Not thread-safe.
#ifndef FAIRSCHED_EXAMPLES_REDIS_REDIS_SERVER_PROCESS_H_
#define FAIRSCHED_EXAMPLES_REDIS_REDIS_SERVER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "io/socket_address.h"

namespace fairsched::redis {

std::string FindRedisServer();
// "redis-server is not installed: apt-get install -y redis-server (or
// tools/redis/private_redis.sh install)"
std::string MissingMessage();

class RedisServerProcess {
 public:
  RedisServerProcess() = default;
  ~RedisServerProcess() { Stop(); }
  RedisServerProcess(const RedisServerProcess&) = delete;
  RedisServerProcess& operator=(const RedisServerProcess&) = delete;

  // `dir` must exist (it holds the AOF and the log). False and `*error` on failure.
  bool Start(const std::string& dir, std::string* error);
  bool Restart(std::string* error);
  void Stop();
  void Kill();
  void Pause();
  void Resume();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  std::uint16_t port() const { return port_; }
  SocketAddress address() const;

 private:
  bool Launch(std::string* error);  // at port_, dir_
  void EndWith(int signal);

  std::string binary_;
  std::string dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace fairsched::redis

#endif  // FAIRSCHED_EXAMPLES_REDIS_REDIS_SERVER_PROCESS_H_
