// Tests for the PEFT LoRA adapter reader/writer, make_random_adapter and resolve_adapter_path.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.hpp"
#include "worker/engine/kernels/common/half.hpp"
#include "worker/engine/lora/adapter_paths.hpp"
#include "worker/engine/lora/lora_adapter.hpp"

using namespace lf::engine;
using lf::test::temp_dir;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

/// 2 layers, C = 8, inner = 32:
/// c_attn 8 -> 24, attn.c_proj 8 -> 8, c_fc 8 -> 32, mlp.c_proj 32 -> 8.
gpt2_config tiny_base() {
  gpt2_config c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  c.n_positions = 16;
  c.vocab_size = 16;
  return c;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// One tensor of a hand-made adapter_model.safetensors, filled with small distinct values.
struct spec {
  std::string name;
  std::vector<std::int64_t> shape;
  dtype type = dtype::f32;
  float value = 0.0f; ///< Every element, if not 0; else 0.001 * (index + 1).
};

void write_weights(const std::string& dir, const std::vector<spec>& specs) {
  std::vector<std::vector<std::byte>> bufs;
  bufs.reserve(specs.size());
  std::vector<tensor_to_write> tensors;
  for (const auto& s : specs) {
    std::size_t n = 1;
    for (auto d : s.shape)
      n *= static_cast<std::size_t>(d);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = s.value != 0.0f ? s.value : 0.001f * static_cast<float>(i + 1);
    auto& buf = bufs.emplace_back(n * dtype_size(s.type));
    if (s.type == dtype::f32 || s.type == dtype::f16 || s.type == dtype::bf16)
      from_float32(v.data(), n, s.type, buf.data());
    tensors.push_back({s.name, s.type, s.shape, buf.data(), buf.size()});
  }
  write_safetensors((fs::path(dir) / "adapter_model.safetensors").string(), tensors);
}

std::string key(int layer, const std::string& module, const std::string& factor,
                const std::string& prefix = "base_model.model.transformer.",
                const std::string& adapter = "") {
  return prefix + "h." + std::to_string(layer) + "." + module + "." + factor
         + (adapter.empty() ? "" : "." + adapter) + ".weight";
}

/// A and B of `module` in `layer` with rank 4 and the tiny model's shapes.
std::vector<spec> pair_specs(int layer, const std::string& module, int rank = 4,
                             const std::string& prefix = "base_model.model.transformer.",
                             const std::string& adapter = "") {
  auto m = parse_lora_module(module);
  REQUIRE(m);
  auto d = module_dims(tiny_base(), *m);
  return {{key(layer, module, "lora_A", prefix, adapter), {rank, d.in}},
          {key(layer, module, "lora_B", prefix, adapter), {d.out, rank}}};
}

std::vector<spec> operator+(std::vector<spec> a, const std::vector<spec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string config_text(const std::string& extra = "",
                        const std::string& targets = R"(["c_attn"])") {
  return R"({"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": )" + targets
         + R"(, "bias": "none", "fan_in_fan_out": true, "task_type": "CAUSAL_LM")" + extra + "}";
}

/// The message load_peft_adapter throws (as runtime_error), or a marker.
std::string load_error(const std::string& dir) {
  try {
    load_peft_adapter(dir, tiny_base());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no exception>";
}

std::string resolve_error(const std::string& root, const std::string& id) {
  try {
    resolve_adapter_path(root, id);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no exception>";
}

/// What a float becomes after storage as `type` and widening back.
float stored(float f, dtype type) {
  if (type == dtype::f16)
    return f16_to_f32(f32_to_f16(f));
  if (type == dtype::bf16)
    return bf16_to_f32(f32_to_bf16(f));
  return f;
}

} // namespace

TEST_CASE("lora module names and dimensions", "[lora]") {
  for (auto m : all_lora_modules)
    CHECK(parse_lora_module(to_string(m)) == m);
  CHECK(to_string(lora_module::mlp_c_proj) == "mlp.c_proj");
  CHECK_FALSE(parse_lora_module("c_proj"));
  CHECK_FALSE(parse_lora_module("c_attn"));
  auto base = tiny_base();
  CHECK(module_dims(base, lora_module::attn_c_attn).in == 8);
  CHECK(module_dims(base, lora_module::attn_c_attn).out == 24);
  CHECK(module_dims(base, lora_module::attn_c_proj).out == 8);
  CHECK(module_dims(base, lora_module::mlp_c_fc).out == 32);
  CHECK(module_dims(base, lora_module::mlp_c_proj).in == 32);
}

TEST_CASE("target lists use PEFT's suffix meaning", "[lora]") {
  using v = std::vector<lora_module>;
  const v all(all_lora_modules.begin(), all_lora_modules.end());
  CHECK(parse_lora_targets("c_attn,c_proj,c_fc,mlp.c_proj") == all);
  CHECK(parse_lora_targets("all") == all);
  CHECK(parse_lora_targets("c_proj") == v{lora_module::attn_c_proj, lora_module::mlp_c_proj});
  CHECK(parse_lora_targets("mlp.c_fc,attn.c_attn,c_attn,")
        == v{lora_module::attn_c_attn, lora_module::mlp_c_fc});
  CHECK_THROWS_WITH(parse_lora_targets("c_attn,wte"), Contains("unknown LoRA target \"wte\""));
  CHECK_THROWS_AS(parse_lora_targets(","), std::invalid_argument);
}

TEST_CASE("PEFT tensor names are parsed strictly", "[lora]") {
  auto k = parse_peft_key("base_model.model.transformer.h.11.mlp.c_proj.lora_B.weight");
  REQUIRE(k);
  CHECK(k->layer == 11);
  CHECK(k->module == lora_module::mlp_c_proj);
  CHECK(k->is_b);
  k = parse_peft_key("base_model.model.h.0.attn.c_attn.lora_A.default.weight");
  REQUIRE(k);
  CHECK((k->layer == 0 && k->module == lora_module::attn_c_attn && !k->is_b));
  for (int layer : {0, 7, 123})
    for (auto m : all_lora_modules)
      for (bool is_b : {false, true}) {
        auto r = parse_peft_key(peft_key_name(layer, m, is_b));
        REQUIRE(r);
        CHECK((r->layer == layer && r->module == m && r->is_b == is_b));
      }
  CHECK(peft_key_name(3, lora_module::mlp_c_fc, false)
        == "base_model.model.transformer.h.3.mlp.c_fc.lora_A.weight");
  for (const char* bad : {"base_model.model.transformer.h.01.attn.c_attn.lora_A.weight",
                          "base_model.model.transformer.h.1234567.attn.c_attn.lora_A.weight",
                          "base_model.model.transformer.h.99999999999999.attn.c_attn.lora_A.weight",
                          "base_model.model.transformer.h..attn.c_attn.lora_A.weight",
                          "base_model.model.transformer.h.0.attn.c_attnx.lora_A.weight",
                          "base_model.model.transformer.h.0.attn.c_attn.lora_C.weight",
                          "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight.x",
                          "base_model.model.transformer.h.0.attn.c_attn.lora_A..weight",
                          "base_model.model.transformer.h.0.attn.c_attn.lora_A.a.b.weight",
                          "base_model.model.transformer.h.0.attn.c_attn.lora_A",
                          "base_model.model.transformer.h.0.attn.c_attn.lora_B.bias",
                          "transformer.h.0.attn.c_attn.lora_A.weight",
                          "base_model.model.transformer.h.0.c_attn.lora_A.weight",
                          "base_model.model.lm_head.weight", ""}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_peft_key(bad));
  }
}

TEST_CASE("write and load round-trip every target subset and storage dtype", "[lora]") {
  const auto base = tiny_base();
  for (unsigned mask = 1; mask < 16; ++mask) {
    std::vector<lora_module> targets;
    for (unsigned i = 0; i < 4; ++i)
      if (mask & (1u << i))
        targets.push_back(all_lora_modules[i]);
    for (dtype type : {dtype::f32, dtype::f16, dtype::bf16}) {
      CAPTURE(mask, to_string(type));
      const auto a = make_random_adapter(base, 3, 6.0f, targets, mask, 0.5f);
      temp_dir tmp;
      const std::string dir = tmp / "my-adapter";
      write_peft_adapter(dir, a, type, "gpt2");
      const auto b = load_peft_adapter(dir, base);
      CHECK(b.name == "my-adapter");
      CHECK(b.rank == 3);
      CHECK(b.alpha == 6.0f);
      CHECK_FALSE(b.use_rslora);
      CHECK(b.scale() == 2.0f);
      CHECK(b.modules() == targets);
      REQUIRE(b.pairs.size() == a.pairs.size());
      CHECK(b.bytes() == a.bytes());
      for (std::size_t i = 0; i < a.pairs.size(); ++i) {
        const auto &pa = a.pairs[i], &pb = b.pairs[i];
        REQUIRE(pb.layer == pa.layer);
        REQUIRE(pb.module == pa.module);
        REQUIRE((pb.rank == 3 && pb.in == pa.in && pb.out == pa.out));
        REQUIRE(pb.a.size() == pa.a.size());
        REQUIRE(pb.b.size() == pa.b.size());
        for (std::size_t j = 0; j < pa.a.size(); ++j)
          REQUIRE(pb.a[j] == stored(pa.a[j], type));
        for (std::size_t j = 0; j < pa.b.size(); ++j)
          REQUIRE(pb.b[j] == stored(pa.b[j], type));
        CHECK(b.find(pa.layer, pa.module) == &pb);
      }
    }
  }
}

TEST_CASE("the written adapter_config.json is what PEFT writes", "[lora]") {
  temp_dir tmp;
  auto a = make_random_adapter(tiny_base(), 2, 2.5f,
                               {lora_module::mlp_c_proj, lora_module::attn_c_attn}, 1);
  a.use_rslora = true;
  write_peft_adapter(tmp / "a", a);
  const auto j = nlohmann::json::parse(read_file(tmp / "a/adapter_config.json"));
  CHECK(j["peft_type"] == "LORA");
  CHECK(j["r"] == 2);
  CHECK(j["lora_alpha"] == 2.5);
  CHECK(j["target_modules"] == nlohmann::json::array({"attn.c_attn", "mlp.c_proj"}));
  CHECK(j["fan_in_fan_out"] == true);
  CHECK(j["bias"] == "none");
  CHECK(j["use_rslora"] == true);
  CHECK(j["lora_dropout"] == 0.0);
  CHECK(j["task_type"] == "CAUSAL_LM");
  CHECK(j["inference_mode"] == true);
  CHECK(j["modules_to_save"].is_null());
  CHECK(j["base_model_name_or_path"].is_null());
  auto f = safetensors_file::open(tmp / "a/adapter_model.safetensors");
  CHECK(f.metadata().at("format") == "pt");
  CHECK(f.tensors().size() == 8);
  const auto& t = f.at("base_model.model.transformer.h.1.mlp.c_proj.lora_B.weight");
  CHECK(t.shape == std::vector<std::int64_t>{8, 2});
  CHECK(f.at("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight").shape
        == std::vector<std::int64_t>{2, 8});
  CHECK_FALSE(fs::exists(tmp / "a/adapter_config.json.tmp"));

  write_peft_adapter(tmp / "b", a, dtype::bf16, "openai-community/gpt2");
  CHECK(nlohmann::json::parse(read_file(tmp / "b/adapter_config.json"))["base_model_name_or_path"]
        == "openai-community/gpt2");
  const auto bf = safetensors_file::open(tmp / "b/adapter_model.safetensors");
  CHECK(bf.tensors()[0].type == dtype::bf16);
}

TEST_CASE("scale is alpha / r, or alpha / sqrt(r) with rsLoRA", "[lora]") {
  temp_dir tmp;
  write_file(tmp / "adapter_config.json",
             R"({"r": 4, "lora_alpha": 8, "target_modules": ["c_attn"], "use_rslora": false})");
  write_weights(tmp.path().string(), pair_specs(0, "attn.c_attn"));
  CHECK(load_peft_adapter(tmp.path().string(), tiny_base()).scale() == 2.0f);
  write_file(tmp / "adapter_config.json",
             R"({"r": 4, "lora_alpha": 8, "target_modules": ["c_attn"], "use_rslora": true})");
  const auto a = load_peft_adapter(tmp.path().string(), tiny_base());
  CHECK(a.use_rslora);
  CHECK(a.scale() == Approx(4.0f));
  lora_adapter b;
  b.rank = 9;
  b.alpha = 3.0f;
  b.use_rslora = true;
  CHECK(b.scale() == Approx(1.0f));
}

TEST_CASE("PEFT key spellings and target_modules forms all load", "[lora]") {
  temp_dir tmp;
  const std::string dir = tmp.path().string();
  SECTION("without transformer. and with an adapter name") {
    write_file(tmp / "adapter_config.json", config_text());
    write_weights(dir, pair_specs(0, "attn.c_attn", 4, "base_model.model.")
                         + pair_specs(1, "attn.c_attn", 4, "base_model.model.transformer.",
                                      "default"));
    auto a = load_peft_adapter(dir, tiny_base());
    REQUIRE(a.pairs.size() == 2);
    CHECK(a.find(0, lora_module::attn_c_attn)->a[0] == 0.001f);
    CHECK(a.find(1, lora_module::attn_c_attn)->b.size() == 24 * 4);
    CHECK(a.find(0, lora_module::attn_c_proj) == nullptr);
    CHECK(a.bytes() == 2 * (4 * 8 + 24 * 4) * sizeof(float));
  }
  SECTION("c_proj means both attn.c_proj and mlp.c_proj") {
    write_file(tmp / "adapter_config.json", config_text("", R"(["c_proj", "c_fc"])"));
    write_weights(dir, pair_specs(0, "attn.c_proj") + pair_specs(1, "mlp.c_proj")
                         + pair_specs(1, "mlp.c_fc"));
    auto a = load_peft_adapter(dir, tiny_base());
    CHECK(a.modules() == std::vector<lora_module>{lora_module::attn_c_proj, lora_module::mlp_c_fc,
                                                 lora_module::mlp_c_proj});
  }
  SECTION("full names, a single string, a regex and all-linear") {
    const auto all = pair_specs(0, "attn.c_attn") + pair_specs(1, "attn.c_proj")
                     + pair_specs(1, "mlp.c_fc") + pair_specs(0, "mlp.c_proj");
    const std::pair<const char*, std::vector<spec>> cases[] = {
      {R"(["attn.c_attn", "mlp.c_proj"])",
       pair_specs(0, "attn.c_attn") + pair_specs(1, "mlp.c_proj")},
      {R"("c_attn")", pair_specs(1, "attn.c_attn")},
      {R"j(".*\\.(c_attn|c_proj)")j",
       pair_specs(0, "attn.c_attn") + pair_specs(0, "attn.c_proj") + pair_specs(1, "mlp.c_proj")},
      {R"j("transformer\\.h\\.1\\.mlp\\.c_fc")j", pair_specs(1, "mlp.c_fc")},
      {R"("all-linear")", all},
      {R"(["transformer.h.0.attn.c_attn", "h.1.mlp.c_proj"])",
       pair_specs(0, "attn.c_attn") + pair_specs(1, "mlp.c_proj")},
    };
    for (const auto& [targets, specs] : cases) {
      CAPTURE(targets);
      write_file(tmp / "adapter_config.json", config_text("", targets));
      write_weights(dir, specs);
      CHECK(load_peft_adapter(dir, tiny_base()).pairs.size() * 2 == specs.size());
    }
    // exclude_modules (list: exact or suffix, string: regex) takes modules back out.
    write_file(tmp / "adapter_config.json",
               config_text(R"(, "exclude_modules": ["mlp.c_proj", "transformer.h.0.attn.c_attn"])",
                           R"("all-linear")"));
    write_weights(dir, pair_specs(1, "attn.c_attn") + pair_specs(0, "attn.c_proj")
                         + pair_specs(0, "mlp.c_fc"));
    CHECK(load_peft_adapter(dir, tiny_base()).pairs.size() == 3);
    write_weights(dir, pair_specs(1, "attn.c_attn") + pair_specs(0, "attn.c_proj")
                         + pair_specs(0, "mlp.c_fc") + pair_specs(1, "mlp.c_proj"));
    CHECK_THAT(load_error(dir),
               Contains(key(1, "mlp.c_proj", "lora_A")) && Contains("does not target"));
    write_file(tmp / "adapter_config.json",
               config_text(R"j(, "exclude_modules": ".*\\.h\\.0\\..*")j", R"(["c_attn"])"));
    write_weights(dir, pair_specs(1, "attn.c_attn"));
    CHECK(load_peft_adapter(dir, tiny_base()).pairs.size() == 1);
    write_weights(dir, pair_specs(0, "attn.c_attn"));
    CHECK_THAT(load_error(dir), Contains("does not target"));
    // A layer-specific target does not cover the other layer.
    write_file(tmp / "adapter_config.json", config_text("", R"(["h.1.mlp.c_proj"])"));
    write_weights(dir, pair_specs(0, "mlp.c_proj"));
    CHECK_THAT(load_error(dir), Contains("does not target"));
  }
  SECTION("target_modules absent means PEFT's GPT-2 default, c_attn") {
    write_file(tmp / "adapter_config.json", R"({"r": 4, "lora_alpha": 8})");
    write_weights(dir, pair_specs(1, "attn.c_attn"));
    CHECK(load_peft_adapter(dir, tiny_base()).pairs.size() == 1);
  }
  SECTION("F16 and BF16 tensors") {
    write_file(tmp / "adapter_config.json", config_text());
    auto specs = pair_specs(0, "attn.c_attn");
    specs[0].type = dtype::f16;
    specs[1].type = dtype::bf16;
    write_weights(dir, specs);
    auto a = load_peft_adapter(dir, tiny_base());
    CHECK(a.pairs[0].a[1] == f16_to_f32(f32_to_f16(0.002f)));
    CHECK(a.pairs[0].b[1] == bf16_to_f32(f32_to_bf16(0.002f)));
  }
}

TEST_CASE("an adapter_config.json as PEFT 0.13 saves it loads", "[lora]") {
  temp_dir tmp;
  const std::string dir = tmp.path().string();
  write_file(tmp / "adapter_config.json", R"({
  "alpha_pattern": {},
  "auto_mapping": null,
  "base_model_name_or_path": "gpt2",
  "bias": "none",
  "fan_in_fan_out": true,
  "inference_mode": true,
  "init_lora_weights": true,
  "layer_replication": null,
  "layers_pattern": null,
  "layers_to_transform": null,
  "loftq_config": {},
  "lora_alpha": 32,
  "lora_dropout": 0.05,
  "megatron_config": null,
  "megatron_core": "megatron.core",
  "modules_to_save": null,
  "peft_type": "LORA",
  "r": 4,
  "rank_pattern": {},
  "revision": null,
  "target_modules": [
    "c_proj",
    "c_attn"
  ],
  "task_type": "CAUSAL_LM",
  "use_dora": false,
  "use_rslora": false
}
)");
  std::vector<spec> specs;
  for (int layer : {0, 1})
    specs = specs + pair_specs(layer, "attn.c_attn") + pair_specs(layer, "attn.c_proj")
            + pair_specs(layer, "mlp.c_proj");
  write_weights(dir, specs);
  const auto a = load_peft_adapter(dir, tiny_base());
  CHECK(a.pairs.size() == 6);
  CHECK(a.scale() == 8.0f);
  CHECK(a.find(1, lora_module::mlp_c_fc) == nullptr);
  CHECK(a.find(1, lora_module::mlp_c_proj)->a.size() == 4 * 32);
}

TEST_CASE("layers_to_transform restricts the layers", "[lora]") {
  temp_dir tmp;
  const std::string dir = tmp.path().string();
  for (const char* layers : {R"(, "layers_to_transform": 1)", R"(, "layers_to_transform": [1])",
                             R"(, "layers_to_transform": [1], "layers_pattern": "h")"}) {
    write_file(tmp / "adapter_config.json", config_text(layers));
    write_weights(dir, pair_specs(1, "attn.c_attn"));
    auto a = load_peft_adapter(dir, tiny_base());
    REQUIRE(a.pairs.size() == 1);
    CHECK(a.pairs[0].layer == 1);
    write_weights(dir, pair_specs(0, "attn.c_attn") + pair_specs(1, "attn.c_attn"));
    auto e = load_error(dir);
    CHECK_THAT(e, Contains(key(0, "attn.c_attn", "lora_A")) && Contains("does not target"));
  }
  write_file(tmp / "adapter_config.json", config_text(R"(, "layers_to_transform": [0, 2])"));
  CHECK_THAT(load_error(dir), Contains("layers_to_transform") && Contains("layer 2"));
  // As in PEFT: [] means every layer, and an exact module name ignores layers_to_transform.
  write_file(tmp / "adapter_config.json", config_text(R"(, "layers_to_transform": [])"));
  CHECK(load_peft_adapter(dir, tiny_base()).pairs.size() == 2);
  write_file(tmp / "adapter_config.json",
             config_text(R"(, "layers_to_transform": 1, "layers_pattern": ["layers", "h"])",
                         R"(["c_attn", "transformer.h.0.attn.c_attn"])"));
  CHECK(load_peft_adapter(dir, tiny_base()).pairs.size() == 2);
  // PEFT's LoraConfig refuses layers_to_transform with a regex target_modules.
  write_file(tmp / "adapter_config.json",
             config_text(R"(, "layers_to_transform": 1)", R"(".*c_attn")"));
  CHECK_THAT(load_error(dir), Contains("\"layers_to_transform\" cannot be combined"));
  write_file(tmp / "adapter_config.json",
             config_text(R"(, "layers_to_transform": [0], "layers_pattern": "layers")"));
  CHECK_THAT(load_error(dir), Contains("layers_pattern"));
}

TEST_CASE("a partial adapter loads only the layers it has", "[lora]") {
  temp_dir tmp;
  auto a = make_random_adapter(tiny_base(), 2, 4.0f, {lora_module::mlp_c_fc}, 7);
  a.pairs.erase(a.pairs.begin()); // drop layer 0
  write_peft_adapter(tmp / "p", a);
  auto b = load_peft_adapter(tmp / "p", tiny_base());
  CHECK(b.find(0, lora_module::mlp_c_fc) == nullptr);
  REQUIRE(b.find(1, lora_module::mlp_c_fc) != nullptr);
  CHECK(b.find(1, lora_module::mlp_c_fc)->a == a.pairs[0].a);
}

TEST_CASE("make_random_adapter is deterministic and roughly N(0, std^2)", "[lora]") {
  const auto base = tiny_base();
  const std::vector<lora_module> all(all_lora_modules.begin(), all_lora_modules.end());
  auto a = make_random_adapter(base, 4, 8.0f, all, 42, 0.1f);
  auto b = make_random_adapter(base, 4, 8.0f, {lora_module::mlp_c_proj, lora_module::attn_c_attn,
                                               lora_module::attn_c_proj, lora_module::mlp_c_fc,
                                               lora_module::mlp_c_fc}, 42, 0.1f);
  auto c = make_random_adapter(base, 4, 8.0f, all, 43, 0.1f);
  CHECK_NOTHROW(a.validate(base));
  REQUIRE(a.pairs.size() == 8);
  REQUIRE(b.pairs.size() == 8);
  double sum = 0, sq = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.pairs.size(); ++i) {
    CHECK(a.pairs[i].a == b.pairs[i].a);
    CHECK(a.pairs[i].b == b.pairs[i].b);
    CHECK(a.pairs[i].a != c.pairs[i].a);
    for (const auto* v : {&a.pairs[i].a, &a.pairs[i].b})
      for (float x : *v) {
        sum += x;
        sq += double(x) * x;
        ++n;
      }
  }
  CHECK(a.bytes() == n * sizeof(float));
  CHECK(std::abs(sum / n) < 0.01);
  CHECK(std::sqrt(sq / n) == Approx(0.1).epsilon(0.05));
  CHECK_THROWS_AS(make_random_adapter(base, 0, 1.0f, all, 1), std::invalid_argument);
  CHECK_THROWS_AS(make_random_adapter(base, 2, NAN, all, 1), std::invalid_argument);
  CHECK_THROWS_AS(make_random_adapter(base, 2, 1.0f, {}, 1), std::invalid_argument);
  CHECK_THROWS_AS(make_random_adapter(base, 2, 1.0f, all, 1, -1.0f), std::invalid_argument);
}

