// The gateway: the ZeroMQ thread (socket I/O, frame checks, pings, ZAP) and the gateway actor
// (request bookkeeping, router traffic, encoding). See gateway.hpp.
#include "gateway/gateway.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <zmq.hpp>

#include "core/log.hpp"
#include "gateway/edge.hpp"
#include "gateway/gateway_book.hpp"
#include "gateway/gateway_stats.hpp"
#include "worker/engine/tokenizer.hpp"

namespace lf::gateway {

namespace {

using zmq_in_atom = caf::atom_constant<caf::atom("lf_zmq_in")>;
using gone_atom = caf::atom_constant<caf::atom("lf_gone")>;
using drain_atom = caf::atom_constant<caf::atom("lf_gwdrain")>;
using refused_atom = caf::atom_constant<caf::atom("lf_refused")>;

std::string as_string(const zmq::message_t& m) { return std::string(static_cast<const char*>(m.data()), m.size()); }

} // namespace

struct zmq_gateway::impl {
  caf::actor_system& sys;
  actors::router_actor router;
  gateway_options opts;
  zmq::context_t ctx{1};
  zmq::socket_t sock{ctx, zmq::socket_type::router};
  zmq::socket_t out_pull{ctx, zmq::socket_type::pull};
  zmq::socket_t out_push{ctx, zmq::socket_type::push};
  std::unique_ptr<zmq::socket_t> zap;
  std::mutex push_m;
  std::atomic<bool> accepting{true}, running{true};
  std::atomic<std::size_t> live{0};
  caf::actor actor;
  std::thread thread;
  std::string bound;

  impl(caf::actor_system& s, actors::router_actor r, gateway_options o)
    : sys(s), router(std::move(r)), opts(std::move(o)) {}

  /// Queues (identity, frame) for the ZeroMQ thread (any thread).
  void send_out(const std::string& identity, const std::string& frame) {
    std::lock_guard<std::mutex> g(push_m);
    out_push.send(zmq::buffer(identity), zmq::send_flags::sndmore);
    out_push.send(zmq::buffer(frame), zmq::send_flags::none);
  }

  void reply_now(const std::string& identity, const std::string& frame, std::set<std::string>& gone) {
    try {
      // Both frames or neither: a refused routing frame (EAGAIN at the peer's high-water mark)
      // must not be followed by the payload, which would then be read as a routing id.
      if (sock.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait)
          && sock.send(zmq::buffer(frame), zmq::send_flags::dontwait))
        return;
    } catch (const zmq::error_t&) {
      // EHOSTUNREACH: the peer is gone (ROUTER_MANDATORY)
    }
    if (gone.insert(identity).second)
      caf::anon_send(actor, gone_atom::value, identity);
  }

  void handle_zap() {
    std::vector<zmq::message_t> parts;
    zmq::message_t m;
    do {
      if (!zap->recv(m))
        return;
      parts.push_back(std::move(m));
    } while (parts.back().more());
    if (parts.size() < 6)
      return;
    bool ok = opts.allowed_client_keys.empty();
    if (!ok && as_string(parts[5]) == "CURVE" && parts.size() >= 7 && parts[6].size() == 32) {
      char z85[41] = {};
      zmq_z85_encode(z85, static_cast<const std::uint8_t*>(parts[6].data()), 32);
      ok = std::find(opts.allowed_client_keys.begin(), opts.allowed_client_keys.end(), z85)
           != opts.allowed_client_keys.end();
    }
    auto send = [&](const std::string& s, bool more) {
      zap->send(zmq::buffer(s), more ? zmq::send_flags::sndmore : zmq::send_flags::none);
    };
    send("1.0", true);
    send(as_string(parts[1]), true);
    send(ok ? "200" : "400", true);
    send(ok ? "OK" : "client key not allowed", true);
    send("", true);
    send("", false);
  }

