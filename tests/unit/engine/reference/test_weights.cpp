// Loading Hugging Face GPT-2 checkpoints: every dtype, both key styles, tied and untied heads,
// and clear errors for missing tensors, wrong shapes and truncated files.
#include "tests/support/catch_aten.hpp"

#include <filesystem>
#include <fstream>
#include <functional>

#include "tests/support/tiny_model.hpp"
#include "worker/engine/checkpoint/safetensors.hpp"
#include "worker/engine/reference/weights.hpp"

using namespace lf::engine;
using lf::test::temp_dir;
using lf::test::write_tiny_model;

namespace {

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
}

std::string error_of(const std::string& dir) {
  try {
    load_gpt2_weights(dir);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

/// Rewrites dir/model.safetensors keeping only tensors for which keep(name) is true, optionally
/// replacing one tensor's shape (data cut to match).
void rewrite(const std::string& dir, const std::function<bool(const std::string&)>& keep,
             const std::string& reshape_name = "", std::vector<std::int64_t> new_shape = {}) {
  auto path = dir + "/model.safetensors";
  std::vector<std::vector<std::byte>> copies;
  std::vector<tensor_to_write> out;
  {
    auto f = safetensors_file::open(path);
    for (auto& t : f.tensors()) {
      if (!keep(t.name))
        continue;
      auto shape = t.shape;
      std::size_t n = t.nbytes;
      if (t.name == reshape_name) {
        shape = new_shape;
        n = dtype_size(t.type);
        for (auto d : shape)
          n *= static_cast<std::size_t>(d);
      }
      copies.emplace_back(t.data, t.data + std::min(n, t.nbytes));
      copies.back().resize(n);
      out.push_back({t.name, t.type, shape, copies.back().data(), n});
    }
  }
  write_safetensors(path, out);
}

} // namespace

TEST_CASE("checkpoints load in every dtype and key style", "[weights]") {
  temp_dir tmp;
  auto cfg = lf::test::tiny_config();
  auto ref = make_random_weights(cfg, 42, 0.3);
  auto untied_cfg = cfg;
  untied_cfg.tie_word_embeddings = false;
  auto ref_untied = make_random_weights(untied_cfg, 42, 0.3);  // the same values, plus a head
  struct variant { dtype storage; bool prefix; bool tied; double tol; };
  for (auto v : {variant{dtype::f32, false, true, 0.0}, variant{dtype::f32, true, false, 0.0},
                 variant{dtype::f16, true, true, 2e-3}, variant{dtype::bf16, false, false, 2e-2}}) {
    auto name = std::string(to_string(v.storage)) + (v.prefix ? "-prefix" : "") + (v.tied ? "" : "-untied");
    auto dir = write_tiny_model(tmp, name, v.storage, v.prefix, v.tied);
    auto w = load_gpt2_weights(dir);
    INFO(name);
    CHECK(w.config.n_layer == cfg.n_layer);
    CHECK(w.wte.scalar_type() == at::kFloat);
    CHECK(max_diff(w.wte, ref.wte) <= v.tol * 4);
    CHECK(max_diff(w.blocks[1].attn_w, ref.blocks[1].attn_w) <= v.tol * 4);
    CHECK(max_diff(w.blocks[0].mproj_b, ref.blocks[0].mproj_b) <= v.tol);
    CHECK(max_diff(w.ln_f_w, ref.ln_f_w) <= v.tol * 4);
    CHECK(w.config.tie_word_embeddings == v.tied);
    CHECK(w.lm_head.is_same(w.wte) == v.tied);
    CHECK(max_diff(w.lm_head, v.tied ? ref.wte : ref_untied.lm_head) <= v.tol * 4);
    if (!v.tied)
      CHECK(max_diff(w.lm_head, w.wte) > 0.1);  // a head of its own, not a copy of wte
  }
}

TEST_CASE("f32 checkpoints are used in place, bf16 compute converts", "[weights]") {
  temp_dir tmp;
  auto dir = write_tiny_model(tmp);
  auto w = load_gpt2_weights(dir);
  REQUIRE(w.backing != nullptr);  // tensors point into the memory map
  auto b = load_gpt2_weights(dir, compute_dtype::bf16);
  CHECK(b.wte.scalar_type() == at::kBFloat16);
  CHECK(b.backing == nullptr);
  CHECK(max_diff(b.blocks[0].fc_w, w.blocks[0].fc_w) < 0.02);
  CHECK(w.num_parameters() == b.num_parameters());
}

TEST_CASE("a missing tensor is named in the error", "[weights]") {
  temp_dir tmp;
  auto dir = write_tiny_model(tmp);
  rewrite(dir, [](const std::string& n) { return n != "h.1.mlp.c_fc.bias"; });
  auto err = error_of(dir);
  CHECK_THAT(err, Catch::Contains("model.safetensors") && Catch::Contains("h.1.mlp.c_fc.bias"));
}

TEST_CASE("a shape that does not match config.json is named in the error", "[weights]") {
  temp_dir tmp;
  auto dir = write_tiny_model(tmp);
  rewrite(dir, [](const std::string&) { return true; }, "h.0.attn.c_attn.weight", {64, 64});
  auto err = error_of(dir);
  CHECK_THAT(err, Catch::Contains("h.0.attn.c_attn.weight") && Catch::Contains("[64, 64]")
                      && Catch::Contains("[64, 192]"));
}

TEST_CASE("truncated, corrupt and absent checkpoints fail clearly", "[weights]") {
  temp_dir tmp;
  auto dir = write_tiny_model(tmp);
  auto st = dir + "/model.safetensors";
  SECTION("truncated") {
    std::filesystem::resize_file(st, std::filesystem::file_size(st) / 2);
    CHECK_THAT(error_of(dir), Catch::Contains("model.safetensors"));
  }
  SECTION("garbage") {
    std::ofstream(st, std::ios::trunc | std::ios::binary) << "not a safetensors file at all";
    CHECK_THAT(error_of(dir), Catch::Contains("model.safetensors"));
  }
  SECTION("no weights file") {
    std::filesystem::remove(st);
    CHECK_THAT(error_of(dir), Catch::Contains("model.safetensors") && Catch::Contains("not found"));
  }
  SECTION("no config") {
    std::filesystem::remove(dir + "/config.json");
    CHECK_THAT(error_of(dir), Catch::Contains("config.json"));
  }
  SECTION("no directory") {
    CHECK_THAT(error_of(tmp / "nope"), Catch::Contains("nope"));
  }
}

TEST_CASE("a config that unties the head needs lm_head.weight", "[weights]") {
  temp_dir tmp;
  auto dir = write_tiny_model(tmp, "tied");
  auto cfg = gpt2_config::load(dir + "/config.json");
  cfg.tie_word_embeddings = false;  // the file has no lm_head.weight
  cfg.save(dir + "/config.json");
  CHECK_THROWS_WITH(load_gpt2_weights(dir), Catch::Contains("tie_word_embeddings is false")
                                              && Catch::Contains("lm_head.weight"));
}
