// LoRA in the forward pass: an adapter's output equals the base model with the adapter merged into
// its weights (every target module, rsLoRA too), in the ATen model and in the serving engine; and a
// batch mixing base, adapter 1 and adapter 2 rows gives every row exactly what it gets alone,
// through the serving engine (bit for bit) and the static generator.
#include "tests/support/catch_aten.hpp"

#include <cstring>

#include "cache/block_manager.hpp"
#include "tests/support/lora_fixture.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/engine/reference/dense_attention.hpp"
#include "worker/engine/reference/generator.hpp"

using namespace lf::engine;
using lf::text::tokenizer;
using lf::cache::adapter_id;
using lf::cache::base_model;
using lf::cache::seq_id;

namespace {

struct fixture {
  lf::test::temp_dir tmp;
  std::string dir = lf::test::write_tiny_model(tmp);
  gpt2_model model{load_gpt2_weights(dir)};
  tokenizer tok = tokenizer::from_dir(dir);
  lora_adapter a1 = lf::test::tiny_adapter(model.config(), 1);
  lora_adapter a2 = lf::test::tiny_adapter(model.config(), 2);
  std::shared_ptr<const lora_weights> w1 =
    std::make_shared<lora_weights>(a1, model.config(), at::kFloat);
  std::shared_ptr<const lora_weights> w2 =
    std::make_shared<lora_weights>(a2, model.config(), at::kFloat);
  lf::cache::adapter_lookup_fn lookup =
    lf::test::lookup_of({{adapter_id{1}, w1}, {adapter_id{2}, w2}});
  // The serving engine's payloads of the same adapters.
  std::shared_ptr<const cpu_lora> c1 = std::make_shared<cpu_lora>(a1, model.config());
  std::shared_ptr<const cpu_lora> c2 = std::make_shared<cpu_lora>(a2, model.config());
  lf::cache::adapter_lookup_fn cpu_lookup = [this](adapter_id id) -> std::shared_ptr<const lf::cache::adapter_payload> {
    return id == adapter_id{1} ? c1 : id == adapter_id{2} ? c2 : nullptr;
  };
};

fixture& fx() {
  static fixture f;
  return f;
}

/// Final hidden states of one whole sequence through the dense path, all rows on `lora` (or none).
at::Tensor hidden_of(const gpt2_model& m, const std::vector<std::int32_t>& seq,
                     const lora_weights* lora) {
  auto n = static_cast<std::int64_t>(seq.size());
  dense_kv_cache c(m.config(), 1, n, m.scalar_type());
  c.begin_step(n, at::ones({1, n}, at::kBool));
  std::vector<std::int64_t> ids(seq.begin(), seq.end());
  auto batch = lora_batch::from_rows(std::vector<const lora_weights*>(seq.size(), lora));
  return m.forward_hidden(at::tensor(ids, at::kLong), at::arange(n, at::kLong), c, &batch);
}

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

} // namespace

TEST_CASE("an adapter gives the output of the merged weights, for every target module", "[lora]") {
  const auto& cfg = fx().model.config();
  const auto prompt = fx().tok.encode("The quick brown fox jumps over the lazy dog");
  const auto base = hidden_of(fx().model, prompt, nullptr);
  std::vector<std::vector<lora_module>> cases;
  for (auto m : all_lora_modules)
    cases.push_back({m});
  cases.push_back({all_lora_modules.begin(), all_lora_modules.end()});
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (bool rslora : {false, true}) {
      auto a = lf::test::tiny_adapter(cfg, 10 + i, cases[i]);
      a.use_rslora = rslora;
      INFO("targets " << i << (rslora ? " (rsLoRA)" : ""));
      lora_weights w(a, cfg, at::kFloat);
      gpt2_model merged(lf::test::merged_weights(fx().model.weights(), a));
      auto with_lora = hidden_of(fx().model, prompt, &w);
      auto reference = hidden_of(merged, prompt, nullptr);
      CHECK(max_diff(with_lora, reference) < 1e-4);
      CHECK(max_diff(with_lora, base) > 1e-2);  // the adapter does change the output
      CHECK(max_diff(fx().model.logits(with_lora), merged.logits(reference)) < 1e-3);
    }
  }
}

TEST_CASE("bf16 compute applies the adapter in bf16", "[lora]") {
  gpt2_model half(load_gpt2_weights(fx().dir, compute_dtype::bf16));
  const auto prompt = fx().tok.encode("Four score and seven years ago");
  lora_weights w16(fx().a1, half.config(), at::kBFloat16);
  auto h16 = hidden_of(half, prompt, &w16).to(at::kFloat);
  auto h32 = hidden_of(fx().model, prompt, fx().w1.get());
  auto base32 = hidden_of(fx().model, prompt, nullptr);
  const double rounding = (h16 - h32).abs().mean().item<double>();
  const double effect = (h32 - base32).abs().mean().item<double>();
  INFO("bf16 vs f32: " << rounding << ", adapter effect: " << effect);
  CHECK(rounding < effect / 4);
}

