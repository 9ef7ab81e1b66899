#include "worker/engine/reference/generator.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>

#include "text/text_stream.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/reference/dense_attention.hpp"
#include "worker/engine/reference/gpt2_model.hpp"
#include "worker/engine/reference/lora_weights.hpp"
#include "worker/engine/sampling/sampler.hpp"

namespace lf::engine {

std::string_view to_string(finish_reason r) {
  switch (r) {
    case finish_reason::eos: return "eos";
    case finish_reason::stop_sequence: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::context_full: return "context_full";
    case finish_reason::cancelled: return "cancelled";
  }
  return "unknown";
}

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

/// Per-row decoding state.
struct row_state {
  sampler pick;
  text::text_stream stream;
  std::vector<std::int32_t> context;  ///< prompt + generated, for the repetition penalty
  generation_output out;
  bool done = false;
};

/// Samples one token for every unfinished row from logits [B, V] and applies the finish rules.
void consume(const at::Tensor& logits, std::vector<row_state>& rows,
             const std::vector<generation_request>& batch, const text::tokenizer& tok,
             std::int64_t n_positions, const generate_options& opts, generation_timing& timing) {
  const auto vocab = static_cast<std::size_t>(logits.size(1));
  auto* base = logits.data_ptr<float>();
  for (std::size_t b = 0; b < rows.size(); ++b) {
    auto& r = rows[b];
    if (r.done)
      continue;
    if (opts.is_cancelled && opts.is_cancelled(b)) {
      r.done = true;
      r.out.reason = finish_reason::cancelled;
      continue;
    }
    const auto& p = batch[b].req.params();
    auto id = r.pick.sample(base + b * vocab, vocab, r.context);
    std::string delta;
    if (id == tok.eos_id() && !p.ignore_eos) {
      r.done = true;
      r.out.reason = finish_reason::eos;
    } else {
      r.out.tokens.push_back(id);
      r.context.push_back(id);
      ++timing.generated_tokens;
      auto st = r.stream.push(tok.decode_token(id));
      delta = std::move(st.delta);
      if (st.stopped) {
        r.done = true;
        r.out.reason = finish_reason::stop_sequence;
      } else if (static_cast<int>(r.out.tokens.size()) >= p.max_tokens) {
        r.done = true;
        r.out.reason = finish_reason::length;
      } else if (static_cast<std::int64_t>(r.context.size()) >= n_positions) {
        r.done = true;
        r.out.reason = finish_reason::context_full;
      }
    }
    if (r.done && r.out.reason != finish_reason::stop_sequence) {
      delta += r.stream.finish();
      if (r.stream.stopped())  // a held-back match settled at the end of the text
        r.out.reason = finish_reason::stop_sequence;
    }
    r.out.text += delta;
    if (opts.on_token)
      opts.on_token(b, id, delta);
  }
}

} // namespace

