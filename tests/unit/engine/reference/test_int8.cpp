// Weight-only int8: per-column quantization error bounds, the decode kernel and the GEMM path
// against a dequantized reference, and a whole model in int8 against f32.
#include "tests/support/catch_aten.hpp"

#include "tests/support/tiny_model.hpp"
#include "worker/engine/reference/dense_attention.hpp"
#include "worker/engine/reference/gpt2_model.hpp"
#include "worker/engine/reference/int8_linear.hpp"
#include "worker/engine/reference/weights.hpp"

using namespace lf::engine;

TEST_CASE("int8 quantization: error within half a step per column, zero columns stay zero", "[int8]") {
  at::manual_seed(3);
  auto w = at::randn({64, 96});
  w.select(1, 5).zero_();
  w.select(1, 7).mul_(100);  // a column on a very different scale keeps its own precision
  auto q = quantize_int8(w);
  CHECK(q.q.scalar_type() == at::kChar);
  CHECK(q.scale.sizes() == at::IntArrayRef{96});
  CHECK(q.q.abs().max().item<int>() <= 127);
  auto back = q.q.to(at::kFloat) * q.scale;
  auto err = (back - w).abs();
  CHECK((err <= q.scale * 0.5 + 1e-6).all().item<bool>());
  CHECK(q.scale[5].item<float>() == 1.0f);
  CHECK(q.q.select(1, 5).abs().sum().item<int>() == 0);
}

TEST_CASE("int8_linear matches the dequantized product, kernel and GEMM paths", "[int8]") {
  at::manual_seed(4);
  auto w = at::randn({80, 300});  // 300 columns: a partial last column block
  auto bias = at::randn({300});
  auto q = quantize_int8(w);
  auto deq = q.q.to(at::kFloat) * q.scale;
  for (std::int64_t rows : {1, 3, 64, 65, 130}) {
    INFO("rows " << rows);
    auto x = at::randn({rows, 80});
    auto y = int8_linear(x, q, bias);
    auto ref = at::addmm(bias, x, deq);
    CHECK(y.sizes() == ref.sizes());
    CHECK((y - ref).abs().max().item<double>() < 1e-3 * (1 + ref.abs().max().item<double>()));
  }
  CHECK_THROWS(int8_linear(at::randn({2, 79}), q, bias));
}

TEST_CASE("an int8 model stays close to f32 and stores its linear weights in a quarter", "[int8][model]") {
  lf::test::temp_dir tmp;
  auto dir = lf::test::write_tiny_model(tmp);
  gpt2_model f32(load_gpt2_weights(dir));
  gpt2_model i8(load_gpt2_weights(dir, compute_dtype::int8));
  CHECK(i8.scalar_type() == at::kFloat);
  const auto& b = i8.weights().blocks[0];
  CHECK(b.attn_w.scalar_type() == at::kChar);
  CHECK(b.mproj_s.defined());
  // Linear weights shrink 4x (plus one float per column); embeddings stay f32.
  const auto saved = f32.weights().bytes() - i8.weights().bytes();
  std::size_t linear = 0;
  for (auto& blk : f32.weights().blocks)
    linear += static_cast<std::size_t>(blk.attn_w.numel() + blk.proj_w.numel() + blk.fc_w.numel()
                                       + blk.mproj_w.numel()) * 4;
  CHECK(saved > linear * 7 / 10);
  CHECK(saved < linear * 3 / 4);
  std::vector<std::int64_t> seq = {464, 2068, 7586, 21831, 11, 290, 262, 3290};
  const auto n = static_cast<std::int64_t>(seq.size());
  auto run = [&](const gpt2_model& m) {
    dense_kv_cache c(m.config(), 1, n, m.scalar_type());
    c.begin_step(n, at::ones({1, n}, at::kBool));
    return m.logits(m.forward_hidden(at::tensor(seq, at::kLong), at::arange(n, at::kLong), c));
  };
  auto a = run(f32), q = run(i8);
  CHECK(at::isfinite(q).all().item<bool>());
  CHECK((a - q).abs().max().item<double>() < 0.05 * a.abs().max().item<double>());
  // The f32 choice stays the int8 model's choice or within a near-tie of it (50257 logits of a
  // random model have close runners-up).
  const auto agree = a.argmax(1).eq(q.argmax(1)).sum().item<std::int64_t>();
  const auto chosen = q.gather(1, a.argmax(1).unsqueeze(1)).squeeze(1);
  const auto gap = (std::get<0>(q.max(1)) - chosen).max().item<double>();
  INFO("top-1 agreement " << agree << " of " << n << ", largest gap " << gap);
  CHECK(agree >= n - 2);
  CHECK(gap < 0.02 * a.abs().max().item<double>());
}
