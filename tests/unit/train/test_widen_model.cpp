// widen-model: a GPT-2 widened 3x (tiled activations, head copies, identity layers, a longer
// context) gives the small model's logits through the serving engine in f32, at every position
// of several prompts; with --noise it gives other logits (and a shape it cannot embed into is
// refused).
#include "tests/support/catch_aten.hpp"

#include <cmath>

#include "tests/support/tiny_model.hpp"
#include "text/tokenizer.hpp"
#include "tools/train/widen_model.hpp"
#include "worker/engine/model/cpu_model.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/engine/reference/model_writer.hpp"
#include "worker/engine/reference/weights.hpp"

using namespace lf::engine;

namespace {

/// Every position's logits of `tokens` through the serving engine in f32.
std::vector<std::vector<float>> logits_of(const std::string& dir, const std::vector<std::int32_t>& tokens) {
  cpu_model model(load_cpu_weights(dir, compute_dtype::f32), 2);
  const auto& c = model.config();
  const int block = 16;
  const auto blocks = static_cast<std::uint32_t>((tokens.size() + block - 1) / block);
  lf::kernels::kv_cache kv(kv_shape_of(c, block, blocks, lf::kernels::kv_type::f32));
  cpu_runner runner(model, kv);
  std::vector<lf::cache::block_id> table;
  for (std::uint32_t b = 0; b < blocks; ++b)
    table.push_back(lf::cache::block_id{b});
  const auto n = static_cast<std::int64_t>(tokens.size());
  runner.step({{tokens.data(), 0, n, &table, true, lf::cache::base_model, n}});
  std::vector<std::vector<float>> out;
  for (std::int64_t i = 0; i < n; ++i)
    out.emplace_back(runner.logits(static_cast<std::size_t>(i)), runner.logits(static_cast<std::size_t>(i)) + c.vocab_size);
  return out;
}

} // namespace

TEST_CASE("a widened model computes the small model's logits", "[widen][model]") {
  lf::test::temp_dir tmp;
  const auto small = lf::test::write_tiny_model(tmp, "small");
  lf::train::widen_options o;
  o.layers = 5;
  o.embd = 192;  // 3 x 64: 12 heads of 16
  o.context = 300;
  auto wide = lf::train::widen_gpt2(load_gpt2_weights(small), o);
  CHECK(wide.config.n_head == 12);
  CHECK(wide.wpe.size(0) == 300);
  save_gpt2_checkpoint(wide, tmp / "wide", dtype::f32);
  o.noise = 0.05;
  o.seed = 3;
  save_gpt2_checkpoint(lf::train::widen_gpt2(load_gpt2_weights(small), o), tmp / "noisy", dtype::f32);
  const auto tok = lf::text::tokenizer::from_dir(small);
  for (const auto& p : lf::test::prompts()) {
    const auto ids = tok.encode(p);
    const auto want = logits_of(small, ids);
    const auto got = logits_of(tmp / "wide", ids);
    const auto noisy = logits_of(tmp / "noisy", ids);
    REQUIRE(got.size() == want.size());
    double worst = 0, moved = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
      for (std::size_t v = 0; v < want[i].size(); ++v) {
        worst = std::max(worst, std::abs(double(got[i][v]) - want[i][v]) / std::max(1.0, std::abs(double(want[i][v]))));
        moved = std::max(moved, std::abs(double(noisy[i][v]) - want[i][v]));
      }
    INFO("prompt '" << p << "': worst relative difference " << worst << ", with noise " << moved);
    CHECK(worst < 1e-4);
    CHECK(moved > 1e-2);
  }
}

TEST_CASE("widen-model refuses shapes it cannot embed into", "[widen][model]") {
  auto w = make_random_weights(lf::test::tiny_config(2, 4, 64, 64), 1, 0.02);
  lf::train::widen_options o;
  o.embd = 100;
  CHECK_THROWS_WITH(lf::train::widen_gpt2(w, o), Catch::Contains("multiple"));
  o.embd = 128;
  o.layers = 1;
  CHECK_THROWS_WITH(lf::train::widen_gpt2(w, o), Catch::Contains("at least"));
}
