#include "tools/train/widen_model.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>
#include <string>

namespace lf::train {

namespace {

/// [W, W, ...; W, W, ...] / m over (m in-blocks) x (m out-blocks).
at::Tensor grid(const at::Tensor& w, std::int64_t m) { return w.repeat({m, m}) / static_cast<double>(m); }

/// c_attn's [C, 3C]: q, k and v each widened on their own, so head h of copy j is the small
/// model's head h.
at::Tensor grid_qkv(const at::Tensor& w, std::int64_t m) {
  auto parts = w.chunk(3, 1);
  return at::cat({grid(parts[0], m), grid(parts[1], m), grid(parts[2], m)}, 1);
}

at::Tensor tile_qkv(const at::Tensor& b, std::int64_t m) {
  auto parts = b.chunk(3, 0);
  return at::cat({parts[0].repeat({m}), parts[1].repeat({m}), parts[2].repeat({m})}, 0);
}

} // namespace

engine::gpt2_weights widen_gpt2(const engine::gpt2_weights& small, const widen_options& o) {
  at::NoGradGuard no_grad;
  const auto& sc = small.config;
  if (o.embd < sc.n_embd || o.embd % sc.n_embd != 0)
    throw std::invalid_argument("--embd " + std::to_string(o.embd) + " must be a multiple of the small model's "
                                + std::to_string(sc.n_embd));
  if (o.layers < sc.n_layer)
    throw std::invalid_argument("--layers " + std::to_string(o.layers) + " must be at least the small model's "
                                + std::to_string(sc.n_layer));
  if (o.context < 1)
    throw std::invalid_argument("--context must be >= 1");
  if (sc.inner_dim() != 4 * sc.n_embd)
    throw std::invalid_argument("the small model's MLP must be 4 x n_embd wide");
  const std::int64_t m = o.embd / sc.n_embd;
  auto f32 = [](const at::Tensor& t) { return t.to(at::kFloat); };
  engine::gpt2_weights w;
  w.config = sc;
  w.config.n_layer = o.layers;
  w.config.n_embd = o.embd;
  w.config.n_head = sc.n_head * static_cast<int>(m);
  w.config.n_positions = o.context;
  w.config.n_inner = 0;
  w.config.tie_word_embeddings = true;
  w.wte = f32(small.wte).repeat({1, m});
  auto rows = at::arange(o.context, at::kLong).remainder(sc.n_positions);
  w.wpe = f32(small.wpe).index_select(0, rows).repeat({1, m});
  for (int l = 0; l < o.layers; ++l) {
    const auto& s = small.blocks[static_cast<std::size_t>(l % sc.n_layer)];
    engine::gpt2_block_weights b;
    b.ln_1_w = f32(s.ln_1_w).repeat({m});
    b.ln_1_b = f32(s.ln_1_b).repeat({m});
    b.attn_w = grid_qkv(f32(s.attn_w), m);
    b.attn_b = tile_qkv(f32(s.attn_b), m);
    b.proj_w = grid(f32(s.proj_w), m);
    b.proj_b = f32(s.proj_b).repeat({m});
    b.ln_2_w = f32(s.ln_2_w).repeat({m});
    b.ln_2_b = f32(s.ln_2_b).repeat({m});
    b.fc_w = grid(f32(s.fc_w), m);
    b.fc_b = f32(s.fc_b).repeat({m});
    b.mproj_w = grid(f32(s.mproj_w), m);
    b.mproj_b = f32(s.mproj_b).repeat({m});
    if (l >= sc.n_layer) {  // an identity: adds nothing to the residual stream
      b.proj_w.zero_();
      b.proj_b.zero_();
      b.mproj_w.zero_();
      b.mproj_b.zero_();
    }
    w.blocks.push_back(std::move(b));
  }
  w.ln_f_w = f32(small.ln_f_w).repeat({m}) / static_cast<double>(m);
  w.ln_f_b = f32(small.ln_f_b).repeat({m}) / static_cast<double>(m);
  if (o.noise > 0) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(o.seed);
    auto perturb = [&](at::Tensor& t) {
      const double sd = t.std().item<double>();
      if (sd > 0)
        t.add_(at::normal(0.0, o.noise * sd, t.sizes().vec(), gen, at::TensorOptions().dtype(at::kFloat)));
    };
    perturb(w.wte);
    perturb(w.wpe);
    for (auto& b : w.blocks)
      for (auto* t : {&b.ln_1_w, &b.ln_1_b, &b.attn_w, &b.attn_b, &b.proj_w, &b.proj_b, &b.ln_2_w, &b.ln_2_b, &b.fc_w,
                      &b.fc_b, &b.mproj_w, &b.mproj_b})
        perturb(*t);
    perturb(w.ln_f_w);
    perturb(w.ln_f_b);
  }
  w.lm_head = w.wte;
  w.dtype = engine::compute_dtype::f32;
  w.config.validate("widen-model");
  return w;
}

} // namespace lf::train
