#pragma once
/// Speculative decoding's second proposer: a small draft model (same vocabulary as the target)
/// running on the same worker, with its own paged K/V pool, proposing its greedy tokens. The
/// serving loop verifies them exactly as it verifies n-gram proposals (worker/speculation.hpp),
/// so what the draft proposes changes only how many tokens a step emits, never which.
///
/// Per request the proposer keeps a block table in its own block manager (prefix cache off) and
/// the tokens whose K/V it has written at positions [0, n) (`seen`). Each propose():
///   1. catch-up: the positions from the first one where `seen` and the request's tokens differ
///      (the prompt on first use; then the target's last accepted tokens and its own token) up
///      to the last token, one ragged chunk per row, logits of the last position;
///   2. k - 1 more single-token steps batched over the rows that want more, each feeding the
///      draft's last greedy token.
/// Rejected proposals roll back by `seen` shrinking to the common prefix: their slots are
/// overwritten next time. Blocks are freed by forget() (the request ended, was preempted,
/// paused, moved or cancelled: the loop calls it) and retain().
///
/// Bounds: the pool's blocks (a row whose blocks do not fit gets no proposal: the loop falls
/// back to n-gram lookup), `seen` at most the draft's context per request, sequences at most the
/// pool's blocks. The draft runs the base model for every row (adapters are the target's).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "cache/block_manager.hpp"
#include "worker/engine/model/step_engine.hpp"

namespace lf::worker {

/// How many leading positions of K/V computed for `seen` hold for `tokens`: their common prefix,
/// at most tokens.size() - 1 (the last token is always recomputed: its logits are the first
/// proposal's). Pure.
std::size_t draft_valid_prefix(const std::vector<std::int32_t>& seen, const std::vector<std::int32_t>& tokens);

/// The most tokens a draft can propose after `tokens_len` tokens within a context of `context`
/// positions (it computes positions up to tokens_len + k - 2), at most `k`. Pure.
std::uint32_t draft_room(std::size_t tokens_len, std::uint32_t context, std::uint32_t k);

/// Index of the first largest of `n` logits (NaN never wins). Pure.
std::int32_t greedy_token(const float* logits, std::size_t n);

/// One row that wants proposals.
struct draft_want {
  cache::seq_id id;
  const std::vector<std::int32_t>* tokens = nullptr;  ///< prompt + generated (must stay valid)
  std::uint32_t k = 0;                                ///< tokens wanted (>= 1)
};

/// The draft model's counters (cumulative).
struct draft_counters {
  std::uint64_t rows = 0;       ///< rows it proposed for
  std::uint64_t proposed = 0;   ///< tokens it proposed
  std::uint64_t refused = 0;    ///< rows it could not serve (pool full, past its context, failure)
  std::uint64_t steps = 0;      ///< draft forwards
  double ms = 0;                ///< time in propose()
};

/// See the file comment. Not thread-safe: the serving loop's thread drives it.
class draft_proposer {
public:
  /// `engine`: the draft model (must outlive this); its K/V pool has `num_blocks` blocks of
  /// `block_size`; `context`: its positions. Throws std::invalid_argument for 0 blocks or sizes.
  draft_proposer(engine::step_engine& engine, std::uint32_t num_blocks, std::uint32_t block_size,
                 std::uint32_t context);

  /// Greedy proposals for each row (same order): up to its k tokens, empty where the row cannot
  /// be served (counted in `refused`). Never throws for a full pool or a failed draft forward
  /// (the latter forgets every sequence and returns no proposals).
  std::vector<std::vector<std::int32_t>> propose(const std::vector<draft_want>& rows);

  /// Frees `id`'s blocks (a no-op for an unknown id).
  void forget(cache::seq_id id);

  /// Forgets every sequence for which keep(id) is false.
  void retain(const std::function<bool(cache::seq_id)>& keep);

  std::size_t sequences() const noexcept { return seen_.size(); }
  std::uint32_t free_blocks() const noexcept { return blocks_.num_free_blocks(); }
  std::uint32_t num_blocks() const noexcept { return blocks_.num_blocks(); }
  /// Positions of `id` whose K/V is written (0 for an unknown id).
  std::size_t computed(cache::seq_id id) const;
  const draft_counters& counters() const noexcept { return counters_; }

private:
  engine::step_engine& engine_;
  cache::block_manager blocks_;
  std::uint32_t context_;
  std::unordered_map<cache::seq_id, std::vector<std::int32_t>> seen_;
  draft_counters counters_;
};

} // namespace lf::worker
