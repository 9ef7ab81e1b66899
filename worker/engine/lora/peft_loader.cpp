#include "worker/engine/lora/peft_loader.hpp"

#include "worker/engine/lora/adapter_paths.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace lf::engine {

namespace fs = std::filesystem;

namespace {

/// The directory a load reads: a registered key's (hash checked), else the root's.
fs::path adapter_dir_of(const std::string& root, const adapter_source_fn& sources,
                        const std::string& name) {
  if (auto src = sources ? sources(name) : std::nullopt) {
    std::uint64_t now = 0;
    try {
      now = adapter_content_hash(src->path);
    } catch (const std::exception& e) {
      throw cache::adapter_load_error(serve_errc::unknown_adapter,
                                      "adapter \"" + name + "\": " + e.what());
    }
    if (now != src->hash)
      throw cache::adapter_load_error(serve_errc::unknown_adapter,
                                      "adapter \"" + name + "\": the files in " + src->path
                                        + " changed since it was registered; update it to serve "
                                          "them");
    return src->path;
  }
  if (root.empty())
    throw cache::adapter_load_error(serve_errc::unknown_adapter,
                                    "adapter \"" + name + "\" is not registered");
  fs::path dir;
  try {
    dir = resolve_adapter_path(root, name);
  } catch (const std::invalid_argument& e) {
    throw cache::adapter_load_error(serve_errc::invalid_request, e.what());
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw cache::adapter_load_error(serve_errc::unknown_adapter,
                                    "adapter \"" + name + "\" not found under " + root);
  return dir;
}

} // namespace

cache::adapter_load_fn peft_loader(std::string root, gpt2_config base, payload_factory make,
                                   adapter_source_fn sources) {
  return [root = std::move(root), base, make = std::move(make), sources = std::move(sources)](
           const std::string& name) -> std::shared_ptr<const cache::adapter_payload> {
    auto a = load_peft_adapter(adapter_dir_of(root, sources, name).string(), base);
    a.name = name;
    return make(a);
  };
}

cache::adapter_name_check peft_name_check(std::string root, adapter_source_fn sources) {
  return [root = std::move(root), sources = std::move(sources)](const std::string& name) -> std::string {
    if (root.empty() || (sources && sources(name)))
      return {};  // without a root, an unregistered name fails its load with unknown_adapter
    try {
      resolve_adapter_path(root, name);
      return {};
    } catch (const std::exception& e) {
      return e.what();
    }
  };
}

std::uint64_t adapter_content_hash(const std::string& dir) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char* file : {"adapter_config.json", "adapter_model.safetensors"}) {
    const auto path = (fs::path(dir) / file).string();
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw std::runtime_error(path + ": cannot be read");
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      for (std::streamsize i = 0; i < in.gcount(); ++i) {
        h ^= static_cast<unsigned char>(buf[i]);
        h *= 1099511628211ull;
      }
    }
    h ^= 0xff;  // a file boundary, so moving bytes between the files changes the hash
    h *= 1099511628211ull;
  }
  return h;
}

cache::adapter_source check_peft_adapter(const std::string& dir, const gpt2_config& base,
                                         std::uint32_t max_rank, std::size_t max_bytes) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw std::runtime_error(dir + " is not a directory");
  cache::adapter_source s;
  s.path = dir;
  s.hash = adapter_content_hash(dir);
  const auto a = load_peft_adapter(dir, base);
  if (a.rank <= 0 || static_cast<std::uint32_t>(a.rank) > max_rank)
    throw std::runtime_error(dir + ": rank " + std::to_string(a.rank)
                             + " is above the cluster's limit of " + std::to_string(max_rank)
                             + " (max_adapter_rank)");
  s.rank = static_cast<std::uint32_t>(a.rank);
  for (auto m : a.modules())
    s.targets.emplace_back(to_string(m));
  s.bytes = a.bytes();
  if (s.bytes > max_bytes)
    throw std::runtime_error(dir + ": its weights need " + cache::format_mib(s.bytes)
                             + ", more than a worker's whole adapter cache (" + cache::format_mib(max_bytes) + ")");
  return s;
}

std::unique_ptr<cache::adapter_manager> make_peft_manager(std::string root, gpt2_config base,
                                                          payload_factory make,
                                                          cache::adapter_cache_config cfg,
                                                          adapter_source_fn sources) {
  auto check = peft_name_check(root, sources);
  return std::make_unique<cache::adapter_manager>(
    cfg, peft_loader(std::move(root), base, std::move(make), std::move(sources)), std::move(check));
}

} // namespace lf::engine
