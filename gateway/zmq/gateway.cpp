// The gateway actor (request bookkeeping, router traffic, encoding) and zmq_gateway, which owns it
// and the ZeroMQ thread (gateway/zmq/zmq_io.*). See gateway.hpp.
#include "gateway/zmq/gateway.hpp"
#include "gateway/zmq/zmq_io.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <zmq.hpp>

#include "core/log.hpp"
#include "gateway/common/audit.hpp"
#include "gateway/zmq/access.hpp"
#include "gateway/zmq/gateway_book.hpp"
#include "gateway/zmq/stats_reply.hpp"
#include "gateway/zmq/submit_draft.hpp"
#include "text/tokenizer.hpp"

namespace lf::gateway {

namespace {

using drain_atom = caf::atom_constant<caf::atom("lf_gwdrain")>;

} // namespace


namespace {

struct gw_state {
  gateway_book book;
  std::shared_ptr<zmq_gateway::impl> io;
  bool accepting = true;
  /// While an event_batch is taken: its frames, handed to the socket thread together.
  std::optional<std::vector<std::pair<std::string, std::string>>> frames;
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

/// A request refused by its key's rate limits: the code, the message and when to retry.
struct rate_refusal {
  serve_errc code = serve_errc::rate_limited;
  std::string message;
  std::uint32_t retry_after_ms = 0;
};

/// Why a keyed caller's request is over its key's rate limits (rpm= / tpm=), charging it when it
/// is not: one request and prompt + max_tokens tokens, from the buckets the process's HTTP gateway
/// shares. Nothing for a key without limits.
std::optional<rate_refusal> over_rate_limit(gw_self self, const auth::caller& who, const request_draft& d) {
  const auto& opts = self->state.io->opts;
  const auto* key = opts.keys && who.keyed() ? opts.keys->find_name(who.name) : nullptr;
  if (key == nullptr || !key->limits.any())
    return std::nullopt;
  const auto tokens = d.prompt.size() + static_cast<std::size_t>(std::max(0, d.params.max_tokens));
  const auto v = opts.limiter->admit(who.name, key->limits, tokens, std::chrono::steady_clock::now());
  if (v.allowed)
    return std::nullopt;
  if (v.never)
    return rate_refusal{serve_errc::invalid_request,
                         "the request needs " + std::to_string(tokens) + " tokens (prompt + max_tokens), more than key \""
                           + who.name + "\" may use in a minute (" + std::to_string(v.limit_tokens) + ")", 0};
  const bool requests = v.limited_requests && (v.remaining_requests == 0 || !v.limited_tokens);
  return rate_refusal{serve_errc::rate_limited,
                       "rate limit reached for key \"" + who.name + "\" on "
                         + (requests ? "requests per minute (" + std::to_string(v.limit_requests) + ")"
                                     : "tokens per minute (" + std::to_string(v.limit_tokens) + ")")
                         + "; retry in " + reset_text(v.retry_after_ms),
                       std::max<std::uint32_t>(1, v.retry_after_ms)};
}

void on_submit(gw_self self, const std::string& identity, proto::submit_msg m, const auth::caller& who) {
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
  if (who.keyed())
    m.tenant = who.tenant;  // an authenticated client's tenant (its key's) takes precedence
  // The edge: the chat rendered and the prompt tokenized once; the router validates the draft.
  auto draft = draft_of(m, *st.io->opts.tokenizer, st.io->opts.max_prompt_bytes);
  if (auto* bad = std::get_if<check_failure>(&draft)) {
    st.book.end(gid);
    reply_error(bad->code, std::move(bad->message));
    return;
  }
  if (auto why = over_rate_limit(self, who, std::get<request_draft>(draft))) {
    st.book.end(gid);
    reply_error(why->code, std::move(why->message), why->retry_after_ms);
    return;
  }
  actors::generate_request req;
  req.id = gid;
  req.draft = std::move(std::get<request_draft>(draft));
  req.window = m.stream ? m.window.value_or(0) : 0;  // a request that does not stream needs no credits
  req.continued = std::move(m.continued);  // a client moving a request here from a lost gateway
  ++st.io->live;
  self->send(st.io->router, std::move(req));
}

/// A reply frame for a client: now, or with the rest of the event_batch being taken.
void send_event(gw_self self, const std::string& identity, std::string frame) {
  if (self->state.frames)
    self->state.frames->emplace_back(identity, std::move(frame));
  else
    self->state.io->send_out(identity, frame);
}

/// `accepted` precedes the first token or done: a worker has admitted the request.
void send_accepted_once(gw_self self, gateway_entry& e) {
  if (e.accepted_sent)
    return;
  e.accepted_sent = true;
  send_event(self, e.identity, proto::encode(proto::accepted_msg{e.client_id}));
}

/// The error handler of a question the gateway asks the router for a client (`what`: stats,
/// drain): the client gets an id-less `internal` error naming it.
auto router_silent(std::shared_ptr<zmq_gateway::impl> io, std::string identity, const char* what) {
  return [io = std::move(io), identity = std::move(identity), what](const caf::error& err) {
    proto::error_msg e;
    e.code = serve_errc::internal;
    e.message = std::string(what) + ": the router did not answer: " + io->sys.render(err);
    io->send_out(identity, proto::encode(e));
  };
}

/// The one gate for every client message (zmq_in_atom): a message the caller's role may not send
/// gets an id-less `error` (unauthenticated / forbidden) and an audit line; an admin operation
/// let through gets its audit line when it ends (audited()).
bool admitted(gw_self self, const std::string& identity, const proto::client_decode_result& msg,
              const auth::caller& who, const std::string& peer) {
  const auto op = op_class_of(msg);
  const auto a = auth::check_zmq(who, self->state.io->curve_keys, op);
  if (a.verdict == auth::verdict::allowed)
    return true;
  audit(who, peer, "zmq", op_name_of(msg), auth::to_string(a.verdict), a.why);
  const auto code = a.verdict == auth::verdict::unauthenticated ? serve_errc::unauthenticated : serve_errc::forbidden;
  if (std::holds_alternative<proto::adapters_msg>(msg)) {  // the registry's own reply carries errors
    proto::adapters_result r;
    r.error = code;
    r.message = a.why;
    self->state.io->send_out(identity, proto::encode(r));
    return false;
  }
  proto::error_msg e;
  e.code = code;
  e.message = a.why;
  if (const auto* s = std::get_if<proto::submit_msg>(&msg))
    e.id = s->id;  // a refused submit ends that request
  self->state.io->send_out(identity, proto::encode(e));
  return false;
}

/// The error handler of an admin question to the router: router_silent's reply and the audit line.
auto audited_silent(std::shared_ptr<zmq_gateway::impl> io, std::string identity, const char* what,
                    auth::caller who, std::string peer, std::string op) {
  return [silent = router_silent(io, identity, what), who = std::move(who), peer = std::move(peer),
          op = std::move(op)](const caf::error& err) {
    audit(who, peer, "zmq", op, "no_answer");
    silent(err);
  };
}

void end_request(gw_self self, gateway_id g) {
  self->state.book.end(g);
  --self->state.io->live;
}

void on_token(gw_self self, const actors::token_event& ev) {
  auto* e = self->state.book.find(ev.id);
  if (e == nullptr)
    return;
  send_accepted_once(self, *e);
  if (!e->stream) {
    if (ev.has_logprobs && e->logprobs.size() < proto::max_done_logprobs) {
      e->lp_tokens.push_back(ev.token);
      e->logprobs.push_back(ev.logprobs);
    }
    return;
  }
  proto::token_msg t;
  t.id = e->client_id;
  t.text = ev.text;
  t.token = ev.token;
  t.index = ev.index;
  if (ev.has_logprobs)
    t.logprobs = ev.logprobs;
  ++e->tokens_sent;
  send_event(self, e->identity, proto::encode(t));
}

void on_done(gw_self self, const actors::done_event& ev) {
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
  if (!e->stream) {
    d.text = ev.text;
    d.tokens = std::move(e->lp_tokens);
    d.logprobs = std::move(e->logprobs);
  }
  send_event(self, e->identity, proto::encode(d));
  end_request(self, ev.id);
}

void on_error(gw_self self, const actors::error_event& ev) {
  auto* e = self->state.book.find(ev.id);
  if (e == nullptr)
    return;
  if (ev.code == serve_errc::cancelled) {
    send_event(self, e->identity, proto::encode(proto::cancelled_msg{e->client_id}));
  } else {
    proto::error_msg m;
    m.id = e->client_id;
    m.code = ev.code;
    m.message = ev.message;
    if (ev.retry_after_ms > 0)
      m.retry_after_ms = ev.retry_after_ms;
    send_event(self, e->identity, proto::encode(m));
  }
  end_request(self, ev.id);
}

/// A worker step's events: tokens, then terminals (the router's order), frames sent together.
void on_batch(gw_self self, const actors::event_batch& b) {
  self->state.frames.emplace();
  self->state.frames->reserve(b.tokens.size() + 2 * (b.done.size() + b.errors.size()));
  b.dispatch([&](const actors::token_event& ev) { on_token(self, ev); },
             [&](const actors::done_event& ev) { on_done(self, ev); },
             [&](const actors::error_event& ev) { on_error(self, ev); });
  auto frames = std::move(*self->state.frames);
  self->state.frames.reset();
  self->state.io->send_out(frames);
}

caf::behavior gateway_actor(gw_self self, std::shared_ptr<zmq_gateway::impl> io) {
  self->state.io = std::move(io);
  self->state.book = gateway_book(self->state.io->opts.max_per_connection);
  return {
    [self](zmq_in_atom, const std::string& identity, const std::string& payload, const std::string& key_name,
           const std::string& peer) {
      auto& st = self->state;
      auto decoded = proto::decode_client(payload);
      const auto who = zmq_caller(st.io->opts.keys.get(), key_name, st.io->local);
      if (!admitted(self, identity, decoded, who, peer))
        return;
      if (auto* s = std::get_if<proto::submit_msg>(&decoded)) {
        on_submit(self, identity, std::move(*s), who);
      } else if (auto* c = std::get_if<proto::cancel_msg>(&decoded)) {
        // A cancel for an id that is not live (finished a moment ago, never sent, or not sent
        // yet) is ignored: nothing may follow a request's terminal reply (docs/protocol.md).
        if (auto g = st.book.lookup(identity, c->id))
          self->send(st.io->router, actors::cancel_request{*g});
        else
          log::debug("gateway", "cancel for an id that is not live: ignored", {{"id", c->id.value()}});
      } else if (auto* cr = std::get_if<proto::credit_msg>(&decoded)) {
        if (auto g = st.book.lookup(identity, cr->id))  // not live: ignored, as a cancel is
          self->send(st.io->router, actors::credit_request{*g, cr->tokens});
      } else if (std::holds_alternative<proto::stats_msg>(decoded)) {
        auto io = st.io;
        const auto live = st.book.live();
        self->request(io->router, std::chrono::seconds(5), caf::get_atom::value)
          .then(
            [io, identity, live](const actors::router_stats& rs) {
              io->send_out(identity, proto::encode(flatten_stats(rs, live)));
            },
            router_silent(io, identity, "stats"));
      } else if (auto* d = std::get_if<proto::drain_msg>(&decoded)) {
        auto io = st.io;
        log::info("gateway", "drain asked for", {{"node", d->node}});
        const auto op = op_name_of(decoded);
        self->request(io->router, std::chrono::seconds(10), actors::drain_atom::value, d->node)
          .then(
            [io, identity, node = d->node, who, peer, op](std::uint32_t workers, std::uint32_t moved) {
              audit(who, peer, "zmq", op, "ok");
              io->send_out(identity, proto::encode(proto::drained_msg{node, workers, moved}));
            },
            audited_silent(io, identity, "drain", who, peer, op));
      } else if (auto* u = std::get_if<proto::undrain_msg>(&decoded)) {
        // An admin operation like drain (the same door): its undo.
        auto io = st.io;
        log::info("gateway", "undrain asked for", {{"node", u->node}});
        const auto op = op_name_of(decoded);
        self->request(io->router, std::chrono::seconds(10), actors::undrain_atom::value, u->node)
          .then(
            [io, identity, node = u->node, who, peer, op](std::uint32_t workers) {
              audit(who, peer, "zmq", op, "ok");
              io->send_out(identity, proto::encode(proto::undrained_msg{node, workers}));
            },
            audited_silent(io, identity, "undrain", who, peer, op));
      } else if (auto* a = std::get_if<proto::adapters_msg>(&decoded)) {
        auto io = st.io;
        if (a->op != "list")
          log::info("gateway", "adapter registry operation", {{"op", a->op}, {"adapter", a->name}, {"path", a->path}});
        const auto op = a->op == "list" ? std::string() : op_name_of(decoded) + " " + a->name;
        self->request(io->router, std::chrono::seconds(90), actors::adapter_command{a->op, a->name, a->path})
          .then(
            [io, identity, who, peer, op](const actors::adapter_reply& r) {
              if (!op.empty())
                audit(who, peer, "zmq", op, r.error == serve_errc::none ? std::string_view("ok") : to_string(r.error));
              io->send_out(identity, proto::encode(adapters_result_of(r)));
            },
            audited_silent(io, identity, "adapters", who, peer, op.empty() ? "adapters.list" : op));
      }
    },
    [self](refused_atom, const std::string& identity, std::uint64_t id, std::string why) {
      refuse_frame(self, identity, proto::client_request_id{id}, serve_errc::invalid_request, std::move(why));
    },
    [self](const actors::token_event& ev) { on_token(self, ev); },
    [self](const actors::done_event& ev) { on_done(self, ev); },
    [self](const actors::error_event& ev) { on_error(self, ev); },
    [self](const actors::event_batch& b) { on_batch(self, b); },
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
  // The key file's CURVE clients join the allow-list under their names (their roles: door.hpp).
  if (io.opts.keys)
    for (const auto& k : io.opts.keys->keys())
      if (k.curve) {
        io.curve_keys = true;
        io.opts.allowed_client_keys.push_back(k.key);
        io.opts.client_key_names[k.key] = k.name;
      }
  if (io.curve_keys && io.opts.curve_secret_key.empty())
    throw std::invalid_argument("gateway: the API key file names CURVE client keys but the gateway has no CURVE "
                                "secret key (--curve-secret-key, [security.clients] secret_key)");
  io.local = auth::local_endpoint(io.opts.endpoint);
  if (!io.curve_keys && !io.local)
    log::warn("gateway", "listening beyond loopback without CURVE client keys in an API key file: admin messages "
                         "(drain, adapter changes) are refused",
              {{"endpoint", io.opts.endpoint}});
  if (!io.opts.curve_secret_key.empty()) {
    if (!io.opts.allowed_client_keys.empty() || !io.opts.client_key_names.empty()) {
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
