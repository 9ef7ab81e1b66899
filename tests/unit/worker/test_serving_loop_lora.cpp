// The serving loop on a real (tiny) GPT-2 with LoRA adapters loaded from an adapter directory:
// requests of two adapters and of the base model, mixed in every step, each get what they get
// alone; so do the static modes, the single-adapter baseline, and a cache with room for one
// adapter under KV pressure. Requests for broken adapters fail without disturbing the others.
#include "tests/support/catch_aten.hpp"

#include <fstream>

#include "tests/support/lora_fixture.hpp"
#include "tests/unit/worker/loop_fixture.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/engine/reference/generator.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;
using namespace lf::engine;
using lf::text::tokenizer;
using lf::cache::adapter_id;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_serving_loop_lora {

namespace {

struct fixture {
  lf::test::temp_dir tmp;
  std::string dir = lf::test::write_tiny_model(tmp);
  gpt2_model model{load_gpt2_weights(dir)};
  tokenizer tok = tokenizer::from_dir(dir);
  std::string root = tmp / "adapters";
  lf::cache::adapter_lookup_fn reference;  ///< adapter_id{1} = "one", {2} = "two/nested"

  fixture() {
    write_peft_adapter(root + "/one", lf::test::tiny_adapter(model.config(), 1));
    write_peft_adapter(root + "/two/nested", lf::test::tiny_adapter(model.config(), 2));
    write_peft_adapter(root + "/broken", lf::test::tiny_adapter(model.config(), 3));
    std::ofstream(root + "/broken/adapter_model.safetensors", std::ios::trunc) << "garbage";
    auto load = [&](const std::string& name) {
      return std::make_shared<const lora_weights>(load_peft_adapter(root + "/" + name, model.config()),
                                                  model.config(), at::kFloat);
    };
    reference = lf::test::lookup_of({{adapter_id{1}, load("one")}, {adapter_id{2}, load("two/nested")}});
  }
};

fixture& fx() {
  static fixture f;
  return f;
}

const std::vector<std::string> texts = {
  "Once upon a time", "The quick brown fox jumps over the lazy dog", "Hi",
  "To be, or not to be, that is the question", "Four score and seven years ago",
  "It was the best of times, it was the worst of times", "Call me Ishmael.", "Once upon a time"};
const std::vector<std::string> names = {"", "one", "two/nested"};

/// Greedy tokens of one request generated alone (dense path, adapters loaded directly).
std::vector<std::int32_t> alone(const std::string& text, const std::string& adapter, int n) {
  lf::request_draft d;
  d.prompt = fx().tok.encode(text);
  d.params.temperature = 0;
  d.params.max_tokens = n;
  d.params.ignore_eos = true;
  generation_request r{lf::test::validated(std::move(d)), adapter_id{static_cast<std::uint32_t>(
    std::find(names.begin(), names.end(), adapter) - names.begin())}};
  generate_options o;
  o.adapters = fx().reference;
  return generate(fx().model, fx().tok, {r}, o).outputs[0].tokens;
}

/// Runs every text under a rotating adapter (plus two broken requests) and compares with alone.
void check_against_alone(serving_config cfg, lf::cache::adapter_cache_config cache_cfg = {}) {
  const auto& mc = fx().model.config();
  // Every mode: the serving engine with its adapter payloads (`alone` runs the ATen reference).
  auto mgr = make_cpu_lora_manager(fx().root, mc, cache_cfg);
  cpu_model model(load_cpu_weights(fx().dir, compute_dtype::f32), 2);
  lf::kernels::kv_cache kv({mc.n_layer, mc.n_head, mc.head_dim(), static_cast<int>(cfg.block_size),
                            cfg.num_blocks, lf::kernels::kv_type::f32});
  cpu_runner runner(model, kv, mgr->lookup());
  lf::test::collector col;
  serving_loop loop(runner, fx().tok, cfg, mgr.get());
  auto max_tokens = [](std::size_t i) { return 8 + static_cast<int>(i % 4) * 3; };
  for (std::size_t i = 0; i < texts.size(); ++i) {
    lf::request_draft r;
    r.prompt = fx().tok.encode(texts[i]);
    r.params.temperature = 0;
    r.params.max_tokens = max_tokens(i);
    r.params.ignore_eos = true;
    r.adapter = names[i % names.size()];
    lf::test::submit(loop, r, col.make(static_cast<int>(i)));
  }
  for (const auto& bad : {"broken", "missing"}) {
    lf::request_draft r;
    r.prompt = fx().tok.encode("Hello");
    r.params.max_tokens = 4;
    r.adapter = bad;
    lf::test::submit(loop, r, col.make(bad == std::string("broken") ? 100 : 101));
  }
  REQUIRE(col.wait_for(texts.size() + 2, std::chrono::seconds(120)));
  for (std::size_t i = 0; i < texts.size(); ++i) {
    auto res = col.result(static_cast<int>(i));
    const auto& name = names[i % names.size()];
    INFO("mode " << to_string(cfg.mode) << ", request " << i << " adapter \"" << name << "\": "
                 << res.message);
    REQUIRE(res.outcome == request_outcome::finished);
    CHECK(res.tokens == alone(texts[i], name, max_tokens(i)));
  }
  for (int key : {100, 101}) {
    auto res = col.result(key);
    INFO(res.message);
    CHECK(res.outcome == request_outcome::failed);
    CHECK(res.error == lf::serve_errc::unknown_adapter);
    CHECK(res.tokens.empty());
  }
  CHECK_THAT(col.result(100).message, Catch::Contains("adapter_model.safetensors"));
  CHECK_THAT(col.result(101).message, Catch::Contains("\"missing\" not found"));
  loop.stop(true);
  auto l = loop.load();
  CHECK(l.free_blocks == l.total_blocks);
  CHECK(l.adapters.failures == 2);
  if (cache_cfg.max_adapters >= 2)
    CHECK(l.adapters.loads == 2);  // one load per adapter for all its requests
  else
    CHECK(l.adapters.evictions > 0);
  if (cfg.num_blocks <= 24 && cfg.mode == batching_mode::continuous)
    CHECK(l.preemptions > 0);
}

serving_config base_config() {
  serving_config c;
  c.num_blocks = 128;
  c.block_size = 4;
  c.sched.max_seqs = 8;
  c.sched.max_batched_tokens = 64;
  c.eos_id = fx().tok.eos_id();
  return c;
}

} // namespace

TEST_CASE("continuous batching mixes adapters, every request gets what it gets alone",
          "[serving_loop][lora]") {
  check_against_alone(base_config());
}

TEST_CASE("mixed adapters under KV pressure (preemption and recompute)", "[serving_loop][lora]") {
  auto cfg = base_config();
  cfg.num_blocks = 20;
  cfg.sched.max_batched_tokens = 16;
  check_against_alone(cfg);
}

TEST_CASE("a cache with room for one adapter serves them in turn", "[serving_loop][lora]") {
  lf::cache::adapter_cache_config cache_cfg;
  cache_cfg.max_adapters = 1;  // loads wait for room; each adapter is evicted when the next loads
  check_against_alone(base_config(), cache_cfg);
}

TEST_CASE("static batches and the single-adapter baseline give the same tokens",
          "[serving_loop][lora]") {
  for (auto mode : {batching_mode::static_batch, batching_mode::static_no_cache}) {
    auto cfg = base_config();
    cfg.mode = mode;
    cfg.static_batch = 4;
    cfg.static_wait = std::chrono::milliseconds(5);
    check_against_alone(cfg);
  }
  auto single = base_config();
  single.single_adapter_batches = true;
  check_against_alone(single);
}

} // namespace test_serving_loop_lora