  void on_client_frames(std::vector<zmq::message_t>& parts, std::set<std::string>& gone) {
    const auto identity = as_string(parts[0]);
    gone.erase(identity);  // it spoke: it is connected
    if (parts.size() != 2) {
      proto::error_msg e;
      e.code = serve_errc::invalid_request;
      e.message = "expected exactly one msgpack frame per message, got " + std::to_string(parts.size() - 1);
      reply_now(identity, proto::encode(e), gone);
      return;
    }
    const std::string_view payload(static_cast<const char*>(parts[1].data()), parts[1].size());
    auto decoded = proto::decode_client(payload);
    if (auto* err = std::get_if<proto::decode_error>(&decoded)) {
      log::debug("gateway", "frame refused", {{"reason", err->message}});
      // An error with an id ends that request for the client, so only the actor, which knows
      // the live requests, may send one (after every frame this connection sent before).
      if (err->id)
        caf::anon_send(actor, refused_atom::value, identity, err->id->value(), err->message);
      else
        reply_now(identity, proto::encode(proto::to_error_msg(*err)), gone);
      return;
    }
    if (std::holds_alternative<proto::ping_msg>(decoded)) {
      reply_now(identity, proto::encode(proto::pong_msg{}), gone);
      return;
    }
    caf::anon_send(actor, zmq_in_atom::value, identity, std::string(payload));
  }

  void run() {
    std::set<std::string> gone;  // identities reported gone, until they speak again
    while (running) {
      std::vector<zmq::pollitem_t> items{{static_cast<void*>(sock), 0, ZMQ_POLLIN, 0},
                                         {static_cast<void*>(out_pull), 0, ZMQ_POLLIN, 0}};
      if (zap)
        items.push_back({static_cast<void*>(*zap), 0, ZMQ_POLLIN, 0});
      try {
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds(100));
        if (items[0].revents & ZMQ_POLLIN) {
          for (int burst = 0; burst < 256; ++burst) {
            std::vector<zmq::message_t> parts;
            zmq::message_t m;
            if (!sock.recv(m, zmq::recv_flags::dontwait))
              break;
            parts.push_back(std::move(m));
            while (parts.back().more()) {
              zmq::message_t next;
              (void) sock.recv(next);
              parts.push_back(std::move(next));
            }
            on_client_frames(parts, gone);
          }
        }
        if (items[1].revents & ZMQ_POLLIN) {
          zmq::message_t id, frame;
          while (out_pull.recv(id, zmq::recv_flags::dontwait)) {
            (void) out_pull.recv(frame);
            const auto identity = as_string(id);
            if (!identity.empty() && !gone.count(identity))
              reply_now(identity, as_string(frame), gone);
          }
        }
        if (zap && (items[2].revents & ZMQ_POLLIN))
          handle_zap();
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM)
          return;
        // Anything else is about one frame; keep serving.
      }
    }
  }
};

