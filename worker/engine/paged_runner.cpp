#include "worker/engine/paged_runner.hpp"

#include <stdexcept>

#include "cache/kv_pool.hpp"
#include "worker/engine/gpt2_model.hpp"
#include "worker/engine/paged_attention.hpp"

namespace lf::engine {

struct paged_runner::impl {
  const gpt2_model& model;
  paged_attention attn;
  at::Tensor logits;  ///< [rows, V] float32, contiguous
};

paged_runner::paged_runner(const gpt2_model& model, cache::kv_pool& pool)
  : impl_(new impl{model, paged_attention(pool), {}}) {
  const auto& cfg = model.config();
  const auto& pc = pool.config();
  if (pc.n_layer != cfg.n_layer || pc.n_head != cfg.n_head || pc.head_dim != cfg.head_dim())
    throw std::invalid_argument("paged_runner: the KV pool's shape does not match the model");
}

paged_runner::~paged_runner() = default;

void paged_runner::step(const std::vector<engine_chunk>& chunks) {
  const auto& model = impl_->model;
  std::int64_t n = 0;
  for (auto& c : chunks)
    n += c.count;
  auto ids = at::empty({n}, at::kLong);
  auto pos = at::empty({n}, at::kLong);
  auto* pi = ids.data_ptr<std::int64_t>();
  auto* pp = pos.data_ptr<std::int64_t>();
  std::vector<paged_seq> seqs;
  std::vector<std::int64_t> last_rows;
  std::int64_t row = 0;
  const auto n_pos = model.config().n_positions;
  for (auto& c : chunks) {
    if (c.count < 1 || c.start < 0 || c.start + c.count > n_pos)
      throw std::invalid_argument("paged_runner: a chunk reaches outside the context window");
    for (std::int64_t i = 0; i < c.count; ++i) {
      pi[row + i] = c.tokens[i];
      pp[row + i] = c.start + i;
    }
    seqs.push_back({c.start, c.count, c.table});
    row += c.count;
    if (c.want_logits)
      last_rows.push_back(row - 1);
  }
  impl_->attn.begin_step(seqs);
  auto hidden = model.forward_hidden(ids, pos, impl_->attn);
  impl_->logits = last_rows.empty()
                    ? at::Tensor()
                    : model.logits(hidden.index_select(0, at::tensor(last_rows, at::kLong))).contiguous();
}

float* paged_runner::logits(std::size_t i) {
  auto& l = impl_->logits;
  if (!l.defined() || static_cast<std::int64_t>(i) >= l.size(0))
    throw std::out_of_range("paged_runner: no logits row " + std::to_string(i));
  return l.data_ptr<float>() + static_cast<std::int64_t>(i) * l.size(1);
}

std::size_t paged_runner::vocab_size() const {
  return static_cast<std::size_t>(impl_->model.config().vocab_size);
}

} // namespace lf::engine
