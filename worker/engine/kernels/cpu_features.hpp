#pragma once
/// What this CPU can run, detected once at run time: on x86 from cpuid and the OS's saved-state
/// mask, on aarch64 from the kernel's hardware capability bits (getauxval). A set of
/// capabilities, not an ordered level: NEON does not sit above or below AVX-512, and one AVX-512
/// CPU has VNNI while another lacks it. Nothing is assumed at build time; the kernel tables
/// (kernel_table.hpp) each name the capabilities they need.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace lf::kernels {

/// One instruction-set extension the kernels care about.
enum class cpu_cap : std::uint8_t {
  // x86
  avx2,
  fma,
  f16c,
  avx512f,
  avx512bw,
  avx512vl,
  avx512_vnni,  ///< vpdpbusd on 512-bit registers: u8 x s8 dot products into int32
  avx512_bf16,  ///< vdpbf16ps: bf16 pair dot products into f32
  avx_vnni,     ///< vpdpbusd on 256-bit registers, VEX-encoded (Alder Lake and later, Zen 5)
  amx_tile,
  amx_int8,
  amx_bf16,
  // aarch64
  neon,     ///< Advanced SIMD (every aarch64 CPU)
  dotprod,  ///< sdot / udot: four 8-bit products summed into an int32 lane
  i8mm,     ///< smmla / usmmla / usdot: 8-bit matrix multiply-accumulate
  bf16,     ///< bfdot / bfmmla
  count_    ///< (the number of capabilities)
};

/// "avx2", "avx512_vnni", "dotprod", ...
std::string_view to_string(cpu_cap c) noexcept;

/// A set of capabilities.
class cpu_features {
public:
  constexpr cpu_features() noexcept = default;
  constexpr cpu_features(std::initializer_list<cpu_cap> caps) noexcept {
    for (auto c : caps)
      bits_ |= bit(c);
  }

  constexpr bool has(cpu_cap c) const noexcept { return (bits_ & bit(c)) != 0; }
  /// Every capability of `need` is here.
  constexpr bool has_all(const cpu_features& need) const noexcept { return (bits_ & need.bits_) == need.bits_; }
  constexpr void add(cpu_cap c) noexcept { bits_ |= bit(c); }
  constexpr void remove(cpu_cap c) noexcept { bits_ &= ~bit(c); }
  constexpr bool empty() const noexcept { return bits_ == 0; }
  constexpr bool operator==(const cpu_features& o) const noexcept { return bits_ == o.bits_; }

private:
  static constexpr std::uint32_t bit(cpu_cap c) noexcept { return std::uint32_t{1} << static_cast<unsigned>(c); }
  std::uint32_t bits_ = 0;
};

/// The features of this machine (detected on first call; thread-safe).
const cpu_features& host_features();

/// "avx2 fma f16c (no AVX-512, no AMX)", "neon dotprod i8mm bf16" and the like.
std::string describe(const cpu_features& f);

/// The processor this program was built for: "x86_64", "aarch64" or "other".
std::string_view build_arch() noexcept;

} // namespace lf::kernels
