#pragma once
/// The adapter registry's log on the router node's disk: one JSON object per line, appended and
/// fsync'ed before an operation is answered, replayed when the router starts, so adapters survive
/// a router restart. Standard library, POSIX files and nlohmann-json; no CAF.
///
///   {"seq":3,"op":"update","name":"tone","version":2,"path":"/srv/adapters/tone-v2",
///    "hash":"9f0c...","rank":8,"targets":["attn.c_attn"],"bytes":1179648,"at_ms":1795000000000}
///
/// A crash while appending can leave a partial last line: it is cut off at start (with a warning:
/// that operation was never answered). Any other bad line refuses to start the router, naming the
/// file and the line, rather than serve a registry that differs from what clients were told.

#include <string>
#include <string_view>

#include "cache/adapter_registry.hpp"

namespace lf::router {

/// One event as its line (no newline).
std::string encode_adapter_event(const cache::adapter_event& e);

/// Inverse of encode_adapter_event; throws std::invalid_argument saying what is wrong.
cache::adapter_event decode_adapter_event(std::string_view line);

/// The log file. Not thread-safe (the router actor owns it).
class adapter_log_file {
public:
  /// Opens `path` (created if missing, with its directory) and replays it into `reg`, which must
  /// be empty. `warning` gets a note when a torn last line was cut off. Throws std::runtime_error
  /// naming the file (and line) when it cannot be read, written or replayed.
  adapter_log_file(std::string path, cache::adapter_registry& reg, std::string& warning);
  ~adapter_log_file();

  adapter_log_file(const adapter_log_file&) = delete;
  adapter_log_file& operator=(const adapter_log_file&) = delete;

  /// Appends `e` and waits for the disk (fsync). Throws std::runtime_error naming the file.
  void append(const cache::adapter_event& e);

  const std::string& path() const noexcept { return path_; }

private:
  std::string path_;
  int fd_ = -1;
};

} // namespace lf::router
