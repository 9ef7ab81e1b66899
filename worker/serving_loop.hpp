#pragma once
/// The worker's serving loop: owns the scheduler and block manager, drives a step_engine on its
/// own thread, samples, streams tokens and ends every request exactly once. submit() and cancel()
/// are thread-safe and never block on the engine.
///
///   submit ──> inbox ──> [loop thread] scheduler.schedule(now) ──> engine.step(chunks)
///                          ^                                           │
///                          └── finish / preempt / expire <── sample ◄──┘ ──> on_token / on_done
///                                                                              step_sink (one batch a step)
///
/// Streaming: a request's events (tokens, then its one terminal result) go to its callbacks as
/// they happen and, when it was submitted with a step_sink, into that sink's batch for the step;
/// each sink gets one batch per step (a static batch: per generator step), after the step. A
/// terminal entry is the request's last: a cancel, deadline or failure between steps ends it in
/// the next batch and nothing of it follows.
///
/// Modes (for measurement), all on the same engine and sampler, so a request's tokens do not
/// depend on the mode: continuous batching over the paged cache (default); static batching
/// (synchronous: collect up to B requests or wait static_wait, run them until the last one has
/// ended, only then start the next batch; the paged engine gives each row its own positions, so
/// the dense baseline's left padding has nothing left to do but this lockstep); static batching
/// without a KV cache (the same batches, and for every token each sequence recomputes all its
/// tokens from position 0: scheduler_config::recompute).
///
/// LoRA: a request names its adapter (gen_request::adapter). With an adapter_manager the loop
/// acquires the adapter when the request arrives (a cold one starts loading on the manager's
/// loader thread) and releases it when the request ends, so the weights stay resident while the
/// request is queued or running. Until the adapter is ready the request waits without blocking
/// the queue (the scheduler's adapter_ready rule); when its load fails, the request ends with the
/// load's error. Batches mix adapters and the base model freely.

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "cache/adapter_manager.hpp"
#include "cache/block_manager.hpp"
#include "worker/engine/model/step_engine.hpp"
#include "worker/adapter_gate.hpp"
#include "worker/constraint_runner.hpp"
#include "worker/speculation_runner.hpp"
#include "worker/token_outcome.hpp"
#include "worker/kv_porter.hpp"
#include "worker/load_counts.hpp"
#include "worker/request.hpp"
#include "worker/scheduler.hpp"
#include "worker/speculation.hpp"
#include "worker/step_driver.hpp"
#include "worker/worker_settings.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::engine {
class sampler;
}

