#include "worker/engine/kernels/cpu_features.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define LF_X86 1
#endif

namespace lf::kernels {

namespace {

#ifdef LF_X86
std::uint64_t xgetbv0() {
  std::uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (std::uint64_t{edx} << 32) | eax;
}
#endif

cpu_features detect() {
  cpu_features f;
#ifdef LF_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return f;
  const bool osxsave = (c >> 27) & 1;
  if (!osxsave)
    return f;
  const auto xcr0 = xgetbv0();
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;            // SSE + AVX state
  const bool zmm_saved = (xcr0 & 0xe6) == 0xe6;          // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool amx_saved = (xcr0 & (3ull << 17)) == (3ull << 17);  // XTILECFG + XTILEDATA
  f.fma = ymm_saved && ((c >> 12) & 1);
  if (__get_cpuid_max(0, nullptr) < 7)
    return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ymm_saved && ((b >> 5) & 1);
  f.avx512f = zmm_saved && ((b >> 16) & 1);
  f.avx512bw = zmm_saved && ((b >> 30) & 1);
  f.avx512vl = zmm_saved && ((b >> 31) & 1);
  f.avx512_vnni = zmm_saved && ((c >> 11) & 1);
  f.amx_bf16 = amx_saved && ((d >> 22) & 1);
  f.amx_tile = amx_saved && ((d >> 24) & 1);
  f.amx_int8 = amx_saved && ((d >> 25) & 1);
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  f.avx512_bf16 = zmm_saved && ((a1 >> 5) & 1);
#endif
  return f;
}

std::atomic<int> forced{-1};

} // namespace

const cpu_features& host_features() {
  static const cpu_features f = detect();
  return f;
}

std::string describe(const cpu_features& f) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (on)
      s += (s.empty() ? "" : " ") + std::string(name);
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512_vnni, "avx512_vnni");
  add(f.avx512_bf16, "avx512_bf16");
  add(f.amx_tile, "amx_tile");
  add(f.amx_int8, "amx_int8");
  add(f.amx_bf16, "amx_bf16");
  if (s.empty())
    s = "no vector extensions used";
  if (!f.amx_tile)
    s += " (no AMX)";
  return s;
}

std::string_view to_string(isa i) noexcept {
  switch (i) {
    case isa::generic: return "generic";
    case isa::avx2: return "avx2";
    case isa::avx512: return "avx512";
  }
  return "generic";
}

std::optional<isa> parse_isa(std::string_view s) noexcept {
  for (auto i : {isa::generic, isa::avx2, isa::avx512})
    if (to_string(i) == s)
      return i;
  return std::nullopt;
}

isa best_isa(const cpu_features& f) noexcept {
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx2 && f.fma)
    return isa::avx512;
  if (f.avx2 && f.fma)
    return isa::avx2;
  return isa::generic;
}

isa active_isa() {
  const int v = forced.load(std::memory_order_relaxed);
  if (v >= 0)
    return static_cast<isa>(v);
  static const isa chosen = [] {
    const auto best = best_isa(host_features());
    if (const char* env = std::getenv("LF_ISA"))
      if (auto want = parse_isa(env); want && static_cast<int>(*want) <= static_cast<int>(best))
        return *want;
    return best;
  }();
  return chosen;
}

std::optional<std::string> slow_path_note(const cpu_features& f, isa active, std::string_view dtype) {
  if (active != isa::avx512)
    return "kernels " + std::string(to_string(active)) + ": without AVX-512 kernels the engine runs 5-10x slower "
           "than on an AVX-512 CPU (docs/benchmarks.md, \"CPUs without AVX-512\")";
  if (dtype == "int8" && !f.avx512_vnni)
    return std::string("int8 without AVX-512 VNNI runs the portable kernel, several times slower; "
                       "--dtype bf16 or f32 is faster on this CPU");
  if (dtype == "bf16" && !f.avx512_bf16)
    return std::string("bf16 without avx512_bf16 is emulated (two FMAs per pair); --dtype int8 is faster "
                       "where the CPU has AVX-512 VNNI");
  return std::nullopt;
}

void set_active_isa(isa i) {
  if (static_cast<int>(i) > static_cast<int>(best_isa(host_features())))
    throw std::invalid_argument("this CPU cannot run the " + std::string(to_string(i)) + " kernels");
  forced.store(static_cast<int>(i), std::memory_order_relaxed);
}

} // namespace lf::kernels
