#include "worker/engine/paged_runner.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "cache/kv_pool.hpp"
#include "worker/engine/gpt2_model.hpp"
#include "worker/engine/lora_weights.hpp"
#include "worker/engine/paged_attention.hpp"

namespace lf::engine {

struct paged_runner::impl {
  const gpt2_model& model;
  paged_attention attn;
  cache::adapter_lookup_fn adapters;
  at::Tensor logits;  ///< [rows, V] float32, contiguous
};

paged_runner::paged_runner(const gpt2_model& model, cache::kv_pool& pool,
                           cache::adapter_lookup_fn adapters)
  : impl_(new impl{model, paged_attention(pool), std::move(adapters), {}}) {
  const auto& cfg = model.config();
  const auto& pc = pool.config();
  if (pc.n_layer != cfg.n_layer || pc.n_head != cfg.n_head || pc.head_dim != cfg.head_dim())
    throw std::invalid_argument("paged_runner: the KV pool's shape does not match the model");
}

paged_runner::~paged_runner() = default;

void paged_runner::step(const std::vector<engine_chunk>& chunks) {
  const auto& model = impl_->model;
  // Rows ordered by adapter (stable), so each adapter's rows form one contiguous run.
  std::vector<std::size_t> order(chunks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return chunks[a].adapter < chunks[b].adapter;
  });
  // Held for the step: an adapter evicted meanwhile stays alive until the forward is done.
  std::vector<std::shared_ptr<const lora_weights>> held;
  std::vector<const lora_weights*> chunk_lora(chunks.size(), nullptr);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto i = order[k];
    const auto id = chunks[i].adapter;
    if (id == cache::base_model)
      continue;
    if (k > 0 && chunks[order[k - 1]].adapter == id) {  // one lookup per distinct adapter
      chunk_lora[i] = chunk_lora[order[k - 1]];
      continue;
    }
    held.push_back(find_lora(impl_->adapters, id));
    chunk_lora[i] = held.back().get();
  }
  std::int64_t n = 0;
  for (auto& c : chunks)
    n += c.count;
  auto ids = at::empty({n}, at::kLong);
  auto pos = at::empty({n}, at::kLong);
  auto* pi = ids.data_ptr<std::int64_t>();
  auto* pp = pos.data_ptr<std::int64_t>();
  std::vector<paged_seq> seqs;
  std::vector<const lora_weights*> row_lora;
  row_lora.reserve(static_cast<std::size_t>(n));
  std::vector<std::int64_t> last_row(chunks.size(), -1);
  std::int64_t row = 0;
  const auto n_pos = model.config().n_positions;
  for (std::size_t i : order) {
    const auto& c = chunks[i];
    if (c.count < 1 || c.start < 0 || c.start + c.count > n_pos)
      throw std::invalid_argument("paged_runner: a chunk reaches outside the context window");
    for (std::int64_t k = 0; k < c.count; ++k) {
      pi[row + k] = c.tokens[k];
      pp[row + k] = c.start + k;
    }
    row_lora.insert(row_lora.end(), static_cast<std::size_t>(c.count), chunk_lora[i]);
    seqs.push_back({c.start, c.count, c.table});
    row += c.count;
    last_row[i] = row - 1;
  }
  // Logits in the callers' chunk order.
  std::vector<std::int64_t> last_rows;
  for (std::size_t i = 0; i < chunks.size(); ++i)
    if (chunks[i].want_logits)
      last_rows.push_back(last_row[i]);
  const auto lora = lora_batch::from_rows(row_lora);
  impl_->attn.begin_step(seqs);
  auto hidden = model.forward_hidden(ids, pos, impl_->attn, &lora);
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
