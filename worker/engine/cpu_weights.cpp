#include "worker/engine/cpu_weights.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include "worker/engine/safetensors.hpp"

namespace lf::engine {

namespace {

/// Finds tensors by their GPT2Model name (with or without `transformer.`), checks shapes, reads
/// them as floats and hands their file pages back.
class reader {
public:
  explicit reader(const std::string& path) : file_(safetensors_file::open(path)) {}

  const tensor_view* find(const std::string& name) const {
    if (auto* t = file_.find(name))
      return t;
    return file_.find("transformer." + name);
  }

  std::vector<float> get(const std::string& name, std::vector<std::int64_t> shape) {
    const tensor_view* t = find(name);
    if (t == nullptr)
      throw std::runtime_error(file_.path() + ": missing tensor '" + name + "' (also looked for 'transformer."
                               + name + "')");
    return read(*t, shape);
  }

  std::vector<float> read(const tensor_view& t, const std::vector<std::int64_t>& shape) {
    if (t.shape != shape)
      throw std::runtime_error(file_.path() + ": tensor '" + t.name + "' has shape " + show(t.shape)
                               + " but config.json implies " + show(shape));
    auto v = to_float32(t);  // throws naming the tensor for a dtype other than F32/F16/BF16
    release(t);
    return v;
  }

private:
  static std::string show(const std::vector<std::int64_t>& s) {
    std::string r = "[";
    for (std::size_t i = 0; i < s.size(); ++i)
      r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  }

  /// The tensor is copied out: its pages of the read-only private map are not needed again.
  static void release(const tensor_view& t) {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<std::uintptr_t>(t.data) + page - 1) / page * page;
    const auto end = (reinterpret_cast<std::uintptr_t>(t.data) + t.nbytes) / page * page;
    if (end > begin)
      ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }

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
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir))
    throw std::runtime_error(dir + ": model directory not found");
  const auto st_path = (fs::path(dir) / "model.safetensors").string();
  if (!fs::exists(st_path))
    throw std::runtime_error(st_path + ": not found (a GPT-2 checkpoint needs config.json and "
                             "model.safetensors; make one with `lorafleet make-model`)");
  cpu_weights w;
  w.config = gpt2_config::load((fs::path(dir) / "config.json").string());
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
  if (w.config.tie_word_embeddings) {
    w.lm_head = pack_rows(t, r.get("wte.weight", {V, C}), V, C);  // the head is wte
  } else {
    const tensor_view* head = r.find("lm_head.weight");
    if (head == nullptr)
      throw std::runtime_error(st_path + ": config.json says tie_word_embeddings is false, but there "
                               "is no lm_head.weight");
    w.lm_head = pack_rows(t, r.read(*head, {V, C}), V, C);
    w.wte = pack_rows(t, r.get("wte.weight", {V, C}), V, C);
  }
  return w;
}

} // namespace lf::engine
