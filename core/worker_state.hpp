#pragma once
/// A worker's state as the router sees it, for operators (status, /metrics, the dashboard) and
/// for readiness. Pure C++.
///
///   register ──> serving ──drain──> draining ──last request gone──> drained
///                   ^                  │                              │
///                   └─────undrain──────┴──────────────undrain─────────┘
///   any state ──the worker dies or leaves──> lost (kept for the record)

#include <cstdint>
#include <optional>
#include <string_view>

namespace lf {

/// Where a worker stands; only `serving` takes new placements.
enum class worker_state : std::uint8_t {
  serving = 0,  ///< takes new requests
  draining,     ///< drained, requests still placed there (moving off or finishing)
  drained,      ///< drained and empty: takes nothing until undrained
  lost,         ///< gone (died, partitioned or left)
};

/// The last state (for loops over every state).
inline constexpr worker_state last_worker_state = worker_state::lost;

/// "serving", "draining", "drained", "lost".
constexpr std::string_view to_string(worker_state s) noexcept {
  switch (s) {
    case worker_state::serving: return "serving";
    case worker_state::draining: return "draining";
    case worker_state::drained: return "drained";
    case worker_state::lost: return "lost";
  }
  return "lost";
}

/// Inverse of to_string.
inline std::optional<worker_state> parse_worker_state(std::string_view s) noexcept {
  for (int i = 0; i <= static_cast<int>(last_worker_state); ++i)
    if (to_string(static_cast<worker_state>(i)) == s)
      return static_cast<worker_state>(i);
  return std::nullopt;
}

} // namespace lf
