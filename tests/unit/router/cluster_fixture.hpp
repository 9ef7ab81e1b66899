#pragma once
/// An in-process cluster for router tests: one actor system, a router, workers, and a client
/// that plays the gateway with a scoped_actor and logs every event. Workers are serving loops
/// over a fake engine by default (fake_worker: deterministic tokens, no torch), so the router's
/// behaviour is tested without a model; tests/unit/router/model_worker.hpp adds the tiny GPT-2.

#include <catch2/catch.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/interfaces.hpp"
#include "actors/system_config.hpp"
#include "actors/worker_actor.hpp"
#include "router/router_actor.hpp"
#include "tests/support/test_tokenizer.hpp"
#include "tests/support/tiny_model.hpp"
#include "tests/unit/worker/loop_fixture.hpp"
#include "worker/serving_loop.hpp"

namespace lf::test {

/// Makes one worker's backend (its serving loop and what owns it).
using backend_factory = std::function<actors::worker_backend()>;

/// A worker whose serving loop runs a fake engine (context 256, GPT-2's vocabulary, 256 KV blocks
/// of 8 tokens): its tokens depend only on each sequence's own tokens, so a request gets the same
/// text alone or in any batch; `step` is the simulated time of one engine step (about the tiny
/// GPT-2's, so a long request is still streaming when a test kills its worker).
/// `kv`: the engine keeps a fake K/V store (fake_engine::enable_kv), so drains ship K/V.
inline backend_factory fake_worker(std::uint32_t max_seqs = 8,
                                   std::chrono::microseconds step = std::chrono::microseconds(2000),
                                   bool kv = false) {
  return [=] {
    struct owner {
      fake_engine engine;
      worker::serving_loop loop;
      owner(worker::serving_config cfg, std::chrono::microseconds t, bool kv)
        : engine(make_engine(cfg, t, kv)), loop(engine, tokenizer(), cfg) {}
      static fake_engine make_engine(const worker::serving_config& cfg, std::chrono::microseconds t, bool kv) {
        fake_engine e(50257, t);
        if (kv)
          e.enable_kv(cfg.block_size, cfg.num_blocks);
        return e;
      }
    };
    worker::serving_config cfg;
    cfg.sched.max_seqs = max_seqs;
    cfg.sched.max_batched_tokens = 64;
    cfg.num_blocks = 256;
    cfg.block_size = 8;
    cfg.eos_id = tokenizer().eos_id();
    auto o = std::make_shared<owner>(cfg, step, kv);
    actors::worker_backend b;
    b.loop = &o->loop;
    b.context_window = 256;
    b.vocab_size = 50257;
    b.block_size = cfg.block_size;
    b.max_seqs = max_seqs;
    b.owner = std::move(o);
    return b;
  };
}

struct test_config : caf::actor_system_config {
  test_config() { actors::add_lorafleet_types(*this); }
};

/// A router and one worker per factory in one actor system. The destructor stops every actor and
/// every serving loop before the actor system goes.
class cluster {
public:
  cluster(router::router_config rc, std::vector<backend_factory> workers)
    : router(router::spawn_router(sys, rc)) {
    caf::scoped_actor self{sys};
    for (std::size_t i = 0; i < workers.size(); ++i) {
      auto b = workers[i]();
      loops.push_back(b.loop);
      owners.push_back(b.owner);
      actors::worker_options o;
      o.name = "w" + std::to_string(i + 1);
      o.report_interval = std::chrono::milliseconds(20);
      this->workers.push_back(actors::spawn_worker(sys, std::move(b), router, o));
      // Readiness: the router answers once this worker has registered, so worker i gets id i + 1.
      bool ready = false;
      self->request(router, std::chrono::seconds(30), caf::wait_for_atom::value,
                    static_cast<std::uint32_t>(i + 1))
        .receive([&](const actors::router_stats& s) { ready = s.workers == i + 1; },
                 [&](const caf::error&) {});
      REQUIRE(ready);
    }
  }

  ~cluster() {
    for (auto& w : workers)
      caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
    for (auto* l : loops)
      l->stop(false);
  }

  test_config cfg;
  caf::actor_system sys{cfg};
  actors::router_actor router;
  std::vector<worker::serving_loop*> loops;  ///< each worker's loop (owned by `owners`)
  std::vector<std::shared_ptr<void>> owners;
  std::vector<actors::worker_actor> workers;
};

/// Everything one request received.
struct request_log {
  std::string streamed;
  std::vector<std::int32_t> tokens;
  bool indices_in_order = true;
  int terminals = 0;
  std::optional<actors::done_event> done;
  std::optional<actors::error_event> error;
  int done_rank = -1;  ///< position among all terminal events received
  int after_terminal = 0;  ///< events received after its first terminal (must stay 0)
};

/// Plays the gateway: sends requests as a scoped_actor and logs the events.
class client {
public:
  client(caf::actor_system& sys, actors::router_actor router) : self(sys), router_(router) {}

