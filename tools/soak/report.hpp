#pragma once
/// The soak's final summary: what was sent and how it ended, the faults and when they happened,
/// the replays, the KV blocks, the nodes' memory, and every violation. Pure formatting.

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <sys/types.h>

#include "tools/soak/check.hpp"
#include "tools/soak/fault_sequence.hpp"
#include "tools/soak/rss.hpp"

namespace lf::soak {

/// One node's resident memory at warm-up and at the end.
struct node_memory {
  std::string node;
  pid_t pid_before = 0, pid_after = 0;  ///< differ when launch restarted it
  std::optional<std::uint64_t> before_kib, after_kib;
  std::uint64_t peak_kib = 0;           ///< the largest sample during the run
};

/// The RSS violations of `nodes` under `bound` (a node missing a sample is one).
std::vector<std::string> check_memory(const std::vector<node_memory>& nodes, const rss_bound& bound);

/// Everything the summary shows.
struct soak_report {
  std::uint32_t requests = 0, clients = 0;
  std::uint64_t seed = 0;
  run_counts counts;
  double duration_s = 0;                   ///< first submit to last terminal reply
  std::map<std::string, double> router;    ///< router.* stats at the end
  std::vector<fault_record> faults;
  bool held_for_faults = false;            ///< the run's tail had to wait for the faults to end
  std::size_t replays = 0, replays_resumed = 0, replay_mismatches = 0;
  std::vector<node_memory> memory;
  rss_bound bound;
  bool kv_free = false;
  std::string kv_detail;                   ///< "4 workers, 1024/1024 blocks free each" or what was not free
  std::vector<std::string> violations;
};

/// The summary, a few dozen lines; the violations listed up to `max_listed`.
void print_report(const soak_report& r, std::ostream& out, std::size_t max_listed = 40);

} // namespace lf::soak
