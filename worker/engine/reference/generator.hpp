#pragma once
/// Whole-batch generation over the dense KV cache: left-padded prompts, attention mask and
/// position ids, one forward per step for the whole batch until every row has finished (static
/// batching). Also the no-KV-cache mode that recomputes every sequence each step.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/adapter_manager.hpp"
#include "cache/ids.hpp"
#include "core/request.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::engine {

class gpt2_model;

/// Why a sequence stopped.
enum class finish_reason { eos, stop_sequence, length, context_full, cancelled };

/// "eos", "stop", "length", "context_full", "cancelled".
std::string_view to_string(finish_reason r);

/// One prompt and how to continue it.
struct generation_request {
  validated_request req;  ///< checked against this model at the edge (core/request.hpp)
  /// LoRA adapter of this row (found through generate_options::adapters), or the base model.
  cache::adapter_id adapter = cache::base_model;
};

/// What one row produced.
struct generation_output {
  std::vector<std::int32_t> tokens;  ///< generated ids (EOS and tokens after a stop excluded)
  std::string text;                  ///< emitted text (stop sequence excluded)
  finish_reason reason = finish_reason::length;
};

/// Wall-clock split of a generate() call.
struct generation_timing {
  double prefill_ms = 0;      ///< first forward over the prompts
  double decode_ms = 0;       ///< every later step
  std::int64_t decode_steps = 0;
  std::int64_t prompt_tokens = 0;     ///< real (unpadded) prompt tokens
  std::int64_t generated_tokens = 0;  ///< over all rows
  double ms_per_step() const { return decode_steps ? decode_ms / double(decode_steps) : 0.0; }
};

/// Result of a batch.
struct generation_batch_result {
  std::vector<generation_output> outputs;
  generation_timing timing;
};

/// Called after each sampled token: row, token id, newly emitted text (may be empty).
using token_callback = std::function<void(std::size_t, std::int32_t, std::string_view)>;

/// Options of a generate() call.
struct generate_options {
  bool use_kv_cache = true;
  std::uint64_t seed = 0;  ///< fallback seed for rows whose params carry none (row index added)
  token_callback on_token;
  /// Checked for every unfinished row after each step; true ends the row with reason cancelled.
  std::function<bool(std::size_t)> is_cancelled;
  /// Finds the weights of the rows' adapters (e.g. cache::adapter_manager::lookup()); needed
  /// only when some row names an adapter. Rows of different adapters share the batch.
  cache::adapter_lookup_fn adapters;
};

/// Generates every request as one left-padded batch. Throws std::invalid_argument naming the
/// row when its adapter is not loaded (or, a caller's bug, it is longer than the context).
generation_batch_result generate(const gpt2_model& model, const text::tokenizer& tok,
                                 const std::vector<generation_request>& batch,
                                 const generate_options& opts = {});

} // namespace lf::engine
