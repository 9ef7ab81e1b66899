#include "worker/engine/paged_attention.hpp"

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "worker/engine/attention_kernel.hpp"

namespace lf::engine {

paged_attention::paged_attention(cache::kv_pool& pool)
  : pool_(pool), block_size_(pool.config().block_size),
    scale_(static_cast<float>(1.0 / std::sqrt(static_cast<double>(pool.config().head_dim)))) {}

void paged_attention::begin_step(const std::vector<paged_seq>& seqs) {
  decode_.clear();
  prefill_.clear();
  tables_.clear();
  n_tokens_ = 0;
  for (auto& s : seqs)
    n_tokens_ += s.count;
  new_slots_ = at::empty({n_tokens_}, at::kLong);
  auto* slots = new_slots_.data_ptr<std::int64_t>();
  const auto bs = static_cast<std::int64_t>(block_size_);
  std::int64_t row = 0;
  for (auto& s : seqs) {
    const std::int64_t len = s.start + s.count;
    if (s.count < 1 || s.table == nullptr
        || static_cast<std::int64_t>(s.table->size()) * bs < len)
      throw std::invalid_argument("paged_attention: a sequence's block table does not cover its tokens");
    seq_info info{row, s.start, s.count, tables_.size(), {}, {}};
    for (auto b : *s.table)
      tables_.push_back(static_cast<std::int32_t>(b.value()));
    auto slot_of = [&](std::int64_t p) {
      return static_cast<std::int64_t>((*s.table)[static_cast<std::size_t>(p / bs)].value()) * bs + p % bs;
    };
    for (std::int64_t i = 0; i < s.count; ++i)
      slots[row + i] = slot_of(s.start + i);
    if (s.count == 1) {
      decode_.push_back(std::move(info));
    } else {
      info.context_slots = at::empty({len}, at::kLong);
      auto* cs = info.context_slots.data_ptr<std::int64_t>();
      for (std::int64_t p = 0; p < len; ++p)
        cs[p] = slot_of(p);
      info.masked = at::ones({s.count, len}, at::kBool).triu(s.start + 1);
      prefill_.push_back(std::move(info));
    }
    row += s.count;
  }
}

at::Tensor paged_attention::attend(int layer, const at::Tensor& q, const at::Tensor& k,
                                   const at::Tensor& v) {
  const auto& cfg = pool_.config();
  const std::int64_t H = cfg.n_head, D = cfg.head_dim;
  auto& kp = pool_.k(layer);
  auto& vp = pool_.v(layer);
  kp.index_copy_(0, new_slots_, k.to(at::kFloat));
  vp.index_copy_(0, new_slots_, v.to(at::kFloat));
  auto qf = q.to(at::kFloat).contiguous();
  auto out = at::empty({n_tokens_, H, D}, at::kFloat);
  if (!decode_.empty()) {
    kv_layer_view view{kp.data_ptr<float>(), vp.data_ptr<float>(), cfg.n_head, cfg.head_dim, block_size_};
    const float* qp = qf.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const auto work = static_cast<std::int64_t>(decode_.size()) * H;
    at::parallel_for(0, work, 4, [&](std::int64_t begin, std::int64_t end) {
      std::vector<float> scratch;
      for (auto w = begin; w < end; ++w) {
        const auto& s = decode_[static_cast<std::size_t>(w / H)];
        const auto h = static_cast<int>(w % H);
        const auto len = s.start + 1;
        scratch.resize(static_cast<std::size_t>(len));
        auto off = (s.row * H + h) * D;
        paged_decode_head(view, tables_.data() + s.table_offset, len, h, qp + off, scale_,
                          op + off, scratch.data());
      }
    });
  }
  for (auto& s : prefill_) {
    auto keys = kp.index_select(0, s.context_slots);    // [S, H, D]
    auto values = vp.index_select(0, s.context_slots);  // [S, H, D]
    auto qs = qf.narrow(0, s.row, s.count);              // [t, H, D]
    auto scores = at::matmul(qs.permute({1, 0, 2}), keys.permute({1, 2, 0})).mul_(scale_);
    scores.masked_fill_(s.masked.unsqueeze(0), -std::numeric_limits<float>::infinity());
    auto o = at::matmul(at::softmax(scores, -1), values.permute({1, 0, 2}));  // [H, t, D]
    out.narrow(0, s.row, s.count).copy_(o.permute({1, 0, 2}));
  }
  auto res = out.view({n_tokens_, H * D});
  return q.scalar_type() == at::kFloat ? res : res.to(q.scalar_type());
}

} // namespace lf::engine
