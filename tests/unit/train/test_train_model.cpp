// The trainer's GPT-2: same logits as the engine after a save/load round trip, LoRA as PEFT
// defines it, and the fused head's gradients equal to plain autograd's.
#include "tests/support/catch_aten.hpp"

#include "tests/support/temp_dir.hpp"
#include "tests/support/tiny_model.hpp"
#include "tools/train/train_model.hpp"
#include "worker/engine/reference/dense_attention.hpp"
#include "worker/engine/reference/gpt2_model.hpp"
#include "worker/engine/reference/model_writer.hpp"

using namespace lf::engine;
using namespace lf::train;

namespace {

/// Random weights with non-trivial biases and layer norms (the engine's test maker), owned f32.
gpt2_weights random_weights(int vocab = 1000, std::uint64_t seed = 5) {
  auto cfg = lf::test::tiny_config(2, 4, 32, 64);
  cfg.vocab_size = vocab;
  return owned_copy(make_random_weights(cfg, seed, 0.2));
}

/// Every position's logits [n, V] from the engine, no KV reuse.
at::Tensor engine_logits(const gpt2_model& m, const at::Tensor& ids) {
  const auto n = ids.size(0);
  dense_kv_cache cache(m.config(), 1, n, m.scalar_type());
  cache.begin_step(n, at::ones({1, n}, at::kBool));
  auto h = m.forward_hidden(ids, at::arange(n, at::kLong), cache);
  cache.end_step();
  return m.logits(h);
}

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

} // namespace

TEST_CASE("a saved model reloads through the engine's loader with the trainer's logits", "[train][model]") {
  lf::test::temp_dir tmp;
  auto w = random_weights(50257);
  auto ids = at::randint(50257, {1, 40}, at::kLong);
  forward_options f32;
  auto mine = forward_logits(w, ids, f32)[0];
  for (auto storage : {dtype::f32, dtype::f16}) {
    save_gpt2_checkpoint(w, tmp / "m", storage);
    gpt2_model m(load_gpt2_weights(tmp / "m"));
    auto theirs = engine_logits(m, ids[0]);
    INFO("storage " << to_string(storage) << ", max |trainer - engine| = " << max_diff(mine, theirs));
    if (storage == dtype::f32)
      CHECK(max_diff(mine, theirs) < 1e-4);
    else // f16 rounding of the weights, logits of size ~10
      CHECK(max_diff(mine, theirs) < 0.1);
  }
}

TEST_CASE("bf16 products stay close to f32", "[train][model]") {
  auto w = random_weights();
  auto win = at::randint(1000, {2, 33}, at::kLong);
  forward_options f32, bf16;
  bf16.prec = precision::bf16;
  auto a = lm_loss(w, win, f32).item<double>(), b = lm_loss(w, win, bf16).item<double>();
  INFO("f32 " << a << ", bf16 " << b);
  CHECK(std::abs(a - b) < 0.05 * a);
}

TEST_CASE("LoRA adds scale * x A^T B^T to each targeted projection", "[train][model]") {
  auto w = random_weights();
  auto lora = init_lora(w.config, 4, 8.0f, {lora_module::attn_c_attn, lora_module::mlp_c_proj}, 1);
  auto ids = at::randint(1000, {2, 16}, at::kLong);
  forward_options plain, adapted;
  adapted.lora = &lora;
  // PEFT starts with B = 0: the adapted model is the base model.
  CHECK(max_diff(forward_logits(w, ids, plain), forward_logits(w, ids, adapted)) == 0.0);

  // With non-zero B the output equals the base with W + scale * A^T B^T merged into it
  // (Conv1D weights are [in, out]).
  for (auto& layer : lora.b)
    for (auto& b : layer)
      if (b.defined())
        b.normal_(0, 0.1);
  auto merged = owned_copy(w);
  for (std::size_t l = 0; l < merged.blocks.size(); ++l) {
    auto delta = [&](lora_module m) {
      auto i = static_cast<std::size_t>(m);
      return at::mm(lora.a[l][i].t(), lora.b[l][i].t()) * lora.scale();
    };
    merged.blocks[l].attn_w += delta(lora_module::attn_c_attn);
    merged.blocks[l].mproj_w += delta(lora_module::mlp_c_proj);
  }
  CHECK(max_diff(forward_logits(merged, ids, plain), forward_logits(w, ids, adapted)) < 1e-4);

  // The factors survive the trip through the engine's adapter struct.
  auto back = lora_from_adapter(lora_to_adapter(lora, "x"), w.config);
  CHECK(max_diff(forward_logits(w, ids, adapted), forward_logits(w, ids, {precision::f32, 0, false, &back})) == 0.0);
}

