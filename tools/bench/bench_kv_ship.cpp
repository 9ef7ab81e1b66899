// bench_kv_ship: what shipping a sequence's K/V blocks to another worker would cost, against the
// re-prefill that resumption does instead. Two CAF actor systems in this process talk over the
// middleman on loopback (as a worker node and the router node do); a payload of the K/V bytes a
// sequence of N tokens holds (layers x 2 x d_model x bytes per value) goes from one to the other
// and is acknowledged. Prints the median time per size (of 5), next to the bytes.
//
//   bench_kv_ship [--layers 12] [--embd 768] [--bytes-per-value 2] [--tokens 128,512,1024]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "tools/common/args.hpp"

namespace {

struct node_config : caf::actor_system_config {
  node_config() { load<caf::io::middleman>(); }
};

caf::behavior receiver(caf::event_based_actor*) {
  return {[](const std::string& kv) -> std::uint64_t { return kv.size(); }};
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    out.push_back(std::stoi(x));
  return out;
}

} // namespace

int main(int argc, char** argv) {
  lf::tools::args a(argc, argv, 1);
  const int layers = static_cast<int>(a.integer_in("layers", 12, 1, 1000));
  const int embd = static_cast<int>(a.integer_in("embd", 768, 1, 100000));
  const int bpv = static_cast<int>(a.integer_in("bytes-per-value", 2, 1, 4));
  const auto tokens = parse_list(a.str("tokens", "128,512,1024"));
  a.finish();
  node_config cfg_a, cfg_b;
  caf::actor_system sys_a{cfg_a}, sys_b{cfg_b};
  auto sink = sys_a.spawn(receiver);
  auto port = sys_a.middleman().publish(sink, 0, "127.0.0.1");
  if (!port) {
    std::cerr << "bench_kv_ship: publish failed: " << sys_a.render(port.error()) << "\n";
    return 1;
  }
  auto remote = sys_b.middleman().remote_actor("127.0.0.1", *port);
  if (!remote) {
    std::cerr << "bench_kv_ship: connect failed: " << sys_b.render(remote.error()) << "\n";
    return 1;
  }
  caf::scoped_actor self{sys_b};
  std::cout << "| tokens | K/V bytes | ship over CAF loopback, median ms | MB/s |\n| --- | --- | --- | --- |\n";
  for (int n : tokens) {
    const std::size_t bytes = static_cast<std::size_t>(n) * layers * 2 * embd * bpv;
    std::string payload(bytes, '\x5a');
    std::vector<double> ms;
    for (int rep = 0; rep < 6; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      bool ok = false;
      self->request(*remote, std::chrono::seconds(60), payload)
        .receive([&](std::uint64_t got) { ok = got == bytes; },
                 [&](const caf::error& e) { std::cerr << sys_b.render(e) << "\n"; });
      if (!ok)
        return 1;
      if (rep > 0)  // the first carries connection warm-up
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    std::cout << "| " << n << " | " << bytes << " | " << med << " | " << (bytes / 1e6) / (med / 1e3) << " |\n";
  }
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  return 0;
}
