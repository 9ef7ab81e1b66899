#pragma once
/// GPT-2 on an NVIDIA GPU behind the serving loop's step_engine: weights, the paged K/V pool and
/// LoRA factors in device memory, matrix products through cuBLAS (f32, no TF32), paged attention,
/// the epilogues and the multi-LoRA pair as kernels of our own (cuda_kernels.cuh), and decode steps
/// replayed as CUDA graphs, one per padded batch size. Logits come back to the host, where the
/// loop samples them with the same rules as on the CPU.
///
/// This header needs no CUDA headers: a build without CUDA links cuda_absent.cpp, whose
/// functions say so (cuda_built() is false there).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/adapter_manager.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/model/step_engine.hpp"

namespace lf::engine {

/// What the engine needs besides the checkpoint.
struct cuda_options {
  int device = 0;                   ///< CUDA device index
  std::uint32_t num_blocks = 0;     ///< K/V pool blocks (the loop's block ids index it)
  int block_size = 16;              ///< tokens per block
  int max_rows = 4096;              ///< most tokens one step computes (grown on demand)
  bool graphs = true;               ///< replay decode steps as CUDA graphs
  int max_graph_batch = 512;        ///< decode steps of more rows run eagerly
  int host_threads = 4;             ///< threads the loop samples rows on (for_rows)
};

/// One GPU as the driver describes it.
struct cuda_device_info {
  int index = 0;
  std::string name;
  std::size_t memory_bytes = 0;
  int multiprocessors = 0;
  int major = 0, minor = 0;  ///< compute capability
  double memory_bandwidth_gbs = 0;  ///< from the memory clock and bus width
};

/// Counters of what the engine ran.
struct cuda_engine_stats {
  std::uint64_t graph_steps = 0;     ///< steps replayed from a captured graph
  std::uint64_t eager_steps = 0;     ///< steps launched kernel by kernel
  std::uint64_t graphs_captured = 0;
};

/// A step_engine on one GPU.
class cuda_engine : public step_engine {
public:
  virtual const gpt2_config& config() const = 0;
  virtual const cuda_device_info& device() const = 0;
  /// Device bytes of the weights (every byte a decode step reads once, the LM head included).
  virtual std::size_t weight_bytes() const = 0;
  /// Device bytes of the K/V pool.
  virtual std::size_t kv_bytes() const = 0;
  virtual cuda_engine_stats stats() const = 0;
  /// Turns graph replay on or off (benchmarks compare both); on by default when options say so.
  virtual void set_graphs(bool on) = 0;
};

/// Whether this build has the CUDA backend.
bool cuda_built() noexcept;

/// GPUs the driver sees; 0 without CUDA, a driver or a device.
int cuda_device_count() noexcept;

/// Device `index`; throws std::runtime_error when there is none (the message says why).
cuda_device_info describe_cuda_device(int index);

/// "cuda" -> 0, "cuda:N" -> N; std::nullopt for anything else ("cpu" included).
std::optional<int> parse_cuda_device(std::string_view device);

/// Loads the checkpoint in `model_dir` (config.json + model.safetensors) onto device o.device
/// and allocates the pool. `adapters` finds a chunk's adapter (cpu_lora payloads, copied to the
/// device on first use). Throws std::runtime_error naming the device when CUDA is absent, the
/// device does not exist or memory runs out; std::invalid_argument for options that do not fit.
std::unique_ptr<cuda_engine> make_cuda_engine(const std::string& model_dir, const cuda_options& o,
                                              cache::adapter_lookup_fn adapters = {});

/// Bytes of K/V one block takes on the GPU for model `c` (f32 K and V).
std::size_t cuda_kv_block_bytes(const gpt2_config& c, int block_size) noexcept;

} // namespace lf::engine
