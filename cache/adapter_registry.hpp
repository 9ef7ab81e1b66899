#pragma once
/// The cluster's adapter registry: a versioned, append-only log of adapter events and the state it
/// describes. Pure: standard library only, no files, no clock (the router persists the log in
/// router/adapter_log.*; times are passed in).
///
///   add NAME PATH      NAME@1 (or, for a name removed before, the version after its last one)
///   update NAME PATH   NAME@(latest + 1); the older versions stay addressable as NAME@V
///   remove NAME        NAME and every NAME@V refuse new requests from now on
///
/// Versions of a name are never reused (a name added again after a remove continues its count), so
/// "NAME@V" names one set of files for the life of the log; workers key their adapter cache, and
/// with it their prefix cache, by that string. The router owns the log; every worker keeps a
/// copy, replayed when it joins and extended by each new event, to find the files of NAME@V.
/// Replaying the same events twice is harmless (apply skips what it has).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/serve_errc.hpp"

namespace lf::cache {

/// What an event does.
enum class adapter_op : std::uint8_t { add, update, remove };

/// "add", "update", "remove".
std::string_view to_string(adapter_op op) noexcept;

/// Inverse of to_string.
std::optional<adapter_op> parse_adapter_op(std::string_view s) noexcept;

/// One version's files and what the check at add found in them.
struct adapter_source {
  std::string path;                  ///< the PEFT directory, canonical
  std::uint64_t hash = 0;            ///< adapter_content_hash of its two files
  std::uint32_t rank = 0;
  std::vector<std::string> targets;  ///< modules it adapts ("attn.c_attn", ...)
  std::uint64_t bytes = 0;           ///< its weights in a worker's memory
};

/// One entry of the log.
struct adapter_event {
  std::uint64_t seq = 0;      ///< 1, 2, ...: its place in the log
  adapter_op op = adapter_op::add;
  std::string name;
  std::uint32_t version = 0;  ///< add/update: the new version; remove: the latest one
  adapter_source source;      ///< add/update only
  std::int64_t at_ms = 0;     ///< wall-clock time of the operation (informational)
};

/// A registered name as `list` shows it.
struct adapter_record {
  std::string name;
  std::uint32_t latest = 0;    ///< newest version
  bool removed = false;
  adapter_source source;       ///< the newest version's
  std::int64_t updated_ms = 0; ///< time of its last event
};

/// What a request's adapter string means (resolve()).
struct adapter_resolution {
  std::string key;   ///< what workers load: "NAME@V"; the string unchanged when unregistered
  serve_errc error = serve_errc::none;  ///< unknown_adapter: removed, or no such version
  std::string message;
};

/// "NAME@V".
std::string adapter_key(std::string_view name, std::uint32_t version);

/// Splits "NAME@V" (V a decimal >= 1 without leading zeros); std::nullopt without a valid "@V".
std::optional<std::pair<std::string_view, std::uint32_t>> split_adapter_key(std::string_view key);

/// Whether `log` is a prefix of `longer`: the same events (seq, op, name, version, path, hash) in
/// the same places. A worker's copy that is not a prefix of the router's log is stale.
bool is_prefix_of(const std::vector<adapter_event>& log, const std::vector<adapter_event>& longer);

/// See the file comment. Not thread-safe.
class adapter_registry {
public:
  /// The next event for `op` on `name` (seq and version assigned), or an error message: add of a
  /// live name, update or remove of a name that is not live.
  std::optional<adapter_event> next(adapter_op op, const std::string& name, adapter_source source,
                                    std::int64_t at_ms, std::string& error) const;

  /// Appends `e`. Events at or below last_seq() are skipped (false); throws std::invalid_argument
  /// for a gap in seq or an event that does not follow from the state (what next() refuses, or a
  /// wrong version).
  bool apply(const adapter_event& e);

  /// What `requested` ("NAME", "NAME@V" or "") means now: NAME of a live registered name is its
  /// newest version; NAME@V must be a version of a live name; names the registry never saw pass
  /// through unchanged (adapters found in a worker's adapter directory).
  adapter_resolution resolve(std::string_view requested) const;

  /// The files of "NAME@V" (removed names included: requests placed before a remove still load
  /// them), or nullptr.
  const adapter_source* source(std::string_view key) const;

  /// Keys a worker should let go after `e`: an update's older versions, a remove's every version.
  std::vector<std::string> retired_by(const adapter_event& e) const;

  /// Every name ever registered, sorted.
  std::vector<adapter_record> list() const;

  /// The whole log, oldest first.
  const std::vector<adapter_event>& log() const noexcept { return log_; }

  /// The events after `seq`.
  std::vector<adapter_event> since(std::uint64_t seq) const;

  /// seq of the newest event (0: empty).
  std::uint64_t last_seq() const noexcept { return log_.empty() ? 0 : log_.back().seq; }

private:
  struct name_state {
    std::uint32_t first = 0;   ///< version of its latest add (older ones were removed)
    std::uint32_t latest = 0;
    bool removed = false;
    std::int64_t updated_ms = 0;
  };

  std::vector<adapter_event> log_;
  std::unordered_map<std::string, name_state> names_;
  std::unordered_map<std::string, adapter_source> sources_;  ///< by "NAME@V"
};

} // namespace lf::cache
