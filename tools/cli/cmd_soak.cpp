// `lorafleet soak`: the fault soak (tools/soak/, docs/benchmarks.md "Fault soak").
#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include "cluster/child_process.hpp"
#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/soak/soak_run.hpp"

namespace lf::tools {

int cmd_soak(int argc, char** argv) {
  args a(argc, argv, 2, {"no-faults", "no-drain", "long"});
  if (a.positional().size() > 1)
    throw std::invalid_argument("give one cluster config (default: cluster-configs/three-nodes.toml)");
  soak::soak_options o;
  o.binary = a.str("binary", cluster::self_executable());
  o.config = a.positional().empty() ? std::string(LF_MODELS_DIR) + "/../cluster-configs/three-nodes.toml"
                                    : a.positional()[0];
  const bool long_run = a.has("long");  // the benchmark's size unless given explicitly
  o.requests = static_cast<std::uint32_t>(a.integer_in("requests", long_run ? 20000 : 2000, 1, 10'000'000));
  o.clients = static_cast<std::uint32_t>(a.integer_in("clients", long_run ? 256 : 128, 1, 4096));
  o.threads = static_cast<std::uint32_t>(a.integer_in("threads", 2, 1, 64));
  o.seed = static_cast<std::uint64_t>(a.integer_in("seed", 1, 0, (1LL << 62)));
  o.faults = !a.has("no-faults");
  o.drain = !a.has("no-drain");
  o.controls = static_cast<std::size_t>(a.integer_in("controls", 32, 0, 100000));
  o.rss.percent = a.real_above("rss-growth-pct", 25, 0, true, 10000);
  o.rss.mib = a.real_above("rss-growth-mib", 64, 0, true, 1 << 20);
  o.log_level = a.str("log-level", "warn");
  o.limit = std::chrono::seconds(a.integer_in("timeout", 1800, 1, 86400));
  o.stall = std::chrono::seconds(a.integer_in("stall-timeout", 120, 1, 86400));
  o.work_dir = a.str("work-dir");
  a.finish();
  if (o.work_dir.empty()) {
    char tmpl[] = "/tmp/lorafleet-soak-XXXXXX";
    if (!::mkdtemp(tmpl))
      throw std::runtime_error("cannot make a work directory under /tmp");
    o.work_dir = tmpl;
  }
  return soak::run_soak(o, std::cout);
}

} // namespace lf::tools
