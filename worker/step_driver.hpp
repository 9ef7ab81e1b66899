#pragma once
/// The pure parts of one continuous-batching step, apart from the serving loop's thread and its
/// books (serving_loop_run.cpp holds the order of a step; this holds what each part computes):
///   assemble       the scheduler's plan -> the engine's chunks (a chunk with proposals computes
///                  its last token, then the proposed ones);
///   draw_row       one sampling row's draws with speculative verification (worker/speculation.hpp
///                  says why the output is then exactly what plain decoding gives);
///   split_emitted  each chunk's emitted tokens -> what the scheduler is told (its last token, and
///                  the proposals accepted before it).
/// The serving loop supplies lookups and the sampler; nothing here owns state. Tested without a
/// model (tests/unit/worker/test_step_driver.cpp).

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "worker/engine/model/step_engine.hpp"
#include "worker/scheduler.hpp"

namespace lf::worker {

/// What assemble() reads of a planned sequence.
struct chunk_source {
  /// The sequence's tokens so far (prompt and output).
  std::function<const std::vector<std::int32_t>&(cache::seq_id)> tokens;
  /// Its proposed tokens this step (at least the chunk's `draft` of them).
  std::function<const std::vector<std::int32_t>&(cache::seq_id)> proposal;
  /// Its block table (covering the chunk).
  std::function<const std::vector<cache::block_id>&(cache::seq_id)> block_table;
  /// Its adapter (cache::base_model for none).
  std::function<cache::adapter_id(cache::seq_id)> adapter;
};

/// The engine's inputs for a plan: one chunk per planned chunk, in the plan's order. A chunk with
/// proposals reads its tokens from `verify` (its last token, then the proposals), which is why
/// the two travel together: move, never copy, an engine_inputs (the chunks point into verify).
struct engine_inputs {
  std::vector<engine::engine_chunk> chunks;
  std::vector<std::vector<std::int32_t>> verify;
  engine_inputs() = default;
  engine_inputs(engine_inputs&&) = default;
  engine_inputs& operator=(engine_inputs&&) = default;
  engine_inputs(const engine_inputs&) = delete;
  engine_inputs& operator=(const engine_inputs&) = delete;
};

/// See the file comment. A chunk without proposals points into `src.tokens(id)` at its start.
engine_inputs assemble(const step_plan& plan, const chunk_source& src);

/// Draws token index g + k from logits row k, given the context (the sequence's tokens, then the
/// first k proposals); a negative value: nothing may be drawn (a constraint's dead end).
using row_draw = std::function<std::int32_t(std::uint32_t k, const std::vector<std::int32_t>& context)>;

/// One sampling row's draws: row 0, then row k + 1 only while draw k equals proposal k and k <
/// `draft`. `tokens` holds every draw (the accepted proposals, then the first token that differs
/// or the draw after the last proposal); `dead_end` when a draw was negative (`tokens` then holds
/// the draws before it).
struct row_draws {
  std::vector<std::int32_t> tokens;
  bool dead_end = false;
};
row_draws draw_row(std::uint32_t draft, const std::vector<std::int32_t>& context,
                   const std::vector<std::int32_t>& proposal, const row_draw& draw);

/// What the scheduler is told after a step (scheduler::complete): each chunk's last emitted token
/// (none when it emitted nothing) and, when any chunk had proposals, each chunk's accepted ones
/// (all its tokens but the last); `accepted` stays empty otherwise.
struct step_completion {
  std::vector<std::optional<std::int32_t>> sampled;
  std::vector<std::vector<std::int32_t>> accepted;
};
step_completion split_emitted(const step_plan& plan, const std::vector<std::vector<std::int32_t>>& emitted);

} // namespace lf::worker
