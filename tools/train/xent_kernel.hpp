#pragma once
/// The language-model head's loss in one pass over the logits: softmax cross entropy of each row
/// against its target token, and optionally the gradient written over the logits in place.
///
/// Why a kernel: with GPT-2's 50257-token vocabulary the head dominates a small model's training
/// step. ATen's cast + log_softmax + nll_loss + their backward make about eight passes over the
/// [tokens, vocab] logits and keep several copies alive; this makes one pass over memory (a row is
/// processed in a cache-resident scratch buffer) and needs no extra copy. Pure C++17 (no torch):
/// tested against a plain reference.

#include <cstdint>

namespace lf::train {

/// Rows [row_begin, row_end) of row-major logits [rows, vocab] (float32). For each row r: loss_r =
/// logsumexp(logits[r]) - logits[r][targets[r]]. With `write_grad`, logits[r] is replaced by
/// grad_scale * (softmax(logits[r]) - onehot(targets[r])), the gradient of grad_scale * loss_r.
/// `scratch` must hold `vocab` floats (one buffer per thread). Returns the sum of loss_r over the
/// rows. Targets must be within [0, vocab); the caller checks.
double xent_rows_f32(float* logits, std::int64_t vocab, const std::int64_t* targets,
                     std::int64_t row_begin, std::int64_t row_end, float grad_scale,
                     bool write_grad, float* scratch);

/// The same for bfloat16 logits, given as their raw 16-bit patterns; the arithmetic is float32
/// and the gradient is rounded to nearest even.
double xent_rows_bf16(std::uint16_t* logits, std::int64_t vocab, const std::int64_t* targets,
                      std::int64_t row_begin, std::int64_t row_end, float grad_scale,
                      bool write_grad, float* scratch);

/// exp(x) for x <= 0 (what softmax needs after subtracting the row max), to a relative error
/// of about (2 + |x|) * 1e-7 (the |x| part is the float rounding of x * log2(e)); clamped at
/// exp(-87) below -87. Written with plain arithmetic so loops over it vectorise. Exposed for tests.
float exp_nonpositive(float x) noexcept;

} // namespace lf::train
