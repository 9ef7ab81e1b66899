#pragma once
/// Speculative decoding's pure parts: the n-gram (prompt-lookup) proposer, each request's
/// adaptive proposal length, and the automatic rule that turns speculation on only where a step
/// is bandwidth-bound. Standard library only; the serving loop (serving_loop_spec.cpp) drives
/// them, the scheduler gives proposed tokens their positions (scheduled_chunk::draft).
///
/// Verification (serving_loop_spec.cpp): a decoding row with k proposed tokens x_1..x_k computes
/// k + 1 positions in the step's forward and gets k + 1 rows of logits. For j = 0, 1, ... the
/// loop samples y_j from row j with the request's own sampler at token index g + j (g: tokens
/// generated before the step), exactly as plain decoding would sample that index, and accepts
/// x_{j+1} iff y_j == x_{j+1}; the first y_j that differs (or y_k after all k were accepted) is
/// the step's last token. Both proposers are deterministic (q is a point mass on x), and for such
/// a q the standard rejection rule (accept x with probability min(1, p(x)/q(x)) = p(x), else draw
/// from (p - q)+ normalised = p without x) emits a token distributed as p; so does "draw y from p,
/// accept iff y == x, else emit y": P(emit x) = p(x), and P(emit z != x) = p(z), the same law.
/// Drawing y with the sampler's counter-based draw for index g + j makes every emitted token the
/// very token plain decoding would have emitted at that index, since row j's logits are those a
/// decode of that position computes (step_engine::multi_logits) and its context holds the
/// accepted tokens before it. Speculative output is therefore bit-identical to plain decoding
/// for the same seed, greedy or sampled: exact resumption and seeded reproducibility hold as
/// they are.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lf::worker {

/// The n-gram proposer's settings.
struct ngram_settings {
  /// Longest and shortest suffix looked up; 1 <= min_ngram <= max_ngram.
  std::uint32_t max_ngram = 4, min_ngram = 2;
  /// Only the last `window` tokens are searched (bounds the work per step; 0: all).
  std::uint32_t window = 2048;
};

/// Prompt-lookup decoding: finds the most recent earlier occurrence of the longest suffix of
/// `tokens` (prompt + generated; from max_ngram down to min_ngram tokens) and proposes the up to
/// `max_draft` tokens that followed it, continuing as an overlapping copy (a loop of period p
/// proposes its next max_draft tokens, not only the p - 1 it has written since the match). Empty
/// when nothing matches. Pure; O(window * max_ngram) time, no memory but the result's.
std::vector<std::int32_t> propose_ngram(const std::vector<std::int32_t>& tokens, std::size_t max_draft,
                                        const ngram_settings& s = {});

/// A worker's speculation policy (worker_settings::speculation).
enum class speculation_mode {
  off,   ///< never (a request's own `speculative` n >= 1 still turns it on for that request)
  on,    ///< every request that does not say otherwise
  automatic,  ///< per step: only where the measured step cost says it pays (step_cost_model)
};

/// "off", "on", "auto".
std::string_view to_string(speculation_mode m);

/// Parses to_string's spellings; std::nullopt otherwise.
std::optional<speculation_mode> parse_speculation_mode(std::string_view s);

/// Where a worker's proposals come from (worker_settings::speculation_method).
enum class speculation_method {
  ngram,  ///< n-gram lookup over the request's own tokens (propose_ngram)
  draft,  ///< the worker's draft model (worker/draft_proposer.hpp); n-gram lookup where it cannot
};

/// "ngram", "draft".
std::string_view to_string(speculation_method m);

/// Parses to_string's spellings; std::nullopt otherwise.
std::optional<speculation_method> parse_speculation_method(std::string_view s);

/// The most tokens a request or a worker may ask to propose per step.
inline constexpr std::uint32_t max_speculative_tokens = 16;

/// One request's proposal length, adapted to its acceptance: all k accepted => k + 2, else
/// k - 1 (at least 1, at most the request's limit); and its acceptance rate (exponentially
/// weighted over its verifications), what the automatic rule expects of its next proposals.
class draft_length {
public:
  /// `limit`: the most tokens to propose per step (>= 1).
  explicit draft_length(std::uint32_t limit = 4) : limit_(limit < 1 ? 1 : limit), k_(limit_) {}

  /// Tokens to propose next step.
  std::uint32_t next() const noexcept { return k_; }

  /// The limit it adapts under.
  std::uint32_t limit() const noexcept { return limit_; }

  /// After a verification of `proposed` (>= 1) tokens of which `accepted` were accepted.
  void update(std::uint32_t proposed, std::uint32_t accepted);

  /// Estimated probability that a proposed token is accepted (0.5 before any verification).
  double acceptance() const noexcept { return rate_; }

private:
  std::uint32_t limit_, k_;
  double rate_ = 0.5;
};

/// The automatic rule's measurement: a step's forward time as a + b * tokens, fitted by
/// exponentially weighted least squares over the steps the loop has run. Speculating adds D
/// positions to a step of T tokens with R decoding rows and is expected to emit E more tokens;
/// it pays iff (R + E) / (a + b (T + D)) > R / (a + b T), i.e. the step's output per
/// millisecond goes up. Bandwidth-bound steps (a >> b T) pass easily; compute-bound ones
/// (large batches) do not.
class step_cost_model {
public:
  /// `decay` in (0, 1): the weight of past steps per new step.
  explicit step_cost_model(double decay = 0.98) : decay_(decay) {}

  /// A step of `tokens` positions whose forward took `ms`.
  void observe(std::uint32_t tokens, double ms);

  /// (a, b) once the steps seen vary enough in size to fit them (a, b >= 0); nullopt before.
  std::optional<std::pair<double, double>> fit() const;

  /// Whether speculating pays (see the class comment); `overhead_ms`: what making the proposals
  /// costs besides the step (a draft model's forwards), added to the speculative step's time.
  /// Without a fit: rows <= fallback_rows.
  bool pays(std::uint32_t step_tokens, std::uint32_t rows, double expected_gain, std::uint32_t extra,
            std::uint32_t fallback_rows = 8, double overhead_ms = 0) const;

private:
  double decay_;
  double s0_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
};

/// Speculation counters (load_report, stats and /metrics).
struct speculation_stats {
  std::uint64_t proposed = 0;  ///< tokens proposed and verified
  std::uint64_t accepted = 0;  ///< of those, accepted
  std::uint64_t rows = 0;      ///< verifications (decode rows that carried proposals)
  std::uint64_t emitted = 0;   ///< tokens those rows emitted (accepted + one each)
  /// The draft model (speculation_method::draft): rows it proposed for, tokens it proposed,
  /// rows it could not serve (its pool full, past its context; they fell back to n-gram lookup)
  /// and the time it took (milliseconds, cumulative).
  std::uint64_t draft_rows = 0, draft_proposed = 0, draft_refused = 0;
  double draft_ms = 0;

  /// accepted / proposed; 0 before any.
  double acceptance_rate() const noexcept { return proposed ? double(accepted) / double(proposed) : 0.0; }
  /// emitted / rows: tokens per speculative row per step; 0 before any.
  double tokens_per_row() const noexcept { return rows ? double(emitted) / double(rows) : 0.0; }
};

} // namespace lf::worker
