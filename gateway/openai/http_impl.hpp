#pragma once
/// The HTTP gateway's shared state (internal to gateway/http_*.cpp): the evhttp event loop, the
/// outbox the gateway actor fills, and the messages between the two.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include "actors/interfaces.hpp"
#include "gateway/openai/http_options.hpp"

struct event_base;
struct event;
struct evhttp;
struct evhttp_request;
struct evhttp_connection;

namespace lf::gateway {

// Loop -> actor: http_request_in, a request the door let through; (http_gone_atom, id) when its
// connection closes.
using http_gone_atom = caf::atom_constant<caf::atom("lf_httpgon")>;
using http_poll_atom = caf::atom_constant<caf::atom("lf_httppol")>;
using http_drain_atom = caf::atom_constant<caf::atom("lf_httpdrn")>;

/// What a request asks of the actor (evhttp has checked the method and the size).
/// `model`: GET /v1/models/{id}, the id (URL-decoded) is the body. `tokenize`, `detokenize`:
/// vLLM's POST /tokenize and /detokenize.
enum class http_endpoint : std::uint8_t { completions, chat, models, ready, metrics, stats, adapters, model,
                                          tokenize, detokenize };

/// Loop -> actor: a request the door let through.
struct http_request_in {
  std::uint64_t id = 0;  ///< the loop's id of the request, on every reply to it
  http_endpoint endpoint = http_endpoint::completions;
  /// As received; `model`: the id (URL-decoded); `adapters`: "op\nname\nbody".
  std::string body;
  std::string key_name;  ///< the caller's API key's name; empty when anonymous
  std::string tenant;    ///< the key's tenant; empty when anonymous
  std::string remote;    ///< the peer's address, for audit lines
};

/// Actor -> loop: what to do with HTTP request `id`.
struct http_out {
  enum class op : std::uint8_t { reply, start, chunk, end } what = op::reply;
  std::uint64_t id = 0;
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct http_io {
  caf::actor_system& sys;
  actors::router_actor router;
  http_options opts;
  caf::actor actor;
  std::string bound;
  std::unique_ptr<tls_context> tls;  ///< set when serving HTTPS

  // Event loop (touched on its thread only, except `wake` and `base` for event_active/loopbreak).
  event_base* base = nullptr;
  evhttp* http = nullptr;
  event* wake = nullptr;
  event* poll = nullptr;  ///< every 20 ms: check_closed()
  std::thread thread;
  std::uint64_t next_id = 1;
  std::unordered_map<std::uint64_t, evhttp_request*> reqs;
  std::unordered_map<evhttp_connection*, std::unordered_set<std::uint64_t>> by_conn;
  std::unordered_map<std::uint64_t, evhttp_connection*> conn_of;
  /// Requests whose reply has not started: evhttp does not watch their sockets (check_closed).
  std::unordered_set<std::uint64_t> waiting;

  std::mutex out_m;
  std::deque<http_out> outbox;
  std::atomic<bool> accepting{true}, running{true};
  std::atomic<std::size_t> live{0};
  std::atomic<std::size_t> connections{0};

  http_io(caf::actor_system& s, actors::router_actor r, http_options o)
    : sys(s), router(std::move(r)), opts(std::move(o)) {
    if (!opts.limiter)
      opts.limiter = std::make_shared<shared_rate_limiter>();
  }

  /// Queues `o` for the loop and wakes it (any thread).
  void post(http_out o);
  /// Queues all of `out`, in order, with one wake (any thread).
  void post(std::vector<http_out> out);

  // -- loop thread (http_loop.cpp) --
  void start();  ///< binds, spawns the thread; throws on a bad address
  void on_request(evhttp_request* req);
  void on_close(evhttp_connection* conn);
  void drain_outbox();
  void check_closed();  ///< drops connections of `waiting` requests whose client has closed its end
  /// Registers a request the actor will answer; returns its id.
  std::uint64_t track(evhttp_request* req);
  void forget(std::uint64_t id);
  void shutdown();  ///< stops the loop and joins (the caller's thread)
};

/// The gateway actor (http_gateway.cpp).
caf::actor spawn_http_actor(caf::actor_system& sys, std::shared_ptr<http_io> io);

/// The dashboard page (dashboard.html, embedded by the build).
extern const char* const dashboard_html;

} // namespace lf::gateway

// From the loop thread to the actor of the same process, never serialized: no type id, no inspect.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(lf::gateway::http_request_in)
