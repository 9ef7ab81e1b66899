#pragma once
/// Adapter ids and their directories: an id names a PEFT adapter directory under a worker's
/// adapter root ("shakespeare", "styles/kjv"), checked so that no id reaches outside the root.
/// Pure C++17 (std::filesystem).

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace lf::engine {

/// Longest adapter id resolve_adapter_path() accepts, in bytes.
inline constexpr std::size_t max_adapter_id_length = 128;

/// The directory of adapter `adapter_id` under `adapter_root`, canonical (symlinks resolved, via
/// std::filesystem::weakly_canonical, so neither needs to exist). Ids are relative paths of
/// letters, digits, '-', '_' and '.', with '/' between subdirectories ("shakespeare",
/// "styles/kjv"). Throws std::invalid_argument, quoting the id with control bytes escaped, for an
/// empty root or id, an id longer than max_adapter_id_length, a NUL, control character,
/// backslash or other character outside that set, a leading or trailing '/', "//", a component
/// that starts with '.' (so no ".", ".." or hidden names), or a path that resolves outside the
/// root or to the root itself (e.g. through a symlink). Throws std::filesystem::filesystem_error if
/// the file system cannot be queried. Checking and opening are separate steps: a symlink swapped
/// in between is not caught, so the adapter root must not be writable by untrusted parties.
std::filesystem::path resolve_adapter_path(const std::string& adapter_root,
                                           const std::string& adapter_id);

/// The adapter ids under `adapter_root` that resolve_adapter_path accepts and whose directory
/// holds an adapter_config.json, at most `max_depth` directories deep, sorted. Unreadable
/// directories are skipped; an empty root gives none.
std::vector<std::string> list_adapter_ids(const std::string& adapter_root, int max_depth = 2);

} // namespace lf::engine
