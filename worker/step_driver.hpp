#pragma once
/// The pure parts of one continuous-batching step, apart from the serving loop's thread and its
/// books (serving_loop_run.cpp holds the order of a step; this holds what each part computes):
///   assemble       the scheduler's plan -> the engine's chunks (a chunk with proposals computes
///                  its last token, then the proposed ones);
///   drive_step     (plan, logits, now) -> each sampling request's turn: the tokens it streams
///                  and, when the step ends it, its terminal result; and what the scheduler is
///                  told back. Built from:
///   draw_row       one sampling row's draws with speculative verification (worker/speculation.hpp
///                  says why the output is then exactly what plain decoding gives);
///   split_emitted  each chunk's emitted tokens -> what the scheduler is told (its last token, and
///                  the proposals accepted before it).
/// The serving loop lends its per-request books for the call and applies the turns (streams,
/// ends, pauses, counters); nothing here owns state or reads a clock. Tested without a model
/// (tests/unit/worker/test_step_driver.cpp).

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "worker/engine/model/step_engine.hpp"
#include "worker/engine/sampling/logprobs.hpp"
#include "worker/request.hpp"
#include "worker/scheduler.hpp"

namespace lf::text {
class text_stream;
class tokenizer;
} // namespace lf::text

namespace lf::engine {
class sampler;
} // namespace lf::engine

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

class output_guide;

/// One sampling chunk's request as a step reads and advances it: the serving loop's books, lent
/// for one drive_step call.
struct step_request {
  request_id id;
  const sampling_params* params = nullptr;
  engine::sampler* pick = nullptr;
  output_guide* guide = nullptr;  ///< its constraint's state; nullptr: none
  text::text_stream* stream = nullptr;
  std::vector<std::int32_t>* generated = nullptr;
  std::optional<time_point>* first_token = nullptr;     ///< set to `now` by its first token
  const std::vector<std::int32_t>* context = nullptr;   ///< its tokens so far (prompt and output)
  const std::vector<std::int32_t>* proposal = nullptr;  ///< this step's proposals
};

/// The step's logits and how its rows are sampled.
struct step_logits {
  /// Logits row r (vocab floats; sampling rewrites them).
  std::function<float*(std::size_t r)> row;
  std::size_t vocab = 0;
  /// Runs fn over [0, n) in ranges, possibly on several threads (step_engine::for_rows): each
  /// request's sampler and books are its own, so the order does not matter.
  std::function<void(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn)> for_rows;
  std::int32_t eos = 0;  ///< the model's end of text
  const text::tokenizer* tok = nullptr;
};

/// A token a step streams, with the text it made final.
struct streamed_token {
  std::int32_t token = 0;
  std::string text;
  std::optional<token_logprobs> logprobs;
};

/// One sampling request's share of a step: what it streams, in order, then its end if the step
/// ended it (end of text, a stop string, max_tokens, a complete constraint; or an error: invalid
/// logits, a constraint with no token left, a token outside its constraint).
struct request_turn {
  request_id id;
  std::vector<streamed_token> tokens;
  std::optional<request_result> end;
  /// Speculation: proposals verified and accepted this step (draft 0: none, or the row failed).
  std::uint32_t draft = 0, accepted = 0;
};

/// See drive_step.
struct step_outcome {
  std::vector<request_turn> turns;  ///< one per sampling chunk, in the plan's order
  step_completion completion;       ///< for scheduler::complete (a failed row holds token 0)
};

/// One step after the engine has run `plan`: samples every sampling chunk (its rows in `logits`,
/// in the plan's order, 1 + draft each), verifies proposals (draw_row), and moves each request
/// past its tokens (next_token, token_outcome.hpp, which steps its constraint first). `request(id)`
/// lends a sampling chunk's books. Streaming, ending and pausing are the caller's.
step_outcome drive_step(const step_plan& plan, const std::function<step_request(cache::seq_id)>& request,
                        const step_logits& logits, time_point now);

} // namespace lf::worker
