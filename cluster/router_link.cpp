// The router link (cluster/router_link.hpp): the gateways' router, every replica's client.
#include "cluster/router_link.hpp"

#include <map>
#include <random>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/stateful_actor.hpp>

#include "cluster/launch_plan.hpp"
#include "core/log.hpp"
#include "gateway/common/router_link_book.hpp"

namespace lf::cluster {

namespace {

using connect_tag = caf::atom_constant<caf::atom("lf_lkconn")>;
using tick_tag = caf::atom_constant<caf::atom("lf_lktick")>;
using gateway::link_clock;
using gateway::link_stream_id;

/// A gateway's request as the link knows it: where its events go, under which id.
struct client_ref {
  actors::event_sink sink;
  caf::actor_addr addr;
  actors::sink_request_id id;
};

/// A replica: its handle while up, its reconnect backoff.
struct replica {
  router_target target;
  actors::router_actor handle;  ///< null while down
  bool connecting = false;
  backoff retry{std::chrono::milliseconds(200), std::chrono::milliseconds(5000)};
};

struct link_state {
  static inline const char* name = "lf.router_link";

  router_link_options opts;
  std::vector<replica> replicas;
  gateway::router_link_book book{0};
  std::map<link_stream_id, client_ref> clients;
  std::map<std::pair<caf::actor_addr, std::uint64_t>, link_stream_id> by_client;
  std::map<caf::actor_addr, std::size_t> sinks;  ///< live streams per gateway (monitored)
  std::mt19937_64 seeds{std::random_device{}()};

