// write_safetensors: the writing half of safetensors.hpp, kept apart from the mmap reader.

#include "worker/engine/checkpoint/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace lf::engine {

namespace {

/// Owns the temporary file while it is written; removes it unless commit() renamed it into place.
class atomic_file {
public:
  explicit atomic_file(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0)
      fail("cannot create", tmp_);
  }

  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;

  ~atomic_file() {
    if (fd_ >= 0)
      ::close(fd_);
    if (!committed_)
      ::unlink(tmp_.c_str());
  }

  void write(const void* data, std::size_t n) {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
      // Large tensors are written in chunks: some kernels cap a single write at ~2 GB.
      auto chunk = std::min<std::size_t>(n, std::size_t{1} << 30);
      ssize_t w = ::write(fd_, p, chunk);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        fail("cannot write", tmp_);
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  /// Flushes to disk, then atomically replaces the destination.
  void commit() {
    if (::fsync(fd_) != 0)
      fail("cannot fsync", tmp_);
    int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0)
      fail("cannot close", tmp_);
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      fail("cannot rename into place", tmp_);
    committed_ = true;
  }

private:
  /// Reads errno first, before building the message can disturb it.
  [[noreturn]] void fail(const char* what, const std::string& file) const {
    const int err = errno;
    throw std::runtime_error("safetensors: " + path_ + ": " + what + " " + file + ": "
                             + std::strerror(err));
  }

  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

[[noreturn]] void bad_input(const std::string& path, const std::string& tensor,
                            const std::string& what) {
  throw std::invalid_argument("safetensors: " + path + ": tensor '" + tensor + "': " + what);
}

/// Checks that one tensor_to_write is self-consistent.
void validate(const std::string& path, const tensor_to_write& t) {
  if (t.name.empty() || t.name == "__metadata__")
    bad_input(path, t.name, "invalid tensor name");
  constexpr auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t bytes = dtype_size(t.type);
  for (auto d : t.shape) {
    if (d < 0)
      bad_input(path, t.name, "negative dimension " + std::to_string(d));
    auto dim = static_cast<std::uint64_t>(d);
    if (dim != 0 && bytes > limit / dim)
      bad_input(path, t.name, "shape is too large");
    bytes *= dim;
  }
  if (bytes != t.nbytes)
    bad_input(path, t.name, "nbytes is " + std::to_string(t.nbytes) + " but shape and dtype "
                              + std::string(to_string(t.type)) + " need " + std::to_string(bytes));
  if (t.nbytes > 0 && t.data == nullptr)
    bad_input(path, t.name, "data is null");
}

} // namespace

void write_safetensors(const std::string& path, const std::vector<tensor_to_write>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::set<std::string_view> names;
  for (const auto& t : tensors) {
    validate(path, t);
    if (!names.insert(t.name).second)
      bad_input(path, t.name, "duplicate tensor name");
  }

  // Largest elements first, then by name (the reference writer's order): as the data buffer
  // starts 8-aligned, every tensor then starts aligned to its element size.
  std::vector<const tensor_to_write*> order;
  order.reserve(tensors.size());
  for (const auto& t : tensors)
    order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const tensor_to_write* a, const tensor_to_write* b) {
    auto sa = dtype_size(a->type), sb = dtype_size(b->type);
    return sa != sb ? sa > sb : a->name < b->name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto* t : order) {
    auto& entry = header[t->name];
    entry["dtype"] = std::string(to_string(t->type));
    entry["shape"] = t->shape;
    entry["data_offsets"] = {offset, offset + t->nbytes};
    offset += t->nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("safetensors: " + path + ": cannot encode header (tensor names and "
                                "metadata must be valid UTF-8): " + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  unsigned char length[8];
  auto n = static_cast<std::uint64_t>(text.size());
  for (auto& byte : length) { // little-endian regardless of the host
    byte = static_cast<unsigned char>(n & 0xff);
    n >>= 8;
  }

  atomic_file out(path);
  out.write(length, sizeof length);
  out.write(text.data(), text.size());
  for (const auto* t : order)
    if (t->nbytes > 0)
      out.write(t->data, t->nbytes);
  out.commit();
}

} // namespace lf::engine
