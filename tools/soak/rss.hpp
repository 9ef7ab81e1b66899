#pragma once
/// Resident memory of the cluster's node processes, for the soak's leak check: VmRSS from
/// /proc/PID/status at warm-up and at the end, and the bound the growth must stay within.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

namespace lf::soak {

/// VmRSS in KiB from the text of a /proc/PID/status file; nullopt when absent (a zombie, a
/// kernel thread) or malformed.
std::optional<std::uint64_t> parse_vm_rss_kib(std::string_view status_text);

/// VmRSS of a live process in KiB; nullopt when it is gone or unreadable.
std::optional<std::uint64_t> read_rss_kib(pid_t pid);

/// How much a node's RSS may grow from warm-up to the end: the larger of `percent` of its
/// warm-up RSS and `mib` MiB.
struct rss_bound {
  double percent = 25;
  double mib = 64;

  /// The most RSS (KiB) allowed at the end for `before_kib` at warm-up.
  std::uint64_t limit_kib(std::uint64_t before_kib) const;
  /// "+25% or +64 MiB, whichever is larger"
  std::string describe() const;
};

} // namespace lf::soak
