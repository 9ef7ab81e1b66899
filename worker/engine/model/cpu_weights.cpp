#include "worker/engine/model/cpu_weights.hpp"

#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include "worker/engine/checkpoint/checkpoint.hpp"

namespace lf::engine {

namespace {

/// Reads tensors by their GPT2Model name as floats, checking shapes, and hands their file pages
/// back (checkpoint.hpp).
class reader {
public:
  explicit reader(const std::string& path) : file_(safetensors_file::open(path)) {}

  const tensor_view* find(const std::string& name) const { return find_gpt2_tensor(file_, name); }

  std::vector<float> get(const std::string& name, const std::vector<std::int64_t>& shape) {
    return read(require_gpt2_tensor(file_, name), shape);
  }

  std::vector<float> read(const tensor_view& t, const std::vector<std::int64_t>& shape) {
    check_gpt2_shape(file_, t, shape);
    auto v = to_float32(t);  // throws naming the tensor for a dtype other than F32/F16/BF16
    release_tensor_pages(t);  // copied out: its pages of the read-only map are not needed again
    return v;
  }

private:
  safetensors_file file_;
};

/// A Conv1D weight [K][N] packed.
kernels::packed_matrix pack_conv(kernels::weight_type t, const std::vector<float>& w, int K, int N) {
  return kernels::packed_matrix::pack(t, K, N, {w.data(), static_cast<std::size_t>(N), 1});
}

/// A [V][C] matrix (wte, lm_head) packed as K = C, N = V.
kernels::packed_matrix pack_rows(kernels::weight_type t, const std::vector<float>& w, int V, int C) {
  return kernels::packed_matrix::pack(t, C, V, {w.data(), 1, static_cast<std::size_t>(C)});
}

} // namespace

kernels::weight_type weight_type_of(compute_dtype d) noexcept {
  switch (d) {
    case compute_dtype::f32: return kernels::weight_type::f32;
    case compute_dtype::bf16: return kernels::weight_type::bf16;
    case compute_dtype::int8: return kernels::weight_type::int8;
    case compute_dtype::int4: return kernels::weight_type::int4;
  }
  return kernels::weight_type::f32;
}

std::size_t cpu_weights::bytes_per_step() const noexcept {
  std::size_t n = lm_head.bytes();
  for (const auto& b : blocks)
    n += b.attn.bytes() + b.proj.bytes() + b.fc.bytes() + b.mproj.bytes();
  return n;
}

std::size_t cpu_weights::bytes() const noexcept {
  std::size_t n = bytes_per_step() + wte.bytes() + (wpe.size() + ln_f_w.size() + ln_f_b.size()) * 4;
  for (const auto& b : blocks)
    n += (b.ln_1_w.size() * 4 + b.attn_b.size() + b.proj_b.size() + b.fc_b.size() + b.mproj_b.size()) * 4;
  return n;
}

cpu_weights load_cpu_weights(const std::string& dir, compute_dtype dtype) {
  const auto st_path = checkpoint_tensors_path(dir);
  cpu_weights w;
  w.config = gpt2_config::load((std::filesystem::path(dir) / "config.json").string());
  w.dtype = dtype;
  const auto t = weight_type_of(dtype);
  reader r(st_path);
  const int C = w.config.n_embd, V = w.config.vocab_size, P = w.config.n_positions, I = w.config.inner_dim();
  w.wpe = r.get("wpe.weight", {P, C});
  w.ln_f_w = r.get("ln_f.weight", {C});
  w.ln_f_b = r.get("ln_f.bias", {C});
  for (int i = 0; i < w.config.n_layer; ++i) {
    const auto p = "h." + std::to_string(i) + ".";
    cpu_block_weights b;
    b.ln_1_w = r.get(p + "ln_1.weight", {C});
    b.ln_1_b = r.get(p + "ln_1.bias", {C});
    b.attn = pack_conv(t, r.get(p + "attn.c_attn.weight", {C, 3 * C}), C, 3 * C);
    b.attn_b = r.get(p + "attn.c_attn.bias", {3 * C});
    b.proj = pack_conv(t, r.get(p + "attn.c_proj.weight", {C, C}), C, C);
    b.proj_b = r.get(p + "attn.c_proj.bias", {C});
    b.ln_2_w = r.get(p + "ln_2.weight", {C});
    b.ln_2_b = r.get(p + "ln_2.bias", {C});
    b.fc = pack_conv(t, r.get(p + "mlp.c_fc.weight", {C, I}), C, I);
    b.fc_b = r.get(p + "mlp.c_fc.bias", {I});
    b.mproj = pack_conv(t, r.get(p + "mlp.c_proj.weight", {I, C}), I, C);
    b.mproj_b = r.get(p + "mlp.c_proj.bias", {C});
    w.blocks.push_back(std::move(b));
  }
  // int4 keeps the token embedding and the LM head in int8: on the trained default model 4-bit
  // there took top-1 agreement with f32 from 96% to 83% (docs/benchmarks.md, "4-bit weights").
  const auto ht = t == kernels::weight_type::int4 ? kernels::weight_type::int8 : t;
  if (w.config.tie_word_embeddings) {
    w.lm_head = pack_rows(ht, r.get("wte.weight", {V, C}), V, C);  // the head is wte
  } else {
    const tensor_view* head = r.find("lm_head.weight");
    if (head == nullptr)
      throw std::runtime_error(st_path + ": config.json says tie_word_embeddings is false, but there "
                               "is no lm_head.weight");
    w.lm_head = pack_rows(ht, r.read(*head, {V, C}), V, C);
    w.wte = pack_rows(ht, r.get("wte.weight", {V, C}), V, C);
  }
  return w;
}

} // namespace lf::engine
