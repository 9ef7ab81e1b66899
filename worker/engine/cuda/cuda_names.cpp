// The CUDA backend's pure helpers, in every build.
#include <charconv>

#include "worker/engine/cuda/cuda_engine.hpp"

namespace lf::engine {

std::optional<int> parse_cuda_device(std::string_view device) {
  if (device == "cuda")
    return 0;
  constexpr std::string_view prefix = "cuda:";
  if (device.substr(0, prefix.size()) != prefix || device.size() == prefix.size() || device.size() > prefix.size() + 3)
    return std::nullopt;
  int n = 0;
  const auto* first = device.data() + prefix.size();
  const auto* last = device.data() + device.size();
  auto [p, ec] = std::from_chars(first, last, n);
  if (ec != std::errc{} || p != last || n < 0)
    return std::nullopt;
  return n;
}

std::size_t cuda_kv_block_bytes(const gpt2_config& c, int block_size) noexcept {
  return 2u * static_cast<std::size_t>(c.n_layer) * static_cast<std::size_t>(c.n_embd)
         * static_cast<std::size_t>(block_size) * sizeof(float);
}

} // namespace lf::engine
