#pragma once
/// A loopback TCP port nobody listens on right now (the kernel's pick for port 0), for a test that
/// must know its port before it binds: a server restarted on the same endpoint, a config file.
/// Another process may take it in between, but no more often than any free port.

#include <cstdint>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace lf::test {

/// A TCP socket bound to 127.0.0.1 on a port the kernel picks, listening when `backlog` > 0 (a
/// test server's). Returns its descriptor and sets `port`; -1 (nothing left open) when it fails.
inline int bind_loopback(std::uint16_t& port, int backlog = 0) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || (backlog > 0 && ::listen(s, backlog) != 0)
      || ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (s >= 0)
      ::close(s);
    return -1;
  }
  port = ntohs(a.sin_port);
  return s;
}

/// See the file comment. Throws std::runtime_error when no socket can be bound.
inline std::uint16_t free_port() {
  std::uint16_t port = 0;
  const int s = bind_loopback(port);
  if (s < 0)
    throw std::runtime_error("free_port: no port");
  ::close(s);
  return port;
}

} // namespace lf::test