namespace lf::worker {

/// Settings of one serving loop.
struct serving_config {
  scheduler_config sched;
  std::uint32_t num_blocks = 0;   ///< KV blocks (must equal the engine's pool)
  std::uint32_t block_size = 16;
  bool prefix_cache = true;  ///< forced off in static_no_cache (it would keep the K/V)
  batching_mode mode = batching_mode::continuous;
  std::uint32_t static_batch = 8;                   ///< static modes: batch size B
  std::chrono::milliseconds static_wait{20};        ///< static modes: wait for B this long
  std::uint64_t seed = 0;                           ///< fallback seed base for unseeded requests
  std::int32_t eos_id = 50256;
  /// The naive LoRA baseline for measurement: a step (or static batch) holds sequences of one
  /// adapter only; the next adapter's requests start once the current one's have all finished.
  /// Base-model requests still join any continuous step.
  bool single_adapter_batches = false;
  /// Speculative decoding (continuous batching, an engine with multi_logits(); see
  /// worker/speculation.hpp): the policy for requests that do not choose (speculative = -1), the
  /// most tokens proposed per row per step (a request's own n replaces it), and the n-gram
  /// proposer's settings. Never changes what a request generates.
  speculation_mode speculation = speculation_mode::off;
  std::uint32_t speculative_tokens = 4;
  ngram_settings ngram{};
  /// The automatic rule's guess before it has measured a fit: speculate while at most this many
  /// rows decode.
  std::uint32_t speculation_auto_rows = 8;
  /// Where proposals come from: n-gram lookup, or the draft engine the loop was given (n-gram
  /// lookup for the rows the draft cannot serve). `draft` without a draft engine is n-gram.
  speculation_method method = speculation_method::ngram;
  /// The draft engine's K/V pool (must equal its store's), its block size and its context.
  std::uint32_t draft_blocks = 0, draft_block_size = 16, draft_context = 0;
  /// Structured output: build the vocabulary's byte trie (66-120 ms for GPT-2's vocabulary) on a
  /// thread of its own when the loop starts, so that the first constrained request does not stall
  /// every row of the loop while it is built. Off by default (tests make hundreds of loops that
  /// never constrain): the trie is then built at the first constrained request.
  bool prebuild_vocab_trie = false;
};

/// A snapshot of the loop's load, for the router and `status`: the numbers the router sees
/// (load_counts) and the loop's own.
struct load_report : load_counts {
  double prefix_hit_rate = 0;
  std::uint64_t steps = 0;
  cache::adapter_cache_stats adapters;  ///< zeros without an adapter manager
  /// Where the continuous loop's working steps spent their time (milliseconds, cumulative): the
  /// engine's forward, sampling (drive_step: the draws and what they do to each output's text),
  /// and the rest of the step (scheduling, building the batch, streaming and ending requests);
  /// idle waits are not counted.
  double forward_ms = 0, sample_ms = 0, step_ms = 0;
  std::uint64_t working_steps = 0;
  /// K/V moved with requests (cancel with ship_kv; submit with a blob): tokens exported, tokens
  /// imported into the prefix cache, and blobs that could not be used (recomputed instead).
  std::uint64_t kv_exported_tokens = 0, kv_imported_tokens = 0, kv_refused = 0;
  std::uint64_t pauses = 0;  ///< pauses for want of credits so far
  /// Speculative decoding: tokens proposed and accepted, verifications and what they emitted.
  speculation_stats speculation;
  /// The draft model's K/V pool (zeros without a draft model): blocks free and in all.
  std::uint32_t draft_free_blocks = 0, draft_total_blocks = 0;
};

/// See the file comment.
struct live_request;  // serving_loop_state.hpp: what the loop thread keeps per request
struct inbox_item;    // serving_loop_state.hpp: a submit waiting for the loop thread

class serving_loop {
public:
  /// Starts the loop thread. `engine`, `tok` and `adapters` must outlive the loop. Without
  /// `adapters`, requests that name an adapter fail with unknown_adapter. The engine must find the
  /// manager's adapters (cpu_runner constructed with adapters->lookup()). The loop sets the
  /// manager's listener (one loop per manager). Throws std::invalid_argument for an invalid
  /// scheduler config.
  ///
  /// `draft`: a draft model for speculative decoding (cfg.method draft; worker/draft_proposer.hpp),
  /// over its own K/V pool of cfg.draft_blocks blocks; must outlive the loop. Throws
  /// std::invalid_argument when its vocabulary differs from `engine`'s, or its pool or context
  /// is 0.
  serving_loop(engine::step_engine& engine, const text::tokenizer& tok, serving_config cfg,
               cache::adapter_manager* adapters = nullptr, engine::step_engine* draft = nullptr);

  /// stop(false): cancels what is left, then joins the thread.
  ~serving_loop();

  serving_loop(const serving_loop&) = delete;
  serving_loop& operator=(const serving_loop&) = delete;

