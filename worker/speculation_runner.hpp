#pragma once
/// The serving loop's speculative decoding, its state and its rules: each step, which decoding
/// rows propose tokens and which (n-gram lookup over a request's own tokens, or the draft model),
/// the automatic rule (does speculating pay at this step's size: step_cost_model), each request's
/// adaptive proposal length (draft_length), and the counters. The loop tells it each decoding
/// row's limits and reads its proposals back; sampling and verification stay in the loop, which
/// reports each row's outcome. Why verification keeps every output exactly plain decoding's:
/// worker/speculation.hpp. Loop thread only.

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cache/ids.hpp"
#include "worker/draft_proposer.hpp"
#include "worker/speculation.hpp"

namespace lf::worker {

/// The worker's speculation settings (serving_config's).
struct speculation_settings {
  speculation_mode mode = speculation_mode::off;  ///< for requests that leave it to the worker
  std::uint32_t tokens = 4;                       ///< proposal length limit, unless a request sets one
  ngram_settings ngram{};
  std::uint32_t auto_rows = 8;  ///< the automatic rule's answer before it has measured enough steps
  speculation_method method = speculation_method::ngram;
};

/// A decoding row that may propose this step.
struct spec_candidate {
  cache::seq_id seq;
  speculation_mode mode = speculation_mode::on;  ///< on or automatic (mode_of)
  /// Tokens it may still take after this step's one: its max_tokens and its client's credits.
  std::size_t room = 0;
  const std::vector<std::int32_t>* tokens = nullptr;  ///< prompt and output so far; valid for the step
};

/// See the file comment.
class speculation_runner {
public:
  /// `draft`: the draft model's proposer (speculation_method::draft), or nullptr.
  speculation_runner(speculation_settings s, std::unique_ptr<draft_proposer> draft);

  /// A request's choice (validated_request::speculative: -1 the worker's policy, 0 off, -2 or a
  /// length > 0 on) as a mode.
  speculation_mode mode_of(int choice) const noexcept;

  /// Tracks `seq`, whose request chose `choice` (a length > 0 is its limit).
  void add(cache::seq_id seq, int choice);
  /// Forgets `seq` (ended), with its draft model state.
  void forget(cache::seq_id seq);

  /// This step's proposals. `rows`: the step's decoding rows; `step_tokens`: its positions without
  /// proposals (read only for automatic candidates); `candidates`: the rows that may propose.
  /// `keep`: which sequences the draft model keeps state for (the others were preempted or paused
  /// since).
  void propose(const std::vector<spec_candidate>& candidates, std::uint32_t rows, std::uint32_t step_tokens,
               const std::function<bool(cache::seq_id)>& keep);

  /// `seq`'s proposal this step (empty: none).
  const std::vector<std::int32_t>& draft(cache::seq_id seq) const;

  /// After sampling: `seq` verified `proposed` (>= 1) tokens and took the first `accepted`.
  void verified(cache::seq_id seq, std::uint32_t proposed, std::uint32_t accepted);

  /// A step of `tokens` positions whose forward took `ms` (the automatic rule's measurements).
  void observe(std::uint32_t tokens, double ms) { cost_.observe(tokens, ms); }

  /// Ends the step (its proposals dropped) and returns the counts since the last call.
  speculation_stats end_step();

  /// The draft model's proposer, or nullptr.
  const draft_proposer* draft_model() const noexcept { return draft_.get(); }

private:
  struct row_state {
    draft_length len;
    std::vector<std::int32_t> draft;
  };
  struct draft_job {
    draft_want want;
    bool automatic = false;
  };
  void run_draft_model(const std::vector<draft_want>& wants);

  speculation_settings s_;
  std::unique_ptr<draft_proposer> draft_;
  std::unordered_map<cache::seq_id, row_state> rows_;
  step_cost_model cost_;
  double draft_ms_per_token_ = 0;  ///< exponentially weighted: the automatic rule's overhead
  speculation_stats stats_;
};

} // namespace lf::worker
