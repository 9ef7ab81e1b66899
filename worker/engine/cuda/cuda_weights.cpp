#include "worker/engine/cuda/cuda_weights.hpp"

#include <filesystem>

#include "worker/engine/checkpoint/checkpoint.hpp"

namespace lf::engine::cuda {

namespace {

/// Reads tensors by their GPT2Model name (shape-checked, as floats) and uploads them.
class uploader {
public:
  explicit uploader(const std::string& path) : file_(safetensors_file::open(path)) {}

  void get(const std::string& name, const std::vector<std::int64_t>& shape, device_buffer<float>& out) {
    put(require_gpt2_tensor(file_, name), shape, out);
  }
  const tensor_view* find(const std::string& name) const { return find_gpt2_tensor(file_, name); }
  void put(const tensor_view& t, const std::vector<std::int64_t>& shape, device_buffer<float>& out) {
    check_gpt2_shape(file_, t, shape);
    const auto v = to_float32(t);
    release_tensor_pages(t);
    out.upload(v.data(), v.size());
  }

private:
  safetensors_file file_;
};

} // namespace

std::size_t model_weights::bytes_per_step() const noexcept {
  std::size_t n = lm_head.size() ? lm_head.bytes() : wte.bytes();
  for (const auto& b : blocks)
    n += b.attn.bytes() + b.proj.bytes() + b.fc.bytes() + b.mproj.bytes();
  return n;
}

std::size_t model_weights::bytes() const noexcept {
  std::size_t n = wte.bytes() + wpe.bytes() + ln_f_w.bytes() + ln_f_b.bytes() + lm_head.bytes();
  for (const auto& b : blocks)
    n += b.ln_1_w.bytes() + b.ln_1_b.bytes() + b.ln_2_w.bytes() + b.ln_2_b.bytes() + b.attn.bytes()
         + b.attn_b.bytes() + b.proj.bytes() + b.proj_b.bytes() + b.fc.bytes() + b.fc_b.bytes() + b.mproj.bytes()
         + b.mproj_b.bytes();
  return n;
}

model_weights load_model_weights(const std::string& dir) {
  const auto path = checkpoint_tensors_path(dir);
  model_weights w;
  w.config = gpt2_config::load((std::filesystem::path(dir) / "config.json").string());
  const auto& c = w.config;
  const std::int64_t C = c.n_embd, V = c.vocab_size, P = c.n_positions, I = c.inner_dim();
  uploader u(path);
  u.get("wte.weight", {V, C}, w.wte);
  u.get("wpe.weight", {P, C}, w.wpe);
  u.get("ln_f.weight", {C}, w.ln_f_w);
  u.get("ln_f.bias", {C}, w.ln_f_b);
  w.blocks.resize(static_cast<std::size_t>(c.n_layer));
  for (int i = 0; i < c.n_layer; ++i) {
    const auto p = "h." + std::to_string(i) + ".";
    auto& b = w.blocks[static_cast<std::size_t>(i)];
    u.get(p + "ln_1.weight", {C}, b.ln_1_w);
    u.get(p + "ln_1.bias", {C}, b.ln_1_b);
    u.get(p + "attn.c_attn.weight", {C, 3 * C}, b.attn);
    u.get(p + "attn.c_attn.bias", {3 * C}, b.attn_b);
    u.get(p + "attn.c_proj.weight", {C, C}, b.proj);
    u.get(p + "attn.c_proj.bias", {C}, b.proj_b);
    u.get(p + "ln_2.weight", {C}, b.ln_2_w);
    u.get(p + "ln_2.bias", {C}, b.ln_2_b);
    u.get(p + "mlp.c_fc.weight", {C, I}, b.fc);
    u.get(p + "mlp.c_fc.bias", {I}, b.fc_b);
    u.get(p + "mlp.c_proj.weight", {I, C}, b.mproj);
    u.get(p + "mlp.c_proj.bias", {C}, b.mproj_b);
  }
  if (!c.tie_word_embeddings) {
    const tensor_view* head = u.find("lm_head.weight");
    if (head == nullptr)
      throw std::runtime_error(path + ": config.json says tie_word_embeddings is false, but there is no "
                               "lm_head.weight");
    u.put(*head, {V, C}, w.lm_head);
  }
  return w;
}

} // namespace lf::engine::cuda
