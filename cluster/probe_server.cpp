#include "cluster/probe_server.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "gateway/common/host_port.hpp"

namespace lf::cluster {

struct probe_server::impl {
  probe_handlers handlers;
  event_base* base = nullptr;
  evhttp* http = nullptr;
  std::string bound;
  std::thread thread;

  void reply(evhttp_request* r, int code, const char* reason, const std::string& body, const char* type) {
    evhttp_add_header(evhttp_request_get_output_headers(r), "Content-Type", type);
    evbuffer* buf = evbuffer_new();
    if (evhttp_request_get_command(r) != EVHTTP_REQ_HEAD)
      evbuffer_add(buf, body.data(), body.size());
    evhttp_send_reply(r, code, reason, buf);
    evbuffer_free(buf);
  }

  void on_request(evhttp_request* r) {
    const auto cmd = evhttp_request_get_command(r);
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD)
      return reply(r, 405, "Method Not Allowed", "only GET\n", "text/plain");
    const char* uri = evhttp_request_get_uri(r);
    std::string path = uri ? uri : "";
    path = path.substr(0, path.find('?'));
    const auto yes_no = [&](const std::function<bool()>& f, const char* yes, const char* no) {
      const bool ok = f && f();
      reply(r, ok ? 200 : 503, ok ? "OK" : "Service Unavailable", ok ? yes : no, "text/plain");
    };
    if (path == "/health")
      return yes_no(handlers.alive, "ok\n", "unhealthy\n");
    if (path == "/ready")
      return yes_no(handlers.ready, "ready\n", "not ready\n");
    if (path == "/metrics")
      return reply(r, 200, "OK", handlers.metrics ? handlers.metrics() : std::string{},
                   "text/plain; version=0.0.4; charset=utf-8");
    reply(r, 404, "Not Found", "the probe port serves /health, /ready and /metrics\n", "text/plain");
  }
};

probe_server::probe_server(const std::string& listen, probe_handlers h) : impl_(std::make_unique<impl>()) {
  auto& st = *impl_;
  st.handlers = std::move(h);
  static const int threads_ready = evthread_use_pthreads();
  if (threads_ready != 0)
    throw std::runtime_error("probe port: libevent has no pthreads support");
  std::signal(SIGPIPE, SIG_IGN);  // a prober that hangs up mid-reply must not kill the node
  std::string why;
  const auto at = gateway::parse_host_port(listen, &why);
  if (!at)
    throw std::runtime_error("--probe-listen: " + why);
  st.base = event_base_new();
  st.http = st.base ? evhttp_new(st.base) : nullptr;
  if (!st.http)
    throw std::runtime_error("probe port: cannot create the event loop");
  evhttp_set_timeout(st.http, 10);
  evhttp_set_max_body_size(st.http, 1024);
  evhttp_set_gencb(
    st.http, [](evhttp_request* r, void* arg) { static_cast<impl*>(arg)->on_request(r); }, &st);
  auto* handle = evhttp_bind_socket_with_handle(st.http, at->host.c_str(), static_cast<ev_uint16_t>(at->port));
  if (!handle) {
    const std::string err = std::strerror(errno);
    evhttp_free(st.http);
    event_base_free(st.base);
    throw std::runtime_error("probe port: cannot bind " + listen + ": " + err);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(evhttp_bound_socket_get_fd(handle), reinterpret_cast<sockaddr*>(&ss), &len);
  const int port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                            : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  st.bound = (at->host.find(':') != std::string::npos ? "[" + at->host + "]" : at->host) + ":" + std::to_string(port);
  st.thread = std::thread([&st] { event_base_dispatch(st.base); });
}

probe_server::~probe_server() {
  auto& st = *impl_;
  event_base_loopbreak(st.base);
  if (st.thread.joinable())
    st.thread.join();
  evhttp_free(st.http);
  event_base_free(st.base);
}

std::string probe_server::address() const { return impl_->bound; }

} // namespace lf::cluster
