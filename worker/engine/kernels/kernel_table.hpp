#pragma once
/// The engine calls every kernel through one table, chosen once at start from the detected CPU
/// features. Each table is a complete family: matrix products (f32, bf16, int8, int4), activation
/// conversion and quantization, attention over every K/V type, layer norm, GELU, LoRA rows, the
/// sampler's vector passes and a peak-rate probe. Tables of one processor architecture are listed
/// in order of preference; a table is runnable when the CPU has every capability it needs, and
/// the best runnable one is the default.
///
///   x86_64:  portable, avx2, avx2_vnni, avx512, avx512_vnni, avx512_bf16
///   aarch64: portable, neon, neon_dotprod, neon_i8mm
///
/// `LF_ISA=NAME` in the environment picks any runnable table (tests and benchmarks compare tables
/// that way; "generic" is the old name of "portable"). Every table computes the same int8 results
/// bit for bit (integer arithmetic), and the same int4 results (integer blocks, then one float order);
/// f32 and bf16 results agree within rounding.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "worker/engine/kernels/attention.hpp"
#include "worker/engine/kernels/cpu_features.hpp"
#include "worker/engine/kernels/gemm.hpp"

namespace lf::kernels {

/// Multiply-adds per second of one thread for each type's inner instruction sequence.
struct thread_peaks {
  double f32 = 0, bf16 = 0, int8 = 0;
};

/// One kernel family. Function pointers only: a table is a constant, shared by every thread.
struct kernel_table {
  std::string_view name;     ///< "avx2", "neon_dotprod", ...
  cpu_features needs;        ///< runnable where the CPU has all of these
  std::string_view summary;  ///< one line for logs: what the table's int8 and bf16 products use

  // Matrix products over panels [p0, p1) of one packed matrix (gemm.hpp).
  void (*gemm_f32)(const gemm_panels& g, int p0, int p1);
  void (*gemm_bf16)(const gemm_panels& g, int p0, int p1);
  void (*gemm_int8)(const gemm_panels& g, int p0, int p1);
  void (*gemm_int4)(const gemm_panels& g, int p0, int p1);
  /// Rows of x to bf16 (round to nearest even, half.hpp's f32_to_bf16), zero-padded to k_padded.
  void (*rows_to_bf16)(const float* x, std::size_t ldx, int rows, int k, int k_padded, std::uint16_t* out);
  /// Rows of x to u8 with a scale and zero point per row (quant_params.hpp), padded with the zero
  /// point to k_padded.
  void (*rows_to_u8)(const float* x, std::size_t ldx, int rows, int k, int k_padded, std::uint8_t* out,
                     float* scale, std::int32_t* zero);

  /// nullptr, or what gemm_int8 needs done to the quantized activations first: n bytes of u8
  /// rows a become a' = a - 128 as int8 (in place) and |a'| in abs_out (the avx2 kernel's sign
  /// trick then needs no per-row work in its inner loop).
  void (*int8_shift_rows)(std::uint8_t* a, std::size_t n, std::uint8_t* abs_out);

  /// Up to four queries of one sequence and head over the paged K/V (attention.hpp).
  void (*attend)(const detail::attn_group& g);

  // Row operations (elementwise.hpp).
  void (*layer_norm)(const float* x, float* y, int n, const float* gain, const float* bias, float eps);
  void (*gelu_tanh)(float* x, int n);
  void (*lora_row)(const float* x, float* y, int in, int rank, int out, const float* a, const float* b,
                   float* scratch);

  // The sampler's passes over a row of logits (sampler_passes.hpp).
  /// Largest logit; `bad` set when one is NaN or +inf.
  float (*logits_max)(const float* logits, std::size_t n, bool& bad);
  /// The first i with logits[i] == value (value is there).
  std::int32_t (*first_index_of)(const float* logits, std::size_t n, float value);
  /// logits[i] = (logits[i] - max) * inv_t; probs[i] = exp of that.
  void (*scale_and_exp)(float* logits, float* probs, std::size_t n, float max, float inv_t);
  /// out[b] = mass of probs block b (block_len ids); returns the sum of the blocks in order.
  double (*block_masses)(const float* probs, std::size_t n, std::size_t block_len, double* out);

  /// This table's inner instruction rates on the calling thread (about 0.1 s).
  thread_peaks (*peak)();
};

/// Every table built for this processor architecture, in order of preference.
const std::vector<const kernel_table*>& all_tables();

/// The tables a CPU with `f` runs, in order of preference (the portable table always).
std::vector<const kernel_table*> runnable_tables(const cpu_features& f);

/// The last of runnable_tables(f).
const kernel_table& best_table(const cpu_features& f);

/// The table named `name` ("generic" for "portable"), runnable here or not; nullptr if none.
const kernel_table* find_table(std::string_view name) noexcept;

/// The table in use: set_active_table's choice, else LF_ISA when it names a table this machine
/// runs, else best_table(host_features()).
const kernel_table& active_table();

/// Why LF_ISA was not followed ("LF_ISA=avx512: this CPU lacks avx512f ..."), or nullopt when it
/// is unset or followed. For the worker's start-up log.
std::optional<std::string> lf_isa_problem();

/// A program's start-up check of LF_ISA: nullopt when it is unset or names a table this CPU runs;
/// otherwise the refusal to print before exiting with status 2 (`lorafleet`, bench_engine,
/// bench_kernels), naming the value and the tables this CPU runs. A typo must not quietly
/// measure or serve with another table.
std::optional<std::string> lf_isa_refusal();

/// Overrides the table (tests, benchmarks). Throws std::invalid_argument if this machine cannot
/// run it.
void set_active_table(const kernel_table& t);

/// The names of the runnable tables, "portable avx2 ..." (for logs and --help).
std::string runnable_names(const cpu_features& f);

/// What an operator should be told when a worker computing in `dtype` ("f32", "bf16", "int8")
/// runs table `t` on a CPU with `f` and a faster table or path exists for that dtype elsewhere
/// (the portable table; int8 without a dot-product instruction; bf16 emulated). nullopt when
/// nothing is worth saying.
std::optional<std::string> slow_path_note(const cpu_features& f, const kernel_table& t, std::string_view dtype);

} // namespace lf::kernels
