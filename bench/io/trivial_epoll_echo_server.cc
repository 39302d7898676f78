// The trivial version in the echo benchmark (bench/io/echo_bench.sh, server name
// "trivial-epoll"): a plain byte echo written straight on Linux epoll, with nothing a
// framework adds. `--workers` threads each own an epoll instance; all of them watch the
// listening socket (EPOLLEXCLUSIVE: one wakes per connection attempt) and serve the
// connections they accepted, level-triggered: one recv per readiness, the bytes written
// back at once; only a send that does not fit waits (EPOLLOUT, reading paused meanwhile).
// So a request costs one recv and one send plus a share of an epoll_wait: the least any
// server on the kernel's socket calls can do per request. No deadlines, no limits, no
// coroutines, no scheduler: it is the ceiling the measured servers are held against, not a
// server to deploy.
//   trivial_epoll_echo_server --workers=2 --address=127.0.0.1 --port=7000 [--buffer=16384]
// Runs until SIGINT/SIGTERM.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

struct Connection {
  int fd = -1;
  std::string unsent;  // bytes a send could not take yet (then EPOLLOUT, no reads)
};

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "trivial_epoll_echo_server: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

// The eventfd every worker watches: written once by the signal handler to stop them.
int g_stop_fd = -1;
void OnSignal(int) {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(g_stop_fd, &one, sizeof(one));
}

// Sends what it can of `data`; the rest goes to `connection.unsent`. False: the peer is gone.
bool SendOrKeep(Connection& connection, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = send(connection.fd, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      connection.unsent.assign(data, size);
      return true;
    } else {
      return false;
    }
  }
  return true;
}

void Serve(int listen_fd, std::size_t buffer_size) {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) Die("epoll_create1");
  epoll_event event{};
  event.events = EPOLLIN | EPOLLEXCLUSIVE;
  event.data.fd = listen_fd;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &event) != 0) Die("epoll_ctl listener");
  event.events = EPOLLIN;
  event.data.fd = g_stop_fd;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, g_stop_fd, &event) != 0) Die("epoll_ctl stop");
  std::unordered_map<int, Connection> connections;
  std::vector<char> buffer(buffer_size);
  epoll_event events[256];
  auto close_connection = [&](int fd) {
    close(fd);  // also leaves the epoll set
    connections.erase(fd);
  };
  while (true) {
    const int count = epoll_wait(epoll_fd, events, 256, -1);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) Die("epoll_wait");
    for (int i = 0; i < count; ++i) {
      const int fd = events[i].data.fd;
      if (fd == g_stop_fd) {
        for (auto& [open_fd, unused] : connections) close(open_fd);
        close(epoll_fd);
        return;
      }
      if (fd == listen_fd) {
        while (true) {
          const int accepted = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (accepted < 0) break;  // EAGAIN (another worker took it), or a failed attempt
          const int yes = 1;
          setsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
          epoll_event connection_event{};
          connection_event.events = EPOLLIN;
          connection_event.data.fd = accepted;
          if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, accepted, &connection_event) != 0) {
            close(accepted);
            continue;
          }
          connections[accepted].fd = accepted;
        }
        continue;
      }
      Connection& connection = connections[fd];
      if (!connection.unsent.empty()) {
        // EPOLLOUT: flush, then read again.
        std::string rest = std::move(connection.unsent);
        connection.unsent.clear();
        if (!SendOrKeep(connection, rest.data(), rest.size())) {
          close_connection(fd);
        } else if (connection.unsent.empty()) {
          epoll_event back{};
          back.events = EPOLLIN;
          back.data.fd = fd;
          epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &back);
        }
        continue;
      }
      const ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n <= 0 || !SendOrKeep(connection, buffer.data(), static_cast<std::size_t>(n))) {
        close_connection(fd);
        continue;
      }
      if (!connection.unsent.empty()) {
        epoll_event wait_out{};
        wait_out.events = EPOLLOUT;
        wait_out.data.fd = fd;
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &wait_out);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int workers = 2;
  int port = 7000;
  std::string address = "127.0.0.1";
  std::size_t buffer_size = 16 * 1024;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::size_t length = std::strlen(name);
      return arg.compare(0, length, name) == 0 ? arg.c_str() + length : nullptr;
    };
    if (const char* v = value("--workers=")) {
      workers = std::atoi(v);
    } else if (const char* v = value("--port=")) {
      port = std::atoi(v);
    } else if (const char* v = value("--address=")) {
      address = v;
    } else if (const char* v = value("--buffer=")) {
      buffer_size = static_cast<std::size_t>(std::atol(v));
    } else {
      std::fprintf(stderr, "trivial_epoll_echo_server: unknown flag %s (plain echo only)\n",
                   arg.c_str());
      return 2;
    }
  }
  if (workers < 1 || port <= 0 || port > 65535 || buffer_size == 0) {
    std::fprintf(stderr, "trivial_epoll_echo_server: bad --workers, --port or --buffer\n");
    return 2;
  }
  g_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (g_stop_fd < 0) Die("eventfd");
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd < 0) Die("socket");
  const int yes = 1;
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in bound{};
  bound.sin_family = AF_INET;
  bound.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &bound.sin_addr) != 1) {
    std::fprintf(stderr, "trivial_epoll_echo_server: bad --address %s\n", address.c_str());
    return 2;
  }
  if (bind(listen_fd, reinterpret_cast<sockaddr*>(&bound), sizeof(bound)) != 0) Die("bind");
  if (listen(listen_fd, 4096) != 0) Die("listen");
  std::fprintf(stderr, "trivial_epoll_echo_server: plain echo, %d workers, listening on %s:%d\n",
               workers, address.c_str(), port);
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) threads.emplace_back(Serve, listen_fd, buffer_size);
  for (std::thread& thread : threads) thread.join();
  close(listen_fd);
  return 0;
}