namespace {

struct gw_state {
  gateway_book book;
  std::shared_ptr<zmq_gateway::impl> io;
  bool accepting = true;
  static inline const char* name = "lf_gateway";
};

using gw_self = caf::stateful_actor<gw_state>*;

/// Refuses a frame that carried client id `id`. When `id` names one of the connection's live
/// requests the error goes without it, or the client would take it for that request's terminal
/// reply while the request goes on.
void refuse_frame(gw_self self, const std::string& identity, proto::client_request_id id,
                  serve_errc code, std::string why) {
  proto::error_msg e;
  e.code = code;
  e.message = std::move(why);
  if (self->state.book.lookup(identity, id))
    e.message = "request id " + std::to_string(id.value())
                + " is live; this frame was refused and the request goes on: " + e.message;
  else
    e.id = id;
  self->state.io->send_out(identity, proto::encode(e));
}

void on_submit(gw_self self, const std::string& identity, proto::submit_msg m) {
  auto& st = self->state;
  auto reply_error = [&](serve_errc code, std::string why, std::uint32_t retry = 0) {
    proto::error_msg e;
    e.id = m.id;
    e.code = code;
    e.message = std::move(why);
    if (retry > 0)
      e.retry_after_ms = retry;
    st.io->send_out(identity, proto::encode(e));
  };
  if (!st.accepting) {
    refuse_frame(self, identity, m.id, serve_errc::shutting_down,
                 "the server is shutting down; not accepting requests");
    return;
  }
  auto added = st.book.add(identity, m.id, m.stream);
  if (auto* refusal = std::get_if<add_refusal>(&added)) {
    if (*refusal == add_refusal::duplicate_id)
      refuse_frame(self, identity, m.id, serve_errc::invalid_request,
                   "duplicate submit (ids must be unique among the connection's live requests)");
    else
      reply_error(serve_errc::overloaded, "too many live requests on this connection", 200);
    return;
  }
  const auto gid = std::get<gateway_id>(added);
  // The edge: the chat rendered and the prompt tokenized once; the router validates the draft.
  auto draft = draft_of(m, *st.io->opts.tokenizer, st.io->opts.max_prompt_bytes);
  if (auto* bad = std::get_if<check_failure>(&draft)) {
    st.book.end(gid);
    reply_error(bad->code, std::move(bad->message));
    return;
  }
  actors::generate_request req;
  req.id = gid;
  req.draft = std::move(std::get<request_draft>(draft));
  ++st.io->live;
  self->send(st.io->router, std::move(req));
}

/// `accepted` precedes the first token or done: a worker has admitted the request.
void send_accepted_once(gw_self self, gateway_entry& e) {
  if (e.accepted_sent)
    return;
  e.accepted_sent = true;
  self->state.io->send_out(e.identity, proto::encode(proto::accepted_msg{e.client_id}));
}

void end_request(gw_self self, gateway_id g) {
  self->state.book.end(g);
  --self->state.io->live;
}

caf::behavior gateway_actor(gw_self self, std::shared_ptr<zmq_gateway::impl> io) {
  self->state.io = std::move(io);
  self->state.book = gateway_book(self->state.io->opts.max_per_connection);
  return {
    [self](zmq_in_atom, const std::string& identity, const std::string& payload) {
      auto& st = self->state;
      auto decoded = proto::decode_client(payload);
      if (auto* s = std::get_if<proto::submit_msg>(&decoded)) {
        on_submit(self, identity, std::move(*s));
      } else if (auto* c = std::get_if<proto::cancel_msg>(&decoded)) {
        // A cancel for an id that is not live (finished a moment ago, never sent, or not sent
        // yet) is ignored: nothing may follow a request's terminal reply (docs/protocol.md).
        if (auto g = st.book.lookup(identity, c->id))
          self->send(st.io->router, actors::cancel_request{*g});
        else
          log::debug("gateway", "cancel for an id that is not live: ignored", {{"id", c->id.value()}});
      } else if (std::holds_alternative<proto::stats_msg>(decoded)) {
        auto io = st.io;
        const auto live = st.book.live();
        self->request(io->router, std::chrono::seconds(5), caf::get_atom::value)
          .then(
            [io, identity, live](const actors::router_stats& rs) {
              io->send_out(identity, proto::encode(flatten_stats(rs, live)));
            },
            [io, identity](const caf::error& err) {
              proto::error_msg e;
              e.code = serve_errc::internal;
              e.message = "stats: the router did not answer: " + io->sys.render(err);
              io->send_out(identity, proto::encode(e));
            });
      } else if (auto* d = std::get_if<proto::drain_msg>(&decoded)) {
        auto io = st.io;
        log::info("gateway", "drain asked for", {{"node", d->node}});
        self->request(io->router, std::chrono::seconds(10), actors::drain_atom::value, d->node)
          .then(
            [io, identity, node = d->node](std::uint32_t workers, std::uint32_t moved) {
              io->send_out(identity, proto::encode(proto::drained_msg{node, workers, moved}));
            },
            [io, identity](const caf::error& err) {
              proto::error_msg e;
              e.code = serve_errc::internal;
              e.message = "drain: the router did not answer: " + io->sys.render(err);
              io->send_out(identity, proto::encode(e));
            });
      }
    },
    [self](refused_atom, const std::string& identity, std::uint64_t id, std::string why) {
      refuse_frame(self, identity, proto::client_request_id{id}, serve_errc::invalid_request, std::move(why));
    },
    [self](const actors::token_event& ev) {
      auto* e = self->state.book.find(ev.id);
      if (e == nullptr)
        return;
      send_accepted_once(self, *e);
      if (!e->stream)
        return;
      proto::token_msg t;
      t.id = e->client_id;
      t.text = ev.text;
      t.token = ev.token;
      t.index = ev.index;
      ++e->tokens_sent;
      self->state.io->send_out(e->identity, proto::encode(t));
    },
    [self](const actors::done_event& ev) {
      auto* e = self->state.book.find(ev.id);
      if (e == nullptr)
        return;
      send_accepted_once(self, *e);
      proto::done_msg d;
      d.id = e->client_id;
      d.finish_reason = ev.finish_reason;
      d.usage = {ev.usage.prompt_tokens, ev.usage.completion_tokens, ev.usage.cached_tokens, ev.resumed};
      d.seed = ev.seed;
      d.timings = {ev.timings.queue_ms, ev.timings.ttft_ms, ev.timings.total_ms};
      if (!e->stream)
        d.text = ev.text;
      self->state.io->send_out(e->identity, proto::encode(d));
      end_request(self, ev.id);
    },
    [self](const actors::error_event& ev) {
      auto* e = self->state.book.find(ev.id);
      if (e == nullptr)
        return;
      if (ev.code == serve_errc::cancelled) {
        self->state.io->send_out(e->identity, proto::encode(proto::cancelled_msg{e->client_id}));
      } else {
        proto::error_msg m;
        m.id = e->client_id;
        m.code = ev.code;
        m.message = ev.message;
        if (ev.retry_after_ms > 0)
          m.retry_after_ms = ev.retry_after_ms;
        self->state.io->send_out(e->identity, proto::encode(m));
      }
      end_request(self, ev.id);
    },
    [self](gone_atom, const std::string& identity) {
      const auto gone = self->state.book.drop_connection(identity);
      for (auto g : gone) {
        self->send(self->state.io->router, actors::cancel_request{g});
        --self->state.io->live;
      }
      if (!gone.empty())
        log::info("gateway", "client gone: its requests are cancelled", {{"requests", gone.size()}});
    },
    [self](drain_atom, bool cancel_all) {
      log::info("gateway", cancel_all ? "stopping: cancelling what is live" : "not accepting new requests",
                {{"live", self->state.book.live()}});
      self->state.accepting = false;
      if (cancel_all)
        for (auto g : self->state.book.all())
          self->send(self->state.io->router, actors::cancel_request{g});
    },
  };
}

} // namespace

