// The router's request life cycle: admission, placement, terminal events.
#include <algorithm>
#include <exception>

#include <caf/actor_cast.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "core/log.hpp"
#include "router/router_state.hpp"

namespace lf::router {

namespace {

/// Tokens of work a request may take: prompt + max_tokens.
std::uint64_t cost_of(const validated_request& r) { return r.max_length(); }

} // namespace

request_limits router_state::limits() const {
  auto l = cfg_.limits;
  auto smallest = [&](std::uint32_t& limit, auto field) {
    if (limit > 0)
      return;
    for (auto& [id, w] : workers_)
      if (w.info.*field > 0 && (limit == 0 || w.info.*field < limit))
        limit = w.info.*field;
  };
  smallest(l.context_window, &actors::register_worker::context_window);
  std::uint32_t vocab = static_cast<std::uint32_t>(l.vocab_size);
  smallest(vocab, &actors::register_worker::vocab_size);
  l.vocab_size = vocab;
  return l;
}

void router_state::reject(const actors::event_sink& sink, actors::sink_request_id id, serve_errc code,
                          std::string message, std::uint32_t retry_after_ms) {
  log::debug("router", "request refused", {{"code", to_string(code)}, {"message", message}});
  count_error(nullptr, code);
  self_->send(sink, actors::error_event{id, code, std::move(message), retry_after_ms});
}

void router_state::submit(actors::generate_request& req) {
  auto sender = self_->current_sender();
  if (!sender)
    return;  // anonymous: there is nobody to stream to
  auto sink = caf::actor_cast<actors::event_sink>(sender);
  auto addr = caf::actor_cast<caf::actor_addr>(sender);
  try {
    const auto now = router_clock::now();
    if (routes_.in_use(addr, req.id))
      return refuse(sink, req.id, {serve_errc::invalid_request, "request id " + std::to_string(req.id.value()) + " is already in use"});
    if (auto no = refuse_in_outage(avail_, workers_.size(), no_workers_retry_ms(), now))
      return refuse(sink, req.id, std::move(*no));  // before validation: no worker, no model known
    auto checked = checked_here(std::move(req.draft), req.continued);
    if (auto* bad = std::get_if<admit_refuse>(&checked))
      return refuse(sink, req.id, std::move(*bad));
    auto& valid = std::get<validated_request>(checked);
    const admission_ask ask{valid.tenant(), static_cast<std::uint32_t>(valid.prompt().size()),
                            static_cast<std::uint32_t>(valid.params().max_tokens), valid.timeout_ms(), valid.ttft_ms()};
    cached_tokens cached;
    const auto decision = admit(ask, admission_view_of(ask.tenant), [&] {
      cached = cached_of(valid, req.continued);
      return placement_.choose(valid.adapter(), ask.prompt_tokens + static_cast<std::uint32_t>(req.continued.size()),
                               0.0, cached.tokens, cached.keys);
    }, now);
    const auto* no = std::get_if<admit_refuse>(&decision);
    if (no == nullptr || no->code == serve_errc::overloaded)
      note_adapter_demand(valid.adapter());  // wanted, even if refused for now
    if (no != nullptr)
      return refuse(sink, req.id, *no);
    auto& e = accept(std::move(valid), req, sink, sender, now);
    if (auto* to = std::get_if<admit_place>(&decision))
      place(e, workers_.at(to->worker), cached);
    else
      enqueue(e);
  } catch (const std::exception& ex) {
    reject(sink, req.id, serve_errc::internal, std::string("router: ") + ex.what());
  }
}

void router_state::enqueue(route_entry& e) {
  queue_.push(e.rid, e.tenancy.tenant);
  note_load();
}

std::variant<validated_request, admit_refuse> router_state::checked_here(request_draft draft,
                                                                       const std::vector<std::int32_t>& continued) {
  if (!continued.empty() && !draft.params.seed && draft.params.temperature > 0)
    return admit_refuse{serve_errc::invalid_request, "a sampled continuation needs the seed its tokens were drawn with", 0};
  if (!draft.params.seed)
    draft.params.seed = seeds_();  // resumption needs a seed; `done` reports it
  draft.tenant_weight = cfg_.tenants.limits_of(draft.tenant).weight;
  if (auto why = pin_adapter(draft))
    return admit_refuse{serve_errc::unknown_adapter, std::move(*why)};
  auto checked = validate_request(std::move(draft), limits());
  if (auto* bad = std::get_if<check_failure>(&checked))
    return admit_refuse{bad->code, std::move(bad->message), bad->code == serve_errc::overloaded ? cfg_.retry_after_ms : 0};
  if (auto why = bad_continuation(std::get<validated_request>(checked), continued))
    return admit_refuse{serve_errc::invalid_request, std::move(*why), 0};
  return std::move(std::get<validated_request>(checked));
}

std::optional<std::string> router_state::bad_continuation(const validated_request& r,
                                                          const std::vector<std::int32_t>& continued) const {
  if (continued.empty())
    return std::nullopt;
  if (continued.size() > static_cast<std::size_t>(std::max(0, r.params().max_tokens)))
    return "a continuation has at most max_tokens tokens (" + std::to_string(continued.size()) + " given)";
  const auto vocab = limits().vocab_size;
  for (auto t : continued)
    if (t < 0 || (vocab > 0 && static_cast<std::size_t>(t) >= vocab))
      return "a continuation's token " + std::to_string(t) + " is outside the vocabulary";
  return std::nullopt;
}

admission_view router_state::admission_view_of(const std::string& tenant) const {
  admission_view v;
  v.avail = &avail_;
  v.tenancy = &tenancy_;
  v.tenants = &cfg_.tenants;
  v.live_workers = workers_.size();
  v.queued_of_tenant = queue_.queued(tenant);
  v.queue_full = queue_.full();
  v.queue_capacity = queue_.capacity();
  v.someone_eligible_waits = queue_.next(eligible()).has_value();
  v.saturated = saturated();
  v.retry_after_ms = cfg_.retry_after_ms;
  v.no_workers_retry_ms = no_workers_retry_ms();
  return v;
}

void router_state::refuse(const actors::event_sink& sink, actors::sink_request_id id, admit_refuse why) {
  // no_workers and deadline_unmeetable count with the overloaded: refused for want of capacity.
  ++(why.code == serve_errc::overloaded || why.code == serve_errc::no_workers
         || why.code == serve_errc::deadline_unmeetable
       ? counters_.overloaded
       : counters_.rejected);
  reject(sink, id, why.code, std::move(why.message), why.retry_after_ms);
}

route_entry& router_state::accept(validated_request valid, actors::generate_request& req,
                                  const actors::event_sink& sink, const caf::strong_actor_ptr& sender,
                                  router_clock::time_point now) {
  const auto addr = caf::actor_cast<caf::actor_addr>(sender);
  const auto id = req.id;
  const auto window = req.window;
  actors::route_id rid{next_rid_++};
  auto [e, first_of_sink] = routes_.add(rid, addr, id);
  e.sink = sink;
  e.placing.adapter = valid.adapter();
  e.placing.cost = cost_of(valid);
  e.tenancy.tenant = valid.tenant();
  e.tenancy.prompt_tokens = static_cast<std::uint32_t>(valid.prompt().size());
  e.tenancy.max_tokens = static_cast<std::uint32_t>(valid.params().max_tokens);
  e.credits = credit_window(window);
  e.times.accepted = now;
  if (const auto timeout = valid.timeout_ms(); timeout > 0) {
    e.deadline = now + std::chrono::milliseconds(timeout);
    self_->delayed_send(caf::actor_cast<actors::router_actor>(self_), std::chrono::milliseconds(timeout),
                        actors::expire_atom::value, rid);
  }
  e.req = std::move(valid);
  e.sent = std::move(req.continued);  // a continuation is placed like a resumed request
  if (!e.sent.empty())
    ++counters_.continued;
  if (first_of_sink)
    self_->monitor(sender);  // the client going away cancels its requests
  ++counters_.accepted;
  tenancy_.accepted(e.tenancy);
  return e;
}

void router_state::place(route_entry& e, worker_entry& w, const cached_tokens& cached) {
  e.state = route_state::placed;
  e.worker = w.id;
  const auto now = router_clock::now();
  if (!e.times.placed)
    e.times.placed = now;
  placement_.place(w.id, e.placing, e.req.prompt().size(),
                   static_cast<std::uint64_t>(std::max(0, e.req.params().max_tokens)), e.sent.size(), now, cached.on(w.id),
                   cached.blocks_on(w.id));
  tenancy_.placed(e.tenancy, queue_.counters());
  note_load();
  std::uint32_t left = 0;
  if (e.deadline) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*e.deadline - router_clock::now());
    left = static_cast<std::uint32_t>(std::max<std::int64_t>(ms.count(), 1));
  }
  self_->send(w.handle, actors::worker_submit{e.rid, e.client_id, e.req, left, e.sent, std::move(e.kv), e.credits.bound()});
  e.kv = {};  // shipped once: a second move recomputes
}

