#include "actors/worker_actor.hpp"

#include <exception>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "core/log.hpp"
#include "worker/serving_loop.hpp"

namespace lf::actors {

namespace {

/// Where a worker's requests stream (the serving loop's thread): each step's entries become one
/// worker_step to the router and, when requests ended, one request_ended to the actor. Touches
/// no actor state, only sends messages.
class router_sink final : public worker::step_sink {
public:
  router_sink(router_actor router, worker_id wid, worker_actor me)
    : router_(std::move(router)), wid_(wid), me_(std::move(me)) {}

  void deliver(worker::step_batch batch) override {
    worker_step step{wid_, {}, {}, {}, {}};
    request_ended ended;
    step.tokens.reserve(batch.entries.size());
    for (auto& e : batch.entries) {
      const route_id rid{e.tag};
      if (!e.terminal()) {
        // The router puts the client's id on every event it forwards: the worker leaves it 0.
        token_event ev{{}, e.token, std::move(e.text), e.index, false, {}};
        if (e.logprobs) {
          ev.has_logprobs = true;
          ev.logprobs = std::move(*e.logprobs);
        }
        step.tokens.push_back({wid_, rid, std::move(ev)});
        continue;
      }
      auto& r = *e.result;
      if (r.moved) {
        // After every token of rid (entries are in order): the router has them all when it moves it.
        step.moved.push_back({wid_, rid, std::move(r.kv)});
      } else if (r.outcome == worker::request_outcome::finished) {
        step.done.push_back({wid_, rid, done_event{{}, std::move(r.finish_reason), std::move(r.text),
                                                   std::move(r.tokens), r.usage, r.timings, wid_}});
      } else {
        auto code = r.error == serve_errc::none ? serve_errc::internal : r.error;
        step.failed.push_back({wid_, rid, error_event{{}, code, std::move(r.message), 0}});
      }
      ended.rids.push_back(rid);
    }
    // This actor forgets the ended requests first: the router may place a moved one straight
    // back here (an undrain right after a drain), and its submit must find the old one gone.
    // Both land in this actor's one mailbox, so the forgetting comes first.
    if (!ended.rids.empty())
      caf::anon_send(me_, std::move(ended));
    caf::anon_send(router_, std::move(step));
  }

private:
  router_actor router_;
  worker_id wid_;
  worker_actor me_;
};

/// Actor state. Lives until the actor ends; its destructor cancels what is still in the loop.
struct worker_state {
  static inline const char* name = "lf.worker";

  worker_backend backend;
  worker_options opts;
  router_actor router;
  worker_id wid;  ///< 0 until registered
  std::unordered_map<route_id, worker::request_id> live;
  std::shared_ptr<router_sink> sink;  ///< every request's, once registered (the id is in its messages)
  std::uint64_t cache_listener = 0;   ///< its prefix-cache listener on the loop (0: none)