TEST_CASE("lora_weights keeps A^T and scale * B^T and counts its bytes", "[lora]") {
  const auto& cfg = fx().model.config();
  auto a = lf::test::tiny_adapter(cfg, 3, {lora_module::mlp_c_fc});
  lora_weights w(a, cfg, at::kFloat);
  CHECK(w.rank() == 4);
  CHECK(w.scale() == Approx(2.0f));
  CHECK(w.find(0, lora_module::attn_c_attn) == nullptr);
  const auto* f = w.find(1, lora_module::mlp_c_fc);
  REQUIRE(f != nullptr);
  CHECK(f->a_t.sizes() == at::IntArrayRef({cfg.n_embd, 4}));
  CHECK(f->b_t.sizes() == at::IntArrayRef({4, cfg.inner_dim()}));
  CHECK(w.bytes() == a.bytes());  // f32: the same floats, transposed
  lora_weights half(a, cfg, at::kBFloat16);
  CHECK(half.bytes() * 2 == a.bytes());
  auto other = cfg;
  other.n_embd = 32;
  CHECK_THROWS_AS(lora_weights(a, other, at::kFloat), std::invalid_argument);
}

TEST_CASE("lora_batch groups rows by adapter", "[lora]") {
  const auto* a = fx().w1.get();
  const auto* b = fx().w2.get();
  auto batch = lora_batch::from_rows({a, a, nullptr, b, a});
  REQUIRE(batch.groups.size() == 2);
  CHECK(batch.groups[0].adapter == a);
  REQUIRE(batch.groups[0].rows.defined());  // rows 0, 1, 4: scattered
  CHECK(batch.groups[0].rows.equal(at::tensor(std::vector<std::int64_t>{0, 1, 4}, at::kLong)));
  CHECK(batch.groups[1].adapter == b);
  CHECK_FALSE(batch.groups[1].rows.defined());
  CHECK(batch.groups[1].begin == 3);
  CHECK(batch.groups[1].count == 1);
  CHECK(lora_batch::from_rows({nullptr, nullptr}).empty());
}

namespace {

/// Runs sequences through the serving engine (f32 weights and K/V), all together or one at a
/// time: the whole prompt in the first step, then one greedy decode per step. Records every
/// sampled row's logits.
struct paged_lora_driver {
  lf::cache::block_manager blocks{{128, 4, false}};
  cpu_model model{load_cpu_weights(fx().dir, compute_dtype::f32), 2};
  lf::kernels::kv_cache kv{{2, 4, 16, 4, 128, lf::kernels::kv_type::f32}};
  cpu_runner runner{model, kv, fx().cpu_lookup};

  struct output {
    std::vector<std::int32_t> tokens;
    std::vector<std::vector<float>> logits;
  };

  std::vector<output> run(const std::vector<std::vector<std::int32_t>>& prompts,
                          const std::vector<adapter_id>& adapters, int new_tokens) {
    static std::uint64_t next_id = 1;
    std::vector<seq_id> ids;
    std::vector<std::vector<std::int32_t>> toks = prompts;
    std::vector<std::int64_t> computed(prompts.size(), 0);
    std::vector<output> out(prompts.size());
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      ids.push_back(seq_id{next_id++});
      REQUIRE(blocks.allocate(ids[i], toks[i], adapters[i]).has_value());
    }
    for (int step = 0; step < new_tokens; ++step) {
      std::vector<engine_chunk> chunks;
      for (std::size_t i = 0; i < prompts.size(); ++i) {
        auto count = static_cast<std::int64_t>(toks[i].size()) - computed[i];
        REQUIRE(blocks.ensure_slots(ids[i], static_cast<std::uint32_t>(toks[i].size())));
        chunks.push_back({toks[i].data() + computed[i], computed[i], count,
                          &blocks.block_table(ids[i]), true, adapters[i]});
      }
      runner.step(chunks);
      for (std::size_t i = 0; i < prompts.size(); ++i) {
        computed[i] = static_cast<std::int64_t>(toks[i].size());
        const float* row = runner.logits(i);
        out[i].logits.emplace_back(row, row + runner.vocab_size());
        auto next = static_cast<std::int32_t>(std::max_element(row, row + runner.vocab_size()) - row);
        toks[i].push_back(next);
        out[i].tokens.push_back(next);
      }
    }
    for (auto id : ids)
      blocks.free(id);
    return out;
  }
};

} // namespace

