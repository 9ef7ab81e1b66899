#include "worker/engine/reference/model_writer.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "worker/engine/reference/weights.hpp"

namespace lf::engine {

namespace fs = std::filesystem;

gpt2_weights make_random_weights(const gpt2_config& cfg, std::uint64_t seed, double init_std) {
  at::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto normal = [&](std::vector<std::int64_t> shape, double mean, double std) {
    return at::normal(mean, std, shape, gen, at::TensorOptions().dtype(at::kFloat));
  };
  const std::int64_t C = cfg.n_embd, V = cfg.vocab_size, P = cfg.n_positions, I = cfg.inner_dim();
  // GPT-2 scales residual projections by 1/sqrt(2 * n_layer).
  const double resid_std = init_std / std::sqrt(2.0 * cfg.n_layer);
  gpt2_weights w;
  w.config = cfg;
  w.wte = normal({V, C}, 0, init_std);
  w.wpe = normal({P, C}, 0, init_std / 2);
  for (int l = 0; l < cfg.n_layer; ++l) {
    gpt2_block_weights b;
    b.ln_1_w = normal({C}, 1.0, 0.05);
    b.ln_1_b = normal({C}, 0.0, 0.02);
    b.attn_w = normal({C, 3 * C}, 0, init_std);
    b.attn_b = normal({3 * C}, 0, 0.02);
    b.proj_w = normal({C, C}, 0, resid_std);
    b.proj_b = normal({C}, 0, 0.02);
    b.ln_2_w = normal({C}, 1.0, 0.05);
    b.ln_2_b = normal({C}, 0.0, 0.02);
    b.fc_w = normal({C, I}, 0, init_std);
    b.fc_b = normal({I}, 0, 0.02);
    b.mproj_w = normal({I, C}, 0, resid_std);
    b.mproj_b = normal({C}, 0, 0.02);
    w.blocks.push_back(std::move(b));
  }
  w.ln_f_w = normal({C}, 1.0, 0.05);
  w.ln_f_b = normal({C}, 0.0, 0.02);
  // An untied head is a matrix of its own (drawn last, so tied models keep their values).
  w.lm_head = cfg.tie_word_embeddings ? w.wte : normal({V, C}, 0, init_std);
  return w;
}

void save_gpt2_checkpoint(const gpt2_weights& w, const std::string& out_dir, dtype storage,
                          bool transformer_prefix, bool tied_lm_head) {
  if (storage != dtype::f32 && storage != dtype::f16 && storage != dtype::bf16)
    throw std::invalid_argument("checkpoints are stored as F32, F16 or BF16");
  fs::create_directories(out_dir);
  auto cfg = w.config;
  cfg.tie_word_embeddings = tied_lm_head;
  cfg.save((fs::path(out_dir) / "config.json").string());
  auto target = storage == dtype::f32   ? at::kFloat
                : storage == dtype::f16 ? at::kHalf
                                        : at::kBFloat16;
  std::vector<at::Tensor> keep;  // owns the converted data until the file is written
  std::vector<tensor_to_write> out;
  const std::string pre = transformer_prefix ? "transformer." : "";
  auto add = [&](const std::string& name, const at::Tensor& t) {
    auto c = t.to(target).contiguous();
    keep.push_back(c);
    std::vector<std::int64_t> shape(c.sizes().begin(), c.sizes().end());
    out.push_back({name, storage, shape, c.data_ptr(), static_cast<std::size_t>(c.nbytes())});
  };
  add(pre + "wte.weight", w.wte);
  add(pre + "wpe.weight", w.wpe);
  for (std::size_t l = 0; l < w.blocks.size(); ++l) {
    const auto& b = w.blocks[l];
    auto p = pre + "h." + std::to_string(l) + ".";
    add(p + "ln_1.weight", b.ln_1_w);
    add(p + "ln_1.bias", b.ln_1_b);
    add(p + "attn.c_attn.weight", b.attn_w);
    add(p + "attn.c_attn.bias", b.attn_b);
    add(p + "attn.c_proj.weight", b.proj_w);
    add(p + "attn.c_proj.bias", b.proj_b);
    add(p + "ln_2.weight", b.ln_2_w);
    add(p + "ln_2.bias", b.ln_2_b);
    add(p + "mlp.c_fc.weight", b.fc_w);
    add(p + "mlp.c_fc.bias", b.fc_b);
    add(p + "mlp.c_proj.weight", b.mproj_w);
    add(p + "mlp.c_proj.bias", b.mproj_b);
  }
  add(pre + "ln_f.weight", w.ln_f_w);
  add(pre + "ln_f.bias", w.ln_f_b);
  if (!tied_lm_head)
    add("lm_head.weight", w.lm_head);
  write_safetensors((fs::path(out_dir) / "model.safetensors").string(), out, {{"format", "pt"}});
}

void write_random_model(const std::string& out_dir, const random_model_options& opts) {
  auto cfg = opts.config;
  cfg.tie_word_embeddings = opts.tied_lm_head;
  auto w = make_random_weights(cfg, opts.seed, opts.init_std);
  save_gpt2_checkpoint(w, out_dir, opts.storage, opts.transformer_prefix, opts.tied_lm_head);
  if (!opts.tokenizer_dir.empty())
    for (const char* f : {"vocab.json", "merges.txt"}) {
      auto src = fs::path(opts.tokenizer_dir) / f;
      if (!fs::exists(src))
        throw std::runtime_error(src.string() + ": tokenizer file not found");
      fs::copy_file(src, fs::path(out_dir) / f, fs::copy_options::overwrite_existing);
    }
}

} // namespace lf::engine
