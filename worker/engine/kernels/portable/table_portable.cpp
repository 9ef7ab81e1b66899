// The portable kernel table: plain C++ for the baseline of the architecture; every CPU runs it.
#include "worker/engine/kernels/common/family.hpp"

namespace lf::kernels::detail {

extern const kernel_table portable_table = {
  "portable", cpu_features{},
  "plain C++ the compiler vectorizes for the baseline of the architecture",
  portable_gemm_f32, portable_gemm_bf16, portable_gemm_int8, portable_gemm_int4, portable_rows_to_bf16, portable_rows_to_u8,
  nullptr,
  portable_attend,
  portable_layer_norm, portable_gelu_tanh, portable_lora_row,
  portable_logits_max, portable_first_index_of, portable_scale_and_exp, portable_block_masses,
  portable_peak};

} // namespace lf::kernels::detail
