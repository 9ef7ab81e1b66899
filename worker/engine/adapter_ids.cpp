// list_adapter_ids (lora_adapter.hpp): the adapters an adapter directory can serve.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "worker/engine/lora_adapter.hpp"

namespace lf::engine {

namespace {

void walk(const std::filesystem::path& root, const std::filesystem::path& dir, const std::string& prefix,
          int depth_left, std::vector<std::string>& out) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec))
      continue;
    const auto id = prefix + it->path().filename().string();
    try {
      (void) resolve_adapter_path(root.string(), id);  // its rules: names a request could use
    } catch (const std::exception&) {
      continue;
    }
    if (std::filesystem::is_regular_file(it->path() / "adapter_config.json", ec))
      out.push_back(id);
    else if (depth_left > 1)
      walk(root, it->path(), id + "/", depth_left - 1, out);
  }
}

} // namespace

std::vector<std::string> list_adapter_ids(const std::string& adapter_root, int max_depth) {
  std::vector<std::string> out;
  if (adapter_root.empty() || max_depth < 1)
    return out;
  walk(adapter_root, adapter_root, "", max_depth, out);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace lf::engine