zmq_gateway::zmq_gateway(caf::actor_system& sys, actors::router_actor router, gateway_options opts)
  : impl_(std::make_shared<impl>(sys, std::move(router), std::move(opts))) {
  auto& io = *impl_;
  if (!io.opts.tokenizer)
    throw std::invalid_argument("gateway: no tokenizer (the gateway tokenizes prompts)");
  const auto name = "inproc://lf-gateway-" + std::to_string(reinterpret_cast<std::uintptr_t>(impl_.get()));
  io.out_pull.bind(name);
  io.out_push.connect(name);
  io.out_pull.set(zmq::sockopt::rcvhwm, 0);
  io.out_push.set(zmq::sockopt::sndhwm, 0);
  io.sock.set(zmq::sockopt::router_mandatory, 1);
  io.sock.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(4) << 20);
  io.sock.set(zmq::sockopt::sndhwm, io.opts.send_hwm);
  io.sock.set(zmq::sockopt::rcvhwm, io.opts.recv_hwm);
  io.sock.set(zmq::sockopt::linger, 0);
  if (!io.opts.curve_secret_key.empty()) {
    if (!io.opts.allowed_client_keys.empty()) {
      io.zap = std::make_unique<zmq::socket_t>(io.ctx, zmq::socket_type::rep);
      io.zap->bind("inproc://zeromq.zap.01");
    }
    io.sock.set(zmq::sockopt::curve_server, 1);
    io.sock.set(zmq::sockopt::curve_secretkey, io.opts.curve_secret_key);
    io.sock.set(zmq::sockopt::zap_domain, "lorafleet");
  }
  try {
    io.sock.bind(io.opts.endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("gateway: cannot bind " + io.opts.endpoint + ": " + e.what());
  }
  io.bound = io.sock.get(zmq::sockopt::last_endpoint);
  log::info("gateway", "listening", {{"endpoint", io.bound}, {"curve", !io.opts.curve_secret_key.empty()},
                                     {"client_allow_list", io.opts.allowed_client_keys.size()}});
  io.actor = sys.spawn(gateway_actor, impl_);
  io.thread = std::thread([p = impl_.get()] { p->run(); });
}

zmq_gateway::~zmq_gateway() { stop(); }

std::string zmq_gateway::endpoint() const { return impl_->bound; }

void zmq_gateway::stop_accepting() {
  impl_->accepting = false;
  caf::anon_send(impl_->actor, drain_atom::value, false);
}

std::size_t zmq_gateway::live() const { return impl_->live; }

void zmq_gateway::stop() {
  auto& io = *impl_;
  if (!io.thread.joinable())
    return;
  caf::anon_send(io.actor, drain_atom::value, true);
  // Give the cancelled requests a moment to deliver their terminal replies.
  for (int i = 0; i < 100 && io.live > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the last frames flush
  io.running = false;
  io.thread.join();
  caf::anon_send_exit(io.actor, caf::exit_reason::user_shutdown);
}

} // namespace lf::gateway
