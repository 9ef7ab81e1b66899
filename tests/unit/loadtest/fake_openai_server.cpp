#include "tests/unit/loadtest/fake_openai_server.hpp"
#include "tests/support/free_port.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <stdexcept>

namespace lf::test {

namespace {

bool send_all(int fd, const std::string& s) {
  std::size_t at = 0;
  while (at < s.size()) {
    const auto n = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
    if (n <= 0)
      return false;
    at += static_cast<std::size_t>(n);
  }
  return true;
}

/// One chunk of a chunked body.
std::string chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

std::string token_event(const char* text, const char* finish) {
  return std::string("data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"")
         + text + "\",\"finish_reason\":" + finish + "}]}\n\n";
}

std::string sse_headers(bool announce_close) {
  return std::string("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n")
         + (announce_close ? "Connection: close\r\n" : "") + "\r\n";
}

/// The whole streamed reply: three tokens, usage, [DONE], the last chunk.
std::string sse_reply(bool announce_close) {
  return sse_headers(announce_close) + chunk(token_event("a", "null")) + chunk(token_event("b", "null"))
         + chunk(token_event("c", "\"length\""))
         + chunk("data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[],"
                 "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"total_tokens\":7}}\n\n")
         + chunk("data: [DONE]\n\n") + "0\r\n\r\n";
}

std::string json_reply(int status, const char* reason, const std::string& body, bool announce_close) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: application/json\r\nContent-Length: "
         + std::to_string(body.size()) + "\r\n" + (announce_close ? "Connection: close\r\n" : "") + "\r\n" + body;
}

/// Content-Length of a header block (0 when absent).
std::size_t content_length(const std::string& head) {
  std::string lower;
  for (char ch : head)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const auto at = lower.find("\r\ncontent-length:");
  return at == std::string::npos ? 0 : std::stoul(head.substr(at + 17));
}

} // namespace

fake_openai_server::fake_openai_server(reply_plan plan) : plan_(std::move(plan)) {
  std::uint16_t port = 0;
  listen_fd_ = bind_loopback(port, 64);
  if (listen_fd_ < 0)
    throw std::runtime_error("fake_openai_server: cannot listen on 127.0.0.1");
  port_ = port;
  acceptor_ = std::thread([this] { accept_loop(); });
}

fake_openai_server::~fake_openai_server() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  acceptor_.join();
  {
    std::lock_guard<std::mutex> g(m_);
    for (int fd : fds_)
      if (fd >= 0)
        ::shutdown(fd, SHUT_RDWR);  // wakes recv(); serve() closes it
  }
  for (auto& t : threads_)  // the acceptor is gone: nobody adds threads now
    t.join();
  ::close(listen_fd_);
}

std::string fake_openai_server::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void fake_openai_server::accept_loop() {
  while (!stopping_) {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0)
      continue;  // shut down (stopping_ is set), or a transient error
    std::lock_guard<std::mutex> g(m_);
    const auto conn = fds_.size();
    fds_.push_back(fd);
    ++connections_;
    threads_.emplace_back([this, fd, conn] { serve(fd, conn); });
  }
}

void fake_openai_server::close_fd(std::size_t conn) {
  std::lock_guard<std::mutex> g(m_);
  if (fds_[conn] >= 0)
    ::close(fds_[conn]);
  fds_[conn] = -1;
}

void fake_openai_server::serve(int fd, std::size_t conn) {
  std::string pending;
  char buf[4096];
  for (std::size_t nth = 0;; ++nth) {
    // One whole request: the header block, then Content-Length bytes of body.
    std::size_t head_end;
    while ((head_end = pending.find("\r\n\r\n")) == std::string::npos) {
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        return close_fd(conn);
      pending.append(buf, static_cast<std::size_t>(n));
    }
    const auto head = pending.substr(0, head_end);
    const auto total = head_end + 4 + content_length(head);
    while (pending.size() < total) {
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        return close_fd(conn);
      pending.append(buf, static_cast<std::size_t>(n));
    }
    pending.erase(0, total);
    ++requests_;
    const bool models = head.rfind("GET /v1/models", 0) == 0;
    const auto kind = plan_(conn, nth);
    bool sent = true;
    switch (kind) {
      case reply_kind::stream_keep_open:
      case reply_kind::stream_then_close:
      case reply_kind::stream_announce_close: {
        const bool announce = kind == reply_kind::stream_announce_close;
        sent = send_all(fd, models ? json_reply(200, "OK", R"({"object":"list","data":[{"id":"fake-model"}]})", announce)
                                   : sse_reply(announce));
        break;
      }
      case reply_kind::close_unanswered:
        sent = false;
        break;
      case reply_kind::error_500:
        sent = send_all(fd, json_reply(500, "Internal Server Error",
                                       R"({"error":{"message":"boom","type":"server_error","code":null}})", false));
        break;
      case reply_kind::partial_then_close:
        send_all(fd, sse_headers(false) + chunk(token_event("a", "null")));
        sent = false;
        break;
    }
    if (!sent || kind == reply_kind::stream_then_close)
      return close_fd(conn);
  }
}

} // namespace lf::test
