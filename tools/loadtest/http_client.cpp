#include "tools/loadtest/http_client.hpp"

#include <atomic>
#include <deque>
#include <future>
#include <mutex>
#include <stdexcept>
#include <csignal>
#include <thread>
#include <vector>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <nlohmann/json.hpp>

#include "gateway/common/host_port.hpp"
#include "tools/loadtest/http_reuse.hpp"

namespace lf::loadtest {

using json = nlohmann::json;

serve_errc errc_from_http(int status, const std::string& code) {
  for (int i = 1; i <= static_cast<int>(last_serve_errc); ++i)
    if (to_string(static_cast<serve_errc>(i)) == code)
      return static_cast<serve_errc>(i);
  switch (status) {
    case 400: return serve_errc::invalid_request;
    case 404: return serve_errc::unknown_adapter;
    case 429: return serve_errc::overloaded;
    case 503: return serve_errc::shutting_down;
    case 504: return serve_errc::timeout;
    default: return serve_errc::internal;
  }
}

namespace {

/// One connection of the pool. libevent calls the close callback whenever it closes the socket
/// (the server closed the idle connection, the reply said `Connection: close`, a failure): such
/// a connection is never handed out as a reused one. Freed only from the loop's wake-up, never
/// inside one of its own callbacks (libevent still touches it after them).
struct pooled_conn {
  evhttp_connection* evcon = nullptr;
  bool closed = false;  ///< its socket was closed after it was opened

  pooled_conn(event_base* base, const std::string& host, int port)
      : evcon(evhttp_connection_base_new(base, nullptr, host.c_str(), static_cast<ev_uint16_t>(port))) {
    evhttp_connection_set_timeout(evcon, 600);
    evhttp_connection_set_closecb(evcon, [](evhttp_connection*, void* arg) {
      static_cast<pooled_conn*>(arg)->closed = true;
    }, this);
  }
  ~pooled_conn() {
    evhttp_connection_set_closecb(evcon, nullptr, nullptr);
    evhttp_connection_free(evcon);
  }
  pooled_conn(const pooled_conn&) = delete;
  pooled_conn& operator=(const pooled_conn&) = delete;
};

/// One request in flight.
struct call {
  struct http_client::impl* owner = nullptr;
  client::stream_callbacks cb;
  std::unique_ptr<pooled_conn> conn;  ///< the connection it went out on
  std::string path, body;  ///< kept to send it again after a stale connection; empty body: GET
  http_attempt attempt;    ///< the current attempt (http_reuse.hpp)
  std::string buf;  ///< SSE bytes not yet split into events
  client::result res;
  std::uint32_t index = 0;
  bool done_seen = false;
  bool raw = false;  ///< a plain JSON reply (GET /v1/models): kept in `buf`, not parsed as SSE
};

} // namespace

struct http_client::impl {
  std::string host, model;
  int port = 80;
  event_base* base = nullptr;
  event* wake = nullptr;
  std::thread thread;
  std::mutex m;
  std::deque<std::unique_ptr<call>> queue;  ///< waiting for the loop
  std::vector<std::unique_ptr<pooled_conn>> idle;     ///< kept alive after a complete reply
  std::vector<std::unique_ptr<pooled_conn>> retired;  ///< freed at the loop's next wake-up
  std::atomic<std::uint64_t> stale_resends{0};
  bool stopping = false;  ///< under m: the loop breaks at its next wake-up

