#pragma once
/// What this CPU can run, detected once at run time (cpuid + the OS's saved-state mask), and
/// which kernel family the engine uses. Machines differ: some have AMX, some only AVX-512 with
/// VNNI and avx512_bf16, some only AVX2; nothing is assumed at build time.

#include <optional>
#include <string>
#include <string_view>

namespace lf::kernels {

/// Instruction-set extensions the kernels care about (all false on a non-x86 build).
struct cpu_features {
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false;
  bool avx512_vnni = false;   ///< vpdpbusd: u8 x s8 dot products into int32
  bool avx512_bf16 = false;   ///< vdpbf16ps: bf16 pair dot products into f32
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
};

/// The features of this machine (detected on first call; thread-safe).
const cpu_features& host_features();

/// "avx2 fma avx512f avx512bw avx512vl avx512_vnni avx512_bf16 (no AMX)" and the like.
std::string describe(const cpu_features& f);

/// The kernel families, from the most portable up. Every family computes the same int8 results
/// bit for bit (integer arithmetic); f32 and bf16 results agree within rounding.
enum class isa { generic, avx2, avx512 };

/// "generic", "avx2", "avx512".
std::string_view to_string(isa i) noexcept;

/// Parses to_string's spellings.
std::optional<isa> parse_isa(std::string_view s) noexcept;

/// The best family this machine runs: avx512 needs AVX-512 F/BW/VL + AVX2 + FMA, avx2
/// needs AVX2 + FMA.
isa best_isa(const cpu_features& f) noexcept;

/// The family in use: best_isa(host_features()), or LF_ISA from the environment when it names a
/// family this machine runs (tests and benchmarks compare families that way), or what
/// set_active_isa chose.
isa active_isa();

/// Overrides the family (tests). Throws std::invalid_argument if this machine cannot run it.
void set_active_isa(isa i);

/// What an operator should be told when a worker computing in `dtype` ("f32", "bf16", "int8")
/// runs far below this engine's speed on these features with family `active`: no AVX-512 kernels,
/// int8 without VNNI, bf16 without avx512_bf16 (emulated). std::nullopt when on the fast path.
std::optional<std::string> slow_path_note(const cpu_features& f, isa active, std::string_view dtype);

} // namespace lf::kernels
