#pragma once
/// A weight matrix W [K, N] (y = x W) in the layout the matrix kernels read, packed once at load.
///
/// Columns are grouped into panels of 64; in a panel, K is walked in groups of G elements (f32: 1,
/// bf16: 2, int8: 4, int4: 8) and each group row holds 4 x 16 columns x G elements: exactly one
/// 64-byte vector register per 16 columns, 256 bytes per group row for every type. A kernel streams
/// one panel front to back (one sequential stream per 64 columns), and a vector load gives it 16
/// columns of G consecutive k:
///
///   panel j: [k-group 0: cols 0-15 | 16-31 | 32-47 | 48-63][k-group 1: ...] ... (K padded to G)
///
/// int8 is symmetric per output column: scale[n] = max_k |W[k][n]| / 127, q = round(W / scale) in
/// [-127, 127]; col_sum[n] = sum_k q[k][n] lets the kernel use unsigned activations (u8 x s8 dot
/// products) with a zero point. N is padded to whole panels with zero columns.
///
/// int4 (W4A8) is symmetric per output column and per block of int4_block (64) consecutive k: q =
/// clamp(round(W / scale), -7, 7) (15 levels: -8 is never used), the scale being, of max |W| / 7
/// times 32/32, 31/32, ..., 22/32, the one of least squared error over the block (the largest
/// values may clip to 7 steps when finer steps for the rest pay more: it about halved the loss
/// change of max |W| / 7 alone on the trained default model). Each value is stored as the nibble u
/// = q + 8 (1..15; 8 for padding), two per byte, in the 256-byte group rows of the int8 layout with
/// G = 8: a group row covers 8 k, and the byte of column c (within the panel) at 4 c + j holds k =
/// 8 r + j in its low nibble and k = 8 r + 4 + j in its high nibble (j = 0..3):
///
///   group row r: [col 0: (k0|k4) (k1|k5) (k2|k6) (k3|k7)][col 1: ...] ... [col 63: ...]
///
/// so a vector of 4 c bytes, masked with 0x0f, is int8's layout of k 8r..8r+3 for its c columns,
/// and shifted right by 4 that of k 8r+4..8r+7: every kernel unpacks two 4-k groups per load
/// with an AND and a shift. Per panel and block, block_scales() holds 64 floats (one per column)
/// and block_sums() 64 int16 sum_k q over the block, for the zero point of u8 activations; K is
/// padded to whole blocks (q = 0). Storage: 4 bits + 48 bits per 64 weights = 4.75 bits a weight,
/// against int8's 8 (1.68x fewer bytes).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace lf::kernels {

/// How weights are stored.
enum class weight_type { f32, bf16, int8, int4 };

/// "f32", "bf16", "int8", "int4".
std::string_view to_string(weight_type t) noexcept;

/// Elements per k-group (group row) of a type (1, 2, 4, 8).
constexpr int group_of(weight_type t) noexcept {
  return t == weight_type::f32 ? 1 : t == weight_type::bf16 ? 2 : t == weight_type::int8 ? 4 : 8;
}

/// int4: consecutive k sharing one scale per column (a multiple of 8; K is padded to it).
inline constexpr int int4_block = 64;

/// The multiple K is padded to for a type: its group, or int4_block for int4.
constexpr int k_multiple_of(weight_type t) noexcept { return t == weight_type::int4 ? int4_block : group_of(t); }

/// Columns per panel.
inline constexpr int panel_cols = 64;

/// 64-byte aligned zeroed bytes, freed with the owner.
struct aligned_buffer {
  explicit aligned_buffer(std::size_t bytes = 0);
  std::byte* data() const noexcept { return p_.get(); }
  std::size_t size() const noexcept { return size_; }

private:
  struct deleter {
    deleter() noexcept : base(nullptr) {}
    explicit deleter(void* b) noexcept : base(b) {}
    void operator()(std::byte* p) const noexcept;
    void* base;  ///< what calloc returned (the data is aligned inside it)
  };
  std::unique_ptr<std::byte[], deleter> p_;
  std::size_t size_ = 0;
};

/// A float source matrix read through strides: element (k, n) at src[k * k_stride + n * n_stride].
/// Conv1D weights [K][N]: {p, N, 1}; a [N][K] matrix such as GPT-2's tied LM head: {p, 1, K}.
struct float_source {
  const float* data = nullptr;
  std::size_t k_stride = 0, n_stride = 0;
  float at(std::size_t k, std::size_t n) const noexcept { return data[k * k_stride + n * n_stride]; }
};

/// See the file comment. Immutable after pack(); shared by every thread of a worker.
class packed_matrix {
public:
  packed_matrix() = default;

  /// Packs the K x N matrix behind `src` as `type`.
  static packed_matrix pack(weight_type type, int K, int N, float_source src);

  weight_type type() const noexcept { return type_; }
  int k() const noexcept { return k_; }
  int n() const noexcept { return n_; }
  /// K rounded up to k_multiple_of(type); N rounded up to whole panels.
  int k_padded() const noexcept { return kp_; }
  int n_padded() const noexcept { return np_; }
  int panels() const noexcept { return np_ / panel_cols; }

  /// Panel `j`'s bytes (k_padded() / G group rows of 256 bytes).
  const std::byte* panel(int j) const noexcept { return data_.data() + static_cast<std::size_t>(j) * panel_bytes(); }
  std::size_t panel_bytes() const noexcept { return static_cast<std::size_t>(kp_ / group_of(type_)) * 256; }

  /// int8: per-column scales and sums of q (n_padded() each); nullptr for other types.
  const float* scales() const noexcept { return type_ == weight_type::int8 ? reinterpret_cast<const float*>(meta_.data()) : nullptr; }
  const std::int32_t* col_sums() const noexcept {
    return type_ == weight_type::int8 ? reinterpret_cast<const std::int32_t*>(meta_.data() + static_cast<std::size_t>(np_) * 4) : nullptr;
  }

  /// int4: blocks along K (k_padded() / int4_block), and per panel and block 64 column scales and
  /// 64 sums of q: block b of panel j at [(j * blocks() + b) * panel_cols]. nullptr for other types.
  int blocks() const noexcept { return type_ == weight_type::int4 ? kp_ / int4_block : 0; }
  const float* block_scales() const noexcept {
    return type_ == weight_type::int4 ? reinterpret_cast<const float*>(meta_.data()) : nullptr;
  }
  const std::int16_t* block_sums() const noexcept {
    return type_ == weight_type::int4
             ? reinterpret_cast<const std::int16_t*>(meta_.data() + static_cast<std::size_t>(np_) * blocks() * 4)
             : nullptr;
  }

  /// Column n as a K-vector of floats (int8 and int4 dequantized), e.g. an embedding row of a tied LM head.
  void column(int n, float* out) const noexcept;

  /// The stored value at (k, n) as a float (dequantized): for tests.
  float at(int k, int n) const noexcept;

  /// Bytes held (data and per-column metadata).
  std::size_t bytes() const noexcept { return data_.size() + meta_.size(); }

private:
  std::size_t offset(int k, int n) const noexcept;  ///< element index of (k, n) (int4: nibble index)
  std::size_t block_meta(int k, int n) const noexcept;  ///< int4: index of (k, n)'s block in the metadata

  weight_type type_ = weight_type::f32;
  int k_ = 0, n_ = 0, kp_ = 0, np_ = 0;
  aligned_buffer data_;
  aligned_buffer meta_;
};

} // namespace lf::kernels
