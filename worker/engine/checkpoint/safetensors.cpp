#include "worker/engine/checkpoint/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "worker/engine/kernels/common/half.hpp"

namespace lf::engine {

namespace {

using json = nlohmann::json;

/// The reference implementation's limit; a bigger header is a corrupt length, not a real model.
constexpr std::uint64_t max_header_size = 100'000'000;

struct dtype_info {
  dtype type;
  std::string_view name;
  std::size_t size;
};

constexpr dtype_info dtype_table[] = {
  {dtype::f32, "F32", 4}, {dtype::f16, "F16", 2}, {dtype::bf16, "BF16", 2},
  {dtype::f64, "F64", 8}, {dtype::i64, "I64", 8}, {dtype::i32, "I32", 4},
  {dtype::i16, "I16", 2}, {dtype::i8, "I8", 1},   {dtype::u8, "U8", 1},
  {dtype::boolean, "BOOL", 1},
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors: " + path + ": " + what);
}

[[noreturn]] void fail(const std::string& path, const std::string& tensor, const std::string& what) {
  fail(path, "tensor '" + tensor + "': " + what);
}

std::string errno_text() {
  return std::strerror(errno);
}

/// Reads a non-negative JSON integer; nullopt for floats, negatives, strings, ...
std::optional<std::uint64_t> as_u64(const json& j) {
  if (j.is_number_unsigned())
    return j.get<std::uint64_t>();
  if (j.is_number_integer() && j.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(j.get<std::int64_t>());
  return std::nullopt;
}

/// a * b, or nullopt if it overflows `limit`.
std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t limit) {
  if (a != 0 && b > limit / a)
    return std::nullopt;
  return a * b;
}

/// Parses one tensor entry and checks it against the data buffer of `data_size` bytes.
tensor_view parse_entry(const std::string& path, const std::string& name, const json& entry,
                        const std::byte* data, std::uint64_t data_size,
                        std::pair<std::uint64_t, std::uint64_t>& offsets) {
  if (!entry.is_object())
    fail(path, name, "header entry is not a JSON object");
  auto field = [&](const char* key) -> const json& {
    auto it = entry.find(key);
    if (it == entry.end())
      fail(path, name, std::string("missing \"") + key + "\"");
    return *it;
  };
  tensor_view t;
  t.name = name;

  const json& jtype = field("dtype");
  if (!jtype.is_string())
    fail(path, name, "\"dtype\" is not a string");
  auto type_name = jtype.get<std::string>();
  auto type = parse_dtype(type_name);
  if (!type)
    fail(path, name, "unknown dtype \"" + type_name
                       + "\" (supported: F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL)");
  t.type = *type;

  const json& jshape = field("shape");
  if (!jshape.is_array())
    fail(path, name, "\"shape\" is not an array");
  constexpr auto int64_max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t numel = 1;
  bool numel_overflow = false;
  for (const auto& jdim : jshape) {
    if (jdim.is_number_integer() && !jdim.is_number_unsigned() && jdim.get<std::int64_t>() < 0)
      fail(path, name, "negative dimension " + jdim.dump() + " in shape " + jshape.dump());
    auto dim = as_u64(jdim);
    if (!dim)
      fail(path, name, "shape " + jshape.dump() + " has a non-integer dimension");
    if (*dim > int64_max)
      fail(path, name, "dimension " + jdim.dump() + " is too large");
    t.shape.push_back(static_cast<std::int64_t>(*dim));
    auto next = checked_mul(numel, *dim, int64_max);
    numel_overflow = numel_overflow || !next;
    numel = next.value_or(0);
  }

  const json& joff = field("data_offsets");
  std::optional<std::uint64_t> begin, end;
  if (joff.is_array() && joff.size() == 2) {
    begin = as_u64(joff[0]);
    end = as_u64(joff[1]);
  }
  if (!begin || !end)
    fail(path, name, "\"data_offsets\" must be [begin, end] with non-negative integers, got "
                       + joff.dump());
  if (*begin > *end)
    fail(path, name, "data_offsets " + joff.dump() + " end before they begin");
  if (*end > data_size)
    fail(path, name, "data_offsets " + joff.dump() + " reach past the end of the data buffer ("
                       + std::to_string(data_size) + " bytes; is the file truncated?)");

  auto expected = numel_overflow ? std::nullopt : checked_mul(numel, dtype_size(t.type), int64_max);
  if (!expected || *expected != *end - *begin)
    fail(path, name, "data_offsets " + joff.dump() + " span " + std::to_string(*end - *begin)
                       + " bytes but shape " + jshape.dump() + " of " + type_name + " needs "
                       + (expected ? std::to_string(*expected) : std::string("an overflowing count of"))
                       + " bytes");
  t.data = data + *begin;
  t.nbytes = static_cast<std::size_t>(*end - *begin);
  offsets = {*begin, *end};
  return t;
}

} // namespace

std::string_view to_string(dtype t) noexcept {
  for (const auto& d : dtype_table)
    if (d.type == t)
      return d.name;
  return "?";
}

std::size_t dtype_size(dtype t) noexcept {
  for (const auto& d : dtype_table)
    if (d.type == t)
      return d.size;
  return 0;
}

std::optional<dtype> parse_dtype(std::string_view s) noexcept {
  for (const auto& d : dtype_table)
    if (d.name == s)
      return d.type;
  return std::nullopt;
}

std::int64_t tensor_view::numel() const noexcept {
  std::int64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

// --- safetensors_file -------------------------------------------------------------------------

safetensors_file safetensors_file::open(const std::string& path) {
  safetensors_file f;
  f.path_ = path;

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(path, "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    auto why = errno_text();
    ::close(fd);
    fail(path, "cannot stat: " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (file_size < 8) {
    ::close(fd);
    fail(path, "file is " + std::to_string(file_size)
                 + " bytes, too short for the 8-byte header length (not a safetensors file?)");
  }
  void* map = ::mmap(nullptr, static_cast<std::size_t>(file_size), PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd); // the mapping keeps its own reference to the file
  if (map == MAP_FAILED)
    fail(path, std::string("mmap failed: ") + std::strerror(map_errno));
  f.map_ = map;
  f.map_size_ = static_cast<std::size_t>(file_size);

  const auto* bytes = static_cast<const std::byte*>(map);
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) // little-endian regardless of the host
    header_size = (header_size << 8) | std::to_integer<std::uint64_t>(bytes[i]);
  if (header_size > max_header_size)
    fail(path, "header length " + std::to_string(header_size)
                 + " exceeds the 100 MB limit (corrupt file or not a safetensors file?)");
  if (header_size > file_size - 8)
    fail(path, "header length " + std::to_string(header_size) + " runs past the end of the "
                 + std::to_string(file_size) + "-byte file (truncated?)");

  std::string_view header_text(reinterpret_cast<const char*>(bytes + 8),
                               static_cast<std::size_t>(header_size));
  json header;
  try {
    header = json::parse(header_text);
  } catch (const json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object())
    fail(path, "header is not a JSON object");

  const std::byte* data = bytes + 8 + header_size;
  const std::uint64_t data_size = file_size - 8 - header_size;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object())
        fail(path, "\"__metadata__\" is not a JSON object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          fail(path, "metadata value for \"" + m.key() + "\" is not a string");
        f.metadata_.emplace(m.key(), m->get<std::string>());
      }
      continue;
    }
    std::pair<std::uint64_t, std::uint64_t> range;
    f.tensors_.push_back(parse_entry(path, it.key(), *it, data, data_size, range));
    ranges.push_back(range);
  }

  // Sort into data-buffer order, then look for overlaps between neighbours (empty tensors occupy
  // no bytes and cannot overlap anything).
  std::vector<std::size_t> order(f.tensors_.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ranges[a] != ranges[b] ? ranges[a] < ranges[b] : f.tensors_[a].name < f.tensors_[b].name;
  });
  std::vector<tensor_view> sorted;
  sorted.reserve(order.size());
  std::uint64_t covered_end = 0;
  const std::string* covered_by = nullptr;
  for (auto i : order) {
    const auto& [begin, end] = ranges[i];
    if (begin != end) {
      if (covered_by != nullptr && begin < covered_end)
        fail(path, f.tensors_[i].name,
             "data_offsets [" + std::to_string(begin) + "," + std::to_string(end)
               + "] overlap tensor '" + *covered_by + "' (which ends at " + std::to_string(covered_end)
               + ")");
      if (end > covered_end) {
        covered_end = end;
        covered_by = &f.tensors_[i].name;
      }
    }
    sorted.push_back(f.tensors_[i]);
  }
  f.tensors_ = std::move(sorted);
  for (std::size_t i = 0; i < f.tensors_.size(); ++i)
    f.index_.emplace(f.tensors_[i].name, i);
  return f;
}

