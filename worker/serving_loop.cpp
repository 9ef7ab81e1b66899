#include "worker/serving_loop.hpp"
#include "worker/serving_loop_state.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "constrain/constraint.hpp"
#include "text/text_stream.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/sampling/sampler.hpp"

namespace lf::worker {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_between(time_point a, time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

} // namespace

std::string_view to_string(request_outcome o) {
  switch (o) {
    case request_outcome::finished: return "finished";
    case request_outcome::cancelled: return "cancelled";
    case request_outcome::failed: return "failed";
  }
  return "failed";
}

namespace {

/// `cfg` as the mode runs it: without a KV cache, no prefix cache either, and the scheduler
/// recomputes.
serving_config for_mode(serving_config cfg) {
  if (cfg.mode == batching_mode::static_no_cache) {
    cfg.prefix_cache = false;
    cfg.sched.recompute = true;
  }
  return cfg;
}

/// The draft model's proposer over `draft` (nullptr: none); throws when it cannot serve `engine`.
std::unique_ptr<draft_proposer> proposer_of(engine::step_engine* draft, const engine::step_engine& engine,
                                            const serving_config& cfg) {
  if (draft == nullptr)
    return nullptr;
  if (draft->vocab_size() != engine.vocab_size())
    throw std::invalid_argument("the draft model's vocabulary (" + std::to_string(draft->vocab_size())
                                + " tokens) differs from the model's (" + std::to_string(engine.vocab_size()) + ")");
  if (cfg.draft_blocks == 0 || cfg.draft_block_size == 0 || cfg.draft_context == 0)
    throw std::invalid_argument("a draft model needs draft_blocks, draft_block_size and draft_context > 0");
  return std::make_unique<draft_proposer>(*draft, cfg.draft_blocks, cfg.draft_block_size, cfg.draft_context);
}

/// The speculation runner's settings in `cfg`.
speculation_settings speculation_of(const serving_config& cfg) {
  return {cfg.speculation, cfg.speculative_tokens, cfg.ngram, cfg.speculation_auto_rows, cfg.method};
}

} // namespace

serving_loop::serving_loop(engine::step_engine& engine, const text::tokenizer& tok,
                           serving_config cfg, cache::adapter_manager* adapters, engine::step_engine* draft)
  : engine_(engine), tok_(tok), adapters_(adapters), cfg_(for_mode(cfg)),
    blocks_({cfg_.num_blocks, cfg_.block_size, cfg_.prefix_cache}), sched_(cfg_.sched, blocks_),
    porter_(engine_, blocks_), spec_(speculation_of(cfg_), proposer_of(draft, engine, cfg_)),
    gate_(adapters, cfg_.single_adapter_batches), constraints_(tok_, cfg_.eos_id, cfg_.prebuild_vocab_trie) {
  load_.total_blocks = cfg.num_blocks;
  load_.free_blocks = cfg.num_blocks;
  if (cfg_.prefix_cache)
    blocks_.attach_events(&cache_events_);
  if (adapters_)
    adapters_->set_listener([this] {
      std::lock_guard<std::mutex> g(mtx_);
      adapter_news_ = true;
      cv_.notify_one();
    });
  thread_ = std::thread([this] { run(); });
}

serving_loop::~serving_loop() {
  stop(false);
  if (adapters_)
    adapters_->set_listener({});  // waits out a call in progress: none can reach us after this
}

request_id serving_loop::submit(validated_request req, std::optional<time_point> deadline,
                                request_callbacks cb, std::vector<std::int32_t> resume, kv_blob kv,
                                std::uint32_t allowance) {
  request_id id;
  {
    std::lock_guard<std::mutex> g(mtx_);
    id = request_id{next_id_++};
    if (!stopping_) {
      inbox_.push_back({id, std::move(req), deadline, std::move(cb), clock_type::now(), std::move(resume),
                        std::move(kv), allowance});
      cv_.notify_one();
      return id;
    }
    ++load_.failed;
  }
  auto res = failure(serve_errc::shutting_down, "the worker is shutting down");
  if (cb.sink) {
    step_batch b;
    b.entries.push_back({});
    b.entries.back().id = id;
    b.entries.back().tag = cb.tag;
    b.entries.back().result = res;
    cb.sink->deliver(std::move(b));
  }
  if (cb.on_done)
    cb.on_done(std::move(res));
  return id;
}

bool serving_loop::cancel(request_id id, bool ship_kv) {
  std::lock_guard<std::mutex> g(mtx_);
  if (!issued(id))
    return false;
  cancels_.emplace_back(id, ship_kv);
  cv_.notify_one();
  return true;
}

void serving_loop::stop(bool drain) {
  {
    std::lock_guard<std::mutex> g(mtx_);
    if (!stopping_) {
      stopping_ = true;
      drain_ = drain;
    }
    cv_.notify_one();
  }
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id())
    thread_.join();
}