void router_state::unplace(route_entry& e) {
  tenancy_.unplaced(e.tenancy);  // also when its worker is gone already (worker_lost forgets it first)
  note_load();
  placement_.unplace(e.worker, e.placing, router_clock::now());
}

bool router_state::out_of_moves(const route_entry& e) const {
  return !e.sent.empty() && e.resumed >= cfg_.max_resumptions;
}

bool router_state::move_again(route_entry& e) {
  if (out_of_moves(e))
    return false;
  unplace(e);
  e.moving = false;
  if (e.sent.empty()) {
    ++counters_.replaced;
  } else {
    ++e.resumed;
    ++counters_.resumed;
  }
  e.state = route_state::queued;
  e.worker = actors::worker_id{};
  queue_.push_front(e.rid);
  ++e.moves;
  self_->delayed_send(caf::actor_cast<actors::router_actor>(self_), cfg_.move_wait, actors::stranded_atom::value,
                      e.rid, e.moves);
  return true;
}

void router_state::stranded(actors::route_id rid, std::uint32_t moves) {
  auto* e = routes_.find(rid);
  if (e == nullptr || e->state != route_state::queued || e->moves != moves)
    return;
  end(*e,
      actors::error_event{{}, serve_errc::worker_lost,
                          "its worker was lost and no other worker took it within "
                            + std::to_string(cfg_.move_wait.count()) + " ms",
                          0},
      false);
}

