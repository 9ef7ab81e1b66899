// The serving loop's thread: one scheduler step at a time (the static modes start a batch only
// when the last one has ended).
#include "worker/serving_loop.hpp"
#include "worker/serving_loop_state.hpp"

#include "core/log.hpp"

#include <algorithm>
#include <exception>

#include "text/text_stream.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/sampling/logprobs.hpp"
#include "worker/engine/sampling/sampler.hpp"
#include "worker/step_driver.hpp"

namespace lf::worker {

namespace {
using clock_type = std::chrono::steady_clock;
} // namespace

void serving_loop::run() {
  for (;;) {
    flush();  // what the last turn produced, before this one waits (prefix-cache events first)
    {
      std::unique_lock<std::mutex> lk(mtx_);
      // Sleep only when there is nothing to run; static mode waits for its batch inside.
      cv_.wait(lk, [&] {
        return stopping_ || !inbox_.empty() || !cancels_.empty() || !credits_.empty() || !live_.empty()
               || cache_snapshot_asked_;
      });
    }
    take_inbox(clock_type::now());
    fail_adapter_waiters();
    bool stopping, drain;
    {
      std::lock_guard<std::mutex> g(mtx_);
      stopping = stopping_;
      drain = drain_;
    }
    if (stopping && !drain) {
      std::vector<request_id> ids;
      for (auto& [id, lr] : live_)
        ids.push_back(id);
      for (auto id : ids) {
        sched_.finish(cache::seq_id{id.value()});
        end(id, failure(serve_errc::cancelled, "the worker is shutting down"));
      }
      static_queue_.clear();
    }
    if (stopping && live_.empty()) {
      flush();  // the last terminals, before the loop can end
      std::lock_guard<std::mutex> g(mtx_);
      if (inbox_.empty()) {
        if (load_.working_steps > 0)
          log::info("worker", "serving loop stopped", {{"steps", load_.working_steps},
                                                       {"forward_ms", load_.forward_ms},
                                                       {"sample_ms", load_.sample_ms},
                                                       {"other_ms", load_.step_ms - load_.forward_ms - load_.sample_ms},
                                                       {"engine_share", load_.forward_ms / load_.step_ms}});
        break;
      }
      continue;
    }
    if (live_.empty()) {
      publish_load();  // cancels may just have emptied it: the snapshot must say so
      continue;
    }
    if (cfg_.mode == batching_mode::continuous)
      run_continuous_step();
    else
      run_static_batch();
    publish_load();
  }
  flush();
  publish_load();
}

void serving_loop::run_continuous_step() {
  auto now = clock_type::now();
  const auto step_start = now;
  take_adapter_turn();
  const bool speculate = cfg_.mode == batching_mode::continuous && engine_.multi_logits();
  if (speculate)
    propose_drafts();
  auto plan = sched_.schedule(
    now, [this](cache::adapter_id a) { return gate_.usable(a); },
    speculate ? std::function<std::uint32_t(cache::seq_id)>([this](cache::seq_id id) {
      return static_cast<std::uint32_t>(spec_.draft(id).size());
    })
              : std::function<std::uint32_t(cache::seq_id)>{});
  for (auto id : plan.expired)
    end(request_id{id.value()}, failure(serve_errc::timeout, "deadline passed before the request finished"));
  if (plan.chunks.empty()) {
    // Nothing runnable (e.g. every waiting request needs a cold adapter): wait for news briefly.
    wait_for_news();
    return;
  }
  // The engine's inputs (step_driver.hpp): a chunk with proposals computes its last token, then them.
  const auto in = assemble(plan, chunk_source{
    [this](cache::seq_id id) -> const std::vector<std::int32_t>& { return sched_.tokens(id); },
    [this](cache::seq_id id) -> const std::vector<std::int32_t>& { return spec_.draft(id); },
    [this](cache::seq_id id) -> const std::vector<cache::block_id>& { return blocks_.block_table(id); },
    [this](cache::seq_id id) { return sched_.adapter(id); }});
  for (auto& c : plan.chunks) {
    auto& lr = *live_.at(request_id{c.id.value()});
    if (!lr.started) {
      lr.started = true;
      lr.scheduled = now;
      lr.cached_tokens = c.start;  // the first chunk starts after the prefix-cache hit
    }
  }
  const auto forward_start = clock_type::now();
  try {
    engine_.step(in.chunks);
  } catch (const std::exception& e) {
    log::error("worker", "engine step failed: its requests end with `internal`",
               {{"requests", plan.chunks.size()}, {"reason", e.what()}});
    for (auto& c : plan.chunks) {
      sched_.finish(c.id);
      end(request_id{c.id.value()}, failure(serve_errc::internal, std::string("engine step failed: ") + e.what()));
    }
    return;
  }
  const auto sample_start = clock_type::now();
  if (speculate)
    spec_.observe(plan.num_tokens, std::chrono::duration<double, std::milli>(sample_start - forward_start).count());
  // The step's draws and what they do to each request (step_driver.hpp); a first token's time is
  // when its logits were ready.
  step_logits logits{[this](std::size_t r) { return engine_.logits(r); }, engine_.vocab_size(),
                     [this](std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) {
                       engine_.for_rows(n, fn);
                     },
                     cfg_.eos_id, &tok_};
  auto outcome = drive_step(plan, [this](cache::seq_id id) { return lend(id); }, logits, sample_start);
  const auto sample_end = clock_type::now();
  count_speculation(outcome.turns);
  // The scheduler appends each chunk's accepted proposals, then its last token.
  sched_.complete(plan, outcome.completion.sampled, outcome.completion.accepted);
  for (auto& turn : outcome.turns)
    apply_turn(turn);
  // Streaming is part of the step: its batches go out inside the step's time.
  flush();
  auto ms = [](time_point a, time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::lock_guard<std::mutex> g(mtx_);
  load_.forward_ms += ms(forward_start, sample_start);
  load_.sample_ms += ms(sample_start, sample_end);
  load_.step_ms += ms(step_start, clock_type::now());
  ++load_.working_steps;
}

step_request serving_loop::lend(cache::seq_id id) {
  auto& lr = *live_.at(request_id{id.value()});
  return {request_id{id.value()}, &lr.req.params(), &lr.pick, lr.guide ? &*lr.guide : nullptr, &lr.stream,
          &lr.generated, &lr.first_token, &sched_.tokens(id), &spec_.draft(id)};
}

void serving_loop::apply_turn(request_turn& turn) {
  auto& lr = *live_.at(turn.id);
  if (lr.cb.on_token || lr.cb.sink)
    for (auto& t : turn.tokens)
      emit_token(turn.id, lr, t.token, t.text, std::move(t.logprobs));
  if (!turn.end) {
    pause_if_out_of_credit(turn.id, lr);
    return;
  }
  if (turn.end->outcome == request_outcome::failed)
    log::error("worker", turn.end->message, {{"request", turn.id.value()}});
  sched_.finish(cache::seq_id{turn.id.value()});
  end(turn.id, std::move(*turn.end));
}

void serving_loop::run_static_batch() {
  // Synchronous batching: the next batch starts only once nothing of the last one is left.
  if (sched_.idle() && !start_static_batch())
    return;
  run_continuous_step();
}

bool serving_loop::start_static_batch() {
  // The requests that can run now, queue order: base model or a ready adapter (of the current
  // turn in single-adapter mode). Requests of cold adapters keep their places.
  take_adapter_turn();
  std::vector<request_id> ids;
  for (auto id : static_queue_) {
    if (ids.size() >= cfg_.static_batch)
      break;
    if (gate_.usable(live_.at(id)->adapter))
      ids.push_back(id);
  }
  if (ids.empty()) {
    wait_for_news();
    return false;
  }
  // Wait for a full batch, or until the oldest request has waited static_wait.
  const auto ready_at = live_.at(ids.front())->submitted + cfg_.static_wait;
  if (ids.size() < cfg_.static_batch && clock_type::now() < ready_at) {
    flush();
    std::unique_lock<std::mutex> lk(mtx_);
    cv_.wait_until(lk, ready_at, [&] { return stopping_ || !inbox_.empty() || !cancels_.empty(); });
    return false;
  }
  const auto now = clock_type::now();
  for (auto id : ids) {
    static_queue_.erase(std::find(static_queue_.begin(), static_queue_.end(), id));
    schedule_request(id, *live_.at(id), now);
  }
  return !sched_.idle();
}

void serving_loop::publish_load() {
  auto l = sched_.get_load();
  // Which adapters run and wait (sorted, once each); nothing to do for base-model requests.
  const auto adapters_of = [this](const std::vector<cache::seq_id>& seqs) {
    std::vector<std::string> names;
    for (auto s : seqs)
      if (auto it = live_.find(request_id{s.value()}); it != live_.end() && !it->second->req.adapter().empty())
        names.push_back(it->second->req.adapter());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  };
  // Without an adapter manager no request holds an adapter: nothing to list on every step.
  auto running_adapters = adapters_ ? adapters_of(sched_.running()) : std::vector<std::string>{};
  auto waiting_adapters = adapters_ ? adapters_of(sched_.waiting()) : std::vector<std::string>{};
  auto st = blocks_.get_stats();
  auto ad = adapters_ ? adapters_->stats() : cache::adapter_cache_stats{};
  std::lock_guard<std::mutex> g(mtx_);
  load_.kv_exported_tokens = porter_.counts().exported_tokens;
  load_.kv_imported_tokens = porter_.counts().imported_tokens;
  load_.kv_refused = porter_.counts().refused;
  load_.waiting = l.waiting + static_cast<std::uint32_t>(static_queue_.size());
  load_.running = l.running;
  load_.paused = l.paused;
  load_.waiting_tokens = l.waiting_tokens;
  load_.running_tokens = l.running_tokens;
  load_.free_blocks = blocks_.num_free_blocks();
  load_.prefix_hit_rate = st.hit_rate();
  load_.preemptions = l.preemptions;
  load_.adapters = ad;
  load_.running_adapters = std::move(running_adapters);
  load_.waiting_adapters = std::move(waiting_adapters);
  if (const auto* draft = spec_.draft_model()) {
    load_.draft_free_blocks = draft->free_blocks();
    load_.draft_total_blocks = draft->num_blocks();
  }
  ++load_.steps;
}

} // namespace lf::worker