bool serving_loop::credit(request_id id, std::uint32_t allowance) {
  std::lock_guard<std::mutex> g(mtx_);
  if (!issued(id))
    return false;
  credits_.emplace_back(id, allowance);
  cv_.notify_one();
  return true;
}

load_report serving_loop::load() const {
  std::lock_guard<std::mutex> g(mtx_);
  return load_;
}

void serving_loop::take_inbox(time_point now) {
  std::deque<inbox_item> items;
  std::vector<std::pair<request_id, bool>> cancels;
  std::vector<std::pair<request_id, std::uint32_t>> credits;
  {
    std::lock_guard<std::mutex> g(mtx_);
    items.swap(inbox_);
    cancels.swap(cancels_);
    credits.swap(credits_);
  }
  for (auto& it : items) {
    auto lr = std::make_unique<live_request>(std::move(it.req), it.deadline, std::move(it.cb),
                                             cfg_.seed + it.id.value(), it.submitted);
    auto& r = *lr;
    r.credits = credit_window(it.allowance);
    r.streamed = static_cast<std::uint32_t>(it.resume.size());
    spec_.add(cache::seq_id{it.id.value()}, r.req.speculative());
    live_.emplace(it.id, std::move(lr));
    if (!r.req.adapter().empty()) {
      if (adapters_ == nullptr) {
        end(it.id, failure(serve_errc::unknown_adapter,
                           "this worker serves no LoRA adapters (it has no adapter directory)"));
        continue;
      }
      // A cold adapter starts loading now; the request waits for it in the queue.
      auto got = adapters_->acquire(r.req.adapter());
      if (got.state == cache::adapter_state::failed) {
        end(it.id, failure(got.error, std::move(got.message)));
        continue;
      }
      r.adapter = got.id;
      r.holds_adapter = true;
      blocks_.name_adapter(got.id, cache::adapter_tag(r.req.adapter()));  // the events' public hashes
    }
    if (!r.req.params().constraint.kind.empty()) {
      auto guide = constraints_.start(r.req.params().constraint);
      if (auto* why = std::get_if<std::string>(&guide)) {
        end(it.id, failure(serve_errc::invalid_request, std::move(*why)));
        continue;  // its constraint does not compile
      }
      r.guide = std::move(std::get<output_guide>(guide));
    }
    if (!replay(it.id, r, it.resume))
      continue;  // the resumed tokens already ended it
    if (!it.kv.empty()) {
      auto tokens = r.req.prompt();
      tokens.insert(tokens.end(), r.generated.begin(), r.generated.end());
      // The scheduler's salt for this tenant, so its admission finds the imported blocks.
      std::string unused;  // the porter logs why a blob is refused
      porter_.import_kv(cache::seq_id{it.id.value()}, r.adapter,
                        cache::request_salt(sched_.config().isolation, r.req.tenant()), tokens, it.kv, unused);
    }
    if (cfg_.mode == batching_mode::continuous)
      schedule_request(it.id, r, now);
    else
      static_queue_.push_back(it.id);
  }
  for (auto [id, allowance] : credits) {
    auto it = live_.find(id);
    if (it == live_.end())
      continue;
    auto& lr = *it->second;
    lr.credits.raise_to(allowance);
    const cache::seq_id seq{id.value()};
    if (sched_.contains(seq) && sched_.paused(seq) && !lr.credits.exhausted(lr.generated.size()))
      sched_.resume(seq);
  }
  for (auto [id, ship] : cancels) {
    if (!live_.count(id))
      continue;  // already ended
    auto res = cancelled(ship);
    const cache::seq_id seq{id.value()};
    if (ship && sched_.contains(seq))  // queued or preempted: nothing computed to ship
      res.kv = porter_.export_kv(seq, sched_.tokens(seq));  // before finish() frees the blocks
    sched_.finish(seq);
    static_queue_.erase(std::remove(static_queue_.begin(), static_queue_.end(), id), static_queue_.end());
    end(id, std::move(res));
  }
}

