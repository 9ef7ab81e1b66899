#include "worker/engine/reference/weights.hpp"

#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include "worker/engine/checkpoint/checkpoint.hpp"
#include "worker/engine/reference/int8_linear.hpp"

namespace lf::engine {

namespace {

/// Finds tensors by their GPT2Model name, with or without the `transformer.` prefix, checks the
/// shape against config.json and turns them into tensors of the compute dtype.
class tensor_source {
public:
  tensor_source(std::shared_ptr<const safetensors_file> file, compute_dtype dtype)
    : file_(std::move(file)), dtype_(dtype) {}

  at::Tensor get(const std::string& name, const std::vector<std::int64_t>& expected) const {
    return convert(require_gpt2_tensor(*file_, name), expected);
  }

  at::Tensor convert(const tensor_view& t, const std::vector<std::int64_t>& expected) const {
    check_gpt2_shape(*file_, t, expected);
    auto shape = at::IntArrayRef(t.shape);
    at::Tensor out;
    if (t.type == dtype::f32) {
      // Point into the memory map: no copy for the common fp32 case. int8 copies what it keeps
      // in f32 so that the map (with the f32 weights it replaces) can be dropped.
      out = at::from_blob(const_cast<std::byte*>(t.data), shape, at::kFloat);
      if (dtype_ == compute_dtype::int8)
        out = out.clone();
    } else if (t.type == dtype::f16 || t.type == dtype::bf16) {
      auto raw = at::from_blob(const_cast<std::byte*>(t.data), shape,
                               t.type == dtype::f16 ? at::kHalf : at::kBFloat16);
      out = raw.to(at::kFloat);
    } else {
      throw std::runtime_error(file_->path() + ": tensor '" + t.name + "' has dtype "
                               + std::string(to_string(t.type))
                               + "; GPT-2 weights must be F32, F16 or BF16");
    }
    if (dtype_ == compute_dtype::bf16)
      out = out.to(at::kBFloat16);
    if (out.data_ptr() != static_cast<const void*>(t.data))
      release_tensor_pages(t);  // a converted copy: the file's pages are not needed any more
    return out;
  }

  const safetensors_file& file() const { return *file_; }

private:
  std::shared_ptr<const safetensors_file> file_;
  compute_dtype dtype_;
};

} // namespace

std::int64_t gpt2_weights::num_parameters() const {
  std::int64_t n = wte.numel() + wpe.numel() + ln_f_w.numel() + ln_f_b.numel();
  for (auto& b : blocks)
    for (auto* t : {&b.ln_1_w, &b.ln_1_b, &b.attn_w, &b.attn_b, &b.proj_w, &b.proj_b, &b.ln_2_w,
                    &b.ln_2_b, &b.fc_w, &b.fc_b, &b.mproj_w, &b.mproj_b})
      n += t->numel();
  if (!lm_head.is_same(wte))
    n += lm_head.numel();
  return n;
}

namespace {
std::size_t tensor_bytes(const at::Tensor& t) {
  return t.defined() ? static_cast<std::size_t>(t.numel()) * static_cast<std::size_t>(t.element_size()) : 0;
}
} // namespace

std::size_t gpt2_weights::bytes() const {
  return bytes_per_step() + tensor_bytes(wpe) + (lm_head.is_same(wte) ? 0 : tensor_bytes(wte));
}

std::size_t gpt2_weights::bytes_per_step() const {
  auto bytes = tensor_bytes;
  // wte/wpe lookups read a few rows; lm_head reads all of [V, C].
  std::size_t n = bytes(lm_head) + bytes(ln_f_w) + bytes(ln_f_b);
  for (auto& b : blocks)
    for (auto* t : {&b.ln_1_w, &b.ln_1_b, &b.attn_w, &b.attn_b, &b.proj_w, &b.proj_b, &b.ln_2_w, &b.ln_2_b,
                    &b.fc_w, &b.fc_b, &b.mproj_w, &b.mproj_b, &b.attn_s, &b.proj_s, &b.fc_s, &b.mproj_s})
      n += bytes(*t);
  return n;
}

gpt2_weights load_gpt2_weights(const std::string& dir, compute_dtype dtype) {
  const auto st_path = checkpoint_tensors_path(dir);
  gpt2_weights w;
  if (dtype == compute_dtype::int4)
    throw std::invalid_argument("the ATen reference model has no int4 weights (the serving engine has: cpu_model)");
  w.config = gpt2_config::load((std::filesystem::path(dir) / "config.json").string());
  w.dtype = dtype;
  auto file = std::make_shared<const safetensors_file>(safetensors_file::open(st_path));
  tensor_source src(file, dtype);
  const std::int64_t C = w.config.n_embd, V = w.config.vocab_size, P = w.config.n_positions;
  const std::int64_t I = w.config.inner_dim();
  w.wte = src.get("wte.weight", {V, C});
  w.wpe = src.get("wpe.weight", {P, C});
  w.ln_f_w = src.get("ln_f.weight", {C});
  w.ln_f_b = src.get("ln_f.bias", {C});
  for (int i = 0; i < w.config.n_layer; ++i) {
    auto p = "h." + std::to_string(i) + ".";
    gpt2_block_weights b;
    b.ln_1_w = src.get(p + "ln_1.weight", {C});
    b.ln_1_b = src.get(p + "ln_1.bias", {C});
    b.attn_w = src.get(p + "attn.c_attn.weight", {C, 3 * C});
    b.attn_b = src.get(p + "attn.c_attn.bias", {3 * C});
    b.proj_w = src.get(p + "attn.c_proj.weight", {C, C});
    b.proj_b = src.get(p + "attn.c_proj.bias", {C});
    b.ln_2_w = src.get(p + "ln_2.weight", {C});
    b.ln_2_b = src.get(p + "ln_2.bias", {C});
    b.fc_w = src.get(p + "mlp.c_fc.weight", {C, I});
    b.fc_b = src.get(p + "mlp.c_fc.bias", {I});
    b.mproj_w = src.get(p + "mlp.c_proj.weight", {I, C});
    b.mproj_b = src.get(p + "mlp.c_proj.bias", {C});
    if (dtype == compute_dtype::int8)
      for (auto [wt, st] : {std::pair{&b.attn_w, &b.attn_s}, std::pair{&b.proj_w, &b.proj_s},
                            std::pair{&b.fc_w, &b.fc_s}, std::pair{&b.mproj_w, &b.mproj_s}}) {
        auto q = quantize_int8(*wt);
        *wt = q.q;
        *st = q.scale;
      }
    w.blocks.push_back(std::move(b));
  }
  if (w.config.tie_word_embeddings) {
    w.lm_head = w.wte;  // as Hugging Face ties them, whatever the file holds
  } else if (auto* head = file->find("lm_head.weight")) {
    w.lm_head = src.convert(*head, {V, C});
  } else {
    throw std::runtime_error(st_path + ": config.json says tie_word_embeddings is false, but there "
                             "is no lm_head.weight");
  }
  // Keep the map only while some tensor points into it (f32 file, f32 compute); otherwise the
  // converted copies are the only weights and the map can go.
  bool uses_map = false;
  auto in_map = [&](const at::Tensor& t) {
    auto* p = static_cast<const std::byte*>(t.data_ptr());
    for (auto& tv : file->tensors())
      if (p >= tv.data && p < tv.data + tv.nbytes)
        return true;
    return false;
  };
  uses_map = in_map(w.wte) || in_map(w.blocks.empty() ? w.wte : w.blocks[0].attn_w);
  if (uses_map)
    w.backing = std::move(file);
  return w;
}

} // namespace lf::engine
