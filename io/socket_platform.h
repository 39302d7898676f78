// The system headers that declare sockets (sockaddr, sockaddr_storage, socklen_t, the
// address families) on the platforms io/ builds for: POSIX (<sys/socket.h>) and Windows
// (Winsock 2). The one #ifdef of the socket layer's headers; the code that differs lives in
// io/socket_ops_posix.cc and io/socket_ops_windows.cc.
#ifndef FAIRSCHED_IO_SOCKET_PLATFORM_H_
#define FAIRSCHED_IO_SOCKET_PLATFORM_H_

#ifdef _WIN32
// Keep <windows.h> from defining min/max macros (they break std::min) and from pulling in
// Winsock 1, which clashes with Winsock 2.
#ifndef NOMINMAX
#define NOMINMAX
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
// Order matters: Winsock 2 before <windows.h>, <mswsock.h> after both.
// clang-format off
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <mswsock.h>
// clang-format on
// <winbase.h> defines Yield() as an empty macro (a Win16 leftover); it would erase
// coro::Yield() in every file that includes this header.
#undef Yield
#else
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#endif

#endif  // FAIRSCHED_IO_SOCKET_PLATFORM_H_
