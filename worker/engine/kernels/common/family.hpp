#pragma once
// Private to the kernels: the entry points a kernel family may define, declared by prefix, so a
// table (kernel_table.hpp) can name them. A family defines the ones it has its own code for and
// borrows the others from a lower family of the same machine (avx2_vnni takes avx2's attention).

#include <cstddef>
#include <cstdint>

#include "worker/engine/kernels/kernel_table.hpp"

#define LF_DECLARE_FAMILY(p)                                                                       \
  namespace lf::kernels::detail {                                                                  \
  void p##_gemm_f32(const gemm_panels& g, int p0, int p1);                                         \
  void p##_gemm_bf16(const gemm_panels& g, int p0, int p1);                                        \
  void p##_gemm_int8(const gemm_panels& g, int p0, int p1);                                        \
  void p##_gemm_int4(const gemm_panels& g, int p0, int p1);                                        \
  void p##_rows_to_bf16(const float* x, std::size_t ldx, int rows, int k, int k_padded,            \
                        std::uint16_t* out);                                                       \
  void p##_rows_to_u8(const float* x, std::size_t ldx, int rows, int k, int k_padded,              \
                      std::uint8_t* out, float* scale, std::int32_t* zero);                        \
  void p##_int8_shift_rows(std::uint8_t* a, std::size_t n, std::uint8_t* abs_out);                 \
  void p##_attend(const attn_group& g);                                                            \
  void p##_layer_norm(const float* x, float* y, int n, const float* gain, const float* bias,       \
                      float eps);                                                                  \
  void p##_gelu_tanh(float* x, int n);                                                             \
  void p##_lora_row(const float* x, float* y, int in, int rank, int out, const float* a,           \
                    const float* b, float* t);                                                     \
  float p##_logits_max(const float* l, std::size_t n, bool& bad);                                  \
  std::int32_t p##_first_index_of(const float* l, std::size_t n, float v);                         \
  void p##_scale_and_exp(float* l, float* pr, std::size_t n, float max, float inv_t);              \
  double p##_block_masses(const float* pr, std::size_t n, std::size_t len, double* out);           \
  thread_peaks p##_peak();                                                                         \
  }

LF_DECLARE_FAMILY(portable)
#if defined(__x86_64__)
LF_DECLARE_FAMILY(avx2)
LF_DECLARE_FAMILY(avx2_vnni)
LF_DECLARE_FAMILY(avx512)
LF_DECLARE_FAMILY(avx512_vnni)
LF_DECLARE_FAMILY(avx512_bf16)
#elif defined(__aarch64__)
LF_DECLARE_FAMILY(neon)
LF_DECLARE_FAMILY(neon_dotprod)
LF_DECLARE_FAMILY(neon_i8mm)
#endif