  void say(const std::string& line) const {
    if (opts.log)
      opts.log(line);
    else
      log::info("link", line);
  }
};

using link_self = caf::stateful_actor<link_state>*;

/// The replica `addr` is, if any.
std::optional<std::size_t> replica_of(link_self self, const caf::actor_addr& addr) {
  auto& rs = self->state.replicas;
  for (std::size_t r = 0; r < rs.size(); ++r)
    if (rs[r].handle && rs[r].handle.address() == addr)
      return r;
  return std::nullopt;
}

/// Forgets stream `id` (its terminal is on its way to the client); its client, if it was live.
std::optional<client_ref> forget(link_self self, link_stream_id id) {
  auto& st = self->state;
  auto it = st.clients.find(id);
  if (it == st.clients.end())
    return std::nullopt;
  auto c = it->second;
  st.by_client.erase({c.addr, c.id.value()});
  st.clients.erase(it);
  st.book.close(id);
  if (auto s = st.sinks.find(c.addr); s != st.sinks.end() && --s->second == 0) {
    self->demonitor(c.addr);
    st.sinks.erase(s);
  }
  return c;
}

/// Ends stream `id` with an error of the link's own.
void fail(link_self self, link_stream_id id, serve_errc code, std::string message) {
  if (auto c = forget(self, id))
    self->send(c->sink, actors::error_event{c->id, code, std::move(message), 0});
}

/// Sends waiting stream `id` on to a live replica other than `except`, if there is one (else it
/// keeps waiting: the next tick or a replica coming up tries again).
void carry_on(link_self self, link_stream_id id, std::optional<std::size_t> except = std::nullopt) {
  auto& st = self->state;
  const auto* s = st.book.find(id);
  if (s == nullptr || s->router)
    return;
  auto r = st.book.pick(except);
  if (!r)
    return;
  auto next = st.book.continue_on(id, *r, link_clock::now());
  if (std::holds_alternative<gateway::link_expired>(next))
    return fail(self, id, serve_errc::timeout, "deadline passed while the request waited for a router");
  auto& c = std::get<gateway::link_continuation>(next);
  log::debug("link", "stream continued", {{"stream", id}, {"router", st.replicas[*r].target.name},
                                          {"tokens", c.continued.size()}});
  self->send(st.replicas[*r].handle,
             actors::generate_request{actors::sink_request_id{id}, std::move(c.draft), c.window, std::move(c.continued)});
}

void connect(link_self self, std::size_t r);

/// Replica `r`'s connection is gone: its streams wait for another one.
void replica_down(link_self self, std::size_t r, const std::string& why) {
  auto& st = self->state;
  auto& rep = st.replicas[r];
  rep.handle = nullptr;
  const auto moved = st.book.router_down(r, link_clock::now());
  st.say("router " + rep.target.name + " lost (" + why + "): " + std::to_string(moved.size())
         + " stream(s) continue on another router");
  for (auto id : moved)
    carry_on(self, id);
  if (!rep.target.handle)  // a fixed handle (tests) is never reconnected
    self->delayed_send(self, rep.retry.next(), connect_tag::value, static_cast<std::uint64_t>(r));
}

void replica_up(link_self self, std::size_t r, actors::router_actor h) {
  auto& st = self->state;
  auto& rep = st.replicas[r];
  rep.handle = std::move(h);
  rep.retry.reset();
  self->monitor(rep.handle);
  st.book.router_up(r);
  st.say("router " + rep.target.name + " up");
  for (auto id : st.book.waiting())
    carry_on(self, id);
}

void connect(link_self self, std::size_t r) {
  auto& st = self->state;
  auto& rep = st.replicas[r];
  if (rep.handle || rep.connecting)
    return;
  rep.connecting = true;
  auto& sys = self->system();
  caf::io::middleman_actor mm = st.opts.tls ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
  self->request(mm, st.opts.connect_timeout, caf::connect_atom::value, rep.target.host, rep.target.port)
    .then(
      [self, r](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>& ifs) {
        auto& rp = self->state.replicas[r];
        rp.connecting = false;
        if (!ptr || !self->system().assignable<actors::router_actor>(ifs)) {
          self->delayed_send(self, rp.retry.next(), connect_tag::value, static_cast<std::uint64_t>(r));
          return;
        }
        replica_up(self, r, caf::actor_cast<actors::router_actor>(std::move(ptr)));
      },
      [self, r](const caf::error&) {
        auto& rp = self->state.replicas[r];
        rp.connecting = false;
        self->delayed_send(self, rp.retry.next(), connect_tag::value, static_cast<std::uint64_t>(r));
      });
}

void on_submit(link_self self, actors::generate_request& req) {
  auto& st = self->state;
  auto sender = self->current_sender();
  if (!sender)
    return;
  auto sink = caf::actor_cast<actors::event_sink>(sender);
  auto addr = caf::actor_cast<caf::actor_addr>(sender);
  auto r = st.book.pick();
  if (!r) {
    self->send(sink, actors::error_event{req.id, serve_errc::no_workers, "no router is reachable", 1000});
    return;
  }
  if (st.by_client.count({addr, req.id.value()})) {
    self->send(sink, actors::error_event{req.id, serve_errc::invalid_request,
                                         "request id " + std::to_string(req.id.value()) + " is already in use", 0});
    return;
  }
  if (!req.draft.params.seed)
    req.draft.params.seed = st.seeds();  // a continuation on another router needs it
  const auto id = st.book.open(req.draft, req.window, *r, link_clock::now(), req.continued);
  st.clients[id] = client_ref{sink, addr, req.id};
  st.by_client[{addr, req.id.value()}] = id;
  if (st.sinks[addr]++ == 0)
    self->monitor(addr);
  self->send(st.replicas[*r].handle,
             actors::generate_request{actors::sink_request_id{id}, std::move(req.draft), req.window,
                                      std::move(req.continued)});
}

/// Should terminal error `code` of a stream move it to another replica instead of ending it?
/// A replica that stops ends its streams with shutting_down; a continuation refused for want of
/// room (a replica that just came back has no workers yet) tries another.
bool moves_on(serve_errc code, const gateway::link_stream& s) {
  if (code == serve_errc::shutting_down)
    return true;
  return s.continuations > 0 && (code == serve_errc::no_workers || code == serve_errc::overloaded);
}

/// A replica's events: tokens recorded and forwarded (by the client's id, one batch per gateway,
/// tokens before terminals); a terminal ends its stream unless moves_on.
void on_events(link_self self, actors::event_batch& batch) {
  auto& st = self->state;
  auto r = replica_of(self, caf::actor_cast<caf::actor_addr>(self->current_sender()));
  if (!r)
    return;  // a replica already given up for lost: its streams moved on
  std::map<caf::actor_addr, std::pair<actors::event_sink, actors::event_batch>> out;
  auto to = [&](const client_ref& c) -> actors::event_batch& {
    auto& o = out[c.addr];
    o.first = c.sink;
    return o.second;
  };
  for (auto& ev : batch.tokens) {
    const link_stream_id id = ev.id.value();
    if (!st.book.token(id, *r, ev.index, ev.token))
      continue;
    const auto& c = st.clients.at(id);
    ev.id = c.id;
    to(c).tokens.push_back(std::move(ev));
  }
  for (auto& ev : batch.done) {
    const link_stream_id id = ev.id.value();
    if (!st.book.carried_by(id, *r))
      continue;
    if (const auto* s = st.book.find(id))
      ev.resumed += s->continuations;
    auto c = forget(self, id);
    ev.id = c->id;
    to(*c).done.push_back(std::move(ev));
  }
  std::vector<link_stream_id> again;  ///< moved on at once, to another replica (this one stops)
  for (auto& ev : batch.errors) {
    const link_stream_id id = ev.id.value();
    const auto* s = st.book.find(id);
    if (s == nullptr || !st.book.carried_by(id, *r))
      continue;
    if (moves_on(ev.code, *s)) {
      // A replica that stops: another one now. No room (a replica just back, without workers):
      // the next tick tries again, so a full cluster is not asked in a tight loop.
      st.book.wait(id, link_clock::now());
      if (ev.code == serve_errc::shutting_down)
        again.push_back(id);
      continue;
    }
    auto c = forget(self, id);
    ev.id = c->id;
    to(*c).errors.push_back(std::move(ev));
  }
  for (auto& [addr, o] : out)
    self->send(o.first, std::move(o.second));
  for (auto id : again)
    carry_on(self, id, *r);
}

/// A request the link hands to one replica (the best one up), which answers the asker itself.
template <class... Ts>
void ask_one(link_self self, Ts... xs) {
  auto& st = self->state;
  auto r = st.book.pick();
  if (!r) {
    self->make_response_promise().deliver(actors::make_serve_error(serve_errc::no_workers, "no router is reachable"));
    return;
  }
  self->delegate(st.replicas[*r].handle, std::move(xs)...);
}

/// `b`'s counters added to `a`'s; `a` keeps its own view of the workers (the replica with the
/// most is asked first, so its view is the one kept).
void add_counters(actors::router_stats& a, const actors::router_stats& b) {
  for (const auto& f : actors::router_fields)
    if (f.summed && f.u64 != nullptr)
      a.*f.u64 += b.*f.u64;
    else if (f.summed)
      a.*f.u32 += b.*f.u32;
}

/// The replicas' stats as one: the counters summed over every replica up, the workers (their
/// loads, per-worker metrics, states) as the replica with the most accepting workers sees them.
void ask_stats(link_self self) {
  auto& st = self->state;
  auto rp = self->make_response_promise();
  std::vector<std::size_t> up;
  for (std::size_t r = 0; r < st.replicas.size(); ++r)
    if (st.replicas[r].handle)
      up.push_back(r);
  if (up.empty()) {
    rp.deliver(actors::make_serve_error(serve_errc::no_workers, "no router is reachable"));
    return;
  }
  struct gather {
    std::vector<std::optional<actors::router_stats>> got;
    std::size_t left = 0;
  };
  auto g = std::make_shared<gather>();
  g->got.resize(up.size());
  g->left = up.size();
  auto finish = [rp, g]() mutable {
    std::optional<std::size_t> best;
    for (std::size_t k = 0; k < g->got.size(); ++k) {
      const auto& s = g->got[k];
      if (s && (!best || s->accepting > g->got[*best]->accepting
                || (s->accepting == g->got[*best]->accepting && s->workers > g->got[*best]->workers)))
        best = k;
    }
    if (!best)
      return rp.deliver(actors::make_serve_error(serve_errc::no_workers, "no router answered"));
    auto out = *g->got[*best];
    for (std::size_t k = 0; k < g->got.size(); ++k)
      if (k != *best && g->got[k])
        add_counters(out, *g->got[k]);
    rp.deliver(std::move(out));
  };
  for (std::size_t k = 0; k < up.size(); ++k)
    self->request(st.replicas[up[k]].handle, std::chrono::seconds(5), caf::get_atom::value)
      .then(
        [g, k, finish](actors::router_stats& s) mutable {
          g->got[k] = std::move(s);
          if (--g->left == 0)
            finish();
        },
        [g, finish](const caf::error&) mutable {
          if (--g->left == 0)
            finish();
        });
}

/// A request the link sends to every replica up (operators' drain, undrain, adapter changes: each
/// replica keeps its own books); the first answer is the reply, an error only when all fail.
template <class... Reply, class... Ts>
void ask_all(link_self self, Ts... xs) {
  auto& st = self->state;
  auto rp = self->make_response_promise();
  auto replied = std::make_shared<bool>(false);
  auto left = std::make_shared<std::size_t>(0);
  for (auto& rep : st.replicas)
    if (rep.handle)
      ++*left;
  if (*left == 0) {
    rp.deliver(actors::make_serve_error(serve_errc::no_workers, "no router is reachable"));
    return;
  }
  for (auto& rep : st.replicas) {
    if (!rep.handle)
      continue;
    self->request(rep.handle, std::chrono::seconds(90), xs...)
      .then(
        [rp, replied](Reply&... r) mutable {
          if (!*replied) {
            *replied = true;
            rp.deliver(std::move(r)...);
          }
        },
        [rp, replied, left](caf::error& e) mutable {
          if (--*left == 0 && !*replied) {
            *replied = true;
            rp.deliver(std::move(e));
          }
        });
  }
}

caf::behavior link_impl(link_self self, router_link_options opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
  st.book = gateway::router_link_book(st.opts.routers.size());
  for (auto& t : st.opts.routers) {
    replica rep;
    rep.target = t;
    rep.retry = backoff(st.opts.reconnect_initial, st.opts.reconnect_max);
    st.replicas.push_back(std::move(rep));
  }
  for (std::size_t r = 0; r < st.replicas.size(); ++r) {
    if (st.replicas[r].target.handle)
      replica_up(self, r, st.replicas[r].target.handle);
    else
      connect(self, r);
  }
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (auto r = replica_of(self, dm.source))
      return replica_down(self, *r, self->system().render(dm.reason));
    // A gateway went away: its streams end quietly at their replicas.
    std::vector<link_stream_id> gone;
    for (auto& [id, c] : st.clients)
      if (c.addr == dm.source)
        gone.push_back(id);
    for (auto id : gone) {
      if (const auto* s = st.book.find(id); s && s->router)
        self->send(st.replicas[*s->router].handle, actors::cancel_request{actors::sink_request_id{id}});
      forget(self, id);
    }
  });
  self->send(self, tick_tag::value);
  return {
    [self](actors::generate_request& req) { on_submit(self, req); },
    [self](const actors::cancel_request& msg) {
      auto& st = self->state;
      auto it = st.by_client.find({caf::actor_cast<caf::actor_addr>(self->current_sender()), msg.id.value()});
      if (it == st.by_client.end())
        return;
      const auto id = it->second;
      const auto* s = st.book.find(id);
      if (s && s->router)
        self->send(st.replicas[*s->router].handle, actors::cancel_request{actors::sink_request_id{id}});
      else
        fail(self, id, serve_errc::cancelled, "cancelled by the client");
    },
    [self](const actors::credit_request& msg) {
      auto& st = self->state;
      auto it = st.by_client.find({caf::actor_cast<caf::actor_addr>(self->current_sender()), msg.id.value()});
      if (it == st.by_client.end())
        return;
      st.book.grant(it->second, msg.tokens);
      const auto* s = st.book.find(it->second);
      if (s && s->router)
        self->send(st.replicas[*s->router].handle, actors::credit_request{actors::sink_request_id{it->second}, msg.tokens});
    },
    [self](actors::event_batch& b) { on_events(self, b); },
    [self](actors::token_event& ev) {
      actors::event_batch b;
      b.tokens.push_back(std::move(ev));
      on_events(self, b);
    },
    [self](actors::done_event& ev) {
      actors::event_batch b;
      b.done.push_back(std::move(ev));
      on_events(self, b);
    },
    [self](actors::error_event& ev) {
      actors::event_batch b;
      b.errors.push_back(std::move(ev));
      on_events(self, b);
    },
    [self](connect_tag, std::uint64_t r) { connect(self, static_cast<std::size_t>(r)); },
    [self](tick_tag) {
      auto& st = self->state;
      const auto now = link_clock::now();
      for (auto id : st.book.waited_past(st.opts.wait_limit, now))
        fail(self, id, serve_errc::worker_lost,
             "its router was lost and no other router took it within "
               + std::to_string(st.opts.wait_limit.count()) + " ms");
      for (std::size_t r = 0; r < st.replicas.size(); ++r) {
        if (!st.replicas[r].handle)
          continue;
        self->request(st.replicas[r].handle, st.opts.stats_interval * 2, caf::get_atom::value)
          .then([self, r](const actors::router_stats& rs) { self->state.book.router_accepting(r, rs.accepting); },
                [](const caf::error&) {});
      }
      for (auto id : st.book.waiting())
        carry_on(self, id);
      self->delayed_send(self, st.opts.stats_interval, tick_tag::value);
    },
    [self](caf::get_atom) { ask_stats(self); },
    [self](caf::wait_for_atom, std::uint32_t n) { ask_one(self, caf::wait_for_atom::value, n); },
    [self](actors::drain_atom, std::string& node) {
      ask_all<std::uint32_t, std::uint32_t>(self, actors::drain_atom::value, std::move(node));
    },
    [self](actors::undrain_atom, std::string& node) {
      ask_all<std::uint32_t>(self, actors::undrain_atom::value, std::move(node));
    },
    [self](actors::adapter_command& cmd) { ask_all<actors::adapter_reply>(self, std::move(cmd)); },
    [self](const actors::register_worker& reg) -> caf::error {
      return actors::make_serve_error(serve_errc::invalid_request,
                                      "worker " + reg.name + ": register with a router node, not a gateway node");
    },
  };
}

} // namespace

actors::router_actor spawn_router_link(caf::actor_system& sys, router_link_options opts) {
  return caf::actor_cast<actors::router_actor>(sys.spawn(link_impl, std::move(opts)));
}

} // namespace lf::cluster
