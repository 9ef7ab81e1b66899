#include "worker/engine/model/cpu_model.hpp"

#include <stdexcept>
#include <string>

#include "worker/engine/kernels/elementwise.hpp"

namespace lf::engine {

cpu_model::cpu_model(cpu_weights w, int threads) : w_(std::move(w)), pool_(threads) {}

void cpu_model::check_kv(const kernels::kv_cache& kv) const {
  const auto& s = kv.shape();
  const auto& cfg = w_.config;
  if (s.layers != cfg.n_layer || s.heads != cfg.n_head || s.head_dim != cfg.head_dim())
    throw std::invalid_argument("cpu_model: the K/V store's shape does not match the model");
}

void cpu_model::linear(const kernels::packed_matrix& w, const std::vector<float>& bias, const float* x,
                       std::size_t ldx, float* y, std::size_t ldy, int rows, bool accumulate, int layer,
                       lora_module m, const std::vector<cpu_lora_run>& lora) {
  kernels::gemm_io io{x, ldx, y, ldy, rows, bias.data(), accumulate};
  kernels::gemm(w, io, ws_, pool_);
  for (const auto& run : lora) {
    const auto* f = run.adapter->find(layer, m);
    if (f == nullptr)
      continue;
    rows_parallel(run.count, [&](std::size_t b, std::size_t e) {
      std::vector<float> t(static_cast<std::size_t>(f->rank));
      const auto r0 = static_cast<std::size_t>(run.begin) + b;
      kernels::lora_rows(x + r0 * ldx, ldx, y + r0 * ldy, ldy, static_cast<int>(e - b), f->in, f->rank,
                         f->out, f->a.data(), f->bt.data(), t.data());
    });
  }
}

void cpu_model::forward(const cpu_step& s, kernels::kv_cache& kv) {
  const auto& cfg = w_.config;
  const int N = static_cast<int>(s.tokens.size());
  const int C = cfg.n_embd, I = cfg.inner_dim(), L = cfg.n_layer;
  const auto c = static_cast<std::size_t>(C);
  check_kv(kv);
  if (s.positions.size() != s.tokens.size())
    throw std::invalid_argument("cpu_model: tokens and positions differ in length");
  for (int i = 0; i < N; ++i) {
    const auto t = s.tokens[static_cast<std::size_t>(i)], p = s.positions[static_cast<std::size_t>(i)];
    if (t < 0 || t >= cfg.vocab_size)
      throw std::invalid_argument("cpu_model: token id " + std::to_string(t) + " is outside the vocabulary");
    if (p < 0 || p >= cfg.n_positions)
      throw std::invalid_argument("cpu_model: position " + std::to_string(p) + " is outside the context");
  }
  x_.resize(static_cast<std::size_t>(N) * c);
  h_.resize(x_.size());
  att_.resize(x_.size());
  qkv_.resize(x_.size() * 3);
  f_.resize(static_cast<std::size_t>(N) * static_cast<std::size_t>(I));
  rows_parallel(N, [&](std::size_t b, std::size_t e) {
    for (auto r = b; r < e; ++r) {
      float* x = x_.data() + r * c;
      w_.embed(s.tokens[r], x);
      const float* pe = w_.wpe.data() + static_cast<std::size_t>(s.positions[r]) * c;
      for (int i = 0; i < C; ++i)
        x[i] += pe[i];
    }
  });
  const auto eps = static_cast<float>(cfg.layer_norm_epsilon);
  const bool exact_gelu = cfg.exact_gelu();
  auto norm = [&](const std::vector<float>& g, const std::vector<float>& b) {
    rows_parallel(N, [&](std::size_t r0, std::size_t r1) {
      kernels::layer_norm_rows(x_.data() + r0 * c, c, h_.data() + r0 * c, c, static_cast<int>(r1 - r0), C,
                               g.data(), b.data(), eps);
    });
  };
  for (int l = 0; l < L; ++l) {
    const auto& b = w_.blocks[static_cast<std::size_t>(l)];
    norm(b.ln_1_w, b.ln_1_b);
    linear(b.attn, b.attn_b, h_.data(), c, qkv_.data(), 3 * c, N, false, l, lora_module::attn_c_attn, s.lora);
    kernels::paged_attention(kv.layer(l), qkv_.data(), 3 * c, att_.data(), c, s.seqs, pool_);
    linear(b.proj, b.proj_b, att_.data(), c, x_.data(), c, N, true, l, lora_module::attn_c_proj, s.lora);
    norm(b.ln_2_w, b.ln_2_b);
    const auto fi = static_cast<std::size_t>(I);
    linear(b.fc, b.fc_b, h_.data(), c, f_.data(), fi, N, false, l, lora_module::mlp_c_fc, s.lora);
    rows_parallel(N, [&](std::size_t r0, std::size_t r1) {
      kernels::gelu_rows(f_.data() + r0 * fi, fi, static_cast<int>(r1 - r0), I, exact_gelu);
    });
    linear(b.mproj, b.mproj_b, f_.data(), fi, x_.data(), c, N, true, l, lora_module::mlp_c_proj, s.lora);
  }
  // ln_f and the head on the wanted rows only.
  const auto M = s.logit_rows.size();
  last_.resize(M * c);
  for (std::size_t i = 0; i < M; ++i) {
    const auto r = s.logit_rows[i];
    if (r < 0 || r >= N)
      throw std::invalid_argument("cpu_model: a logits row outside the step");
    kernels::layer_norm_rows(x_.data() + static_cast<std::size_t>(r) * c, c, last_.data() + i * c, c, 1, C,
                             w_.ln_f_w.data(), w_.ln_f_b.data(), eps);
  }
  logits_.resize(M * vocab_padded());
  if (M > 0) {
    kernels::gemm_io io{last_.data(), c, logits_.data(), vocab_padded(), static_cast<int>(M), nullptr, false};
    kernels::gemm(w_.lm_head, io, ws_, pool_);
  }
}

kernels::kv_shape kv_shape_of(const gpt2_config& c, int block_size, std::uint32_t num_blocks, kernels::kv_type t) {
  return {c.n_layer, c.n_head, c.head_dim(), block_size, num_blocks, t};
}

} // namespace lf::engine
