// The HTTP gateway's event loop: evhttp routing, size limits, replies from the outbox, closed
// connections. Every evhttp call happens on the loop thread. See http_gateway.hpp.
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <caf/send.hpp>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <openssl/ssl.h>

#include "core/log.hpp"
#include "gateway/common/audit.hpp"
#include "gateway/common/host_port.hpp"
#include "gateway/openai/http_impl.hpp"
#include "gateway/openai/openai_response.hpp"
#include "gateway/openai/stream_close.hpp"

namespace lf::gateway {

namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return nullptr;
  }
}

void reply_now(evhttp_request* req, int status, const char* content_type, const std::string& body) {
  auto* headers = evhttp_request_get_output_headers(req);
  evhttp_add_header(headers, "Content-Type", content_type);
  auto* buf = evbuffer_new();
  evbuffer_add(buf, body.data(), body.size());
  evhttp_send_reply(req, status, reason_phrase(status), buf);
  evbuffer_free(buf);
}

void reply_error(evhttp_request* req, int status, const std::string& message, const char* type = "invalid_request_error") {
  api_error e;
  e.status = status;
  e.message = message;
  e.type = type;
  reply_now(req, status, "application/json", error_body(e));
}

void send_chunk(evhttp_request* req, const std::string& body) {
  auto* buf = evbuffer_new();
  evbuffer_add(buf, body.data(), body.size());
  evhttp_send_reply_chunk(req, buf);
  evbuffer_free(buf);
}

std::string method_name(evhttp_cmd_type m) {
  switch (m) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_HEAD: return "HEAD";
    default: return "OTHER";
  }
}

/// The peer's address ("-" when unknown) and whether it is on loopback.
std::pair<std::string, bool> peer_of(evhttp_request* req) {
  char* host = nullptr;
  ev_uint16_t port = 0;
  if (auto* conn = evhttp_request_get_connection(req))
    evhttp_connection_get_peer(conn, &host, &port);
  if (host == nullptr)
    return {"-", false};
  return {std::string(host) + ":" + std::to_string(port), auth::loopback_host(host)};
}

} // namespace

void http_io::post(http_out o) {
  {
    std::lock_guard<std::mutex> g(out_m);
    outbox.push_back(std::move(o));
  }
  event_active(wake, EV_READ, 0);
}

void http_io::post(std::vector<http_out> out) {
  if (out.empty())
    return;
  {
    std::lock_guard<std::mutex> g(out_m);
    for (auto& o : out)
      outbox.push_back(std::move(o));
  }
  event_active(wake, EV_READ, 0);
}

std::uint64_t http_io::track(evhttp_request* req) {
  const auto id = next_id++;
  auto* conn = evhttp_request_get_connection(req);
  reqs[id] = req;
  waiting.insert(id);
  conn_of[id] = conn;
  auto& ids = by_conn[conn];
  if (ids.empty())
    evhttp_connection_set_closecb(
      conn, [](evhttp_connection* c, void* arg) { static_cast<http_io*>(arg)->on_close(c); }, this);
  ids.insert(id);
  connections = by_conn.size();
  ++live;
  return id;
}

void http_io::forget(std::uint64_t id) {
  auto it = conn_of.find(id);
  if (it == conn_of.end())
    return;
  if (auto c = by_conn.find(it->second); c != by_conn.end()) {
    c->second.erase(id);
    if (c->second.empty())
      by_conn.erase(c);
  }
  conn_of.erase(it);
  reqs.erase(id);
  waiting.erase(id);
  connections = by_conn.size();
  --live;
}

void http_io::on_close(evhttp_connection* conn) {
  auto c = by_conn.find(conn);
  if (c == by_conn.end())
    return;
  std::vector<std::uint64_t> gone(c->second.begin(), c->second.end());
  for (auto id : gone) {
    forget(id);
    caf::anon_send(actor, http_gone_atom::value, id);
  }
}