  /// Stops the loop thread from inside the loop (a loopbreak from outside is lost if it comes
  /// before the loop starts) and joins it; frees the connections, the wake event and the base.
  void shutdown();
  void drain_queue();
  /// Sends `c` on an idle connection, or a new one (always a new one when `fresh`).
  void start(std::unique_ptr<call> c, bool fresh = false);
  /// Back to the idle pool when `keep`, otherwise to be freed.
  void release(std::unique_ptr<pooled_conn> conn, bool keep);
  void on_chunk(call& c, evhttp_request* req);
  void finish(call* c, evhttp_request* req);
  void parse_events(call& c);
};

void http_client::impl::parse_events(call& c) {
  std::size_t at;
  while ((at = c.buf.find("\n\n")) != std::string::npos) {
    const auto event = c.buf.substr(0, at);
    c.buf.erase(0, at + 2);
    if (event.rfind("data: ", 0) != 0)
      continue;
    const auto payload = event.substr(6);
    if (payload == "[DONE]") {
      c.done_seen = true;
      continue;
    }
    const auto j = json::parse(payload, nullptr, false);
    if (j.is_discarded())
      continue;
    if (j.contains("error")) {
      const auto& e = j["error"];
      c.res.error = errc_from_http(500, e.value("code", json()).is_string() ? e["code"].get<std::string>() : "");
      c.res.message = e.value("message", std::string("error event"));
      continue;
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      c.res.usage.prompt_tokens = j["usage"].value("prompt_tokens", 0u);
      c.res.usage.completion_tokens = j["usage"].value("completion_tokens", 0u);
      if (j["usage"].contains("prompt_tokens_details") && j["usage"]["prompt_tokens_details"].is_object())
        c.res.usage.cached_tokens = j["usage"]["prompt_tokens_details"].value("cached_tokens", 0u);
    }
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
      continue;
    const auto& ch = j["choices"][0];
    std::string text;
    if (ch.contains("text") && ch["text"].is_string())
      text = ch["text"];
    else if (ch.contains("delta") && ch["delta"].contains("content") && ch["delta"]["content"].is_string())
      text = ch["delta"]["content"];
    if (ch.contains("finish_reason") && ch["finish_reason"].is_string())
      c.res.finish_reason = ch["finish_reason"];
    if (!text.empty()) {
      c.res.text += text;
      proto::token_msg t;
      t.text = text;
      t.index = c.index++;
      if (c.cb.on_token)
        c.cb.on_token(t);
    }
  }
}

void http_client::impl::on_chunk(call& c, evhttp_request* req) {
  c.attempt.response_started = true;
  auto* in = evhttp_request_get_input_buffer(req);
  const auto n = evbuffer_get_length(in);
  const auto old = c.buf.size();
  c.buf.resize(old + n);
  evbuffer_remove(in, c.buf.data() + old, n);
  if (!c.raw)
    parse_events(c);
}

void http_client::impl::release(std::unique_ptr<pooled_conn> conn, bool keep) {
  if (keep) {
    idle.push_back(std::move(conn));
  } else {
    retired.push_back(std::move(conn));
    event_active(wake, EV_READ, 0);
  }
}

void http_client::impl::finish(call* raw, evhttp_request* req) {
  std::unique_ptr<call> c(raw);
  const int status = req ? evhttp_request_get_response_code(req) : 0;
  if (req && status != 0)
    on_chunk(*c, req);
  // A complete reply leaves the connection open unless it said otherwise (or libevent closed it);
  // after a failure libevent has closed it.
  bool keep = false;
  if (status != 0 && !c->conn->closed) {
    const char* connection = evhttp_find_header(evhttp_request_get_input_headers(req), "Connection");
    keep = reusable_after_reply(req->major, req->minor, connection ? connection : "");
  }
  release(std::move(c->conn), keep);
  if (status == 0 && resend_on_fresh_connection(c->attempt)) {
    // A stale keep-alive connection: the server closed it before reading this request or before
    // answering it, and nothing came back. Once more on a new connection, counted apart.
    ++stale_resends;
    ++c->attempt.resends;
    start(std::move(c), true);
    return;
  }
  if (status == 0) {
    c->res.error = serve_errc::internal;
    c->res.message = "connection to " + host + ":" + std::to_string(port) + " failed";
  } else if (status != 200) {
    const auto j = json::parse(c->buf, nullptr, false);
    std::string code;
    c->res.message = "HTTP " + std::to_string(status);
    if (!j.is_discarded() && j.contains("error") && j["error"].is_object()) {
      if (j["error"].contains("code") && j["error"]["code"].is_string())
        code = j["error"]["code"];
      c->res.message = j["error"].value("message", c->res.message);
    }
    c->res.error = errc_from_http(status, code);
  } else if (!c->done_seen && c->res.ok() && !c->raw) {
    c->res.error = serve_errc::internal;
    c->res.message = "the stream ended without [DONE]";
  }
  if (c->cb.on_done)
    c->cb.on_done(c->res);
}

void http_client::impl::start(std::unique_ptr<call> c, bool fresh) {
  // An idle connection whose socket libevent closed meanwhile (the server closed it) would
  // reconnect: it is not a reused one, so it goes, and so does the stale-connection rule with it.
  while (!idle.empty() && idle.back()->closed) {
    release(std::move(idle.back()), false);
    idle.pop_back();
  }
  c->attempt = http_attempt{false, false, false, c->attempt.resends};
  if (!fresh && !idle.empty()) {
    c->conn = std::move(idle.back());
    idle.pop_back();
    c->attempt.reused = true;
  } else {
    c->conn = std::make_unique<pooled_conn>(base, host, port);
  }
  auto* raw = c.release();
  auto* req = evhttp_request_new([](evhttp_request* r, void* arg) {
    auto* c = static_cast<call*>(arg);
    c->owner->finish(c, r);
  }, raw);
  evhttp_request_set_chunked_cb(req, [](evhttp_request* r, void* arg) {
    auto* c = static_cast<call*>(arg);
    c->owner->on_chunk(*c, r);
  });
  // What counts as "some of the response came back": libevent says nothing before the header
  // block is complete, so a connection cut inside the status line or headers reads as none.
  evhttp_request_set_header_cb(req, [](evhttp_request*, void* arg) {
    static_cast<call*>(arg)->attempt.response_started = true;
    return 0;
  });
  // Called (before the done callback, with the request already freed) when the connection
  // fails: end-of-file and resets are EVREQ_HTTP_EOF; timeouts and bad headers are not.
  evhttp_request_set_error_cb(req, [](evhttp_request_error e, void* arg) {
    static_cast<call*>(arg)->attempt.connection_closed = e == EVREQ_HTTP_EOF;
  });
  auto* h = evhttp_request_get_output_headers(req);
  const auto host_header = host + ":" + std::to_string(port);
  evhttp_add_header(h, "Host", host_header.c_str());
  evhttp_add_header(h, "Content-Type", "application/json");
  evhttp_add_header(h, "Authorization", "Bearer unused");
  evbuffer_add(evhttp_request_get_output_buffer(req), raw->body.data(), raw->body.size());
  if (evhttp_make_request(raw->conn->evcon, req, raw->body.empty() ? EVHTTP_REQ_GET : EVHTTP_REQ_POST,
                          raw->path.c_str()) != 0)
    finish(raw, nullptr);
}

void http_client::impl::shutdown() {
  {
    std::lock_guard<std::mutex> g(m);
    stopping = true;
  }
  event_active(wake, EV_READ, 0);
  if (thread.joinable())
    thread.join();
  idle.clear();
  retired.clear();
  event_free(wake);
  event_base_free(base);
}

void http_client::impl::drain_queue() {
  retired.clear();  // outside every connection callback: safe to free them here
  std::deque<std::unique_ptr<call>> batch;
  {
    std::lock_guard<std::mutex> g(m);
    if (stopping) {
      event_base_loopbreak(base);
      return;
    }
    batch.swap(queue);
  }
  for (auto& c : batch)
    start(std::move(c));
}

http_client::http_client(const std::string& url, std::string model) : impl_(std::make_unique<impl>()) {
  auto& i = *impl_;
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0)
    rest = rest.substr(7);
  else
    throw std::invalid_argument("http client: the URL must start with http:// (got \"" + url + "\")");
  rest = rest.substr(0, rest.find('/'));
  if (rest.find(':') == std::string::npos || rest.back() == ']')
    rest += ":80";
  std::string why;
  const auto at = gateway::parse_host_port(rest, &why);
  if (!at)
    throw std::invalid_argument("http client: " + why);
  i.host = at->host;
  i.port = at->port;
  static const int threads_ready = evthread_use_pthreads();
  (void) threads_ready;
  // As in the HTTP gateway (gateway/openai/http_loop.cpp): evhttp's writev to a server that has closed
  // would raise SIGPIPE and end the load test; ignored, the write fails and the call ends.
  std::signal(SIGPIPE, SIG_IGN);
  i.base = event_base_new();
  i.wake = event_new(i.base, -1, EV_PERSIST, [](evutil_socket_t, short, void* arg) {
    static_cast<impl*>(arg)->drain_queue();
  }, &i);
  event_add(i.wake, nullptr);
  // NO_EXIT_ON_EMPTY: the wake event is never pending (only made active), so before the first
  // connection the base has no events, and a plain dispatch that starts before the first submit
  // would return at once and leave every request waiting forever (the HTTP client's tests met it).
  i.thread = std::thread([&i] { event_base_loop(i.base, EVLOOP_NO_EXIT_ON_EMPTY); });
  i.model = std::move(model);
  if (!i.model.empty())
    return;
  try {
    auto p = std::make_shared<std::promise<client::result>>();
    auto fut = p->get_future();
    auto c = std::make_unique<call>();
    c->owner = &i;
    c->raw = true;
    c->path = "/v1/models";
    auto* raw = c.get();
    raw->cb.on_done = [p, raw](const client::result& r) {
      client::result out = r;
      out.text = raw->buf;
      p->set_value(out);
    };
    {
      std::lock_guard<std::mutex> g(i.m);
      i.queue.push_back(std::move(c));
    }
    event_active(i.wake, EV_READ, 0);
    if (fut.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
      throw std::runtime_error("no answer from " + url + "/v1/models within 10 s");
    const auto r = fut.get();
    const auto j = json::parse(r.text, nullptr, false);
    if (!r.ok())
      throw std::runtime_error("GET " + url + "/v1/models: " + r.message);
    if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty())
      throw std::runtime_error("GET " + url + "/v1/models: no models listed");
    i.model = j["data"][0].value("id", std::string());
  } catch (...) {
    i.shutdown();  // a joinable thread must not outlive a failed constructor
    throw;
  }
}

