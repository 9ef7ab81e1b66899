#pragma once
/// Row-wise operations of a transformer step: layer norm, GELU and LoRA deltas. Each row is
/// computed on its own in a fixed order (batch-invariant); callers split rows over the pool. The
/// active kernel table (kernel_table.hpp) does the arithmetic.

#include <cstddef>

namespace lf::kernels {

/// y[r] = (x[r] - mean) / sqrt(var + eps) * gain + bias for `rows` rows of `n` floats.
void layer_norm_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy, int rows, int n,
                     const float* gain, const float* bias, float eps);

/// x = gelu(x) in place: the tanh approximation (GPT-2's gelu_new), or erf when `exact`.
void gelu_rows(float* x, std::size_t ldx, int rows, int n, bool exact);

/// y[r] += (x[r] A^T) B for `rows` rows: a LoRA delta with A [rank][in] (PEFT's lora_A) and
/// B [rank][out] (PEFT's lora_B transposed, the adapter's scale folded in). `scratch` holds `rank`
/// floats.
void lora_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy, int rows, int in,
               int rank, int out, const float* a, const float* b, float* scratch);

} // namespace lf::kernels