void router_state::dispatch() {
  if (dispatching_)
    return;  // ending a late request below forgets it, which dispatches again
  dispatching_ = true;
  std::vector<std::pair<actors::route_id, std::string>> late;
  const auto may_go = eligible();
  while (auto head = queue_.next(may_go)) {
    auto& e = *routes_.find(*head);
    // A moved request has its own rules (move_wait, resumption).
    auto why = e.deadline && e.moves == 0
                 ? tenancy_.too_late(e.tenancy, *e.deadline, e.times.accepted, router_clock::now())
                 : std::nullopt;
    if (why) {  // its turn came too late: it would use capacity and time out
      queue_.remove(*head);
      late.emplace_back(*head, std::move(*why));
      continue;
    }
    const auto cached = cached_of(e.req, e.sent);
    auto wid = choose(e, cached);
    if (!wid)
      break;  // every worker is full; the head waits, and so does everyone behind it
    queue_.remove(*head);
    place(e, workers_.at(*wid), cached);
  }
  dispatching_ = false;
  for (auto& [rid, why] : late)
    if (auto* e = routes_.find(rid))
      end(*e, actors::error_event{{}, serve_errc::deadline_unmeetable, std::move(why), 0}, false);
}

void router_state::forget(route_entry& e) {
  if (e.state != route_state::queued) {
    unplace(e);
  } else {
    queue_.remove(e.rid);
  }
  tenancy_.forgotten(e.tenancy);
  note_load();
  const auto addr = e.sink_addr;
  if (routes_.remove(e.rid))  // `e` dangles from here on
    self_->demonitor(addr);
  dispatch();
}

void router_state::end(route_entry& e, actors::error_event ev, bool cancel_worker) {
  if (cancel_worker && e.state != route_state::queued)
    if (auto it = workers_.find(e.worker); it != workers_.end())
      self_->send(it->second.handle, actors::worker_cancel{e.rid});
  switch (ev.code) {
    case serve_errc::cancelled: ++counters_.cancelled; break;
    case serve_errc::timeout: ++counters_.timed_out; break;
    case serve_errc::worker_lost: ++counters_.worker_lost; break;
    default: ++counters_.failed; break;
  }
  count_error(&e, ev.code);
  log_end(e, to_string(ev.code), ev.message, nullptr);
  to_sink(e, std::move(ev));
  forget(e);
}

void router_state::log_end(const route_entry& e, std::string_view outcome, const std::string& message,
                           const actors::done_event* done) const {
  const bool ok = done != nullptr;
  const auto lvl = ok || outcome == "cancelled" || outcome == "timeout" || outcome == "deadline_unmeetable"
                     ? log::level::info
                     : log::level::warn;
  if (!log::enabled(lvl))
    return;
  const auto now = router_clock::now();
  auto ms = [&](std::optional<router_clock::time_point> t) {
    return t ? std::chrono::duration<double, std::milli>(*t - e.times.accepted).count() : -1.0;
  };
  std::string worker = "-";
  if (auto w = workers_.find(e.worker); e.state != route_state::queued && w != workers_.end())
    worker = w->second.info.name;
  const double total_ms = std::chrono::duration<double, std::milli>(now - e.times.accepted).count();
  if (ok) {
    log::write(lvl, "router", "request done",
               {{"rid", e.rid.value()}, {"worker", worker},
                {"adapter", e.req.adapter().empty() ? std::string("-") : e.req.adapter()},
                {"tenant", e.req.tenant().empty() ? std::string("-") : e.req.tenant()},
                {"finish", outcome}, {"queue_ms", ms(e.times.placed)}, {"ttft_ms", ms(e.times.first_token)},
                {"total_ms", total_ms}, {"tokens_in", e.req.prompt().size()},
                {"tokens_out", done->tokens.size()}, {"cached", done->usage.cached_tokens},
                {"resumed", e.resumed}});
    return;
  }
  log::write(lvl, "router", "request ended",
             {{"rid", e.rid.value()},
              {"worker", worker},
              {"adapter", e.req.adapter().empty() ? std::string("-") : e.req.adapter()},
              {"tenant", e.req.tenant().empty() ? std::string("-") : e.req.tenant()},
              {"finish", outcome},
              {"queue_ms", ms(e.times.placed)},
              {"ttft_ms", ms(e.times.first_token)},
              {"total_ms", total_ms},
              {"tokens_in", e.req.prompt().size()},
              {"tokens_out", e.sent.size()},
              {"message", message}});
}