  /// Queues a request, checked once at the edge (validate_request against this model's limits);
  /// the loop checks nothing again. `deadline`: not finished by then => serve_errc::timeout.
  /// A request's adapter is its path under the worker's adapter directory; a request that names
  /// one is never served by the base model (an unknown, refused or broken adapter ends it with
  /// unknown_adapter or invalid_request). After stop() requests end at once with
  /// on_done(shutting_down) on the caller's thread. Returns the request's id either way.
  ///
  /// `resume`: the tokens this request already generated elsewhere (and streamed to its client),
  /// for exact resumption after a worker was lost or drained. The loop replays them through the
  /// request's text stream without calling back, prefills prompt + resume (the prefix cache may
  /// hold much of it) and samples from index resume.size() on, so tokens, text and the terminal
  /// result are those of the undisturbed run (sampling is a function of seed and index; the
  /// engine's rows do not depend on the batch). If the resumed tokens already end the request
  /// (end of text, a stop string, max_tokens), it finishes at once. Every mode resumes (a static
  /// mode's resumed request joins a batch like a new one).
  ///
  /// `kv`: the K/V an earlier worker computed for prompt + resume (see cancel's ship_kv). When
  /// its format is this engine's, its tokens are a prefix of prompt + resume and the pool has
  /// room, its blocks are written into the prefix cache before the request queues, so admission
  /// finds them there and computes only the rest (the last partial block). Otherwise it is
  /// ignored and everything is recomputed: a blob never changes what a request generates.
  ///
  /// `allowance`: credit-based streaming. The request streams tokens with index < allowance, then
  /// pauses: it leaves the batch (its blocks freed as in a preemption; the full ones stay in the
  /// prefix cache) and waits, holding no batch slot, until credit() raises the allowance. Its
  /// deadline still runs. 0 => unlimited.
  request_id submit(validated_request req, std::optional<time_point> deadline, request_callbacks cb,
                    std::vector<std::int32_t> resume = {}, kv_blob kv = {}, std::uint32_t allowance = 0);

  /// Raises a request's allowance (never lowers it); a paused request goes back to the head of
  /// the waiting queue. Thread-safe; false if the request is unknown.
  bool credit(request_id id, std::uint32_t allowance);

  /// Cancels a request in any state; its blocks are freed and on_done(cancelled) follows.
  /// `ship_kv`: the request is moving to another worker: the result says so (`moved`) and, in
  /// continuous batching, carries the K/V of its computed whole blocks (`kv`) for that worker's
  /// submit(). Returns false if the request is unknown or already ended.
  bool cancel(request_id id, bool ship_kv = false);

  /// Stops taking requests. drain = true: finish everything in flight first; false: cancel it.
  /// Blocks until the loop thread has ended.
  void stop(bool drain);

  /// Thread-safe snapshot, updated after every step.
  load_report load() const;

  /// Prefix-cache events (cache/prefix_events.hpp): from now on, `deliver` gets on the loop's
  /// thread what entered and left this loop's prefix cache, at most one numbered batch a loop
  /// turn, the first one a snapshot. Every listener gets every batch (a worker registered with
  /// several routers has one per router); each new listener makes the next batch a snapshot for
  /// all. Nothing is sent when the prefix cache is off. Returns the listener's id. Thread-safe.
  std::uint64_t watch_prefix_cache(std::function<void(cache::prefix_event_batch)> deliver);
  /// Stops the listener `id` (watch_prefix_cache's); unknown ids are ignored. Thread-safe.
  void unwatch_prefix_cache(std::uint64_t id);
  /// The next batch is a snapshot (the receiver saw a gap in the numbers). Thread-safe.
  void resend_prefix_cache();
  /// The prefix-cache namespace rule this loop's scheduler applies (the receiver salts with it).
  cache::prefix_isolation prefix_isolation() const noexcept { return cfg_.sched.isolation; }
  /// Whether this loop keeps a prefix cache (and so sends events).
  bool prefix_cache_enabled() const noexcept { return cfg_.prefix_cache; }

private:

  void run();
  void run_continuous_step();
  /// Static modes: a step of the current batch, or (nothing left of it) the start of the next.
  void run_static_batch();
  /// Moves the next static batch from static_queue_ into the scheduler; false if it is not time
  /// yet (too few requests, and the oldest has waited less than static_wait) or none can run.
  bool start_static_batch();
  /// Hands `lr` (prompt + any resumed tokens) to the scheduler; false if it ended instead.
  bool schedule_request(request_id id, live_request& lr, time_point now);
  void take_inbox(time_point now);
  /// Speculative decoding: gives the runner each decoding row's choice and room, and it proposes
  /// (none where the policy, the room or the automatic rule say no).
  void propose_drafts();
  /// Lends drive_step (step_driver.hpp) the books of `id`, a live request in the plan.
  step_request lend(cache::seq_id id);
  /// Applies one request's turn of a step: streams its tokens, then ends it or pauses it when out
  /// of credit.
  void apply_turn(request_turn& turn);
  /// Tells the speculation runner what each turn verified, and counts the step's speculation.
  void count_speculation(const std::vector<request_turn>& turns);
  void end(request_id id, request_result res);
  /// Streams one token of `lr`: its callbacks now, its sink's batch at the end of the step.
  void emit_token(request_id id, live_request& lr, std::int32_t token, std::string_view text,
                  std::optional<token_logprobs> lp);
  /// Appends `e` to `sink`'s batch of this step.
  void record(const std::shared_ptr<step_sink>& sink, step_entry e);
  /// Hands every sink its batch of this step (loop thread; nothing if the step streamed nothing).
  void flush();
  /// Replays a resumed request's earlier tokens (see submit); false if they ended it.
  bool replay(request_id id, live_request& lr, const std::vector<std::int32_t>& tokens);
  /// Whether submit() has returned `id` (it may have ended since). mtx_ held.
  bool issued(request_id id) const { return id.value() != 0 && id.value() < next_id_; }
  /// Pauses `id` if it has used its allowance (see submit).
  void pause_if_out_of_credit(request_id id, live_request& lr);
  void publish_load();
  /// Single-adapter mode: gives the gate this step's running and waiting adapters (its turn).
  void take_adapter_turn();
  /// Ends the requests waiting for an adapter whose load failed (after a load settled).
  void fail_adapter_waiters();
  /// Sleeps up to 5 ms or until news (inbox, cancel, stop, a settled adapter load).
  void wait_for_news();
  /// Hands the listener of watch_prefix_cache its batch, if one is due (loop thread).
  void publish_prefix_events();

  engine::step_engine& engine_;
  const text::tokenizer& tok_;
  cache::adapter_manager* adapters_;
  serving_config cfg_;
  /// What enters and leaves blocks_'s prefix index (loop thread only; blocks_ writes into it).
  /// No rate bound of its own: a batch a loop turn at most (a turn is a step while serving).
  cache::prefix_event_log cache_events_{cache::prefix_event_options{8192, std::chrono::milliseconds(0)}};
  cache::block_manager blocks_;
  scheduler sched_;
  kv_porter porter_;  ///< K/V moved with requests (kv_porter.hpp); loop thread only

  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<inbox_item> inbox_;
  std::vector<std::pair<request_id, bool>> cancels_;  ///< with ship_kv
  std::vector<std::pair<request_id, std::uint32_t>> credits_;  ///< new allowances
  bool stopping_ = false, drain_ = false;
  bool adapter_news_ = false;  ///< an adapter load settled since the loop last looked
  /// watch_prefix_cache's listeners by id, and whether a snapshot was asked since the loop last
  /// looked.
  std::map<std::uint64_t, std::function<void(cache::prefix_event_batch)>> cache_listeners_;
  std::uint64_t next_listener_ = 1;
  bool cache_snapshot_asked_ = false;
  std::uint64_t next_id_ = 1;
  load_report load_;

  std::unordered_map<request_id, std::unique_ptr<live_request>> live_;  // loop thread only
  /// Speculative decoding's proposals and rules (speculation_runner.hpp); loop thread only.
  speculation_runner spec_;
  std::deque<request_id> static_queue_;  // static modes: waiting for a batch; loop thread only
  adapter_gate gate_;  ///< which adapters may start this step (adapter_gate.hpp); loop thread only
  /// This step's batches, by sink, in the order the sinks first got an entry; loop thread only.
  std::vector<std::pair<std::shared_ptr<step_sink>, step_batch>> out_;
  /// Structured output: the compiled constraints (constraint_runner.hpp); loop thread only.
  constraint_runner constraints_;
  std::thread thread_;
};

} // namespace lf::worker