  ~worker_state() {
    if (wid.value() != 0 && opts.registered)
      --*opts.registered;
    if (backend.loop) {
      // Only this actor's requests: a loop shared with the actors of other routers keeps theirs.
      for (auto& [rid, id] : live)
        backend.loop->cancel(id);
      if (cache_listener != 0)
        backend.loop->unwatch_prefix_cache(cache_listener);
    }
  }
};

using worker_self = worker_actor::stateful_pointer<worker_state>;

worker_load snapshot(const worker_state& st) {
  auto l = st.backend.loop->load();
  worker_load w;
  static_cast<worker::load_counts&>(w) = l;  // the loop's numbers as it counted them
  w.wid = st.wid;
  if (st.backend.loaded_adapters)
    w.adapters = st.backend.loaded_adapters();
  w.servable = st.backend.servable_adapters ? st.backend.servable_adapters() : w.adapters;
  if (st.backend.adapter_records)
    w.loads_by_adapter = st.backend.adapter_records();
  w.adapter_loads = l.adapters.loads;
  w.max_adapters = st.backend.max_adapters;
  w.spec_proposed = l.speculation.proposed;
  w.spec_accepted = l.speculation.accepted;
  w.spec_rows = l.speculation.rows;
  w.spec_emitted = l.speculation.emitted;
  w.spec_draft_tokens = l.speculation.draft_proposed;
  w.spec_draft_ms = l.speculation.draft_ms;
  if (st.backend.adapter_slots_free)
    w.adapter_slots_free = st.backend.adapter_slots_free();
  return w;
}

/// From now on the loop's prefix-cache events go to the router (from the loop's thread, in
/// order with its worker_steps), the first one a snapshot: a worker that registers or registers
/// again tells the router everything it holds.
void watch_prefix_cache(worker_state& st) {
  auto* loop = st.backend.loop;
  if (!loop->prefix_cache_enabled())
    return;
  const auto block_size = st.backend.block_size;
  const bool tenant = loop->prefix_isolation() == cache::prefix_isolation::tenant;
  st.cache_listener = loop->watch_prefix_cache([router = st.router, wid = st.wid, block_size, tenant](cache::prefix_event_batch b) {
    caf::anon_send(router, prefix_events{wid, b.seq, b.snapshot, block_size, tenant, std::move(b.stored),
                                         std::move(b.removed)});
  });
}

void on_submit(worker_self self, worker_submit& msg) {
  auto& st = self->state;
  auto fail = [&](serve_errc code, std::string why) {
    self->send(st.router, worker_failed{st.wid, msg.rid, error_event{msg.id, code, std::move(why), 0}});
  };
  try {
    if (st.live.count(msg.rid))
      return fail(serve_errc::invalid_request, "request already on this worker");
    std::optional<worker::time_point> deadline;
    if (msg.timeout_ms > 0)
      deadline = worker::time_point::clock::now() + std::chrono::milliseconds(msg.timeout_ms);
    // The request was validated at the edge against limits this worker registered with.
    // The loop numbers a resumed request's tokens from resume.size().
    if (!st.sink)
      st.sink = std::make_shared<router_sink>(st.router, st.wid, caf::actor_cast<worker_actor>(self));
    worker::request_callbacks cb;
    cb.sink = st.sink;
    cb.tag = msg.rid.value();
    auto id = st.backend.loop->submit(std::move(msg.req), deadline, std::move(cb), std::move(msg.resume),
                                      std::move(msg.kv), msg.allowance);
    st.live.emplace(msg.rid, id);
  } catch (const std::exception& e) {
    log::error("worker", "submit failed", {{"worker", st.opts.name}, {"reason", e.what()}});
    fail(serve_errc::internal, std::string("worker ") + st.opts.name + ": " + e.what());
  }
}

worker_actor::behavior_type worker_impl(worker_self self, worker_backend backend,
                                        router_actor router, worker_options opts) {
  auto& st = self->state;
  st.backend = std::move(backend);
  st.opts = std::move(opts);
  st.router = router;
  self->monitor(router);
  self->set_down_handler([self](const caf::down_msg& dm) {
    if (dm.source == self->state.router.address()) {
      log::warn("worker", "router lost: cancelling this worker's requests and stopping",
                {{"worker", self->state.opts.name}, {"requests", self->state.live.size()}});
      self->quit(dm.reason);  // the state's destructor cancels what is left in the loop
    }
  });
  register_worker reg{st.opts.name, st.backend.context_window, st.backend.vocab_size,
                      st.backend.loop->load().total_blocks, st.backend.block_size,
                      st.backend.max_seqs, {}, st.opts.join_token, {}};
  if (st.backend.loaded_adapters)
    reg.adapters = st.backend.loaded_adapters();
  if (st.backend.adapter_log)
    reg.registry = st.backend.adapter_log();
  // await, not then: the router places queued requests on a worker as it registers it, so
  // worker_submits may arrive before the answer; they wait in the mailbox until the worker knows
  // its id (events sent with id 0 would be dropped by the router as a stale worker's).
  self->request(router, caf::infinite, std::move(reg))
    .await(
      [self](worker_id id) {
        self->state.wid = id;
        if (self->state.opts.registered)
          ++*self->state.opts.registered;
        log::info("worker", "registered with the router", {{"worker", self->state.opts.name}, {"wid", id.value()}});
        watch_prefix_cache(self->state);
        self->send(caf::actor_cast<worker_actor>(self), report_atom::value);
      },
      [self](caf::error& err) {
        log::error("worker", "registration refused", {{"worker", self->state.opts.name},
                                                      {"reason", self->system().render(err)}});
        self->quit(std::move(err));
      });
  return {
    [self](worker_submit& msg) { on_submit(self, msg); },
    [self](const worker_cancel& msg) {
      auto& st = self->state;
      if (auto it = st.live.find(msg.rid); it != st.live.end())
        st.backend.loop->cancel(it->second, msg.ship_kv);  // on_done follows on the loop thread
    },
    [self](const worker_credit& msg) {
      auto& st = self->state;
      if (auto it = st.live.find(msg.rid); it != st.live.end())
        st.backend.loop->credit(it->second, msg.allowance);
    },
    [self](resync_atom) {
      if (self->state.backend.loop)
        self->state.backend.loop->resend_prefix_cache();
    },
    [self](const request_ended& msg) {
      for (auto rid : msg.rids)
        self->state.live.erase(rid);
    },
    [self](const worker_adapters& msg) {
      if (self->state.backend.apply_adapter_events)
        self->state.backend.apply_adapter_events(msg.events, msg.whole_log);
    },
    [self](const worker_prefetch& msg) {
      if (self->state.backend.prefetch_adapter)
        self->state.backend.prefetch_adapter(msg.key);
    },
    [self](const adapter_check& msg) -> adapter_checked {
      adapter_checked out;
      if (!self->state.backend.check_adapter) {
        out.error = "worker " + self->state.opts.name + " cannot check adapters";
        return out;
      }
      try {
        out.source = self->state.backend.check_adapter(msg.path, msg.max_rank);
      } catch (const std::exception& e) {
        out.error = e.what();
      }
      return out;
    },
    [self](report_atom) {
      auto& st = self->state;
      self->send(st.router, snapshot(st));
      self->delayed_send(caf::actor_cast<worker_actor>(self), st.opts.report_interval,
                         report_atom::value);
    },
    [self](caf::get_atom) -> worker_load { return snapshot(self->state); },
  };
}

} // namespace

worker_actor spawn_worker(caf::actor_system& sys, worker_backend backend, router_actor router,
                          worker_options opts) {
  if (!backend.loop)
    throw std::invalid_argument("spawn_worker: the backend has no serving loop");
  return sys.spawn(worker_impl, std::move(backend), std::move(router), std::move(opts));
}

} // namespace lf::actors
