// `lorafleet adapters list|add NAME PATH|update NAME PATH|remove NAME`: the cluster's adapter
// registry through the gateway (proto::adapters_msg).
#include <ctime>
#include <iomanip>
#include <iostream>

#include "cache/adapter_cache.hpp"
#include "client/client.hpp"
#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/curve_flags.hpp"

namespace lf::tools {

namespace {

std::string when(std::int64_t ms) {
  if (ms <= 0)
    return "-";
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void print_rows(const proto::adapters_result& r) {
  if (r.adapters.empty()) {
    std::cout << "no adapters registered (log at event " << r.seq << ")\n";
    return;
  }
  std::cout << std::left << std::setw(24) << "NAME" << std::setw(9) << "VERSION" << std::setw(9) << "STATE"
            << std::setw(10) << "RESIDENT" << std::setw(6) << "RANK" << std::setw(11) << "SIZE"
            << std::setw(22) << "CHANGED" << "PATH\n";
  for (const auto& a : r.adapters)
    std::cout << std::left << std::setw(24) << a.name << std::setw(9) << a.version << std::setw(9)
              << (a.removed ? "removed" : "live") << std::setw(10) << a.resident << std::setw(6)
              << (a.removed ? std::string("-") : std::to_string(a.rank)) << std::setw(11)
              << (a.removed ? std::string("-") : cache::format_mib(a.bytes)) << std::setw(22) << when(a.updated_ms)
              << (a.removed ? "-" : a.path) << "\n";
}

} // namespace

int cmd_adapters(int argc, char** argv) {
  args a(argc, argv, 2);
  client::client_options co;
  co.endpoint = a.str("endpoint", "tcp://127.0.0.1:5555");
  apply_curve_flags(a, co);
  const auto timeout = std::chrono::seconds(a.integer_in("timeout", 90, 1, 3600));
  const auto pos = a.positional();
  a.finish();
  proto::adapters_msg m;
  const auto op = pos.empty() ? std::string("list") : pos[0];
  const std::size_t want = op == "list" ? 1 : op == "remove" ? 2 : op == "add" || op == "update" ? 3 : 0;
  if (want == 0 || pos.size() > want || (pos.size() < want && op != "list")) {
    std::cerr << "lorafleet adapters: list | add NAME PATH | update NAME PATH | remove NAME\n";
    return 2;
  }
  m.op = op;
  if (want >= 2)
    m.name = pos[1];
  if (want == 3)
    m.path = pos[2];
  client::client c(co);
  auto r = c.adapters(m, timeout);
  if (!r) {
    std::cerr << "lorafleet adapters: no answer from " << co.endpoint << " within " << timeout.count() << " s\n";
    return 1;
  }
  if (r->error) {
    std::cerr << "lorafleet adapters " << op << ": " << to_string(*r->error) << ": " << r->message << "\n";
    return 1;
  }
  if (op != "list" && !r->adapters.empty()) {
    const auto& x = r->adapters.front();
    std::cout << op << (op == "remove" ? "d " : (op == "add" ? "ed " : "d ")) << x.name << "@" << x.version
              << " (log event " << r->seq << ")\n";
  }
  print_rows(*r);
  return 0;
}

} // namespace lf::tools
