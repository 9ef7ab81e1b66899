#pragma once
/// Matrix products of float activations with packed weights: y = x W + bias over M rows, on a
/// thread_pool, with the kernels of active_table() (kernel_table.hpp).
///
///   f32:  fused multiply-adds, k in order, one accumulator per output.
///   bf16: activations rounded to bf16, pair dot products (vdpbf16ps / bfdot where the CPU has
///         them, widened to f32 and two FMAs elsewhere), accumulated in f32.
///   int8 (W8A8, dynamic): each activation row quantized at run time to u8 with its own scale and
///         zero point (asymmetric absmax over the row, zero kept exact), u8 x s8 products summed
///         exactly in int32 (vpdpbusd, vpmaddubsw with a sign trick, sdot...), then
///         y = (acc - zp * colsum) * row_scale * col_scale.
///   int4 (W4A8): the activations as int8's; per block b of int4_block k, the exact integer
///         D_b = sum_k (a - zp) q = sum a u - 8 sum a - zp * blocksum (u = q + 8, the stored
///         nibble; sum a over the block from gemm_panels::a_block_sums), then in one order every
///         table follows: acc = 0; for b in k order: acc = fma(scale_b, float(D_b), acc);
///         y = acc * row_scale. (|D_b| <= 255 * 7 * 64 < 2^24: float(D_b) is exact.)
///
/// Every output element is computed by one thread from its row and its column alone, in a fixed
/// order: a row's result does not depend on the other rows of the batch, on M, or on the thread
/// count. int8 and int4 results are the same bit for bit in every kernel table.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "worker/engine/kernels/packed_matrix.hpp"
#include "worker/engine/kernels/thread_pool.hpp"

namespace lf::kernels {

/// One product's operands. x: M rows of K floats (row stride ldx); y: M rows of N floats.
struct gemm_io {
  const float* x = nullptr;
  std::size_t ldx = 0;
  float* y = nullptr;
  std::size_t ldy = 0;
  int m = 0;
  const float* bias = nullptr;  ///< N floats, or nullptr
  bool accumulate = false;      ///< y += x W + bias instead of y = x W + bias
};

/// Activations converted for the kernels (u8 with row scales and zero points, or bf16): reused
/// across products, grown as needed. One per worker; not shared between concurrent products.
class gemm_workspace {
public:
  /// Room for `bytes` of converted activations, `rows` row parameters and `block_sums` int32s.
  void reserve(std::size_t bytes, std::size_t rows, std::size_t block_sums = 0);
  std::byte* act() noexcept { return act_.data(); }
  float* row_scale() noexcept { return scale_.data(); }
  std::int32_t* row_zero() noexcept { return zero_.data(); }
  std::int32_t* block_sums() noexcept { return sums_.data(); }

private:
  aligned_buffer act_;
  std::vector<float> scale_;
  std::vector<std::int32_t> zero_;
  std::vector<std::int32_t> sums_;
};

/// y = x W + bias (or y += ...). Throws std::invalid_argument for a null operand or M < 0.
void gemm(const packed_matrix& w, const gemm_io& io, gemm_workspace& ws, thread_pool& pool);

/// Quantizes one row of K floats to u8 (asymmetric; the range always includes 0, so 0 is exact):
/// x ~= scale * (q - zero). `out` gets K values followed by zeros up to `k_padded`.
void quantize_row_u8(const float* x, int k, int k_padded, std::uint8_t* out, float& scale,
                     std::int32_t& zero) noexcept;

// -- what a kernel table's matrix products take ------------------------------------------------

/// Operands of a run of panels [p0, p1) for rows [0, m) (activations already converted).
struct gemm_panels {
  const packed_matrix* w;
  const void* a;          ///< f32: the floats of x; bf16: u16 rows; int8: u8 rows (or a' = a - 128
                          ///< as int8 rows, for a table with int8_shift_rows); int4: u8 rows
  std::size_t lda;        ///< elements per activation row
  const float* a_scale;   ///< int8, int4: per row
  const std::int32_t* a_zero;
  float* y;
  std::size_t ldy;
  int m;
  const float* bias;
  bool accumulate;
  const std::uint8_t* a_abs = nullptr;  ///< int8 with int8_shift_rows: |a'| rows, as `a`
  /// int4: per row, w->blocks() sums of the row's u8 values over each block (row r's at
  /// r * w->blocks()).
  const std::int32_t* a_block_sums = nullptr;
};

/// int4: sums of `rows` u8 rows (`lda` apart, k_padded each) over blocks of int4_block.
void u8_block_sums(const std::uint8_t* a, std::size_t lda, int rows, int k_padded, std::int32_t* out) noexcept;

} // namespace lf::kernels