safetensors_file::safetensors_file(safetensors_file&& other) noexcept
  : path_(std::move(other.path_)),
    map_(std::exchange(other.map_, nullptr)),
    map_size_(std::exchange(other.map_size_, 0)),
    tensors_(std::move(other.tensors_)),
    index_(std::move(other.index_)),
    metadata_(std::move(other.metadata_)) {
  other.tensors_.clear();
  other.index_.clear();
  other.metadata_.clear();
}

safetensors_file& safetensors_file::operator=(safetensors_file&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    tensors_ = std::move(other.tensors_);
    index_ = std::move(other.index_);
    metadata_ = std::move(other.metadata_);
    other.tensors_.clear();
    other.index_.clear();
    other.metadata_.clear();
  }
  return *this;
}

safetensors_file::~safetensors_file() {
  release();
}

void safetensors_file::release() noexcept {
  if (map_ != nullptr)
    ::munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
}

const tensor_view* safetensors_file::find(std::string_view name) const noexcept {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const tensor_view& safetensors_file::at(std::string_view name) const {
  if (auto* t = find(name))
    return *t;
  fail(path_, std::string(name), "no such tensor (the file has " + std::to_string(tensors_.size())
                                   + " tensors)");
}

// --- conversions ------------------------------------------------------------------------------

void to_float32(const tensor_view& t, float* out) {
  const auto n = static_cast<std::size_t>(t.numel());
  switch (t.type) {
    case dtype::f32:
      if (n > 0)
        std::memcpy(out, t.data, n * sizeof(float));
      return;
    case dtype::f16:
    case dtype::bf16: {
      // The mapped data may be unaligned; memcpy each element (compiles to a plain load).
      const bool half = t.type == dtype::f16;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, t.data + 2 * i, sizeof h);
        out[i] = half ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    }
    default:
      throw std::runtime_error("safetensors: tensor '" + t.name + "' has dtype "
                               + std::string(to_string(t.type))
                               + "; to_float32 supports only F32, F16 and BF16");
  }
}

std::vector<float> to_float32(const tensor_view& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  to_float32(t, out.data());
  return out;
}

void from_float32(const float* in, std::size_t n, dtype type, std::byte* out) {
  switch (type) {
    case dtype::f32:
      if (n > 0)
        std::memcpy(out, in, n * sizeof(float));
      return;
    case dtype::f16:
    case dtype::bf16: {
      const bool half = type == dtype::f16;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h = half ? f32_to_f16(in[i]) : f32_to_bf16(in[i]);
        std::memcpy(out + 2 * i, &h, sizeof h);
      }
      return;
    }
    default:
      throw std::invalid_argument("safetensors: from_float32 cannot produce dtype "
                                  + std::string(to_string(type)) + " (only F32, F16, BF16)");
  }
}

} // namespace lf::engine
