#pragma once
/// Continuous-batching scheduler over the paged KV cache (vLLM-style). Pure: standard library and
/// lf_cache only, no clocks (time is passed in), no threads (the owner serialises calls), no I/O.
///
/// One engine step, as the worker drives it:
///   1. `schedule(now, adapter_ready)` plans the step: deadlines are enforced, every decoding
///      sequence gets one token (growing its block table; when the pool is short the most recently
///      admitted running sequence is preempted), sequences in the middle of a chunked prefill
///      continue, then waiting sequences are admitted while the token budget, the sequence limit
///      and the pool allow: preempted ones first, then first come, first served (fcfs) or, under
///      vtc, the oldest sequence of the tenant with the smallest virtual token counter
///      (core/vtc.hpp: every computed prompt token and every decode token is charged to its
///      tenant), so one tenant's burst in the waiting queue does not hold the others back.
///   2. The engine runs the plan's chunks (K/V of each chunk's positions go to
///      `block_manager::slot_of`), returning logits for the chunks that `samples`.
///   3. `complete(plan, sampled)` records the computed K/V and appends the sampled tokens.
///   4. The worker checks stop conditions (EOS, stop strings, max_tokens) and calls `finish()`,
///      which frees the blocks at once. Cancellation is `finish()` too, at any time.
///
/// If a step fails, the worker may skip `complete()`: nothing is recorded as computed, and the
/// next `schedule()` plans the same positions again. Only one plan may be outstanding: call
/// `complete()` (or drop the plan) before the next `schedule()`.
///
/// Preemption is by recomputation: a preempted sequence loses its blocks (its full, computed
/// blocks stay in the prefix cache), goes back to the head of the waiting queue and is later
/// re-admitted with prompt + generated tokens as its prompt, so prefix hits skip most of the work.
///
/// Liveness: add() rejects any request whose prompt + max_tokens exceeds the whole pool, so the
/// oldest running sequence always fits once everyone newer is preempted; it therefore always
/// makes progress, and sequences finish within max_tokens. (That prompt + max_tokens fits the
/// model's context window was checked once, at the edge: core/request.hpp.)

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/block_manager.hpp"
#include "cache/cache_salt.hpp"
#include "cache/ids.hpp"
#include "core/vtc.hpp"