generation_batch_result generate(const gpt2_model& model, const text::tokenizer& tok,
                                 const std::vector<generation_request>& batch,
                                 const generate_options& opts) {
  // Rows were validated against this model at the edge; a longer one is a caller's bug.
  for (std::size_t b = 0; b < batch.size(); ++b)
    if (batch[b].req.max_length() > static_cast<std::uint64_t>(model.config().n_positions))
      throw std::invalid_argument("generate: row " + std::to_string(b)
                                  + " was validated for a longer context than this model's");
  // Every row's adapter, held for the whole batch.
  std::vector<std::shared_ptr<const lora_weights>> row_lora(batch.size());
  for (std::size_t b = 0; b < batch.size(); ++b) {
    try {
      row_lora[b] = find_lora(opts.adapters, batch[b].adapter);
    } catch (const std::exception& e) {
      throw std::invalid_argument("request " + std::to_string(b) + ": " + e.what());
    }
  }
  generation_batch_result res;
  if (batch.empty())
    return res;
  const auto& cfg = model.config();
  const auto B = static_cast<std::int64_t>(batch.size());
  std::int64_t lmax = 0, max_new = 0;
  for (auto& r : batch) {
    lmax = std::max<std::int64_t>(lmax, static_cast<std::int64_t>(r.req.prompt().size()));
    max_new = std::max<std::int64_t>(max_new, r.req.params().max_tokens);
  }
  // History of every row, left padded: ids [B, S] and mask [B, S], S growing by one per step.
  std::vector<row_state> rows;
  std::vector<std::vector<std::int64_t>> ids(batch.size());
  std::vector<std::vector<bool>> mask(batch.size());
  std::vector<std::int64_t> real(batch.size());  ///< real tokens so far = next position id
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const auto& req = batch[b];
    const auto& prompt = req.req.prompt();
    rows.push_back({sampler(req.req.params(), opts.seed + b), text::text_stream(req.req.params().stop), prompt, {}, false});
    auto pad = lmax - static_cast<std::int64_t>(prompt.size());
    ids[b].assign(static_cast<std::size_t>(pad), tok.eos_id());
    mask[b].assign(static_cast<std::size_t>(pad), false);
    ids[b].insert(ids[b].end(), prompt.begin(), prompt.end());
    mask[b].insert(mask[b].end(), prompt.size(), true);
    real[b] = static_cast<std::int64_t>(prompt.size());
    res.timing.prompt_tokens += real[b];
  }
  // Builds the step's inputs from the last `t` columns of the history.
  auto step_inputs = [&](std::int64_t t) {
    const auto s = static_cast<std::int64_t>(ids[0].size());
    auto in_ids = at::empty({B * t}, at::kLong);
    auto in_pos = at::empty({B * t}, at::kLong);
    auto key_mask = at::empty({B, s}, at::kBool);
    auto* pi = in_ids.data_ptr<std::int64_t>();
    auto* pp = in_pos.data_ptr<std::int64_t>();
    auto* pm = key_mask.data_ptr<bool>();
    for (std::int64_t b = 0; b < B; ++b) {
      std::int64_t pos = 0;  // position id = real tokens before this one (left padding skipped)
      for (std::int64_t j = 0; j < s; ++j) {
        bool m = mask[b][j];
        pm[b * s + j] = m;
        if (j >= s - t) {
          auto i = b * t + (j - (s - t));
          pi[i] = ids[b][j];
          pp[i] = std::min<std::int64_t>(pos, cfg.n_positions - 1);
        }
        pos += m ? 1 : 0;
      }
    }
    return std::make_tuple(in_ids, in_pos, key_mask);
  };
  std::optional<dense_kv_cache> cache;
  auto run_step = [&](std::int64_t t) {
    auto [in_ids, in_pos, key_mask] = step_inputs(t);
    if (!opts.use_kv_cache || !cache)  // no-cache mode: a fresh cache holding only this step
      cache.emplace(cfg, B, opts.use_kv_cache ? lmax + max_new : t, model.scalar_type());
    cache->begin_step(t, key_mask);
    std::vector<const lora_weights*> rows(static_cast<std::size_t>(B * t));
    for (std::size_t r = 0; r < rows.size(); ++r)  // row b's tokens are [b * t, (b + 1) * t)
      rows[r] = row_lora[r / static_cast<std::size_t>(t)].get();
    const auto lora = lora_batch::from_rows(rows);
    auto hidden = model.forward_hidden(in_ids, in_pos, *cache, &lora);
    cache->end_step();
    auto last = at::arange(B, at::kLong).mul_(t).add_(t - 1);
    return model.logits(hidden.index_select(0, last)).contiguous();
  };
  auto t0 = clock_type::now();
  auto logits = run_step(lmax);
  consume(logits, rows, batch, tok, cfg.n_positions, opts, res.timing);
  res.timing.prefill_ms = ms_since(t0);
  t0 = clock_type::now();
  while (std::any_of(rows.begin(), rows.end(), [](auto& r) { return !r.done; })) {
    for (std::size_t b = 0; b < rows.size(); ++b) {
      bool active = !rows[b].done;
      ids[b].push_back(active ? rows[b].context.back() : tok.eos_id());
      mask[b].push_back(active);
    }
    auto t = opts.use_kv_cache ? 1 : static_cast<std::int64_t>(ids[0].size());
    logits = run_step(t);
    consume(logits, rows, batch, tok, cfg.n_positions, opts, res.timing);
    ++res.timing.decode_steps;
  }
  res.timing.decode_ms = ms_since(t0);
  for (auto& r : rows)
    res.outputs.push_back(std::move(r.out));
  return res;
}

} // namespace lf::engine
