// The aarch64 kernel tables, in order of preference. Data only (compiled with baseline flags): each
// entry points at code compiled with its family's flags, reached only when the CPU has `needs`.
#include "worker/engine/kernels/common/family.hpp"

namespace lf::kernels::detail {

#define LF_SAMPLER(p) p##_logits_max, p##_first_index_of, p##_scale_and_exp, p##_block_masses

extern const kernel_table neon_table = {
  "neon", cpu_features{cpu_cap::neon},
  "NEON: f32 FMA tiles; bf16 widened in registers; int8 smull + sadalp (exact); int4 umull + uadalp",
  neon_gemm_f32, neon_gemm_bf16, neon_gemm_int8, neon_gemm_int4, neon_rows_to_bf16, neon_rows_to_u8,
  nullptr,
  neon_attend,
  neon_layer_norm, neon_gelu_tanh, neon_lora_row,
  LF_SAMPLER(neon),
  neon_peak};

extern const kernel_table neon_dotprod_table = {
  "neon_dotprod", cpu_features{cpu_cap::neon, cpu_cap::dotprod},
  "NEON + dotprod: as neon, int8 through sdot, int4 through udot",
  neon_gemm_f32, neon_gemm_bf16, neon_dotprod_gemm_int8, neon_dotprod_gemm_int4, neon_rows_to_bf16, neon_rows_to_u8,
  nullptr,
  neon_attend,
  neon_layer_norm, neon_gelu_tanh, neon_lora_row,
  LF_SAMPLER(neon),
  neon_dotprod_peak};

extern const kernel_table neon_i8mm_table = {
  "neon_i8mm", cpu_features{cpu_cap::neon, cpu_cap::dotprod, cpu_cap::i8mm, cpu_cap::bf16},
  "NEON + I8MM + BF16: int8 through usdot, int4 through udot, bf16 as neon (the same bits as every table)",
  neon_gemm_f32, neon_gemm_bf16, neon_i8mm_gemm_int8, neon_dotprod_gemm_int4, neon_rows_to_bf16, neon_rows_to_u8,
  nullptr,
  neon_attend,
  neon_layer_norm, neon_gelu_tanh, neon_lora_row,
  LF_SAMPLER(neon),
  neon_i8mm_peak};

#undef LF_SAMPLER

} // namespace lf::kernels::detail