void http_io::on_request(evhttp_request* req) {
  const auto method = evhttp_request_get_command(req);
  const char* uri = evhttp_request_get_uri(req);
  std::string path = uri ? uri : "/";
  if (auto q = path.find('?'); q != std::string::npos)
    path.resize(q);
  auto need = [&](evhttp_cmd_type m) {
    if (method == m)
      return true;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", m == EVHTTP_REQ_GET ? "GET" : "POST");
    reply_error(req, 405, "method not allowed for " + path);
    return false;
  };
  if (path == "/health") {
    if (need(EVHTTP_REQ_GET))
      reply_now(req, 200, "application/json", "{\"status\":\"ok\"}");
    return;
  }
  // The door: who is asking, and may they (core/access.hpp)? Refusals end here, audited.
  const auto [remote, loopback] = peer_of(req);
  const bool is_admin = path.rfind("/v1/adapters", 0) == 0 && method != EVHTTP_REQ_GET;
  const auto op = path == "/ready"                                                          ? auth::op_class::open
                  : path == "/" || path == "/dashboard" || path == "/metrics" || path == "/api/stats" ? auth::op_class::metrics
                  : is_admin                                                                ? auth::op_class::admin
                                                                                            : auth::op_class::user;
  auto* in_headers = evhttp_request_get_input_headers(req);
  const auto access = auth::check_http({opts.keys.get(), opts.metrics_need_key},
                                       auth::presented_key(evhttp_find_header(in_headers, "Authorization"),
                                                           evhttp_find_header(in_headers, "x-api-key")),
                                       op, loopback);
  if (access.verdict != auth::verdict::allowed) {
    const bool no_key = access.verdict == auth::verdict::unauthenticated;
    audit(access.caller, remote, "http", method_name(method) + " " + path,
          auth::to_string(access.verdict), access.why);
    if (no_key)
      evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
    const auto e = to_api_error(no_key ? serve_errc::unauthenticated : serve_errc::forbidden, access.why);
    reply_now(req, e.status, "application/json", error_body(e));
    return;
  }
  if (path == "/" || path == "/dashboard") {
    if (need(EVHTTP_REQ_GET))
      reply_now(req, 200, "text/html; charset=utf-8", dashboard_html);
    return;
  }
  http_endpoint ep;
  std::string prefix;
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!need(EVHTTP_REQ_POST))
      return;
    ep = path == "/v1/completions" ? http_endpoint::completions : http_endpoint::chat;
  } else if (path == "/tokenize" || path == "/detokenize") {
    // vLLM's tokenizer endpoints (no /v1 prefix there either); the door treats them as user calls.
    if (!need(EVHTTP_REQ_POST))
      return;
    ep = path == "/tokenize" ? http_endpoint::tokenize : http_endpoint::detokenize;
  } else if (path == "/v1/models" || path == "/ready" || path == "/metrics" || path == "/api/stats") {
    if (!need(EVHTTP_REQ_GET))
      return;
    ep = path == "/v1/models" ? http_endpoint::models
         : path == "/ready"   ? http_endpoint::ready
         : path == "/metrics" ? http_endpoint::metrics
                              : http_endpoint::stats;
  } else if (path.rfind("/v1/models/", 0) == 0 && path.size() > 11) {
    // One model object (the SDK's models.retrieve): the served model or an adapter.
    if (!need(EVHTTP_REQ_GET))
      return;
    ep = http_endpoint::model;
    char* id = evhttp_uridecode(path.c_str() + 11, 0, nullptr);
    prefix = id != nullptr ? id : path.substr(11);
    std::free(id);
  } else if (path == "/v1/adapters" || path.rfind("/v1/adapters/", 0) == 0) {
    // The adapter registry: GET list, POST add {name, path}; on /v1/adapters/NAME PUT update
    // {path}, DELETE remove. The actor gets "op\nname\nbody".
    const std::string name = path.size() > 13 ? path.substr(13) : "";
    const char* op = name.empty() ? (method == EVHTTP_REQ_GET ? "list" : method == EVHTTP_REQ_POST ? "add" : nullptr)
                                  : (method == EVHTTP_REQ_PUT ? "update" : method == EVHTTP_REQ_DELETE ? "remove" : nullptr);
    if (op == nullptr) {
      evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", name.empty() ? "GET, POST" : "PUT, DELETE");
      reply_error(req, 405, "method not allowed for " + path);
      return;
    }
    ep = http_endpoint::adapters;
    prefix = std::string(op) + "\n" + name + "\n";
  } else {
    reply_error(req, 404, "no such endpoint: " + path, "not_found_error");
    return;
  }
  std::string body;
  if (auto* in = evhttp_request_get_input_buffer(req)) {
    const auto n = evbuffer_get_length(in);
    if (n > opts.max_body_bytes) {
      reply_error(req, 413, "the body is " + std::to_string(n) + " bytes; the limit is "
                              + std::to_string(opts.max_body_bytes));
      return;
    }
    body.resize(n);
    evbuffer_copyout(in, body.data(), n);
  }
  body.insert(0, prefix);
  if (live >= opts.max_live) {
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
    reply_error(req, 429, "too many HTTP requests in flight (" + std::to_string(opts.max_live) + ")",
                "rate_limit_error");
    return;
  }
  http_request_in in;
  in.id = track(req);
  in.endpoint = ep;
  in.body = std::move(body);
  in.key_name = access.caller.name;
  in.tenant = access.caller.tenant;
  in.remote = remote;
  caf::anon_send(actor, std::move(in));
}

