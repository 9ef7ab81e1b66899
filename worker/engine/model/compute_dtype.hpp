#pragma once
/// The precision a worker computes in (`--dtype`). Pure C++.
///
/// The serving engine (cpu_model.hpp) packs the linear layers, the LM head and the token embedding
/// in this type: f32; bf16 (activations rounded to bf16, f32 accumulation); int8 (W8A8: int8
/// weights with per-output-channel scales, activations quantized per row at run time). Layer
/// norms, softmax, residuals and logits stay f32. The static-batching baselines (the ATen model,
/// gpt2_model.hpp) read the same setting: bf16 tensors, or int8 weight-only quantization.

#include <stdexcept>
#include <string>

namespace lf::engine {

/// See the file comment.
enum class compute_dtype { f32, bf16, int8 };

/// Parses "f32" (also "fp32", "float32") / "bf16" ("bfloat16") / "int8"; throws
/// std::invalid_argument otherwise.
inline compute_dtype parse_compute_dtype(const std::string& s) {
  if (s == "f32" || s == "fp32" || s == "float32")
    return compute_dtype::f32;
  if (s == "bf16" || s == "bfloat16")
    return compute_dtype::bf16;
  if (s == "int8")
    return compute_dtype::int8;
  throw std::invalid_argument("unknown dtype '" + s + "' (expected f32, bf16 or int8)");
}

/// "f32", "bf16", "int8".
inline const char* to_string(compute_dtype d) noexcept {
  return d == compute_dtype::f32 ? "f32" : d == compute_dtype::bf16 ? "bf16" : "int8";
}

} // namespace lf::engine
