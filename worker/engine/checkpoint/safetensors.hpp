#pragma once
/// Reader and writer for the safetensors format (https://github.com/huggingface/safetensors):
///
///   [8 bytes: little-endian u64 N][N bytes: UTF-8 JSON header][data buffer]
///
/// The header maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
/// relative to the data buffer) plus an optional "__metadata__" object of string -> string.
/// Pure C++17 + POSIX mmap; no torch, so the engine's pure tests can use it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lf::engine {

/// Element types of a safetensors tensor. The engine converts f32/f16/bf16; the others are parsed
/// so files that carry them (e.g. integer buffers) still open.
enum class dtype : std::uint8_t { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

/// The format's spelling: "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL".
std::string_view to_string(dtype t) noexcept;

/// Bytes per element (BOOL is one byte).
std::size_t dtype_size(dtype t) noexcept;

/// Inverse of to_string; std::nullopt for a spelling this reader does not know.
std::optional<dtype> parse_dtype(std::string_view s) noexcept;

/// One tensor of an open file. `data` points into the file's memory map (read-only, valid while the
/// owning safetensors_file lives) and is not necessarily aligned: use memcpy or to_float32.
struct tensor_view {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape; ///< Empty for a 0-d scalar.
  const std::byte* data = nullptr;
  std::size_t nbytes = 0;

  /// Product of `shape` (1 for a scalar, 0 if any dim is 0).
  std::int64_t numel() const noexcept;
};

/// A safetensors file mapped read-only into memory. Opening validates the whole header, so every
/// tensor_view it hands out is in bounds. Movable, not copyable; views stay valid across moves.
class safetensors_file {
public:
  /// Maps and validates `path`. Throws std::runtime_error naming the path (and the tensor, where
  /// one is at fault) for I/O errors, a bad header length, invalid JSON, a malformed entry, an
  /// unknown dtype, offsets out of bounds, a size that disagrees with shape * dtype, or overlapping
  /// tensors. Gaps between tensors and trailing bytes are tolerated (the reference reader refuses
  /// them; nothing here depends on their absence).
  static safetensors_file open(const std::string& path);

  /// An empty object with no file, no tensors and no metadata (also the moved-from state).
  safetensors_file() noexcept = default;
  safetensors_file(safetensors_file&& other) noexcept;
  safetensors_file& operator=(safetensors_file&& other) noexcept;
  safetensors_file(const safetensors_file&) = delete;
  safetensors_file& operator=(const safetensors_file&) = delete;
  ~safetensors_file();

  /// The tensor called `name`, or nullptr.
  const tensor_view* find(std::string_view name) const noexcept;

  /// The tensor called `name`; throws std::runtime_error naming the file and the tensor.
  const tensor_view& at(std::string_view name) const;

  /// All tensors, in data-buffer order (ascending begin offset).
  const std::vector<tensor_view>& tensors() const noexcept { return tensors_; }

  /// The "__metadata__" object (empty when the header has none).
  const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }

  /// The path given to open().
  const std::string& path() const noexcept { return path_; }

private:
  void release() noexcept;

  std::string path_;
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  std::vector<tensor_view> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_; // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

/// Converts `t` to float32 into `out`, which must hold t.numel() floats. Exact for F32/F16/BF16;
/// throws std::runtime_error naming the tensor for any other dtype.
void to_float32(const tensor_view& t, float* out);

/// Same, into a new vector.
std::vector<float> to_float32(const tensor_view& t);

/// Converts `n` floats to `type` (F32, F16 or BF16, rounding to nearest even) into `out`, which
/// must hold n * dtype_size(type) bytes. Throws std::invalid_argument for other dtypes.
void from_float32(const float* in, std::size_t n, dtype type, std::byte* out);

/// One tensor to write: `data` holds `nbytes` == numel(shape) * dtype_size(type) bytes in
/// row-major order and must stay valid during write_safetensors.
struct tensor_to_write {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::size_t nbytes = 0;
};

/// Writes a safetensors file the reference implementation would also write: header padded with
/// spaces to a multiple of 8 bytes, tensors stored contiguously, ordered by element size (largest
/// first) then name, so every tensor starts aligned to its element size. Empty `metadata` writes
/// no "__metadata__". Writes `path`.tmp, fsyncs, then renames over `path`, so a crash never leaves
/// a half-written file. Throws std::invalid_argument (naming the tensor) for inconsistent input,
/// duplicate names or the reserved name "__metadata__", std::runtime_error naming the path on I/O
/// errors.
void write_safetensors(const std::string& path, const std::vector<tensor_to_write>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

} // namespace lf::engine