namespace {

std::string_view header_or_empty(evkeyvalq* headers, const char* name) {
  const char* v = evhttp_find_header(headers, name);
  return v ? std::string_view(v) : std::string_view();
}

/// The headers of `req` that decide whether its stream closes its connection at the end.
stream_client stream_client_of(evhttp_request* req) {
  auto* in = evhttp_request_get_input_headers(req);
  return {header_or_empty(in, "Connection"), header_or_empty(in, "User-Agent"),
          header_or_empty(in, "X-Stainless-Runtime"), header_or_empty(in, "X-Stainless-Runtime-Version")};
}

} // namespace

void http_io::drain_outbox() {
  std::deque<http_out> batch;
  {
    std::lock_guard<std::mutex> g(out_m);
    batch.swap(outbox);
  }
  std::vector<std::uint64_t> overflowed;
  for (auto& o : batch) {
    auto it = reqs.find(o.id);
    if (it == reqs.end())
      continue;  // its connection closed: the actor has been told
    auto* req = it->second;
    auto* headers = evhttp_request_get_output_headers(req);
    switch (o.what) {
      case http_out::op::reply:
        for (auto& [k, v] : o.headers)
          evhttp_add_header(headers, k.c_str(), v.c_str());
        reply_now(req, o.status, o.content_type.c_str(), o.body);
        forget(o.id);
        break;
      case http_out::op::start:
        for (auto& [k, v] : o.headers)
          evhttp_add_header(headers, k.c_str(), v.c_str());
        evhttp_add_header(headers, "Content-Type", "text/event-stream");
        evhttp_add_header(headers, "Cache-Control", "no-cache");
        if (close_after_stream(stream_client_of(req)))
          evhttp_add_header(headers, "Connection", "close");  // evhttp closes it after the end
        evhttp_send_reply_start(req, 200, "OK");
        waiting.erase(o.id);  // evhttp sees this socket close from now on
        [[fallthrough]];
      case http_out::op::chunk: {
        if (o.body.empty())
          break;
        send_chunk(req, o.body);
        auto* bev = evhttp_connection_get_bufferevent(evhttp_request_get_connection(req));
        if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > opts.max_buffered_bytes)
          overflowed.push_back(o.id);
        break;
      }
      case http_out::op::end:
        if (!o.body.empty())
          send_chunk(req, o.body);
        evhttp_send_reply_end(req);
        forget(o.id);
        break;
    }
  }
  for (auto id : overflowed) {
    auto it = conn_of.find(id);
    if (it == conn_of.end())
      continue;
    log::warn("http", "client not reading its stream: dropping the connection", {{"request", id}});
    auto* conn = it->second;
    on_close(conn);
    evhttp_connection_free(conn);
  }
}

void http_io::check_closed() {
  // evhttp reads nothing from a connection whose request waits for its reply, so it would not
  // notice the client leave until the reply is written: ask the kernel whether each such socket
  // has seen the peer's FIN. (POLLRDHUP rather than a peeked read of 0 bytes: over TLS a leaving
  // client's close_notify alert is still unread before the FIN, so a peek sees data.)
  std::unordered_set<evhttp_connection*> closed;
  for (auto id : waiting) {
    auto* conn = conn_of.at(id);
    auto* bev = evhttp_connection_get_bufferevent(conn);
    const auto fd = bev ? bufferevent_getfd(bev) : -1;
    pollfd p{fd, POLLRDHUP, 0};
    if (fd >= 0 && ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0)
      closed.insert(conn);
  }
  for (auto* conn : closed) {
    on_close(conn);
    evhttp_connection_free(conn);
  }
}

