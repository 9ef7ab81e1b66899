#pragma once
/// The precision a worker computes in (`--dtype`). Pure C++.
///
/// The serving engine (cpu_model.hpp) packs the linear layers, the LM head and the token embedding
/// in this type: f32; bf16 (activations rounded to bf16, f32 accumulation); int8 (W8A8: int8
/// weights with per-output-channel scales, activations quantized per row at run time); int4
/// (W4A8: the blocks' linear layers in 4 bits with a scale per output channel and block of 64 k,
/// activations as int8's, packed_matrix.hpp; the token embedding and LM head stay int8). Layer norms, softmax, residuals and logits stay f32. The static-batching
/// baselines (the ATen model, gpt2_model.hpp) read the same setting: bf16 tensors, or int8
/// weight-only quantization; they have no int4 (load_gpt2_weights refuses it).

#include <stdexcept>
#include <string>

namespace lf::engine {

/// See the file comment.
enum class compute_dtype { f32, bf16, int8, int4 };

/// Parses "f32" (also "fp32", "float32") / "bf16" ("bfloat16") / "int8" / "int4"; throws
/// std::invalid_argument otherwise.
inline compute_dtype parse_compute_dtype(const std::string& s) {
  if (s == "f32" || s == "fp32" || s == "float32")
    return compute_dtype::f32;
  if (s == "bf16" || s == "bfloat16")
    return compute_dtype::bf16;
  if (s == "int8")
    return compute_dtype::int8;
  if (s == "int4")
    return compute_dtype::int4;
  throw std::invalid_argument("unknown dtype '" + s + "' (expected f32, bf16, int8 or int4)");
}

/// "f32", "bf16", "int8", "int4".
inline const char* to_string(compute_dtype d) noexcept {
  switch (d) {
    case compute_dtype::f32: return "f32";
    case compute_dtype::bf16: return "bf16";
    case compute_dtype::int8: return "int8";
    case compute_dtype::int4: return "int4";
  }
  return "f32";
}

} // namespace lf::engine
