// The echo server of examples/echo_server.h written with standalone Asio (Debian
// libasio-dev) and C++20 coroutines (asio::awaitable, co_spawn): the peer in the echo
// benchmark (bench/io/echo_bench.sh). Same protocols as examples/echo_server: plain byte
// echo by default (each read's bytes written back with one write, through a buffer of the
// same size, --buffer), and with --framed the 4-byte little-endian length + payload frames,
// echoed unchanged, complete frames echoed with one write, same frame limit. `--workers`
// threads run one io_context (Asio's usual multi-threaded setup, one epoll reactor).
//   asio_echo_server --workers=2 --address=127.0.0.1 --port=7000 [--framed]
//                    [--buffer=16384] [--max_frame=65536]
// Runs until SIGINT/SIGTERM. Idle and write deadlines are not implemented here: the
// benchmark's peers are well-behaved, and timers would only add cost to this side.
#include <asio.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using asio::ip::tcp;

std::uint32_t g_max_frame = 64 * 1024;
std::size_t g_buffer = 16 * 1024;
bool g_framed = false;

asio::awaitable<void> ServePlain(tcp::socket socket) {
  std::vector<char> buffer(g_buffer);
  try {
    socket.set_option(tcp::no_delay(true));
    while (true) {
      const std::size_t n =
          co_await socket.async_read_some(asio::buffer(buffer), asio::use_awaitable);
      co_await asio::async_write(socket, asio::buffer(buffer.data(), n), asio::use_awaitable);
    }
  } catch (const std::exception&) {
    // end of stream or reset: the socket closes with the coroutine
  }
}

asio::awaitable<void> ServeFramed(tcp::socket socket) {
  std::vector<char> buffer(4 + 4096);
  std::size_t begin = 0;
  std::size_t end = 0;
  const std::size_t limit = 4 + g_max_frame;
  try {
    socket.set_option(tcp::no_delay(true));
    while (true) {
      std::size_t scan = begin;
      std::size_t need = 0;
      while (true) {
        if (end - scan < 4) {
          need = 4;
          break;
        }
        const auto* bytes = reinterpret_cast<const unsigned char*>(buffer.data() + scan);
        const std::uint32_t length = std::uint32_t{bytes[0]} | std::uint32_t{bytes[1]} << 8 |
                                     std::uint32_t{bytes[2]} << 16 | std::uint32_t{bytes[3]} << 24;
        if (length > g_max_frame) co_return;  // oversized: disconnect
        if (end - scan < 4 + length) {
          need = 4 + length;
          break;
        }
        scan += 4 + length;
      }
      if (scan > begin) {
        co_await asio::async_write(socket, asio::buffer(buffer.data() + begin, scan - begin),
                                   asio::use_awaitable);
        begin = scan;
      }
      if (begin > 0) {
        std::memmove(buffer.data(), buffer.data() + begin, end - begin);
        end -= begin;
        begin = 0;
      }
      if (need > buffer.size()) buffer.resize(std::min(limit, std::max(need, buffer.size() * 2)));
      end += co_await socket.async_read_some(asio::buffer(buffer.data() + end, buffer.size() - end),
                                             asio::use_awaitable);
    }
  } catch (const std::exception&) {
    // end of stream or reset: the socket closes with the coroutine
  }
}

asio::awaitable<void> Accept(tcp::acceptor acceptor) {
  while (true) {
    tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
    asio::co_spawn(acceptor.get_executor(),
                   g_framed ? ServeFramed(std::move(socket)) : ServePlain(std::move(socket)),
                   asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int workers = 2;
  std::string address = "127.0.0.1";
  int port = 7000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    const std::string name = eq == std::string::npos ? arg : arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name == "--framed" && eq == std::string::npos) {
      g_framed = true;
    } else if (name == "--buffer" && std::atol(value.c_str()) > 0) {
      g_buffer = static_cast<std::size_t>(std::atol(value.c_str()));
    } else if (name == "--workers") {
      workers = std::max(1, std::atoi(value.c_str()));
    } else if (name == "--address") {
      address = value;
    } else if (name == "--port") {
      port = std::atoi(value.c_str());
    } else if (name == "--max_frame") {
      g_max_frame = static_cast<std::uint32_t>(std::atol(value.c_str()));
    } else {
      std::fprintf(stderr,
                   "usage: asio_echo_server --workers=N --address=IP --port=P [--framed] "
                   "[--buffer=BYTES] [--max_frame=BYTES]\n");
      return 2;
    }
  }
  asio::io_context context(workers);
  tcp::endpoint endpoint(asio::ip::make_address(address), static_cast<unsigned short>(port));
  tcp::acceptor acceptor(context, endpoint, /*reuse_addr=*/true);
  acceptor.listen(4096);
  std::printf("asio_echo_server: %s echo, %d workers, listening on %s:%d\n",
              g_framed ? "framed" : "plain", workers, address.c_str(),
              acceptor.local_endpoint().port());
  std::fflush(stdout);
  asio::co_spawn(context, Accept(std::move(acceptor)), asio::detached);
  asio::signal_set signals(context, SIGINT, SIGTERM);
  signals.async_wait([&](const asio::error_code&, int) { context.stop(); });
  std::vector<std::thread> threads;
  for (int i = 1; i < workers; ++i) threads.emplace_back([&] { context.run(); });
  context.run();
  for (auto& thread : threads) thread.join();
  return 0;
}