namespace lf::worker {

/// The scheduler's clock; the caller passes the current time in.
using time_point = std::chrono::steady_clock::time_point;

/// Per-step limits.
struct scheduler_config {
  /// Running sequences (prefilling or decoding) at most; > 0 and <= max_batched_tokens, so every
  /// running sequence's decode token always fits in a step.
  std::uint32_t max_seqs = 64;
  /// Tokens computed per step at most (decodes + prefill chunks); > 0.
  std::uint32_t max_batched_tokens = 512;
  /// Admission leaves at least this many blocks free for running sequences to decode into
  /// (fewer preemptions right after an admission). Ignored when nothing is running, so a request
  /// that fits the pool is always admissible.
  std::uint32_t watermark_blocks = 0;
  /// Admission order among waiting sequences of different tenants (preempted ones go first
  /// either way). With one tenant both are first come, first served.
  scheduling_policy policy = scheduling_policy::vtc;
  /// vtc: the cost of a computed prompt token and of a decode token.
  vtc_weights token_weights{};
  /// No KV cache (the recompute baseline): for every token a sequence forgets its K/V and
  /// computes all its tokens again, as a prefill from position 0 (chunked by the token budget
  /// like any prefill). It goes in rounds: a round starts when no running sequence is
  /// prefilling, and then every running sequence recomputes. Needs a block manager without a
  /// prefix cache.
  bool recompute = false;
  /// Whose prefix-cache blocks a sequence may reuse (cache/cache_salt.hpp): `tenant` keeps each
  /// named tenant to its own (the default tenant "" shares), `shared` lets all share.
  cache::prefix_isolation isolation = cache::prefix_isolation::tenant;
};

/// What the worker submits.
struct seq_spec {
  /// Caller-chosen, unique among live sequences (e.g. the request id).
  cache::seq_id id;
  /// Prompt tokens; not empty.
  std::vector<std::int32_t> prompt;
  /// LoRA adapter, or the base model.
  cache::adapter_id adapter = cache::base_model;
  /// Tokens to generate at most; > 0. The worker finishes the sequence when it gets there.
  std::uint32_t max_tokens = 16;
  /// The sequence expires (schedule() drops it) once now >= deadline.
  std::optional<time_point> deadline;
  /// Its tenant (vtc admission order); "" is the default tenant.
  std::string tenant{};
  /// The tenant's weight (> 0): it is charged 1 / weight per token. The latest sequence's weight
  /// holds for its tenant.
  double weight = 1.0;
};

/// Where a sequence is. Preempted sequences are waiting again.
enum class seq_phase {
  /// Queued: no blocks.
  waiting,
  /// Admitted: blocks for all known tokens, K/V of some of them still to compute.
  prefilling,
  /// All tokens but the last sampled one computed: one token per step.
  decoding,
};

/// "waiting", "prefilling" or "decoding".
std::string_view to_string(seq_phase phase) noexcept;

/// One sequence's work in a step: compute K/V for positions [start, start + count) of tokens(id).
/// `samples` = this chunk reaches the end of the sequence's known tokens, so the engine must
/// return logits for its last position and the worker samples a new token.
struct scheduled_chunk {
  /// The sequence.
  cache::seq_id id;
  /// First position; equals block_manager::num_computed(id) when planned.
  std::uint32_t start = 0;
  /// Positions to compute; >= 1.
  std::uint32_t count = 0;
  /// start + count - draft == tokens(id).size(): sample a token from the last position's logits.
  bool samples = false;
  /// Speculative decoding: the chunk's last `draft` positions are proposed tokens that are not
  /// (yet) in tokens(id); the caller supplies them (in its engine chunk) and tells complete()
  /// which of them were accepted. Only decode chunks have them (count = 1 + draft).
  std::uint32_t draft = 0;
};

/// One step's plan.
struct step_plan {
  /// Decodes first (in running order, oldest first), then prefill chunks (continuing ones first,
  /// then newly admitted ones in queue order).
  std::vector<scheduled_chunk> chunks;
  /// Moved back to the head of the waiting queue this step (blocks freed); nothing to reply.
  std::vector<cache::seq_id> preempted;
  /// Deadline passed: removed, blocks freed; the worker replies "timeout".
  std::vector<cache::seq_id> expired;
  /// Sum of the chunks' counts (<= max_batched_tokens).
  std::uint32_t num_tokens = 0;

  /// No chunk, no preemption, no expiry: nothing to do or report.
  bool empty() const noexcept { return chunks.empty() && preempted.empty() && expired.empty(); }
};

/// Plans engine steps for a set of sequences sharing one block manager. Not thread-safe.
class scheduler {
public:
  /// Sequence counts, pending work and pool occupancy, for load reports.
  struct load {
    /// Sequences in the waiting queue (new and preempted).
    std::uint32_t waiting = 0;
    /// Admitted sequences (prefilling or decoding).
    std::uint32_t running = 0;
    /// Tokens whose K/V are still to compute before sampling: every waiting sequence's tokens
    /// (prompt + generated, ignoring possible prefix hits) plus the rest of each prefill.
    std::uint64_t waiting_tokens = 0;
    /// Context tokens (prompt + generated) of the running sequences.
    std::uint64_t running_tokens = 0;
    /// block_manager::num_free_blocks(): free plus evictable cached blocks.
    std::uint32_t free_blocks = 0;
    /// Preemptions since construction.
    std::uint64_t preemptions = 0;
    /// Paused sequences (pause()): neither waiting nor running.
    std::uint32_t paused = 0;
  };

  /// The scheduler allocates from `blocks`, which must outlive it and which nobody else should
  /// allocate from (the liveness argument counts on the whole pool). Throws std::invalid_argument
  /// for an invalid config (see scheduler_config).
  scheduler(scheduler_config cfg, cache::block_manager& blocks);

  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  /// Queues a sequence at the tail of the waiting queue. Returns an error message (and queues
  /// nothing) if it can never run: empty prompt, max_tokens == 0, duplicate id, a weight that is
  /// not finite and > 0, or more blocks than the pool has. A deadline already passed is accepted;
  /// the next schedule() reports it expired.
  std::optional<std::string> add(seq_spec spec, time_point now);