void router_state::end(route_entry& e, actors::done_event ev) {
  ++counters_.completed;
  ev.seed = e.req.params().seed.value_or(0);
  ev.resumed = e.resumed;
  finished_request f;
  f.prompt_tokens = ev.usage.prompt_tokens;
  f.cached_tokens = ev.usage.cached_tokens;
  f.completion_tokens = ev.usage.completion_tokens;
  f.max_tokens = static_cast<std::uint32_t>(e.req.params().max_tokens);
  f.queue_ms = ev.timings.queue_ms;
  f.ttft_ms = ev.timings.ttft_ms;
  f.total_ms = ev.timings.total_ms;
  metrics_.count_done(e.state != route_state::queued ? e.worker : actors::worker_id{0}, ev.finish_reason, f,
                      e.times, router_clock::now());
  tenancy_.finished(f, e.resumed > 0);
  log_end(e, ev.finish_reason, {}, &ev);
  to_sink(e, std::move(ev));
  forget(e);
}

void router_state::cancel(const actors::cancel_request& msg) {
  auto addr = caf::actor_cast<caf::actor_addr>(self_->current_sender());
  auto* e = routes_.find(addr, msg.id);
  if (e == nullptr)
    return;  // unknown or already ended: its terminal event is on its way or delivered
  end(*e, actors::error_event{msg.id, serve_errc::cancelled, "cancelled by the client", 0},
      true);
}

void router_state::credit(const actors::credit_request& msg) {
  auto addr = caf::actor_cast<caf::actor_addr>(self_->current_sender());
  auto* found = routes_.find(addr, msg.id);
  if (found == nullptr)
    return;  // ended: nothing to grant
  auto& e = *found;
  if (!e.credits.grant(msg.tokens))
    return;  // no window (it never waits for credits), or nothing changes
  if (e.state != route_state::queued)
    if (auto w = workers_.find(e.worker); w != workers_.end())
      self_->send(w->second.handle, actors::worker_credit{e.rid, e.credits.bound()});
}

void router_state::expire(actors::route_id rid) {
  auto* e = routes_.find(rid);
  if (e == nullptr)
    return;
  end(*e, actors::error_event{{}, serve_errc::timeout, "deadline passed before the request finished", 0},
      true);
}

void router_state::sink_lost(const caf::actor_addr& addr) {
  for (auto rid : routes_.of_sink(addr)) {
    auto& e = *routes_.find(rid);
    if (e.state != route_state::queued)
      if (auto w = workers_.find(e.worker); w != workers_.end())
        self_->send(w->second.handle, actors::worker_cancel{rid});
    ++counters_.cancelled;
    count_error(&e, serve_errc::cancelled);
    log_end(e, "client_gone", {}, nullptr);
    forget(e);  // no terminal event: nobody is listening
  }
}

std::optional<actors::worker_id> router_state::choose(const route_entry& e, const cached_tokens& cached) {
  const auto waited = std::chrono::duration<double, std::milli>(router_clock::now() - e.times.accepted).count();
  return placement_.choose(e.req.adapter(), static_cast<std::uint32_t>(e.req.prompt().size() + e.sent.size()),
                           waited, cached.tokens, cached.keys);
}

admission_queue<actors::route_id>::eligible_fn router_state::eligible() const {
  return [this](const std::string& tenant) { return tenancy_.has_room(tenant); };
}

bool router_state::saturated() const { return !queue_.empty() || placement_.saturated(); }

void router_state::note_load() { tenancy_.load(router_clock::now(), saturated()); }

void router_state::count_error(const route_entry* e, serve_errc code) {
  const bool placed = e != nullptr && e->state != route_state::queued;
  metrics_.count_error(placed ? e->worker : actors::worker_id{0}, code);
}

} // namespace lf::router