  void submit(actors::generate_request r) { self->send(router_, std::move(r)); }

  void cancel(std::uint64_t id) { self->send(router_, actors::cancel_request{actors::sink_request_id{id}}); }

  /// Handles events until `done(*this)` holds or `limit` passes; false on timeout.
  template <class Pred>
  bool run_until(Pred done, std::chrono::seconds limit = std::chrono::seconds(120)) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!done(*this)) {
      auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero())
        return false;
      bool timeout = false;
      self->receive([&](actors::token_event& ev) { ++lone_tokens_; on_token(ev); },
                    [&](actors::done_event& ev) { on_done(ev); },
                    [&](actors::error_event& ev) { on_error(ev); },
                    [&](actors::event_batch& b) { on_batch(b); },
                    caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(left))
                      >> [&] { timeout = true; });
      if (timeout)
        return false;
    }
    return true;
  }

  /// Handles events until `n` terminal events arrived in total.
  bool run_until_terminals(std::size_t n, std::chrono::seconds limit = std::chrono::seconds(120)) {
    return run_until([n](const client& c) { return c.terminals_ >= n; }, limit);
  }

  /// The router's stats. The reply comes after every event the router sent before it, so
  /// drain() afterwards sees any (wrong) late event.
  actors::router_stats stats() {
    actors::router_stats out;
    self->request(router_, std::chrono::seconds(30), caf::get_atom::value)
      .receive([&](actors::router_stats& s) { out = std::move(s); },
               [&](const caf::error& e) { FAIL("router stats: " << caf::to_string(e)); });
    return out;
  }

  /// Handles what is already in the mailbox.
  void drain() {
    bool more = true;
    while (more)
      self->receive([&](actors::token_event& ev) { ++lone_tokens_; on_token(ev); },
                    [&](actors::done_event& ev) { on_done(ev); },
                    [&](actors::error_event& ev) { on_error(ev); },
                    [&](actors::event_batch& b) { on_batch(b); },
                    caf::after(std::chrono::milliseconds(0)) >> [&] { more = false; });
  }

  std::size_t terminals() const { return terminals_; }
  /// event_batch messages received (a worker step's events for this client).
  std::size_t batches() const { return batches_; }
  /// token_event messages received alone (not in an event_batch).
  std::size_t lone_tokens() const { return lone_tokens_; }

  std::map<std::uint64_t, request_log> log;
  caf::scoped_actor self;

private:
  void on_batch(actors::event_batch& b) {
    ++batches_;
    for (auto& ev : b.tokens)
      on_token(ev);
    for (auto& ev : b.done)
      on_done(ev);
    for (auto& ev : b.errors)
      on_error(ev);
  }

  void on_done(actors::done_event& ev) { on_terminal(ev.id).done = std::move(ev); }
  void on_error(actors::error_event& ev) { on_terminal(ev.id).error = std::move(ev); }

  void on_token(const actors::token_event& ev) {
    auto& l = log[ev.id.value()];
    if (l.terminals > 0)
      ++l.after_terminal;
    if (ev.index != l.tokens.size())
      l.indices_in_order = false;
    l.tokens.push_back(ev.token);
    l.streamed += ev.text;
  }

  request_log& on_terminal(actors::sink_request_id id) {
    auto& l = log[id.value()];
    if (l.terminals > 0)
      ++l.after_terminal;
    ++l.terminals;
    l.done_rank = static_cast<int>(terminals_++);
    return l;
  }

  actors::router_actor router_;
  std::size_t terminals_ = 0;
  std::size_t batches_ = 0, lone_tokens_ = 0;
};

/// A greedy request that ignores EOS (so its length is max_tokens), its prompt tokenized as the
/// gateway would.
inline actors::generate_request greedy(std::uint64_t id, const std::string& prompt, int max_tokens) {
  actors::generate_request r;
  r.id = actors::sink_request_id{id};
  r.draft.prompt = tokenizer().encode(prompt);
  r.draft.params.temperature = 0;
  r.draft.params.max_tokens = max_tokens;
  r.draft.params.ignore_eos = true;
  return r;
}


/// The text each prompt gets when it runs alone through `c` (one request at a time).
inline std::vector<std::string> alone_texts(cluster& c, int max_tokens) {
  std::vector<std::string> out;
  client cl(c.sys, c.router);
  for (std::size_t i = 0; i < prompts().size(); ++i) {
    cl.submit(greedy(900000 + i, prompts()[i], max_tokens));
    REQUIRE(cl.run_until_terminals(i + 1));
    auto& l = cl.log[900000 + i];
    REQUIRE(l.done);
    out.push_back(l.done->text);
  }
  return out;
}

} // namespace lf::test
