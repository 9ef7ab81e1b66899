#pragma once
// Private to the kernels: the one formula for an activation row's u8 scale and zero point, so every
// kernel family quantizes the same row to the same bytes.

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lf::kernels::detail {

/// From a row's min and max: scale, its inverse and the zero point (range widened to include 0).
inline void u8_params(float mn, float mx, float& scale, float& inv, std::int32_t& zero) noexcept {
  const float lo = std::min(mn, 0.0f), hi = std::max(mx, 0.0f);
  const float range = hi - lo;
  if (!(range > 0.0f) || !std::isfinite(range)) {
    scale = 1.0f;
    inv = 1.0f;
    zero = 0;
    return;
  }
  scale = range / 255.0f;
  inv = 1.0f / scale;
  zero = std::clamp(static_cast<std::int32_t>(std::nearbyint(-lo * inv)), 0, 255);
}

/// One element: clamp(round(x * inv) + zero, 0, 255), rounding to nearest even.
inline std::uint8_t u8_of(float x, float inv, std::int32_t zero) noexcept {
  const float r = std::nearbyint(x * inv);
  const float v = std::clamp(r + static_cast<float>(zero), 0.0f, 255.0f);
  return static_cast<std::uint8_t>(v);
}

} // namespace lf::kernels::detail