TEST_CASE("missing or corrupt files give errors naming the directory and file", "[lora]") {
  temp_dir tmp;
  const std::string dir = tmp / "ad";
  CHECK_THAT(load_error(dir), Contains(dir) && Contains("does not exist"));
  write_file(dir, "x");
  CHECK_THAT(load_error(dir), Contains(dir) && Contains("not a directory"));
  fs::remove(dir);
  fs::create_directories(dir);
  CHECK_THAT(load_error(dir), Contains(dir + "/adapter_config.json") && Contains("missing"));
  write_file(dir + "/adapter_config.json", "{\"r\": 4,");
  CHECK_THAT(load_error(dir), Contains(dir + "/adapter_config.json") && Contains("not valid JSON"));
  write_file(dir + "/adapter_config.json", "[1]");
  CHECK_THAT(load_error(dir), Contains("not a JSON object"));
  write_file(dir + "/adapter_config.json", config_text());
  CHECK_THAT(load_error(dir), Contains(dir + "/adapter_model.safetensors") && Contains("missing"));
  write_file(dir + "/adapter_model.bin", "pickle");
  CHECK_THAT(load_error(dir), Contains("adapter_model.bin"));
  write_file(dir + "/adapter_model.safetensors", "\x08garbage");
  CHECK_THAT(load_error(dir), Contains(dir + "/adapter_model.safetensors"));
}