TEST_CASE("serving engine: an adapter gives the logits of the merged weights", "[lora]") {
  const auto prompt = fx().tok.encode("The quick brown fox jumps over the lazy dog");
  for (auto [id, a] : {std::pair{adapter_id{1}, &fx().a1}, std::pair{adapter_id{2}, &fx().a2}}) {
    gpt2_model merged(lf::test::merged_weights(fx().model.weights(), *a));
    paged_lora_driver d;
    auto got = d.run({prompt}, {id}, 1)[0].logits[0];
    auto ref = merged.logits(hidden_of(merged, prompt, nullptr).narrow(0, static_cast<std::int64_t>(prompt.size()) - 1, 1))[0];
    auto t = at::from_blob(got.data(), {static_cast<std::int64_t>(got.size())}, at::kFloat);
    INFO("adapter " << id.value());
    CHECK(max_diff(t, ref) < 1e-4);
  }
}

TEST_CASE("serving engine: a mixed-adapter batch gives each row what it gets alone", "[lora]") {
  auto& tok = fx().tok;
  const std::vector<std::vector<std::int32_t>> prompts = {
    tok.encode("Once upon a time"), tok.encode("The quick brown fox jumps"),
    tok.encode("To be, or not to be"), tok.encode("Call me Ishmael. Some years ago"),
    tok.encode("Once upon a time")};
  // Adapter 1's rows are not adjacent in the batch: the runner groups them.
  const std::vector<adapter_id> adapters = {base_model, adapter_id{1}, adapter_id{2},
                                            adapter_id{1}, adapter_id{2}};
  paged_lora_driver d;
  auto together = d.run(prompts, adapters, 8);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    auto alone = d.run({prompts[i]}, {adapters[i]}, 8)[0];
    INFO("row " << i);
    CHECK(together[i].tokens == alone.tokens);
    for (std::size_t s = 0; s < alone.logits.size(); ++s)
      CHECK(std::memcmp(together[i].logits[s].data(), alone.logits[s].data(), alone.logits[s].size() * sizeof(float)) == 0);
  }
  // The same prompt under the base model and under adapter 2 differs.
  CHECK(together[0].tokens != together[4].tokens);
  // An adapter the lookup does not know stops the step before anything runs.
  std::vector<std::int32_t> p = prompts[0];
  REQUIRE(d.blocks.allocate(seq_id{999999}, p, adapter_id{3}).has_value());
  std::vector<engine_chunk> bad = {{p.data(), 0, static_cast<std::int64_t>(p.size()),
                                    &d.blocks.block_table(seq_id{999999}), true, adapter_id{3}}};
  CHECK_THROWS_WITH(d.runner.step(bad), Catch::Contains("adapter 3 is not loaded"));
}

TEST_CASE("generator: a mixed-adapter static batch gives each row what it gets alone", "[lora]") {
  auto& tok = fx().tok;
  auto req = [&](const std::string& text, adapter_id a, int n) {
    lf::request_draft d;
    d.prompt = tok.encode(text);
    d.params.temperature = 0;
    d.params.max_tokens = n;
    d.params.ignore_eos = true;
    return generation_request{lf::validate_or_throw(std::move(d), fx().model.config().limits()), a};
  };
  const std::vector<generation_request> batch = {
    req("Once upon a time", base_model, 8), req("The quick brown fox jumps", adapter_id{1}, 6),
    req("Hi", adapter_id{2}, 9), req("Call me Ishmael. Some years ago", adapter_id{1}, 7),
    req("Once upon a time", adapter_id{2}, 8)};
  generate_options opts;
  opts.adapters = fx().lookup;
  for (bool kv : {true, false}) {
    opts.use_kv_cache = kv;
    auto together = generate(fx().model, tok, batch, opts);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      INFO("row " << i << (kv ? "" : " (no KV cache)"));
      auto alone = generate(fx().model, tok, {batch[i]}, opts);
      CHECK(together.outputs[i].tokens == alone.outputs[0].tokens);
    }
    CHECK(together.outputs[0].tokens != together.outputs[4].tokens);
  }
  // Rows naming an adapter the options cannot find are refused up front.
  CHECK_THROWS_WITH(generate(fx().model, tok, {req("Hi", adapter_id{7}, 2)}, opts),
                    Catch::Contains("request 0") && Catch::Contains("adapter 7 is not loaded"));
  CHECK_THROWS_AS(generate(fx().model, tok, {req("Hi", adapter_id{1}, 2)}), std::invalid_argument);
}
