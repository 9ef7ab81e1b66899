#include "worker/speculation.hpp"

#include <algorithm>
#include <cmath>

namespace lf::worker {

std::vector<std::int32_t> propose_ngram(const std::vector<std::int32_t>& tokens, std::size_t max_draft,
                                        const ngram_settings& s) {
  const auto L = tokens.size();
  if (max_draft == 0 || L < 2 || s.min_ngram == 0)
    return {};
  const std::size_t lo = s.window == 0 || L <= s.window ? 0 : L - s.window;
  const auto max_n = std::min<std::size_t>(s.max_ngram, L - 1);
  for (std::size_t n = max_n; n >= s.min_ngram && n >= 1; --n) {
    const auto* suffix = tokens.data() + (L - n);
    // An occurrence starting at i is followed by tokens[i + n]: i + n <= L - 1. Most recent first.
    for (std::size_t i = L - n; i-- > lo;) {
      if (!std::equal(suffix, suffix + n, tokens.data() + i))
        continue;
      // What followed, copied as LZ77 copies an overlapping match: where the continuation
      // reaches the end of `tokens` it goes on with the proposal itself, so a loop of period
      // L - from repeats for all max_draft tokens.
      const auto from = i + n;
      std::vector<std::int32_t> out;
      out.reserve(max_draft);
      for (std::size_t j = 0; j < max_draft; ++j) {
        const auto at = from + j;
        out.push_back(at < L ? tokens[at] : out[at - L]);
      }
      return out;
    }
    if (n == 1)
      break;
  }
  return {};
}

std::string_view to_string(speculation_mode m) {
  switch (m) {
    case speculation_mode::off: return "off";
    case speculation_mode::on: return "on";
    case speculation_mode::automatic: return "auto";
  }
  return "off";
}

std::optional<speculation_mode> parse_speculation_mode(std::string_view s) {
  if (s == "off")
    return speculation_mode::off;
  if (s == "on")
    return speculation_mode::on;
  if (s == "auto")
    return speculation_mode::automatic;
  return std::nullopt;
}

std::string_view to_string(speculation_method m) {
  return m == speculation_method::draft ? "draft" : "ngram";
}

std::optional<speculation_method> parse_speculation_method(std::string_view s) {
  if (s == "ngram")
    return speculation_method::ngram;
  if (s == "draft")
    return speculation_method::draft;
  return std::nullopt;
}

void draft_length::update(std::uint32_t proposed, std::uint32_t accepted) {
  if (proposed == 0)
    return;
  accepted = std::min(accepted, proposed);
  rate_ = 0.8 * rate_ + 0.2 * (double(accepted) / double(proposed));
  if (accepted == proposed)
    k_ = std::min(limit_, k_ + 2);
  else if (k_ > 1)
    --k_;
}

void step_cost_model::observe(std::uint32_t tokens, double ms) {
  if (!(ms >= 0) || !std::isfinite(ms))
    return;
  const double x = tokens, y = ms;
  s0_ = decay_ * s0_ + 1;
  sx_ = decay_ * sx_ + x;
  sy_ = decay_ * sy_ + y;
  sxx_ = decay_ * sxx_ + x * x;
  sxy_ = decay_ * sxy_ + x * y;
}

std::optional<std::pair<double, double>> step_cost_model::fit() const {
  if (s0_ < 4)
    return std::nullopt;
  const double mx = sx_ / s0_;
  const double var = sxx_ / s0_ - mx * mx;
  if (var < 0.25)  // steps all of about one size: no slope to see
    return std::nullopt;
  const double cov = sxy_ / s0_ - mx * (sy_ / s0_);
  const double b = std::max(0.0, cov / var);
  const double a = std::max(0.0, sy_ / s0_ - b * mx);
  return std::make_pair(a, b);
}

bool step_cost_model::pays(std::uint32_t step_tokens, std::uint32_t rows, double expected_gain, std::uint32_t extra,
                           std::uint32_t fallback_rows, double overhead_ms) const {
  if (extra == 0 || rows == 0)
    return false;
  const auto f = fit();
  if (!f)
    return rows <= fallback_rows;
  const auto [a, b] = *f;
  const double plain = a + b * step_tokens;
  const double spec = a + b * (double(step_tokens) + extra) + overhead_ms;
  if (!(plain > 0))
    return false;
  return (rows + expected_gain) * plain > rows * spec;
}

} // namespace lf::worker
