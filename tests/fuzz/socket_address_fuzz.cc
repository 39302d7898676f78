// Fuzz target "socket_address": SocketAddress (io/socket_address.h) parsing and printing.
// The input is the text given to Parse; its first two bytes are also a port for
// FromHostPort of the rest. Checked:
//   - text that Parse accepts holds no NUL byte (every byte of it was read);
//   - an accepted address prints (ToString) as text that parses back to an equal address
//     (same sockaddr bytes), which prints the same again; FromSockaddr copies it equal;
//   - the same for FromHostPort.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "io/socket_address.h"
#include "tests/fuzz/fuzz_target.h"

namespace fairsched::fuzz {
namespace {

bool Equal(const SocketAddress& a, const SocketAddress& b) {
  return a.length() == b.length() && std::memcmp(a.get(), b.get(), a.length()) == 0;
}

void CheckRoundTrip(const SocketAddress& address) {
  FuzzCheck(address.family() == AF_INET || address.family() == AF_INET6,
            "socket_address: accepted, but neither IPv4 nor IPv6");
  const std::string printed = address.ToString();
  IoResult<SocketAddress> again = SocketAddress::Parse(printed);
  FuzzCheck(again.ok(), "socket_address: ToString's text does not parse");
  FuzzCheck(Equal(address, again.value()), "socket_address: ToString's text parses differently");
  FuzzCheck(again.value().ToString() == printed, "socket_address: printing is not stable");
  FuzzCheck(again.value().port() == address.port(), "socket_address: the port changed");
  FuzzCheck(Equal(address, SocketAddress::FromSockaddr(address.get(), address.length())),
            "socket_address: FromSockaddr copies differently");
}

void FuzzSocketAddress(std::string_view input) {
  IoResult<SocketAddress> parsed = SocketAddress::Parse(input);
  if (parsed.ok()) {
    FuzzCheck(input.find('\0') == std::string_view::npos,
              "socket_address: Parse accepted text with a NUL byte");
    CheckRoundTrip(parsed.value());
  } else {
    FuzzCheck(parsed.error().code() == IoErrorCode::kInvalidAddress,
              "socket_address: Parse failed with another error than kInvalidAddress");
  }
  FuzzInput script(input);
  const auto port = static_cast<std::uint16_t>(script.Byte() << 8 | script.Byte());
  IoResult<SocketAddress> from_host = SocketAddress::FromHostPort(script.Rest(), port);
  if (from_host.ok()) {
    FuzzCheck(script.Rest().find('\0') == std::string_view::npos,
              "socket_address: FromHostPort accepted a host with a NUL byte");
    FuzzCheck(from_host.value().port() == port, "socket_address: FromHostPort lost the port");
    CheckRoundTrip(from_host.value());
  }
}

[[maybe_unused]] const bool kRegistered = RegisterFuzzTarget("socket_address", &FuzzSocketAddress);

}  // namespace
}  // namespace fairsched::fuzz
