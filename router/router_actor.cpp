// The router actor's behavior and its worker side: registration, streamed events, supervision.
#include "router/router_actor.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "core/api_keys.hpp"
#include "core/log.hpp"
#include "router/router_state.hpp"

namespace lf::router {

void router_state::init(self_ptr self, router_config cfg, std::shared_ptr<adapter_store> adapters) {
  self_ = self;
  adapters_ = std::move(adapters);
  cfg_ = std::move(cfg);
  placement_ = placement_book(cfg_.placement, cfg_.max_inflight_per_worker);
  queue_ = admission_queue<actors::route_id>(cfg_.max_queue, cfg_.tenants.scheduling, cfg_.tenants.token_weights);
  queue_.counters().set_default_weight(cfg_.tenants.defaults.weight);
  for (const auto& [name, l] : cfg_.tenants.tenants)
    queue_.counters().set_weight(name, l.weight);
  tenancy_ = tenant_ledger(cfg_.tenants, {cfg_.deadline_admission, cfg_.deadline_margin}, cfg_.meter);
  avail_ = availability(cfg_.max_queue_wait, router_clock::now());
  // Outage 1 (no worker yet): what queues before the first worker registers waits at most
  // max_queue_wait too.
  self_->delayed_send(caf::actor_cast<actors::router_actor>(self_), cfg_.max_queue_wait, actors::outage_atom::value,
                      avail_.outage());
  std::random_device rd;
  seeds_.seed((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
}

router_state::~router_state() {
  for (auto& [rid, e] : routes_) {
    if (e.state != route_state::queued)
      if (auto w = workers_.find(e.worker); w != workers_.end())
        caf::anon_send(w->second.handle, actors::worker_cancel{rid});
    caf::anon_send(e.sink, actors::error_event{e.client_id, serve_errc::shutting_down, "the router is stopping", 0});
  }
}

caf::result<actors::worker_id> router_state::add_worker(actors::worker_actor handle,
                                                       actors::register_worker info) {
  if (!cfg_.join_token.empty() && !auth::constant_time_equal(info.join_token, cfg_.join_token)) {
    log::warn("router", "worker refused", {{"worker", info.name}, {"reason", "wrong or missing join token"}});
    return actors::make_serve_error(serve_errc::unauthenticated,
                                    "worker " + info.name + ": wrong or missing join token (--join-token-file)");
  }
  info.join_token.clear();  // kept nowhere
  catch_up_adapters(info.registry, info.name);
  info.registry.clear();
  for (auto& [id, w] : workers_)
    if (w.handle == handle) {
      replay_adapters(w);  // back after a partition: it may have missed events
      prefix_.resync(id);  // its prefix cache too: its registration's answer brings a snapshot
      return id;  // registered twice (e.g. a retry): same id
    }
  // A node that comes back under the same name (a replaced pod, a restarted process whose old
  // connection has not timed out yet) replaces its old entry: the old worker's requests move
  // now, as if it were lost, instead of waiting for the heartbeat timeout.
  for (auto it = workers_.begin(); it != workers_.end(); ++it)
    if (it->second.info.name == info.name) {
      auto old = it->second.handle;
      self_->demonitor(old.address());
      log::info("router", "worker replaced", {{"worker", info.name}, {"wid", it->first.value()}});
      worker_lost(it->second, caf::make_error(caf::sec::runtime_error, "replaced by a worker of the same name"));
      caf::anon_send_exit(old, caf::exit_reason::user_shutdown);  // a late old worker stops too
      break;
    }
  const auto& l = cfg_.limits;
  if ((l.context_window > 0 && info.context_window < l.context_window)
      || (l.vocab_size > 0 && info.vocab_size < l.vocab_size)) {
    auto why = "worker " + info.name + " serves a model with context " + std::to_string(info.context_window)
               + " and vocabulary " + std::to_string(info.vocab_size) + "; the router validates requests for "
               + std::to_string(l.context_window) + " and " + std::to_string(l.vocab_size);
    log::error("router", "worker refused", {{"worker", info.name}, {"reason", why}});
    return actors::make_serve_error(serve_errc::invalid_request, std::move(why));
  }
  actors::worker_id id{next_wid_++};
  auto& w = workers_[id];
  w.id = id;
  w.handle = handle;
  w.last.wid = id;
  w.last.total_blocks = w.last.free_blocks = info.total_blocks;
  w.last.adapters = info.adapters;
  w.info = std::move(info);
  placement_.add(id, w.info.max_seqs, w.info.adapters);
  prefix_.add(id, w.info.total_blocks);  // its entries: at most its pool's blocks
  metrics_.name(id, w.info.name);
  self_->monitor(handle);
  replay_adapters(w);  // before any request is placed there
  log::info("router", "worker registered",
            {{"worker", w.info.name}, {"wid", id.value()}, {"context", w.info.context_window},
             {"kv_blocks", w.info.total_blocks}, {"max_seqs", w.info.max_seqs},
             {"workers", workers_.size()}});
  auto n = static_cast<std::uint32_t>(workers_.size());
  auto it = std::stable_partition(waiters_.begin(), waiters_.end(),
                                  [n](auto& wt) { return wt.first > n; });
  for (auto w2 = it; w2 != waiters_.end(); ++w2)
    w2->second.deliver(stats());
  waiters_.erase(it, waiters_.end());
  note_availability();
  dispatch();
  return id;
}

void router_state::await_workers(std::uint32_t n, caf::typed_response_promise<actors::router_stats> rp) {
  if (workers_.size() >= n)
    rp.deliver(stats());
  else
    waiters_.emplace_back(n, std::move(rp));
}

void router_state::on_load(actors::worker_load& load) {
  if (auto it = workers_.find(load.wid); it != workers_.end()) {
    std::vector<load_observation> seen;
    seen.reserve(load.loads_by_adapter.size());
    for (const auto& r : load.loads_by_adapter)
      seen.push_back({r.name, r.loads, r.last_load_ms, r.bytes});
    placement_.report(load.wid, load.adapters, load.adapter_slots_free, seen);
    it->second.last = std::move(load);
  }
}

route_entry* router_state::owned(actors::route_id rid, actors::worker_id wid) {
  auto* e = routes_.find(rid);
  return e == nullptr || e->state == route_state::queued || e->worker != wid ? nullptr : e;
}

void router_state::on_token(actors::worker_token& msg) {
  auto* e = owned(msg.rid, msg.wid);
  if (!e)
    return;
  e->state = route_state::streaming;
  const auto now = router_clock::now();
  if (!e->times.first_token)
    e->times.first_token = now;
  e->sent.push_back(msg.ev.token);
  placement_.streamed(e->worker, e->placing, now);
  tenancy_.token(e->tenancy, queue_.counters(), now);
  to_sink(*e, std::move(msg.ev));
}

void router_state::on_step(actors::worker_step& msg) {
  // Tokens first, then terminals: a request's terminal is the last of its entries in the step.
  outbox_.open();
  for (auto& t : msg.tokens)
    on_token(t);
  for (auto& d : msg.done)
    on_done(d);
  for (auto& f : msg.failed)
    on_failed(f);
  for (auto& m : msg.moved)
    on_moved(m);
  for (auto& [sink, batch] : outbox_.close())
    self_->send(sink, std::move(batch));
}

void router_state::to_sink(route_entry& e, actors::token_event ev) {
  ev.id = e.client_id;
  if (auto* b = outbox_.batch(e.sink, e.sink_addr))
    b->tokens.push_back(std::move(ev));
  else
    self_->send(e.sink, std::move(ev));
}

void router_state::to_sink(route_entry& e, actors::done_event ev) {
  ev.id = e.client_id;
  if (auto* b = outbox_.batch(e.sink, e.sink_addr))
    b->done.push_back(std::move(ev));
  else
    self_->send(e.sink, std::move(ev));
}

void router_state::to_sink(route_entry& e, actors::error_event ev) {
  ev.id = e.client_id;
  if (auto* b = outbox_.batch(e.sink, e.sink_addr))
    b->errors.push_back(std::move(ev));
  else
    self_->send(e.sink, std::move(ev));
}

void router_state::on_done(actors::worker_done& msg) {
  if (auto* e = owned(msg.rid, msg.wid))
    end(*e, std::move(msg.ev));
}

void router_state::on_failed(actors::worker_failed& msg) {
  if (auto* e = owned(msg.rid, msg.wid))
    end(*e, std::move(msg.ev), false);
}

void router_state::on_moved(actors::worker_moved& msg) {
  auto* e = owned(msg.rid, msg.wid);
  if (!e)
    return;  // ended meanwhile (cancel, deadline) or its worker was lost first
  if (!move_again(*e)) {
    end(*e, actors::error_event{{}, serve_errc::worker_lost,
                                "its worker was drained and the request has moved "
                                  + std::to_string(e->resumed) + " times already", 0},
        false);
    return;
  }
  if (!msg.kv.empty()) {
    ++counters_.kv_shipped;
    counters_.kv_shipped_tokens += msg.kv.tokens.size();
    e->kv = std::move(msg.kv);
  }
  dispatch();
}

void router_state::on_down(const caf::down_msg& dm) {
  for (auto& [id, w] : workers_)
    if (w.handle.address() == dm.source)
      return worker_lost(w, dm.reason);
  if (routes_.has_sink(dm.source))
    sink_lost(dm.source);
}

void router_state::worker_lost(worker_entry& dead, const caf::error& reason) {
  auto wid = dead.id;
  const auto name = dead.info.name;
  workers_.erase(wid);  // first, so nothing below is placed on it again
  metrics_.departed(wid);
  placement_.remove(wid);
  prefix_.remove(wid);  // what its cache held goes at once
  note_availability();  // before the moves: with no worker left they wait at most max_queue_wait
  const auto mine = placed_on([wid](actors::worker_id w) { return w == wid; });
  for (auto rid : mine) {
    auto& e = *routes_.find(rid);
    if (!move_again(e))
      end(e, actors::error_event{{}, serve_errc::worker_lost,
                                 "the worker died after streaming " + std::to_string(e.sent.size())
                                   + " tokens, and the request has moved " + std::to_string(e.resumed)
                                   + " times already",
                                 0},
          false);
  }
  // A worker that stopped cleanly with nothing in flight (a drained shutdown) is news, not trouble.
  const bool clean = mine.empty() && (!reason || reason == caf::exit_reason::user_shutdown);
  log::write(clean ? log::level::info : log::level::warn, "router", clean ? "worker stopped" : "worker lost",
             {{"worker", name}, {"wid", wid.value()}, {"requests", mine.size()}, {"workers", workers_.size()},
              {"reason", caf::to_string(reason)}});
  dispatch();
}

std::vector<actors::route_id> router_state::placed_on(const std::function<bool(actors::worker_id)>& on) const {
  std::vector<actors::route_id> out;
  for (auto& [rid, e] : routes_)
    if (e.state != route_state::queued && on(e.worker))
      out.push_back(rid);
  // Newest first: moved one by one to the front of the queue, the oldest ends up at the head.
  std::sort(out.rbegin(), out.rend());
  return out;
}

std::vector<actors::worker_id> router_state::named(const std::string& node) const {
  std::vector<actors::worker_id> out;
  for (const auto& [id, w] : workers_) {
    const auto& n = w.info.name;
    if (n == node || (n.size() > node.size() && n.compare(0, node.size(), node) == 0 && n[node.size()] == '/'))
      out.push_back(id);
  }
  return out;
}

std::pair<std::uint32_t, std::uint32_t> router_state::drain(const std::string& node) {
  std::uint32_t drained = 0;
  for (auto id : named(node))
    if (placement_.drain(id))
      ++drained;
  note_availability();
  const auto moving = placed_on([this](actors::worker_id w) { return placement_.draining(w); });
  std::uint32_t moved = 0;
  for (auto rid : moving) {
    auto& e = *routes_.find(rid);
    const auto from = e.worker;
    if (out_of_moves(e))
      continue;  // out of resumptions: it stays where it is and finishes there
    if (cfg_.ship_kv) {
      // It moves when its worker answers with worker_moved, sent after its last token, with the
      // K/V of what that worker computed; until then it streams from there as before.
      if (!e.moving) {
        e.moving = true;
        self_->send(workers_.at(from).handle, actors::worker_cancel{rid, true});
      }
    } else {
      move_again(e);
      self_->send(workers_.at(from).handle, actors::worker_cancel{rid});
    }
    ++moved;
  }
  if (drained > 0 || moved > 0)
    log::info("router", "drained", {{"node", node}, {"workers", drained}, {"moved", moved}});
  dispatch();
  return {drained, moved};
}

std::uint32_t router_state::undrain(const std::string& node) {
  std::uint32_t back = 0;
  for (auto id : named(node))
    if (placement_.undrain(id))
      ++back;
  if (back > 0)
    log::info("router", "undrained", {{"node", node}, {"workers", back}, {"accepting", placement_.accepting()}});
  note_availability();
  dispatch();  // what queued meanwhile goes there now
  return back;
}

void router_state::note_availability() {
  const bool was_out = avail_.out();
  if (avail_.update(placement_.accepting(), router_clock::now())) {
    log::warn("router", "no worker takes requests: new ones are refused (no_workers), queued ones wait",
              {{"workers", workers_.size()}, {"queued", queue_.size()},
               {"max_queue_wait_ms", avail_.max_wait().count()}});
    self_->delayed_send(caf::actor_cast<actors::router_actor>(self_), avail_.max_wait(), actors::outage_atom::value,
                        avail_.outage());
  } else if (was_out && !avail_.out()) {
    log::info("router", "workers take requests again", {{"accepting", placement_.accepting()}});
  }
}

void router_state::outage_over(std::uint64_t n) {
  if (n != avail_.outage() || !avail_.expired(router_clock::now()))
    return;  // that outage ended (a worker came back); a later one has its own check
  std::vector<actors::route_id> waiting;
  for (const auto& [rid, e] : routes_)
    if (e.state == route_state::queued)
      waiting.push_back(rid);
  std::sort(waiting.begin(), waiting.end());
  for (auto rid : waiting)
    if (auto* e = routes_.find(rid))
      end(*e,
          actors::error_event{{}, serve_errc::no_workers,
                              "no worker takes requests (all drained or lost) and none came back within "
                                + std::to_string(avail_.max_wait().count()) + " ms",
                              no_workers_retry_ms()},
          false);
  if (!waiting.empty())
    log::warn("router", "queued requests ended: no worker came back", {{"ended", waiting.size()}});
  // Still out: check again, for what joins the queue later (a drained worker's late move).
  self_->delayed_send(caf::actor_cast<actors::router_actor>(self_), avail_.max_wait(), actors::outage_atom::value, n);
}

actors::router_stats router_state::stats() const {
  auto s = counters_;
  s.workers = static_cast<std::uint32_t>(workers_.size());
  s.queued = static_cast<std::uint32_t>(queue_.size());
  s.inflight = static_cast<std::uint32_t>(routes_.size() - queue_.size());
  s.prefix_blocks = prefix_.entries();
  s.loads.clear();
  for (auto& [id, w] : workers_) {
    s.loads.push_back(w.last);
    s.loads.back().name = w.info.name;
    s.draining += placement_.draining(id) ? 1 : 0;
  }
  s.accepting = placement_.accepting();
  s.metrics.clear();
  auto row = [this](actors::worker_id id, const worker_measures& m, bool live) {
    return actors::worker_metrics{id, m.name, live, m.m, placement_.state(id)};
  };
  for (const auto& [id, m] : metrics_.all())
    if (id.value() != 0)
      s.metrics.push_back(row(id, m, workers_.count(id) > 0));
  if (auto it = metrics_.all().find(actors::worker_id{0}); it != metrics_.all().end()) {
    s.metrics.push_back(row(it->first, it->second, true));
    s.metrics.back().state = worker_state::serving;  // not a worker: the requests that reached none
  }
  return s;
}

namespace {

actors::router_actor::behavior_type router_impl(router_state::self_ptr self, router_config cfg,
                                                std::shared_ptr<adapter_store> adapters) {
  self->state.init(self, std::move(cfg), std::move(adapters));
  self->set_down_handler([self](const caf::down_msg& dm) { self->state.on_down(dm); });
  return {
    [self](actors::generate_request& req) { self->state.submit(req); },
    [self](const actors::cancel_request& msg) { self->state.cancel(msg); },
    [self](const actors::credit_request& msg) { self->state.credit(msg); },
    [self](actors::register_worker& info) -> caf::result<actors::worker_id> {
      auto handle = caf::actor_cast<actors::worker_actor>(self->current_sender());
      if (!handle)
        return actors::make_serve_error(serve_errc::invalid_request, "register_worker needs a sender");
      return self->state.add_worker(std::move(handle), std::move(info));
    },
    [self](actors::worker_load& load) { self->state.on_load(load); },
    [self](actors::worker_step& msg) { self->state.on_step(msg); },
    [self](actors::worker_failed& msg) { self->state.on_failed(msg); },
    [self](actors::prefix_events& msg) { self->state.on_prefix_events(msg); },
    [self](actors::expire_atom, actors::route_id rid) { self->state.expire(rid); },
    [self](actors::stranded_atom, actors::route_id rid, std::uint32_t moves) { self->state.stranded(rid, moves); },
    [self](caf::get_atom) -> actors::router_stats { return self->state.stats(); },
    [self](actors::drain_atom, const std::string& node) -> caf::result<std::uint32_t, std::uint32_t> {
      auto [workers, moved] = self->state.drain(node);
      return {workers, moved};
    },
    [self](actors::undrain_atom, const std::string& node) -> std::uint32_t { return self->state.undrain(node); },
    [self](actors::outage_atom, std::uint64_t n) { self->state.outage_over(n); },
    [self](caf::wait_for_atom, std::uint32_t n) -> caf::result<actors::router_stats> {
      auto rp = self->make_response_promise<actors::router_stats>();
      self->state.await_workers(n, rp);
      return rp;
    },
    [self](actors::adapter_command& cmd) -> caf::result<actors::adapter_reply> {
      auto rp = self->make_response_promise<actors::adapter_reply>();
      self->state.adapter_command(std::move(cmd), rp);
      return rp;
    },
  };
}

} // namespace

actors::router_actor spawn_router(caf::actor_system& sys, router_config cfg) {
  auto adapters = std::make_shared<adapter_store>();
  if (!cfg.adapter_log.empty()) {
    std::string warning;
    adapters->file = std::make_unique<adapter_log_file>(cfg.adapter_log, adapters->registry, warning);
    if (!warning.empty())
      log::warn("router", warning);
    log::info("router", "adapter registry replayed",
              {{"log", cfg.adapter_log}, {"events", adapters->registry.last_seq()},
               {"adapters", adapters->registry.list().size()}});
  }
  return sys.spawn(router_impl, std::move(cfg), std::move(adapters));
}

} // namespace lf::router
