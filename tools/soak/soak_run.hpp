#pragma once
/// `lorafleet soak`: the whole fault soak of one cluster config (docs/benchmarks.md, "Fault soak").
///
///   launch the config ──> ready ──> N requests from C clients ──────────────────> all ended
///                                     │ warm-up RSS at 10%                          │
///                                     │ faults: kill at 20%, stop at 45%, drain 70% │
///                                     v                                             v
///   replay resumed + control requests on the calm cluster ──> KV blocks free? ──> RSS ──> summary
///
/// Exit status 0 when nothing was violated, 1 otherwise.

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "tools/soak/rss.hpp"

namespace lf::soak {

/// Everything `lorafleet soak` takes.
struct soak_options {
  std::string binary;          ///< the lorafleet executable (launch, drain)
  std::string config;          ///< the cluster config
  std::string work_dir;        ///< ready file, launch.log
  std::uint32_t requests = 2000;
  std::uint32_t clients = 128;
  std::uint32_t threads = 2;   ///< client threads
  std::uint64_t seed = 1;
  bool faults = true;          ///< kill, stop (and drain)
  bool drain = true;           ///< the drain fault (`lorafleet drain`)
  std::size_t controls = 32;   ///< non-resumed requests replayed as a control
  rss_bound rss;
  double warmup_share = 0.10;  ///< RSS is sampled for "before" when this share has ended
  double tail_share = 0.15;    ///< this share of the requests is not sent before the faults are over
  std::string log_level = "warn";  ///< the cluster's
  std::chrono::seconds limit{1800};  ///< the request phase gives up after this
  std::chrono::seconds progress_every{5};
};

/// Runs the soak; progress lines and the summary go to `out`. Returns the exit status.
int run_soak(const soak_options& o, std::ostream& out);

} // namespace lf::soak
