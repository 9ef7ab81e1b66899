// Adapter ids: the checked id -> directory mapping (resolve_adapter_path) and the ids an adapter
// directory can serve (list_adapter_ids).
#include "worker/engine/lora/adapter_paths.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <system_error>

namespace lf::engine {

namespace fs = std::filesystem;

namespace {

/// The id as it may be shown in a message: printable ASCII kept, every other byte as \xNN, so a
/// hostile id cannot forge log lines or terminal escapes. Long ids are cut.
std::string quoted(const std::string& id) {
  std::string out = "\"";
  for (std::size_t i = 0; i < id.size() && i < 160; ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + (id.size() > 160 ? "...\"" : "\"");
}

[[noreturn]] void refuse(const std::string& id, const std::string& why) {
  throw std::invalid_argument("adapter id " + quoted(id) + " refused: " + why);
}

bool id_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
         || c == '_' || c == '.' || c == '/';
}

/// True if `p` is `root` or lies below it, compared component by component (a string prefix
/// test would let "/adapters-evil" pass for root "/adapters").
bool within(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q)
    if (q == p.end() || *r != *q)
      return false;
  return true;
}

} // namespace

fs::path resolve_adapter_path(const std::string& adapter_root, const std::string& adapter_id) {
  if (adapter_root.empty())
    throw std::invalid_argument("adapter root is empty");
  const std::string& id = adapter_id;
  if (id.empty())
    refuse(id, "it is empty");
  if (id.size() > max_adapter_id_length)
    refuse(id, "longer than " + std::to_string(max_adapter_id_length) + " bytes");
  for (unsigned char c : id) {
    if (c == '\0')
      refuse(id, "it contains a NUL byte");
    if (c < 0x20 || c == 0x7f)
      refuse(id, "it contains a control character");
    if (c == '\\')
      refuse(id, "it contains a backslash (use '/' between subdirectories)");
    if (!id_char(c))
      refuse(id, "only letters, digits, '-', '_', '.' and '/' are allowed");
  }
  if (id.front() == '/')
    refuse(id, "absolute paths are not allowed");
  if (id.back() == '/')
    refuse(id, "it ends with '/'");
  if (id.find("//") != std::string::npos)
    refuse(id, "it contains an empty component ('//')");
  for (std::size_t begin = 0; begin <= id.size();) {
    const std::size_t end = std::min(id.find('/', begin), id.size());
    if (id[begin] == '.') // ".", ".." and hidden names: none of them names an adapter
      refuse(id, id.compare(begin, end - begin, "..") == 0
                   ? "'..' components are not allowed"
                   : "a component must not start with '.'");
    begin = end + 1;
  }

  // Resolve symlinks on both sides, then require the result to stay strictly below the root.
  fs::path root = fs::weakly_canonical(fs::absolute(adapter_root));
  if (root.has_relative_path() && root.filename().empty()) // "/srv/adapters/" of a missing root
    root = root.parent_path();
  const fs::path resolved = fs::weakly_canonical(root / id);
  if (!within(root, resolved) || resolved == root)
    refuse(id, "it resolves to " + quoted(resolved.string()) + ", outside the adapter root "
                 + quoted(root.string()));
  return resolved;
}

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
