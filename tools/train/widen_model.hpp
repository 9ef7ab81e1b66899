#pragma once
/// `widen-model`: a bigger GPT-2 that computes exactly what a smaller one does, so a large
/// target shape (e.g. 124M: 12 x 768) writes like a trained small model and the small model can
/// draft for it (speculative decoding's benchmark). Every activation vector of width C becomes
/// m copies [x, ..., x] (width m C): layer norms see the same mean and variance, so their gamma
/// and beta are tiled; every weight matrix becomes an m x m grid of W / m blocks, biases tiled;
/// the attention's heads are m copies of the small model's (same head size, same scale); layers
/// past the small model's are identities (their attention and MLP output projections and biases
/// zero; the rest copies of layer l mod n); wte tiled, wpe rows tiled (rows past the small
/// context repeat it: p mod P); the final layer norm tiled and divided by m, so the tied head's
/// logits are the small model's. Optional Gaussian noise (relative to each tensor's standard
/// deviation, zero tensors stay zero) then makes the big model disagree with the small one
/// sometimes.

#include <cstdint>

#include "worker/engine/reference/weights.hpp"

namespace lf::train {

/// The big shape and the noise.
struct widen_options {
  int layers = 12;           ///< >= the small model's
  int embd = 768;            ///< a multiple m of the small model's n_embd (heads scale by m)
  int context = 1024;        ///< positions of the big model
  double noise = 0;          ///< sigma relative to each tensor's std (0: exact)
  std::uint64_t seed = 0;    ///< the noise's
};

/// The widened weights (f32). Throws std::invalid_argument for a shape it cannot embed into.
engine::gpt2_weights widen_gpt2(const engine::gpt2_weights& small, const widen_options& o);

} // namespace lf::train