  /// Plans the next step at time `now`: drops expired sequences, schedules one decode token per
  /// decoding sequence (preempting the newest running ones when blocks run out), continues
  /// chunked prefills, then admits waiting sequences in the policy's order (preempted first, then
  /// fcfs or vtc across tenants). A waiting sequence whose adapter is
  /// not ready (`adapter_ready(adapter)` false; the base model and an empty predicate count as
  /// ready) is skipped and keeps its place without blocking those behind it. No admission happens
  /// in a step that preempted. Throws std::logic_error, changing nothing, if a sequence has
  /// max_tokens generated but was not finished (a worker bug).
  ///
  /// `drafts` (speculative decoding): how many proposed tokens a decoding sequence brings this
  /// step. It gets at most that many positions after its decode token (scheduled_chunk::draft),
  /// fewer when the token budget (each decoding sequence's own token comes first), its
  /// max_tokens (1 + draft <= max_tokens - generated) or the pool (proposals never take a block
  /// another decoding sequence may need, and never cause a preemption) are short.
  step_plan schedule(time_point now,
                     const std::function<bool(cache::adapter_id)>& adapter_ready = {},
                     const std::function<std::uint32_t(cache::seq_id)>& drafts = {});

  /// Records the engine's results for `plan`: for every chunk, its K/V are now computed
  /// (block_manager::commit_tokens); for chunks with `samples`, `sampled[i]` holds the new token
  /// appended to the sequence (nullopt for non-sampling chunks). Prefilling sequences whose
  /// tokens are all computed become decoding. Chunks of sequences no longer running (finished or
  /// cancelled since schedule()) are ignored. Throws std::invalid_argument if `sampled` does not
  /// match the plan (size, or a value missing or present where it should not be),
  /// std::logic_error if a chunk does not continue its sequence's computed positions; nothing is
  /// recorded then.
  ///
  /// `accepted` (speculative decoding; empty when no chunk has a draft): for each chunk, the
  /// proposed tokens verification accepted, a prefix of its draft (at most draft of them). They
  /// are appended before the sampled token and their K/V count as computed; the K/V written for
  /// the rejected proposals is rolled back: those positions stay uncomputed (nothing of them
  /// reaches the prefix index) and the next steps overwrite their slots.
  void complete(const step_plan& plan, const std::vector<std::optional<std::int32_t>>& sampled,
                const std::vector<std::vector<std::int32_t>>& accepted = {});

  /// Removes a sequence in any phase (finished, cancelled) and frees its blocks now. False if
  /// unknown (already finished or expired).
  bool finish(cache::seq_id id);

  /// Takes `id` out of the batch until resume() (a client that has not granted credits): a
  /// running sequence's blocks are freed as in a preemption (its full computed blocks stay in
  /// the prefix cache, so re-admission recomputes little), a waiting one leaves the queue. A
  /// paused sequence is never scheduled, holds no blocks, still expires at its deadline and may
  /// be finished. Call it between steps (after complete()). False if `id` is unknown or paused.
  bool pause(cache::seq_id id);

  /// Puts a paused sequence back at the head of the waiting queue. False if it is not paused.
  bool resume(cache::seq_id id);

  /// Whether `id` is paused. Throws std::out_of_range for an unknown id.
  bool paused(cache::seq_id id) const;

  /// Whether `id` is waiting, running or paused.
  bool contains(cache::seq_id id) const;

  /// `id`'s phase. Throws std::out_of_range for an unknown id (likewise the accessors below).
  seq_phase phase(cache::seq_id id) const;

  /// Prompt + generated tokens.
  const std::vector<std::int32_t>& tokens(cache::seq_id id) const;

  /// Length of the original prompt (tokens(id) minus the generated ones).
  std::uint32_t prompt_size(cache::seq_id id) const;

  /// Tokens generated so far.
  std::uint32_t num_generated(cache::seq_id id) const;

  /// `id`'s generation limit (seq_spec::max_tokens).
  std::uint32_t max_tokens(cache::seq_id id) const;

  /// Times `id` was preempted.
  std::uint32_t num_preemptions(cache::seq_id id) const;

  /// `id`'s LoRA adapter.
  cache::adapter_id adapter(cache::seq_id id) const;

  /// `id`'s tenant.
  const std::string& tenant(cache::seq_id id) const;

  /// The virtual token counters (what each tenant has been served here).
  const vtc& counters() const noexcept { return fair_; }

  /// The waiting queue, head first.
  std::vector<cache::seq_id> waiting() const;

  /// Running sequences, oldest admission first (the order decodes are planned in).
  std::vector<cache::seq_id> running() const;