http_client::~http_client() { impl_->shutdown(); }

const std::string& http_client::model() const { return impl_->model; }

std::uint64_t http_client::stale_retries() const { return impl_->stale_resends.load(); }

void http_client::submit(const proto::submit_msg& m, client::stream_callbacks cb) {
  json body{{"model", m.adapter.empty() ? impl_->model : m.adapter},
            {"max_tokens", m.max_tokens},
            {"temperature", m.temperature},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}}};
  if (m.top_p != 1.0f)
    body["top_p"] = m.top_p;
  if (m.seed)
    body["seed"] = *m.seed;
  if (!m.stop.empty())
    body["stop"] = m.stop;
  if (m.ignore_eos)
    body["ignore_eos"] = true;  // lorafleet's extension; vLLM and llama.cpp's server know it too
  std::string path = "/v1/completions";
  if (m.is_chat()) {
    path = "/v1/chat/completions";
    json msgs = json::array();
    for (const auto& x : m.messages)
      msgs.push_back({{"role", std::string(proto::to_string(x.role))}, {"content", x.content}});
    body["messages"] = msgs;
  } else {
    body["prompt"] = m.prompt;
  }
  auto c = std::make_unique<call>();
  c->owner = impl_.get();
  c->cb = std::move(cb);
  c->path = std::move(path);
  c->body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  {
    std::lock_guard<std::mutex> g(impl_->m);
    impl_->queue.push_back(std::move(c));
  }
  event_active(impl_->wake, EV_READ, 0);
}

} // namespace lf::loadtest
