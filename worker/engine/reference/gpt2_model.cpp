#include "worker/engine/reference/gpt2_model.hpp"

#include <ATen/Parallel.h>

#include <stdexcept>

#include "worker/engine/reference/int8_linear.hpp"
#include "worker/engine/reference/lora_weights.hpp"

namespace lf::engine {

int set_compute_threads(int n) {
  if (n > 0)
    at::set_num_threads(n);
  return at::get_num_threads();
}

gpt2_model::gpt2_model(gpt2_weights weights) : w_(std::move(weights)) {
  exact_gelu_ = w_.config.exact_gelu();
}

at::Tensor gpt2_model::forward_hidden(const at::Tensor& ids, const at::Tensor& positions,
                                      attention_backend& attn, const lora_batch* lora) const {
  at::NoGradGuard no_grad;
  const auto& cfg = w_.config;
  const std::int64_t C = cfg.n_embd, H = cfg.n_head, D = cfg.head_dim();
  const double eps = cfg.layer_norm_epsilon;
  const std::int64_t n = ids.size(0);
  auto x = w_.wte.index_select(0, ids).add_(w_.wpe.index_select(0, positions));
  const char* approx = exact_gelu_ ? "none" : "tanh";
  if (lora != nullptr && lora->empty())
    lora = nullptr;
  // y = x W + b for every row, then each adapter's delta on its own rows.
  auto linear = [&](const at::Tensor& in, const at::Tensor& w, const at::Tensor& scale,
                    const at::Tensor& bias, int layer, lora_module m) {
    auto y = scale.defined() ? int8_linear(in, {w, scale}, bias) : at::addmm(bias, in, w);
    if (lora != nullptr)
      lora->apply(y, in, layer, m);
    return y;
  };
  for (int l = 0; l < cfg.n_layer; ++l) {
    const auto& b = w_.blocks[static_cast<std::size_t>(l)];
    auto h = at::layer_norm(x, {C}, b.ln_1_w, b.ln_1_b, eps);
    auto qkv = linear(h, b.attn_w, b.attn_s, b.attn_b, l, lora_module::attn_c_attn);
    auto q = qkv.narrow(1, 0, C).view({n, H, D});
    auto k = qkv.narrow(1, C, C).view({n, H, D});
    auto v = qkv.narrow(1, 2 * C, C).view({n, H, D});
    auto a = attn.attend(l, q, k, v);
    x.add_(linear(a, b.proj_w, b.proj_s, b.proj_b, l, lora_module::attn_c_proj));
    h = at::layer_norm(x, {C}, b.ln_2_w, b.ln_2_b, eps);
    auto m = at::gelu(linear(h, b.fc_w, b.fc_s, b.fc_b, l, lora_module::mlp_c_fc), approx);
    x.add_(linear(m, b.mproj_w, b.mproj_s, b.mproj_b, l, lora_module::mlp_c_proj));
  }
  return at::layer_norm(x, {C}, w_.ln_f_w, w_.ln_f_b, eps);
}

at::Tensor gpt2_model::logits(const at::Tensor& hidden) const {
  at::NoGradGuard no_grad;
  auto out = at::mm(hidden, w_.lm_head.t());
  return out.scalar_type() == at::kFloat ? out : out.to(at::kFloat);
}

} // namespace lf::engine
