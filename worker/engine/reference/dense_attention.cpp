#include "worker/engine/reference/dense_attention.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace lf::engine {

dense_kv_cache::dense_kv_cache(const gpt2_config& cfg, std::int64_t batch, std::int64_t capacity,
                               at::ScalarType type)
  : batch_(batch), cap_(capacity), heads_(cfg.n_head), head_dim_(cfg.head_dim()),
    scale_(1.0 / std::sqrt(static_cast<double>(cfg.head_dim()))) {
  auto opts = at::TensorOptions().dtype(type);
  for (int l = 0; l < cfg.n_layer; ++l) {
    k_.push_back(at::empty({batch, heads_, capacity, head_dim_}, opts));
    v_.push_back(at::empty({batch, heads_, capacity, head_dim_}, opts));
  }
}

void dense_kv_cache::begin_step(std::int64_t t, const at::Tensor& key_mask) {
  const std::int64_t s = len_ + t;
  if (s > cap_)
    throw std::length_error("dense_kv_cache: step of " + std::to_string(t) + " tokens after "
                            + std::to_string(len_) + " exceeds capacity " + std::to_string(cap_));
  if (key_mask.dim() != 2 || key_mask.size(0) != batch_ || key_mask.size(1) != s)
    throw std::invalid_argument("dense_kv_cache: key_mask must be [batch, length + t]");
  step_t_ = t;
  // allowed[b, i, j] = key j is a real token and j <= len + i (causal).
  auto causal = at::ones({t, s}, at::kBool).tril(len_);
  auto allowed = key_mask.to(at::kBool).unsqueeze(1).logical_and(causal.unsqueeze(0));
  if (allowed.all().item<bool>())
    neg_mask_ = at::Tensor();  // nothing to mask: the common decode step without padding
  else
    neg_mask_ = allowed.logical_not().unsqueeze(1);
}

at::Tensor dense_kv_cache::attend(int layer, const at::Tensor& q, const at::Tensor& k,
                                  const at::Tensor& v) {
  const std::int64_t t = step_t_, s = len_ + t;
  auto& kc = k_[static_cast<std::size_t>(layer)];
  auto& vc = v_[static_cast<std::size_t>(layer)];
  // [N, H, D] -> [B, H, t, D]
  auto to_bhtd = [&](const at::Tensor& x) { return x.view({batch_, t, heads_, head_dim_}).permute({0, 2, 1, 3}); };
  kc.narrow(2, len_, t).copy_(to_bhtd(k));
  vc.narrow(2, len_, t).copy_(to_bhtd(v));
  auto keys = kc.narrow(2, 0, s);
  auto values = vc.narrow(2, 0, s);
  auto scores = at::matmul(to_bhtd(q), keys.transpose(2, 3)).mul_(scale_);  // [B, H, t, s]
  if (neg_mask_.defined())
    // A finite floor, not -inf: fully masked rows (queries at padding) stay finite.
    scores.masked_fill_(neg_mask_, std::numeric_limits<float>::lowest() / 2);
  auto probs = at::softmax(scores, -1);
  auto out = at::matmul(probs, values);                                      // [B, H, t, D]
  return out.permute({0, 2, 1, 3}).reshape({batch_ * t, heads_ * head_dim_});
}

void dense_kv_cache::end_step() {
  len_ += step_t_;
  step_t_ = 0;
}

} // namespace lf::engine