void http_io::start() {
  // One descriptor per connection: take the hard limit, not the (often 1024) soft one.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  static const int threads_ready = evthread_use_pthreads();
  if (threads_ready != 0)
    throw std::runtime_error("http: libevent has no pthreads support");
  // evhttp writes with writev, which raises SIGPIPE when the client has already closed its end
  // (a curl --max-time mid-stream): the default action would kill the whole server. Ignored, the
  // write fails with EPIPE and evhttp closes that connection. (ZeroMQ and CAF send with
  // MSG_NOSIGNAL themselves.)
  std::signal(SIGPIPE, SIG_IGN);
  base = event_base_new();
  http = evhttp_new(base);
  if (!base || !http)
    throw std::runtime_error("http: cannot create the event loop");
  evhttp_set_max_body_size(http, static_cast<ev_ssize_t>(opts.max_body_bytes * 4));
  evhttp_set_max_headers_size(http, 64 * 1024);
  evhttp_set_timeout(http, 3600);
  evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT
                                       | EVHTTP_REQ_DELETE);
  evhttp_set_gencb(
    http, [](evhttp_request* r, void* arg) { static_cast<http_io*>(arg)->on_request(r); }, this);
  if (opts.tls.enabled()) {
    tls = std::make_unique<tls_context>(opts.tls);  // throws naming the file
    // Every accepted connection reads and writes through its own SSL object; evhttp sets the
    // socket on it and sees only plaintext.
    evhttp_set_bevcb(
      http,
      [](event_base* b, void* arg) -> bufferevent* {
        auto* self = static_cast<http_io*>(arg);
        SSL* ssl = SSL_new(self->tls->get());
        auto* bev = ssl != nullptr ? bufferevent_openssl_socket_new(b, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                                    BEV_OPT_CLOSE_ON_FREE)
                                   : nullptr;
        // evhttp would fall back to a plaintext connection on nullptr: never serve plain HTTP
        // on the TLS port. These fail only when memory is exhausted.
        if (bev == nullptr) {
          log::error("http", "cannot make a TLS connection: out of memory");
          std::abort();
        }
        // A client that closes without close_notify (killed, or a curl timeout) is an EOF like
        // any other, so evhttp's close callback cancels its requests.
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
        return bev;
      },
      this);
  }
  std::string why;
  const auto at = parse_host_port(opts.listen, &why);
  if (!at)
    throw std::runtime_error("http: listen address: " + why);
  const int port = at->port;
  auto* handle = evhttp_bind_socket_with_handle(http, at->host.c_str(), static_cast<ev_uint16_t>(port));
  if (!handle)
    throw std::runtime_error("http: cannot bind " + opts.listen + ": " + std::strerror(errno));
  sockaddr_storage ss{};
  ev_socklen_t len = sizeof ss;
  getsockname(evhttp_bound_socket_get_fd(handle), reinterpret_cast<sockaddr*>(&ss), &len);
  char name[128] = {};
  int bound_port = port;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    evutil_inet_ntop(AF_INET, &a->sin_addr, name, sizeof name);
    bound_port = ntohs(a->sin_port);
    bound = std::string(name) + ":" + std::to_string(bound_port);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    evutil_inet_ntop(AF_INET6, &a->sin6_addr, name, sizeof name);
    bound_port = ntohs(a->sin6_port);
    bound = "[" + std::string(name) + "]:" + std::to_string(bound_port);
  }
  wake = event_new(
    base, -1, EV_PERSIST, [](evutil_socket_t, short, void* arg) { static_cast<http_io*>(arg)->drain_outbox(); }, this);
  event_add(wake, nullptr);
  poll = event_new(
    base, -1, EV_PERSIST, [](evutil_socket_t, short, void* arg) { static_cast<http_io*>(arg)->check_closed(); }, this);
  const timeval every{0, 20 * 1000};
  event_add(poll, &every);
  thread = std::thread([this] { event_base_dispatch(base); });
}

void http_io::shutdown() {
  if (!thread.joinable())
    return;
  running = false;
  event_base_loopbreak(base);
  thread.join();
  evhttp_free(http);
  event_free(wake);
  event_free(poll);
  event_base_free(base);
  http = nullptr;
  wake = nullptr;
  base = nullptr;
}

} // namespace lf::gateway