TEST_CASE("bad adapter_config.json values are refused with the key named", "[lora]") {
  temp_dir tmp;
  const std::string dir = tmp.path().string();
  write_weights(dir, pair_specs(0, "attn.c_attn"));
  const std::string file = dir + "/adapter_config.json";
  struct bad_case {
    std::string config;
    std::string needle;
  };
  const bad_case cases[] = {
    {R"({"r": 0, "lora_alpha": 8})", "\"r\" must be positive"},
    {R"({"r": -2, "lora_alpha": 8})", "\"r\" must be positive"},
    {R"({"r": 1.5, "lora_alpha": 8})", "\"r\" must be an integer"},
    {R"({"lora_alpha": 8})", "\"r\" is missing"},
    {R"({"r": 4})", "\"lora_alpha\" is missing"},
    {R"({"r": 4, "lora_alpha": "8"})", "\"lora_alpha\" must be a finite number"},
    {R"({"r": 4, "lora_alpha": 1e300})", "\"lora_alpha\" must be a finite number"},
    {R"({"r": 4, "lora_alpha": 1e999})", "not valid JSON"},
    {R"({"r": 4, "lora_alpha": NaN})", "not valid JSON"},
    {config_text(R"(, "bias": "all")"), "\"bias\""},
    {config_text(R"(, "use_dora": true)"), "\"use_dora\""},
    {config_text(R"(, "use_rslora": "yes")"), "\"use_rslora\" must be true or false"},
    {config_text(R"(, "rank_pattern": {"c_attn": 8})"), "\"rank_pattern\""},
    {config_text(R"(, "alpha_pattern": {"c_attn": 8})"), "\"alpha_pattern\""},
    {config_text(R"(, "modules_to_save": ["lm_head"])"), "\"modules_to_save\""},
    {config_text(R"(, "peft_type": "PREFIX_TUNING")"), "\"peft_type\""},
    {config_text(R"(, "layer_replication": [[0, 2]])"), "\"layer_replication\""},
    {config_text(R"(, "target_parameters": ["mlp.experts"])"), "\"target_parameters\""},
    {config_text(R"(, "lora_bias": true)"), "\"lora_bias\""},
    {config_text("", "42"), "\"target_modules\""},
    {config_text("", R"(["q_proj", "v_proj"])"),
     "\"target_modules\" (with layers_to_transform) matches no"},
    {config_text("", R"("c_attn[")"), "\"target_modules\" is not a regular expression"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.config);
    // Later keys win in nlohmann_json, so config_text's defaults are overridden by `extra`.
    write_file(file, c.config);
    const auto e = load_error(dir);
    CHECK_THAT(e, Contains(file) && Contains(c.needle));
  }
  // Empty patterns, null modules_to_save and other PEFT bookkeeping are fine.
  write_file(file, config_text(R"(, "rank_pattern": {}, "alpha_pattern": {},
      "modules_to_save": null, "use_dora": false, "lora_dropout": 0.05,
      "init_lora_weights": true, "revision": null,
      "base_model_name_or_path": "gpt2", "layers_pattern": null, "layers_to_transform": null)"));
  CHECK(load_error(dir) == "<no exception>");
}

TEST_CASE("bad tensors are refused with the file and key named", "[lora]") {
  temp_dir tmp;
  const std::string dir = tmp.path().string();
  const std::string file = dir + "/adapter_model.safetensors";
  write_file(dir + "/adapter_config.json", config_text("", R"(["c_attn", "c_fc"])"));
  const auto good = pair_specs(0, "attn.c_attn") + pair_specs(1, "mlp.c_fc");
  write_weights(dir, good);
  REQUIRE(load_error(dir) == "<no exception>");

  auto expect = [&](const std::vector<spec>& specs, const std::string& k,
                    const std::string& needle) {
    write_weights(dir, specs);
    const auto e = load_error(dir);
    CHECK_THAT(e, Contains(file) && Contains("\"" + k + "\"") && Contains(needle));
  };
  const std::string a0 = key(0, "attn.c_attn", "lora_A"), b0 = key(0, "attn.c_attn", "lora_B");
  expect({good[0], good[2], good[3]}, a0, "no matching lora_B");
  expect({good[1], good[2], good[3]}, b0, "no matching lora_A");
  auto s = good;
  s[0].shape = {4, 9};
  expect(s, a0, "shape [4, 9], expected [r=4, in=8]");
  s = good;
  s[1].shape = {8, 4};
  expect(s, b0, "expected [out=24, r=4]");
  s = good;
  s[0].shape = {2, 8}; // rank 2 but the config says 4
  s[1].shape = {24, 2};
  expect(s, a0, "rank differs from r in adapter_config.json");
  s = good;
  s[0].shape = {4, 8, 1};
  expect(s, a0, "shape [4, 8, 1]");
  s = good;
  s[0].type = dtype::f64;
  expect(s, a0, "dtype F64");
  s = good;
  s[1].type = dtype::i32;
  expect(s, b0, "dtype I32");
  s = good;
  s[0].value = std::numeric_limits<float>::quiet_NaN();
  expect(s, a0, "NaN");
  expect(good + pair_specs(2, "attn.c_attn"), key(2, "attn.c_attn", "lora_A"),
         "base model has 2 layers");
  expect(good + pair_specs(0, "attn.c_proj"), key(0, "attn.c_proj", "lora_A"), "does not target");
  expect(good + pair_specs(0, "attn.c_attn", 4, "base_model.model."),
         key(0, "attn.c_attn", "lora_A", "base_model.model."), "duplicates");
  expect(good + std::vector<spec>{{"base_model.model.lm_head.weight", {16, 8}}},
         "base_model.model.lm_head.weight", "not a LoRA weight");
  const std::string dora = "base_model.model.transformer.h.0.attn.c_attn.lora_magnitude_vector";
  expect(good + std::vector<spec>{{dora, {24}}}, dora, "DoRA");
  const std::string bias = "base_model.model.transformer.h.0.attn.c_attn.lora_B.bias";
  expect(good + std::vector<spec>{{bias, {24}}}, bias, "bias");
  const std::string dotted =
    key(0, "attn.c_attn", "lora_A", "base_model.model.transformer.", "a.b");
  expect(good + std::vector<spec>{{dotted, {4, 8}}}, dotted, "not a LoRA weight");

  // A targeted module with no tensors in any layer: the config's file and the module are named.
  write_weights(dir, pair_specs(0, "attn.c_attn"));
  CHECK_THAT(load_error(dir), Contains(dir + "/adapter_config.json") && Contains("mlp.c_fc")
                                && Contains("no lora_A/lora_B tensors"));
  write_file(dir + "/adapter_config.json", config_text("", R"(["c_attn", "c_proj"])"));
  write_weights(dir, pair_specs(0, "attn.c_attn") + pair_specs(0, "attn.c_proj"));
  CHECK_THAT(load_error(dir), Contains("covers mlp.c_proj"));
}

TEST_CASE("validate and write_peft_adapter refuse inconsistent adapters", "[lora]") {
  const auto base = tiny_base();
  temp_dir tmp;
  const auto good = make_random_adapter(base, 2, 4.0f, {lora_module::attn_c_attn}, 3);
  auto refused = [&](const lora_adapter& a) {
    CHECK_THROWS_AS(write_peft_adapter(tmp / "x", a), std::invalid_argument);
  };
  auto a = good;
  a.rank = 0;
  refused(a);
  a = good;
  a.alpha = std::numeric_limits<float>::quiet_NaN();
  refused(a);
  a = good;
  a.pairs[1].b.pop_back();
  refused(a);
  a = good;
  a.pairs[1].rank = 3;
  refused(a);
  a = good;
  std::swap(a.pairs[0], a.pairs[1]);
  refused(a);
  a = good;
  a.pairs.clear();
  refused(a);
  CHECK_THROWS_AS(write_peft_adapter(tmp / "x", good, dtype::i32), std::invalid_argument);
  CHECK_FALSE(fs::exists(tmp / "x/adapter_config.json"));

  auto bigger = base;
  bigger.n_embd = 16;
  CHECK_NOTHROW(good.validate(base));
  CHECK_THROWS_AS(good.validate(bigger), std::invalid_argument);
  auto shallow = base;
  shallow.n_layer = 1;
  CHECK_THROWS_AS(good.validate(shallow), std::invalid_argument);
}

TEST_CASE("resolve_adapter_path keeps ids inside the adapter root", "[lora]") {
  temp_dir tmp;
  const fs::path root = fs::weakly_canonical(tmp.path() / "adapters");
  fs::create_directories(root / "styles" / "kjv");
  fs::create_directories(tmp.path() / "outside");
  const std::string r = root.string();

  CHECK(resolve_adapter_path(r, "shakespeare") == root / "shakespeare"); // need not exist yet
  CHECK(resolve_adapter_path(r, "styles/kjv") == root / "styles" / "kjv");
  CHECK(resolve_adapter_path(r + "/", "v1.2_x-y") == root / "v1.2_x-y");
  CHECK(resolve_adapter_path(r, std::string(128, 'a')) == root / std::string(128, 'a'));

  struct bad_case {
    std::string id;
    std::string needle;
  };
  const bad_case cases[] = {
    {"", "empty"},
    {"../x", "'..'"},
    {"a/../../b", "'..'"},
    {"a/..", "'..'"},
    {"..", "'..'"},
    {"./a", "start with '.'"},
    {".hidden", "start with '.'"},
    {"/etc", "absolute"},
    {"/etc/passwd", "absolute"},
    {"a//b", "'//'"},
    {"a/", "ends with '/'"},
    {"a\\..\\b", "backslash"},
    {std::string("a\0b", 3), "NUL"},
    {"a\nb", "control character"},
    {"a\x1b[31m", "control character"},
    {"a b", "only letters"},
    {"caf\xc3\xa9", "only letters"},
    {"a:b", "only letters"},
    {std::string(129, 'a'), "longer than 128"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.id);
    const auto e = resolve_error(r, c.id);
    CHECK_THAT(e, Contains("adapter id") && Contains(c.needle));
    CHECK(e.find('\n') == std::string::npos); // control bytes are escaped, not echoed
    CHECK(e.find('\x1b') == std::string::npos);
  }

  // Symlinks are followed before the check: out of the root is refused, within it is fine.
  fs::create_directory_symlink(tmp.path() / "outside", root / "escape");
  fs::create_directory_symlink("..", root / "styles" / "up");
  fs::create_directory_symlink("kjv", root / "styles" / "alias");
  fs::create_directory_symlink(".", root / "self");
  CHECK_THAT(resolve_error(r, "escape"), Contains("outside the adapter root"));
  CHECK_THAT(resolve_error(r, "escape/sub"), Contains("outside the adapter root"));
  CHECK_THAT(resolve_error(r, "styles/up/../x"), Contains("'..'"));
  CHECK_THAT(resolve_error(r, "self"), Contains("outside the adapter root"));
  CHECK(resolve_adapter_path(r, "styles/up/shakespeare") == root / "shakespeare");
  CHECK(resolve_adapter_path(r, "styles/alias") == root / "styles" / "kjv");

  // A sibling whose name extends the root's is not inside it.
  fs::create_directories(tmp.path() / "adapters-evil");
  fs::create_directory_symlink(tmp.path() / "adapters-evil", root / "evil");
  CHECK_THAT(resolve_error(r, "evil"), Contains("outside the adapter root"));
  CHECK_THROWS_AS(resolve_adapter_path("", "a"), std::invalid_argument);
  // A symlink loop cannot be resolved: an error, never a path.
  fs::create_directory_symlink("loop", root / "loop");
  CHECK_THROWS_AS(resolve_adapter_path(r, "loop/x"), fs::filesystem_error);
}