TEST_CASE("the fused head's gradients equal autograd through cross_entropy", "[train][model]") {
  auto w = random_weights();
  auto win = at::randint(1000, {3, 21}, at::kLong);
  auto params = parameter_list(w);
  for (auto& p : params)
    p.requires_grad_(true);
  forward_options f32;
  auto ref_loss = lm_loss(w, win, f32);
  ref_loss.backward();
  std::vector<at::Tensor> ref;
  for (auto& p : params) {
    ref.push_back(p.grad().clone());
    p.mutable_grad().reset();
  }
  at::Tensor workspace;
  double loss = train_backward(w, win, f32, 0.5, &workspace);
  CHECK(loss == Approx(ref_loss.item<double>()).epsilon(1e-5));
  CHECK(workspace.defined());
  double worst = 0;
  for (std::size_t i = 0; i < params.size(); ++i)
    worst = std::max(worst, max_diff(params[i].grad(), 0.5 * ref[i]) / (ref[i].abs().max().item<double>() + 1e-12));
  INFO("worst relative gradient difference " << worst);
  CHECK(worst < 1e-4);

  // LoRA: the base stays frozen, only the factors get gradients.
  for (auto& p : params) {
    p.requires_grad_(false);
    p.mutable_grad().reset();
  }
  auto lora = init_lora(w.config, 2, 4.0f, {lora_module::mlp_c_fc}, 3);
  for (auto& p : lora.parameters())
    p.requires_grad_(true);
  f32.lora = &lora;
  train_backward(w, win, f32, 1.0, &workspace);
  CHECK_FALSE(w.wte.grad().defined());
  CHECK(lora.b[0][static_cast<std::size_t>(lora_module::mlp_c_fc)].grad().abs().sum().item<double>() > 0);
}

TEST_CASE("evaluation uses an untied checkpoint's own head", "[train][model]") {
  auto cfg = lf::test::tiny_config(2, 4, 32, 64);
  cfg.vocab_size = 1000;
  cfg.tie_word_embeddings = false;
  auto w = make_random_weights(cfg, 9, 0.2);  // lm_head drawn apart from wte
  REQUIRE_FALSE(w.lm_head.is_same(w.wte));
  std::vector<std::int32_t> window = {5, 17, 300, 42, 999, 7, 123, 64, 8};
  const int length = static_cast<int>(window.size());
  const auto [sum, n] = sum_loss(w, window, length, 1, {});
  REQUIRE(n == length - 1);
  // The reference: the engine's forward with its loader's head (lm_head, not wte).
  gpt2_model m(w);
  auto ids = at::tensor(std::vector<std::int64_t>(window.begin(), window.end() - 1), at::kLong);
  auto logits = engine_logits(m, ids);
  auto targets = at::tensor(std::vector<std::int64_t>(window.begin() + 1, window.end()), at::kLong);
  const double expected = at::cross_entropy_loss(logits, targets, {}, at::Reduction::Sum).item<double>();
  CHECK(std::fabs(sum - expected) < 1e-3 * std::fabs(expected));
}

TEST_CASE("rsLoRA adapters load for evaluation with alpha / sqrt(rank)", "[train][model]") {
  auto cfg = lf::test::tiny_config(2, 4, 32, 64);
  auto a = make_random_adapter(cfg, 4, 8.0f, {all_lora_modules.begin(), all_lora_modules.end()}, 3, 0.1f);
  a.use_rslora = true;
  auto l = lora_from_adapter(a, cfg);
  CHECK(l.rslora);
  CHECK(l.scale() == Approx(8.0f / 2.0f));  // alpha / sqrt(4)
  CHECK(lora_to_adapter(l, "x").use_rslora);
  a.use_rslora = false;
  CHECK(lora_from_adapter(a, cfg).scale() == Approx(8.0f / 4.0f));
}
