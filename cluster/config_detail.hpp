#pragma once
/// Internal to the config loader: the issues found so far and where every key was seen, shared by
/// the TOML reading pass (config_read.cpp) and the checking pass (config_check.cpp).

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster_config.hpp"

namespace lf::cluster::detail {

/// What both passes write to.
struct parse_state {
  std::string file;                            ///< as given by the caller (for messages)
  std::filesystem::path dir;                   ///< the file's directory (relative paths)
  load_options opts;
  std::vector<config_issue> issues;
  std::map<std::string, source_pos> positions;  ///< key path -> where its value is
  std::map<std::string, std::string> key_files;  ///< key path -> key file it was read from

  /// Records a problem with `key` at the position where that key (or its nearest parent) was seen.
  void add(const std::string& key, std::string reason);
  /// Has a problem already been recorded for `key` or a key under it? Pass 2 stays quiet about
  /// the consequences of a value pass 1 refused.
  bool reported(const std::string& key) const;
  /// Same at an explicit position.
  void add_at(source_pos pos, const std::string& key, std::string reason);
};

/// Pass 1 (needs toml++): syntax, known keys, types, ranges; resolves paths; reads key files.
/// Returns false when the text is not TOML at all (nothing else can be said then).
bool read_config(const std::string& text, cluster_config& out, parse_state& st);

/// Pass 2 (plain C++): relations between values (router node exists, duplicate names, port
/// clashes, heartbeat vs timeout, CURVE keys, TLS completeness) and, when asked, the file system.
void check_config(cluster_config& cfg, parse_state& st);

/// `value` resolved against `dir` when relative, lexically normalised.
std::string resolve_path(const std::filesystem::path& dir, const std::string& value);

} // namespace lf::cluster::detail
