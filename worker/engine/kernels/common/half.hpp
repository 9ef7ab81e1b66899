#pragma once
/// IEEE fp16 (binary16) and bfloat16 <-> fp32 conversions, bit-exact. Only integer arithmetic, so
/// results do not depend on the FPU rounding mode, -ffast-math or the target. Header-only and
/// branch-light enough to sit inside conversion loops; standard library only.

#include <cstdint>
#include <cstring>

namespace lf::engine {

namespace detail {

inline std::uint32_t float_bits(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(std::uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

} // namespace detail

/// Widens an fp16 bit pattern to float32. Exact for every input: subnormals become normal floats,
/// infinities stay infinities, NaNs stay NaNs (payload shifted into the float mantissa).
inline float f16_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) // inf / nan
    return detail::bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) // signed zero
      return detail::bits_float(sign);
    // Subnormal: value = mant * 2^-24. Shift the leading 1 up to the implicit-bit position.
    std::uint32_t e = 113; // biased float exponent of 2^-14, decremented per shift
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    return detail::bits_float(sign | (e << 23) | ((mant & 0x3ffu) << 13));
  }
  return detail::bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

/// Narrows a float32 to fp16 with round-to-nearest-even. Magnitudes that round past 65504 become
/// infinity, tiny values become subnormals or signed zero, NaN becomes a quiet NaN (sign kept).
inline std::uint16_t f32_to_f16(float f) noexcept {
  std::uint32_t x = detail::float_bits(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) // inf or nan
    return static_cast<std::uint16_t>(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (x >= 0x47800000u) // >= 65536: beyond the largest finite fp16 even before rounding
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (x < 0x38800000u) { // below 2^-14: fp16 subnormal or zero
    if (x < 0x33000000u) // below 2^-25, half the smallest subnormal: rounds to zero
      return sign;
    const std::uint32_t e = x >> 23;
    const std::uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e; // 14..24: units of 2^-24
    std::uint32_t r = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u)))
      ++r; // may carry into 0x400, the smallest normal: still the right encoding
    return static_cast<std::uint16_t>(sign | r);
  }
  // Normal: rebias the exponent, then add just under half an ulp plus the lowest kept bit so ties
  // round to even. A carry out of the mantissa bumps the exponent, up to infinity: also correct.
  const std::uint32_t odd = (x >> 13) & 1u;
  x = x - (112u << 23) + 0xfffu + odd;
  return static_cast<std::uint16_t>(sign | (x >> 13));
}

/// Widens a bfloat16 bit pattern to float32 (exact: bf16 is the top half of a float).
inline float bf16_to_f32(std::uint16_t b) noexcept {
  return detail::bits_float(static_cast<std::uint32_t>(b) << 16);
}

/// Narrows a float32 to bfloat16 with round-to-nearest-even; overflow becomes infinity, NaN stays
/// a (quiet) NaN even when its payload lives only in the dropped low bits.
inline std::uint16_t f32_to_bf16(float f) noexcept {
  const std::uint32_t x = detail::float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  const std::uint32_t odd = (x >> 16) & 1u;
  return static_cast<std::uint16_t>((x + 0x7fffu + odd) >> 16);
}

/// Bit pattern of 2^-56: a matrix-product operand below it in magnitude becomes a signed zero.
inline constexpr std::uint32_t bf16_operand_floor_bits = 0x23800000u;

/// f32_to_bf16 for an operand of a bf16 matrix product (weights and activations): magnitudes below
/// 2^-56 become a signed zero first. Every nonzero operand is then at least 2^-56 with its lowest
/// bit at least 2^-63, so every product and every partial sum is 0 or at least 2^-126 (a multiple
/// of 2^-126): no subnormal ever reaches vdpbf16ps, which treats subnormal inputs as zero and
/// flushes subnormal results, and its emulation on the other tables gives the same bits.
inline std::uint16_t f32_to_bf16_operand(float f) noexcept {
  const std::uint32_t x = detail::float_bits(f);
  if ((x & 0x7fffffffu) < bf16_operand_floor_bits)
    return static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  return f32_to_bf16(f);
}

} // namespace lf::engine
