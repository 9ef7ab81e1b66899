#pragma once
/// Per-request sampling settings and their validation. Pure C++17: the router validates requests
/// with the same function the worker uses, so a request is rejected before it costs a GPU slot.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lf {

/// Structured output: the output must match a constraint (constrain/ compiles it; docs/http.md
/// lists the kinds). Empty `kind`: no constraint.
struct output_constraint {
  /// "" (none), "json_object", "json_schema", "regex", "choice" or "grammar".
  std::string kind;
  /// json_schema: the schema as JSON text; regex: the pattern; choice: a JSON array of strings;
  /// grammar: GBNF text; json_object: empty.
  std::string text;
  bool operator==(const output_constraint& o) const { return kind == o.kind && text == o.text; }
};

/// The longest constraint text accepted, in bytes.
inline constexpr std::size_t max_constraint_text = 64 * 1024;

/// How one request turns logits into tokens and when it stops.
struct sampling_params {
  /// 0 => greedy (argmax). Otherwise logits are divided by it before the softmax.
  float temperature = 1.0f;
  /// Keep only the k most likely tokens; 0 => off.
  int top_k = 0;
  /// Nucleus sampling: keep the smallest most-likely set whose mass reaches top_p; in (0, 1].
  float top_p = 1.0f;
  /// CTRL / Hugging Face style: every token id present in prompt + generated text gets
  /// `logit > 0 ? logit / p : logit * p`; > 0, 1 => off.
  float repetition_penalty = 1.0f;
  /// Same seed => same output. Absent => the sampler uses a caller-provided fallback seed.
  std::optional<std::uint64_t> seed;
  /// Upper bound on generated tokens; >= 1.
  int max_tokens = 16;
  /// Stop sequences, matched on the decoded text; the stop text itself is not returned.
  std::vector<std::string> stop;
  /// Keep generating past the end-of-text token.
  bool ignore_eos = false;
  /// Report each sampled token's log-probability under the model (the raw logits' log-softmax,
  /// before logit_bias, penalty, temperature and filters, as OpenAI's API does) ...
  bool logprobs = false;
  /// ... and the `top_logprobs` most likely alternatives at that position; in [0, max_top_logprobs].
  int top_logprobs = 0;
  /// OpenAI's logit_bias: token id -> a bias in [-max_logit_bias, max_logit_bias] added to that
  /// token's logit before anything else (penalty, temperature, top-k, top-p, greedy's argmax); -100
  /// effectively bans a token, +100 effectively forces it. Reported log-probabilities are of the
  /// logits without it, as OpenAI's API has reported them since 2024.
  /// At most max_logit_bias_entries; ids are checked against the vocabulary by validate_request.
  std::map<std::int32_t, float> logit_bias;
  /// Structured output (none by default). Checked for shape here; compiled at the edge and in
  /// the worker (constrain/).
  output_constraint constraint{};
};

/// The largest |bias| of a logit_bias entry (OpenAI's range).
inline constexpr float max_logit_bias = 100.0f;
/// The most logit_bias entries a request may carry (OpenAI's limit).
inline constexpr std::size_t max_logit_bias_entries = 300;

/// The most alternatives a request may ask for per token (OpenAI's limit).
inline constexpr int max_top_logprobs = 20;

/// What a request with `logprobs` gets for each sampled token: its log-probability and the
/// most likely alternatives (most likely first; ties by lower id), all under the raw logits.
struct token_logprobs {
  float logprob = 0;
  std::vector<std::int32_t> top_tokens;
  std::vector<float> top_logprobs;
};

/// Returns an error message naming the offending field and its value (for example
/// "temperature must be a finite number >= 0 (got nan)"), or std::nullopt when `p` is valid.
/// Stop strings must be non-empty, valid UTF-8 (they are matched against UTF-8 text, so an invalid
/// one could never match), at most `max_stop_len` bytes each and at most `max_stop` of them.
std::optional<std::string> validate(const sampling_params& p, int max_tokens_limit = 1 << 20,
                                    std::size_t max_stop = 16, std::size_t max_stop_len = 256);

} // namespace lf
