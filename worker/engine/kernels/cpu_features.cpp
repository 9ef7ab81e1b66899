#include "worker/engine/kernels/cpu_features.hpp"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define LF_X86 1
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define LF_ARM64 1
#endif

namespace lf::kernels {

namespace {

#ifdef LF_X86
std::uint64_t xgetbv0() {
  std::uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (std::uint64_t{edx} << 32) | eax;
}

cpu_features detect() {
  cpu_features f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return f;
  const bool osxsave = (c >> 27) & 1;
  if (!osxsave)
    return f;
  const auto xcr0 = xgetbv0();
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;                      // SSE + AVX state
  const bool zmm_saved = (xcr0 & 0xe6) == 0xe6;                    // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool amx_saved = (xcr0 & (3ull << 17)) == (3ull << 17);    // XTILECFG + XTILEDATA
  auto set = [&](bool on, cpu_cap cap) {
    if (on)
      f.add(cap);
  };
  set(ymm_saved && ((c >> 12) & 1), cpu_cap::fma);
  set(ymm_saved && ((c >> 29) & 1), cpu_cap::f16c);
  if (__get_cpuid_max(0, nullptr) < 7)
    return f;
  __cpuid_count(7, 0, a, b, c, d);
  set(ymm_saved && ((b >> 5) & 1), cpu_cap::avx2);
  set(zmm_saved && ((b >> 16) & 1), cpu_cap::avx512f);
  set(zmm_saved && ((b >> 30) & 1), cpu_cap::avx512bw);
  set(zmm_saved && ((b >> 31) & 1), cpu_cap::avx512vl);
  set(zmm_saved && ((c >> 11) & 1), cpu_cap::avx512_vnni);
  set(amx_saved && ((d >> 22) & 1), cpu_cap::amx_bf16);
  set(amx_saved && ((d >> 24) & 1), cpu_cap::amx_tile);
  set(amx_saved && ((d >> 25) & 1), cpu_cap::amx_int8);
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  set(ymm_saved && ((a1 >> 4) & 1), cpu_cap::avx_vnni);
  set(zmm_saved && ((a1 >> 5) & 1), cpu_cap::avx512_bf16);
  return f;
}
#elif defined(LF_ARM64)
cpu_features detect() {
  // Linux's hwcap bits (asm/hwcap.h), spelled out so an old header does not hide them.
  constexpr unsigned long hwcap_asimd = 1ul << 1, hwcap_asimddp = 1ul << 20;
  constexpr unsigned long hwcap2_i8mm = 1ul << 13, hwcap2_bf16 = 1ul << 14;
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  cpu_features f;
  if (hw & hwcap_asimd)
    f.add(cpu_cap::neon);
  if (hw & hwcap_asimddp)
    f.add(cpu_cap::dotprod);
  if (hw2 & hwcap2_i8mm)
    f.add(cpu_cap::i8mm);
  if (hw2 & hwcap2_bf16)
    f.add(cpu_cap::bf16);
  return f;
}
#else
cpu_features detect() { return {}; }
#endif

} // namespace

std::string_view to_string(cpu_cap c) noexcept {
  switch (c) {
    case cpu_cap::avx2: return "avx2";
    case cpu_cap::fma: return "fma";
    case cpu_cap::f16c: return "f16c";
    case cpu_cap::avx512f: return "avx512f";
    case cpu_cap::avx512bw: return "avx512bw";
    case cpu_cap::avx512vl: return "avx512vl";
    case cpu_cap::avx512_vnni: return "avx512_vnni";
    case cpu_cap::avx512_bf16: return "avx512_bf16";
    case cpu_cap::avx_vnni: return "avx_vnni";
    case cpu_cap::amx_tile: return "amx_tile";
    case cpu_cap::amx_int8: return "amx_int8";
    case cpu_cap::amx_bf16: return "amx_bf16";
    case cpu_cap::neon: return "neon";
    case cpu_cap::dotprod: return "dotprod";
    case cpu_cap::i8mm: return "i8mm";
    case cpu_cap::bf16: return "bf16";
    case cpu_cap::count_: break;
  }
  return "?";
}

const cpu_features& host_features() {
  static const cpu_features f = detect();
  return f;
}

std::string describe(const cpu_features& f) {
  std::string s;
  for (int i = 0; i < static_cast<int>(cpu_cap::count_); ++i) {
    const auto c = static_cast<cpu_cap>(i);
    if (f.has(c))
      s += (s.empty() ? "" : " ") + std::string(to_string(c));
  }
  if (s.empty())
    s = "no vector extensions used";
  if (build_arch() == "x86_64") {
    if (!f.has(cpu_cap::avx512f))
      s += f.has(cpu_cap::amx_tile) ? " (no AVX-512)" : " (no AVX-512, no AMX)";
    else if (!f.has(cpu_cap::amx_tile))
      s += " (no AMX)";
  }
  return s;
}

std::string_view build_arch() noexcept {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "other";
#endif
}

} // namespace lf::kernels
