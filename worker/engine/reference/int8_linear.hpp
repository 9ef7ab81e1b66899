#pragma once
/// Weight-only int8 linear layers: a [in, out] weight stored as int8 with one float scale per
/// output column (symmetric, absmax / 127), activations and results in float32. A quarter of the
/// f32 weight bytes, which is what a memory-bound decode step reads; see docs/benchmarks.md for
/// what it costs and gains here.

#include <ATen/ATen.h>

namespace lf::engine {

/// An int8 weight and its per-output-column scales: w ~= q * scale (broadcast over rows).
struct int8_weight {
  at::Tensor q;      ///< [in, out] int8
  at::Tensor scale;  ///< [out] float32
};

/// Quantizes a float [in, out] weight per output column: scale = max |w[:, j]| / 127 (a column
/// of zeros gets scale 1), q = round(w / scale) in [-127, 127].
int8_weight quantize_int8(const at::Tensor& w);

/// y = x (q * scale) + bias for x [rows, in] float32. Small batches (decode) run a kernel that
/// reads each int8 weight row once and converts it in cache; larger ones (prefill) dequantize the
/// weight and call the float GEMM, whose cost then dominates the conversion.
at::Tensor int8_linear(const at::Tensor& x, const int8_weight& w, const at::Tensor& bias);

} // namespace lf::engine