  /// Counts and pending work, for load reports. O(waiting + running).
  load get_load() const;

  /// Nothing waiting or running (paused sequences wait for their credits, not for the engine).
  bool idle() const noexcept { return waiting_.empty() && running_.empty(); }

  /// The limits in force.
  const scheduler_config& config() const noexcept { return cfg_; }

private:
  struct seq_state {
    std::vector<std::int32_t> tokens; // prompt, then generated tokens
    std::uint32_t prompt_size = 0;
    std::uint32_t max_tokens = 0;
    cache::adapter_id adapter;
    cache::cache_salt salt;  ///< its prefix-cache namespace, from its tenant
    std::optional<time_point> deadline;
    seq_phase phase = seq_phase::waiting;
    std::uint32_t preemptions = 0;
    bool paused = false;  ///< phase waiting, but not in the waiting queue
    std::string tenant;
    /// Goes before any tenant's turn when next admitted (it was preempted, or resumed after a
    /// pause: it was admitted before).
    bool head = false;

    std::uint32_t num_generated() const noexcept {
      return static_cast<std::uint32_t>(tokens.size()) - prompt_size;
    }
  };

  seq_state& state_of(cache::seq_id id);
  const seq_state& state_of(cache::seq_id id) const;

  /// A running sequence's state, nullptr if `id` is not running (a chunk to ignore in complete()).
  seq_state* live_state(cache::seq_id id);

  /// Throws std::logic_error if a sequence reached max_tokens without being finished.
  void check_limits() const;

  /// Removes every sequence whose deadline is <= now, recording it in plan.expired.
  void expire(time_point now, step_plan& plan);

  /// One decode token per decoding sequence, preempting the newest running ones when needed.
  void schedule_decodes(step_plan& plan, std::uint32_t& budget,
                        const std::function<std::uint32_t(cache::seq_id)>& drafts);

  /// recompute: every decoding sequence gives up its blocks and prefills all its tokens again
  /// (continue_prefills plans it); one the pool cannot hold goes back to the waiting queue.
  void forget_kv(step_plan& plan);

  /// Next chunks of the sequences admitted in an earlier step whose prefill is unfinished.
  void continue_prefills(step_plan& plan, std::uint32_t& budget);

  /// Admits waiting sequences (fcfs or vtc order, adapter skip rule aside) with their first chunk.
  void admit(step_plan& plan, std::uint32_t& budget,
             const std::function<bool(cache::adapter_id)>& adapter_ready);

  /// The waiting sequence to admit next: the first preempted one, else by the policy; skips
  /// sequences whose adapter is not ready. waiting_.end() when none.
  std::deque<cache::seq_id>::iterator next_waiting(const std::function<bool(cache::adapter_id)>& adapter_ready);

  /// Bookkeeping of the waiting queue per tenant (the vtc backlog).
  void entered_waiting(const seq_state& st);
  void left_waiting(const seq_state& st);

  /// Plans [num_computed, +min(rest, budget)) of a prefilling sequence; false if budget is 0.
  bool plan_prefill(cache::seq_id id, step_plan& plan, std::uint32_t& budget);

  /// Takes `id` out of the waiting queue (with its tenant's bookkeeping) or the running list,
  /// whichever holds it; a paused sequence is in neither. Blocks and phase are left as they are.
  void unlist(cache::seq_id id, const seq_state& st);

  /// Frees the newest running sequence's blocks and puts it at the head of the waiting queue.
  cache::seq_id preempt_newest(step_plan& plan);

  /// A sequence just taken off running_ (its blocks freed) goes to the head of the waiting queue
  /// as preempted: counted, first in line, reported in plan.preempted.
  void requeue_preempted(cache::seq_id id, step_plan& plan);

  scheduler_config cfg_;
  cache::block_manager& blocks_;
  std::unordered_map<cache::seq_id, seq_state> seqs_;
  std::deque<cache::seq_id> waiting_;  // head = next to admit
  std::vector<cache::seq_id> running_; // admission order: back = most recently admitted
  std::uint64_t preemptions_ = 0;
  vtc fair_;
  std::unordered_map<std::string, std::uint32_t> tenant_waiting_;  // waiting sequences per tenant
  std::unordered_map<std::string, std::uint32_t> tenant_seqs_;     // live sequences per tenant
  std::uint32_t paused_ = 0;
};

} // namespace lf::worker
