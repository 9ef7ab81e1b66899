#pragma once
/// The credit window of a streaming request (credit-based streaming, docs/protocol.md `credit`):
/// how far its stream may run ahead of what the client has consumed. Pure arithmetic on token
/// indices, shared by the router (which adds the client's grants) and the worker (which pauses a
/// request at the bound and resumes it when the bound moves). No clock, no I/O.

#include <algorithm>
#include <cstdint>
#include <limits>

namespace lf {

/// See the file comment. The bound is absolute: the first token index that may not stream yet
/// (window + every grant so far), so it survives moves between workers and reordered updates
/// (raise_to never lowers it). Bound 0 means unlimited: a request submitted without a window.
class credit_window {
public:
  /// Unlimited.
  credit_window() = default;

  /// A window of `tokens` (0: unlimited).
  explicit credit_window(std::uint32_t tokens) noexcept : bound_(tokens) {}

  /// Adds a grant of `tokens`; saturates (a bound near the top is as good as unlimited).
  /// Ignored for an unlimited window. Returns whether the bound moved.
  bool grant(std::uint32_t tokens) noexcept {
    if (bound_ == 0 || tokens == 0)
      return false;
    const auto next = std::min<std::uint64_t>(std::uint64_t{bound_} + tokens, max_bound);
    const bool moved = next != bound_;
    bound_ = static_cast<std::uint32_t>(next);
    return moved;
  }

  /// Takes a bound computed elsewhere (the router's, after grants); never lowers it, and an
  /// unlimited window stays unlimited.
  void raise_to(std::uint32_t bound) noexcept {
    if (bound_ != 0)
      bound_ = std::max(bound_, bound);
  }

  /// Whether the token with index `index` (0 = the first generated) may be streamed now.
  bool allows(std::uint64_t index) const noexcept { return bound_ == 0 || index < bound_; }

  /// The request has streamed `streamed` tokens and must wait for credit before the next one.
  bool exhausted(std::uint64_t streamed) const noexcept { return !allows(streamed); }

  bool unlimited() const noexcept { return bound_ == 0; }

  /// The bound (0: unlimited), what travels in worker_submit::allowance and worker_credit.
  std::uint32_t bound() const noexcept { return bound_; }

  static constexpr std::uint32_t max_bound = std::numeric_limits<std::uint32_t>::max();

private:
  std::uint32_t bound_ = 0;
};

} // namespace lf
