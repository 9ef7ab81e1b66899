// The x86-64 kernel tables, in order of preference. Data only (compiled with baseline flags): each
// entry points at code compiled with its family's flags, reached only when the CPU has `needs`.
#include "worker/engine/kernels/common/family.hpp"

namespace lf::kernels::detail {

namespace {
constexpr cpu_features avx2_needs{cpu_cap::avx2, cpu_cap::fma};
constexpr cpu_features avx512_needs{cpu_cap::avx2, cpu_cap::fma, cpu_cap::avx512f, cpu_cap::avx512bw,
                                    cpu_cap::avx512vl};
} // namespace

#define LF_SAMPLER(p) p##_logits_max, p##_first_index_of, p##_scale_and_exp, p##_block_masses

extern const kernel_table avx2_table = {
  "avx2", avx2_needs,
  "AVX2 + FMA: f32 FMA tiles; bf16 widened in registers; int8 vpmaddubsw with the sign trick (exact); int4 vpmaddubsw on nibbles",
  avx2_gemm_f32, avx2_gemm_bf16, avx2_gemm_int8, avx2_gemm_int4, avx2_rows_to_bf16, avx2_rows_to_u8,
  avx2_int8_shift_rows,
  avx2_attend,
  avx2_layer_norm, avx2_gelu_tanh, avx2_lora_row,
  LF_SAMPLER(avx2),
  avx2_peak};

extern const kernel_table avx2_vnni_table = {
  "avx2_vnni", cpu_features{cpu_cap::avx2, cpu_cap::fma, cpu_cap::avx_vnni},
  "AVX2 + FMA + AVX-VNNI: as avx2, int8 and int4 through 256-bit vpdpbusd",
  avx2_gemm_f32, avx2_gemm_bf16, avx2_vnni_gemm_int8, avx2_vnni_gemm_int4, avx2_rows_to_bf16, avx2_rows_to_u8,
  nullptr,
  avx2_attend,
  avx2_layer_norm, avx2_gelu_tanh, avx2_lora_row,
  LF_SAMPLER(avx2),
  avx2_vnni_peak};

extern const kernel_table avx512_table = {
  "avx512", avx512_needs,
  "AVX-512 F/BW/VL: f32 FMA tiles; bf16 emulated with two FMAs per pair; int8 and int4 as avx2",
  avx512_gemm_f32, avx512_gemm_bf16, avx2_gemm_int8, avx2_gemm_int4, avx512_rows_to_bf16, avx512_rows_to_u8,
  avx2_int8_shift_rows,
  avx512_attend,
  avx512_layer_norm, avx512_gelu_tanh, avx512_lora_row,
  LF_SAMPLER(avx512),
  avx512_peak};

extern const kernel_table avx512_vnni_table = {
  "avx512_vnni", cpu_features{cpu_cap::avx2, cpu_cap::fma, cpu_cap::avx512f, cpu_cap::avx512bw,
                              cpu_cap::avx512vl, cpu_cap::avx512_vnni},
  "AVX-512 + VNNI: as avx512, int8 and int4 through vpdpbusd",
  avx512_gemm_f32, avx512_gemm_bf16, avx512_vnni_gemm_int8, avx512_vnni_gemm_int4, avx512_rows_to_bf16, avx512_rows_to_u8,
  nullptr,
  avx512_attend,
  avx512_layer_norm, avx512_gelu_tanh, avx512_lora_row,
  LF_SAMPLER(avx512),
  avx512_vnni_peak};

extern const kernel_table avx512_bf16_table = {
  "avx512_bf16", cpu_features{cpu_cap::avx2, cpu_cap::fma, cpu_cap::avx512f, cpu_cap::avx512bw,
                              cpu_cap::avx512vl, cpu_cap::avx512_vnni, cpu_cap::avx512_bf16},
  "AVX-512 + VNNI + BF16: int8 and int4 through vpdpbusd, bf16 through vdpbf16ps",
  avx512_gemm_f32, avx512_bf16_gemm_bf16, avx512_vnni_gemm_int8, avx512_vnni_gemm_int4, avx512_rows_to_bf16, avx512_rows_to_u8,
  nullptr,
  avx512_attend,
  avx512_layer_norm, avx512_gelu_tanh, avx512_lora_row,
  LF_SAMPLER(avx512),
  avx512_bf16_peak};

#undef LF_SAMPLER

} // namespace lf::kernels::detail
