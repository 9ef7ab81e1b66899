// The forward pass: KV-cached decoding equals full recomputation, and a left-padded batch gives
// every row the logits it gets alone.
#include "tests/support/catch_aten.hpp"

#include "tests/support/tiny_model.hpp"
#include "worker/engine/reference/dense_attention.hpp"
#include "worker/engine/reference/gpt2_model.hpp"
#include "worker/engine/reference/weights.hpp"

using namespace lf::engine;

namespace {

const gpt2_model& tiny_model() {
  static lf::test::temp_dir tmp;
  static gpt2_model m(load_gpt2_weights(lf::test::write_tiny_model(tmp)));
  return m;
}

/// Last-position logits of one unpadded sequence, computed from scratch.
at::Tensor full_logits(const gpt2_model& m, const std::vector<std::int64_t>& seq) {
  auto n = static_cast<std::int64_t>(seq.size());
  dense_kv_cache cache(m.config(), 1, n, m.scalar_type());
  cache.begin_step(n, at::ones({1, n}, at::kBool));
  auto h = m.forward_hidden(at::tensor(seq, at::kLong), at::arange(n, at::kLong), cache);
  cache.end_step();
  return m.logits(h.narrow(0, n - 1, 1))[0];
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

} // namespace

TEST_CASE("decoding with the KV cache matches recomputing the sequence for 64 steps", "[model]") {
  const auto& m = tiny_model();
  std::vector<std::int64_t> seq = {464, 2068, 7586, 21831, 18045, 625, 262};  // a real GPT-2 prompt
  auto n = static_cast<std::int64_t>(seq.size());
  dense_kv_cache cache(m.config(), 1, n + 64, m.scalar_type());
  cache.begin_step(n, at::ones({1, n}, at::kBool));
  auto h = m.forward_hidden(at::tensor(seq, at::kLong), at::arange(n, at::kLong), cache);
  cache.end_step();
  auto logits = m.logits(h.narrow(0, n - 1, 1))[0];
  double worst = 0;
  for (int step = 0; step < 64; ++step) {
    auto ref = full_logits(m, seq);
    worst = std::max(worst, max_abs_diff(logits, ref));
    auto next = logits.argmax().item<std::int64_t>();
    seq.push_back(next);
    auto len = cache.length();
    cache.begin_step(1, at::ones({1, len + 1}, at::kBool));
    h = m.forward_hidden(at::tensor({next}, at::kLong), at::tensor({len}, at::kLong), cache);
    cache.end_step();
    logits = m.logits(h)[0];
  }
  INFO("max |cached - recomputed| over 64 steps: " << worst);
  CHECK(worst < 1e-4);
  CHECK(cache.length() == n + 64);
}

TEST_CASE("left padding with mask and position ids leaves each row's logits unchanged", "[model]") {
  const auto& m = tiny_model();
  std::vector<std::vector<std::int64_t>> prompts = {
      {40, 588}, {464, 2068, 7586, 21831, 18045}, {7454, 2402, 257, 640, 11, 287, 257, 1956, 1290, 1497}};
  const std::int64_t B = 3, L = 10;
  auto ids = at::full({B, L}, 50256, at::kLong);
  auto mask = at::zeros({B, L}, at::kBool);
  auto pos = at::zeros({B, L}, at::kLong);
  for (std::int64_t b = 0; b < B; ++b) {
    auto n = static_cast<std::int64_t>(prompts[b].size());
    for (std::int64_t i = 0; i < n; ++i) {
      ids[b][L - n + i] = prompts[b][i];
      mask[b][L - n + i] = true;
      pos[b][L - n + i] = i;
    }
  }
  dense_kv_cache cache(m.config(), B, L + 8, m.scalar_type());
  cache.begin_step(L, mask);
  auto h = m.forward_hidden(ids.flatten(), pos.flatten(), cache);
  cache.end_step();
  auto last = m.logits(h.view({B, L, -1}).select(1, L - 1));
  // Continue all three rows for 8 greedy steps and compare with single-row recomputation.
  for (int step = 0; step < 8; ++step) {
    std::vector<std::int64_t> next(B), next_pos(B);
    for (std::int64_t b = 0; b < B; ++b) {
      auto ref = full_logits(m, prompts[b]);
      INFO("row " << b << " step " << step);
      CHECK(max_abs_diff(last[b], ref) < 1e-4);
      next[b] = ref.argmax().item<std::int64_t>();
      CHECK(last[b].argmax().item<std::int64_t>() == next[b]);
      next_pos[b] = static_cast<std::int64_t>(prompts[b].size());
      prompts[b].push_back(next[b]);
    }
    mask = at::cat({mask, at::ones({B, 1}, at::kBool)}, 1);
    cache.begin_step(1, mask);
    h = m.forward_hidden(at::tensor(next, at::kLong), at::tensor(next_pos, at::kLong), cache);
    cache.end_step();
    last = m.logits(h);
  }
}

TEST_CASE("bf16 compute stays close to f32", "[model]") {
  lf::test::temp_dir tmp;
  auto dir = lf::test::write_tiny_model(tmp);
  gpt2_model f32(load_gpt2_weights(dir));
  gpt2_model bf16(load_gpt2_weights(dir, compute_dtype::bf16));
  std::vector<std::int64_t> seq = {464, 2068, 7586, 21831};
  auto a = full_logits(f32, seq);
  auto b = full_logits(bf16, seq);
  CHECK(b.scalar_type() == at::kFloat);
  CHECK(at::isfinite(b).all().item<bool>());
  // bf16 keeps 8 bits of mantissa: compare relative to the logit scale.
  CHECK(max_abs_diff(a, b) < 0.1 * a.abs().max().item<double>());
}