bool serving_loop::schedule_request(request_id id, live_request& lr, time_point now) {
  auto tokens = lr.req.prompt();
  tokens.insert(tokens.end(), lr.generated.begin(), lr.generated.end());
  const auto left = lr.req.params().max_tokens - static_cast<int>(lr.generated.size());
  seq_spec spec{cache::seq_id{id.value()}, std::move(tokens), lr.adapter,
                static_cast<std::uint32_t>(left), lr.deadline, lr.req.tenant(), lr.req.tenant_weight()};
  if (auto err = sched_.add(std::move(spec), now)) {
    end(id, failure(serve_errc::prompt_too_long, *err));
    return false;
  }
  pause_if_out_of_credit(id, lr);  // resumed with its allowance used up
  return true;
}

bool serving_loop::replay(request_id id, live_request& lr, const std::vector<std::int32_t>& tokens) {
  for (auto t : tokens) {
    auto r = next_token({lr.stream, lr.generated}, t, lr.req.params(), cfg_.eos_id, tok_,
                        lr.guide ? &*lr.guide : nullptr);
    if (r.outside_constraint) {
      end(id, failure(serve_errc::invalid_request, "a resumed token is outside the request's constraint"));
      return false;
    }
    if (!r.finish_reason.empty()) {
      end(id, finished(std::move(r.finish_reason)));
      return false;
    }
  }
  return true;
}

void serving_loop::pause_if_out_of_credit(request_id id, live_request& lr) {
  const cache::seq_id seq{id.value()};
  if (!lr.credits.exhausted(lr.generated.size()) || !sched_.contains(seq) || sched_.paused(seq))
    return;
  sched_.pause(seq);
  std::lock_guard<std::mutex> g(mtx_);
  ++load_.pauses;
}

void serving_loop::end(request_id id, request_result res) {
  auto it = live_.find(id);
  if (it == live_.end())
    return;

  auto lr = std::move(it->second);
  live_.erase(it);
  spec_.forget(cache::seq_id{id.value()});
  if (lr->holds_adapter)
    adapters_->release(lr->adapter);
  auto now = clock_type::now();
  res.text = lr->stream.emitted();
  res.tokens = std::move(lr->generated);
  res.usage.prompt_tokens = static_cast<std::uint32_t>(lr->req.prompt().size());
  res.usage.completion_tokens = static_cast<std::uint32_t>(res.tokens.size());
  res.usage.cached_tokens = lr->cached_tokens;
  res.timings.total_ms = ms_between(lr->submitted, now);
  if (lr->started)
    res.timings.queue_ms = ms_between(lr->submitted, lr->scheduled);
  if (lr->first_token)
    res.timings.ttft_ms = ms_between(lr->submitted, *lr->first_token);
  {
    std::lock_guard<std::mutex> g(mtx_);
    auto& counter = res.outcome == request_outcome::finished    ? load_.finished
                    : res.outcome == request_outcome::cancelled ? load_.cancelled
                                                                : load_.failed;
    ++counter;
  }
  if (lr->cb.sink) {
    step_entry e;
    e.id = id;
    e.tag = lr->cb.tag;
    e.result = lr->cb.on_done ? res : std::move(res);
    record(lr->cb.sink, std::move(e));
  }
  if (lr->cb.on_done)
    lr->cb.on_done(std::move(res));
}

void serving_loop::emit_token(request_id id, live_request& lr, std::int32_t token, std::string_view text,
                              std::optional<token_logprobs> lp) {
  const auto index = lr.streamed++;
  if (lr.cb.sink) {
    step_entry e;
    e.id = id;
    e.tag = lr.cb.tag;
    e.token = token;
    e.text = std::string(text);
    e.index = index;
    if (lp)
      e.logprobs = lr.cb.on_logprobs ? *lp : std::move(*lp);
    record(lr.cb.sink, std::move(e));
  }
  if (lp && lr.cb.on_logprobs)
    lr.cb.on_logprobs(std::move(*lp));
  if (lr.cb.on_token)
    lr.cb.on_token(token, text);
}

void serving_loop::record(const std::shared_ptr<step_sink>& sink, step_entry e) {
  // Usually one sink (the worker actor's): the last one is checked first.
  auto it = !out_.empty() && out_.back().first == sink
              ? out_.end() - 1
              : std::find_if(out_.begin(), out_.end(), [&](const auto& o) { return o.first == sink; });
  if (it == out_.end()) {
    out_.emplace_back(sink, step_batch{});
    it = out_.end() - 1;
  }
  it->second.entries.push_back(std::move(e));
}

void serving_loop::flush() {
  // The step's prefix-cache events first: the router knows what this step cached before it
  // sees the step's terminals (a client's next turn then finds its history in the index).
  publish_prefix_events();
  if (out_.empty())
    return;
  auto out = std::move(out_);
  out_.clear();
  for (auto& [sink, batch] : out)
    sink->deliver(std::move(batch));
}

} // namespace lf::worker
