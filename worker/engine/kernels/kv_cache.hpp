#pragma once
/// The paged K/V store of one worker: per layer, blocks of `block_size` token slots, in f32, bf16
/// or int8, laid out for the attention kernel (attention.hpp):
///
///   K, block b, head h: [head_dim][block_size]  dims major: one vector load gives 16 tokens
///   V, block b, head h: [block_size][head_dim]  tokens major: one row per token
///   int8: one f32 scale per (block, head, token) for K and one for V (absmax / 127 of that token's
///         head vector), so a token's bytes never depend on what else shares its block.
///
/// The block manager (cache/block_manager.hpp) decides which blocks a sequence owns; this class only
/// holds the numbers. Writes and reads of distinct slots may run on different threads.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "worker/engine/kernels/packed_matrix.hpp"

namespace lf::kernels {

/// Storage type of the cache.
enum class kv_type { f32, bf16, int8 };

/// "f32", "bf16", "int8".
std::string_view to_string(kv_type t) noexcept;

/// Parses to_string's spellings.
std::optional<kv_type> parse_kv_type(std::string_view s) noexcept;

/// Shape of a cache.
struct kv_shape {
  int layers = 0, heads = 0, head_dim = 0;
  int block_size = 16;
  std::uint32_t num_blocks = 0;
  kv_type type = kv_type::bf16;
};

/// One layer's view, what the kernels take.
struct kv_layer {
  kv_type type;
  int heads, head_dim, block_size;
  std::byte* k;       ///< block b, head h at k + (b * heads + h) * head_bytes()
  std::byte* v;
  float* k_scale;     ///< int8 only: (b * heads + h) * block_size + slot
  float* v_scale;

  /// Bytes of one (block, head) of K or of V.
  std::size_t head_bytes() const noexcept {
    return static_cast<std::size_t>(head_dim) * block_size * (type == kv_type::f32 ? 4 : type == kv_type::bf16 ? 2 : 1);
  }
};

/// See the file comment.
class kv_cache {
public:
  /// Allocates every block (zeroed). Throws std::invalid_argument for a non-positive dimension.
  explicit kv_cache(const kv_shape& s);

  /// Bytes one block takes over all layers, K and V (and int8 scales).
  static std::size_t bytes_per_block(const kv_shape& s) noexcept;
  /// Blocks that fit in `budget` bytes.
  static std::uint32_t blocks_for_budget(std::size_t budget, kv_shape s) noexcept;

  kv_layer layer(int l) const noexcept;

  /// Copies block `b` (every layer's K and V, and the int8 scales) into `out`, which must hold
  /// bytes_per_block(shape()) bytes. Layer-major: per layer K, V, then K and V scales. Throws
  /// std::out_of_range for a block outside the pool.
  void read_block(std::uint32_t b, std::byte* out) const;
  /// Overwrites block `b` with read_block's bytes (of a cache of the same shape but for
  /// num_blocks). Throws std::out_of_range for a block outside the pool.
  void write_block(std::uint32_t b, const std::byte* in);
  const kv_shape& shape() const noexcept { return shape_; }
  std::size_t bytes() const noexcept { return bytes_per_block(shape_) * shape_.num_blocks; }

private:
  kv_shape shape_;
  std::vector<aligned_buffer> k_, v_, ks_, vs_;
};

} // namespace lf::kernels
