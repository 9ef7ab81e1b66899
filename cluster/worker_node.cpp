#include "cluster/worker_node.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/worker_actor.hpp"
#include "cluster/launch_plan.hpp"

namespace lf::cluster {

namespace {
using clock = std::chrono::steady_clock;

/// A worker's name: its node's and its number ("w1/2"), the router's key for it.
std::string worker_name(const std::string& node, std::size_t i) { return node + "/" + std::to_string(i + 1); }
} // namespace

struct worker_node::impl {
  const cluster_config& cfg;
  const node_config& self;
  log_fn log;
  node_system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  std::vector<std::shared_ptr<worker::worker_runtime>> runtimes;

  std::string join_token;  ///< sent with every registration
  /// Per router node (cfg.routers() order): worker actors that router has accepted and that
  /// still run (worker_options::registered).
  std::vector<std::shared_ptr<std::atomic<int>>> registered;

  mutable std::mutex m;
  std::condition_variable cv;
  bool stopping = false;

  std::chrono::milliseconds drain_limit;

  impl(const cluster_config& c, const node_config& s, log_fn l, std::chrono::milliseconds drain)
      : cfg(c), self(s), log(std::move(l)), sys_cfg(c, s), join_token(join_token_of(c)), drain_limit(drain) {
    for (std::size_t i = 0; i < cfg.routers().size(); ++i)
      registered.push_back(std::make_shared<std::atomic<int>>(0));
  }

  /// Waits `d` or until stop(); true when stopping.
  bool wait(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lk(m);
    return cv.wait_for(lk, d, [&] { return stopping; });
  }

  bool stop_requested() {
    std::lock_guard<std::mutex> lk(m);
    return stopping;
  }

  /// "router-a at 10.0.0.1:7301" ("the router at ..." with one router).
  std::string router_address(const node_config& r) const {
    return (cfg.routers().size() > 1 ? "router " + r.name : std::string("the router")) + " at " + r.host + ":"
           + std::to_string(r.port);
  }

  /// Connects to router node `r` (index `k` of cfg.routers()), serves and reconnects until stop().
  void keep_registered(const node_config& r, std::size_t k, std::atomic<std::uint32_t>& connections);
  /// Serves with `router` until it is lost (returns true) or stop() (returns false).
  bool serve(const actors::router_actor& router, backoff& retry, const node_config& r, std::size_t k);
};

bool worker_node::impl::serve(const actors::router_actor& router, backoff& retry, const node_config& r,
                              std::size_t k) {
  caf::scoped_actor me{sys};
  me->monitor(router);  // a proxy of a router that is already gone reports down at once
  std::vector<actors::worker_actor> workers(runtimes.size());
  std::vector<std::optional<clock::time_point>> respawn_at(runtimes.size(), clock::now());
  std::vector<std::string> why(runtimes.size());  ///< why a worker actor ended
  bool lost = false;
  while (!lost && !stop_requested()) {
    for (std::size_t i = 0; i < workers.size(); ++i) {
      if (!respawn_at[i] || clock::now() < *respawn_at[i])
        continue;
      actors::worker_options o;
      o.name = worker_name(self.name, i);
      if (!why[i].empty())
        log("worker " + o.name + " ended (" + why[i] + "); starting it again");
      o.report_interval = self.workers.report_interval;
      o.join_token = join_token;
      o.registered = registered[k];
      workers[i] = actors::spawn_worker(sys, actors::backend_of(runtimes[i]), router, o);
      me->monitor(workers[i]);
      respawn_at[i].reset();
    }
    me->receive(
      [&](caf::down_msg& dm) {
        if (dm.source == router.address()) {
          lost = true;
          log("lost " + router_address(r) + " (" + sys.render(dm.reason) + ")");
          return;
        }
        for (std::size_t i = 0; i < workers.size(); ++i) {
          if (workers[i] && dm.source == workers[i].address()) {
            // Registration refused or the actor failed while the router lives: start it again
            // later. When the router is gone too, its own down_msg ends this loop first.
            why[i] = sys.render(dm.reason);
            workers[i] = nullptr;
            respawn_at[i] = clock::now() + retry.next();
          }
        }
      },
      caf::after(std::chrono::milliseconds(100)) >> [] {});
  }
  if (!lost) {
    // Leaving on purpose: ask the router to move this node's running requests to other workers
    // (they continue exactly there) before the workers go, so no client sees this node leave.
    me->request(router, std::min<std::chrono::milliseconds>(drain_limit, std::chrono::seconds(5)) + std::chrono::seconds(1),
                actors::drain_atom::value, self.name)
      .receive(
        [&](std::uint32_t drained, std::uint32_t moved) {
          log("drained: " + std::to_string(drained) + " worker(s), " + std::to_string(moved)
              + " request(s) moving to other workers");
          // The moving requests leave with their K/V (worker_moved, sent by the serving loops):
          // give the loops a moment to let them go before the workers end.
          const auto limit = clock::now() + drain_limit;
          auto busy = [&] {
            for (auto& rt : runtimes) {
              const auto l = rt->loop().load();
              if (l.running + l.waiting > 0)
                return true;
            }
            return false;
          };
          while (moved > 0 && busy() && clock::now() < limit)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        },
        [&](caf::error& err) { log("the router did not answer the drain (" + sys.render(err) + "); leaving anyway"); });
  }
  for (auto& w : workers)
    if (w)
      caf::anon_send_exit(w, caf::exit_reason::user_shutdown);  // cancels what they hold
  return lost;
}

worker_node::worker_node(const cluster_config& cfg, const node_config& self, log_fn log,
                         std::chrono::milliseconds drain_limit)
    : impl_(std::make_unique<impl>(cfg, self, std::move(log), drain_limit)) {
  auto& st = *impl_;
  st.log("loading " + std::to_string(self.workers.count) + " worker(s) from " + cfg.model_dir);
  st.runtimes = load_workers(cfg, self.workers, self.workers.count);
}

worker_node::~worker_node() {
  stop();
  for (auto& rt : impl_->runtimes)
    rt->loop().stop(false);
}

void worker_node::stop() {
  {
    std::lock_guard<std::mutex> lk(impl_->m);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
}

bool worker_node::ready() const {
  auto& st = *impl_;
  {
    std::lock_guard<std::mutex> lk(st.m);
    if (st.stopping)
      return false;
  }
  // Every worker registered with at least one router: it takes work (from that router).
  return !st.runtimes.empty() && std::any_of(st.registered.begin(), st.registered.end(), [&](const auto& n) {
           return n->load() == static_cast<int>(st.runtimes.size());
         });
}

std::vector<worker_gauges> worker_node::gauges() const {
  std::vector<worker_gauges> out;
  for (std::size_t i = 0; i < impl_->runtimes.size(); ++i) {
    const auto l = impl_->runtimes[i]->loop().load();
    worker_gauges g;
    g.name = worker_name(impl_->self.name, i);
    g.waiting = l.waiting;
    g.running = l.running;
    g.free_blocks = l.free_blocks;
    g.total_blocks = l.total_blocks;
    g.running_adapters = l.running_adapters;
    g.waiting_adapters = l.waiting_adapters;
    g.max_adapters = impl_->self.workers.settings.max_adapters;
    g.finished = l.finished;
    g.failed = l.failed;
    g.cancelled = l.cancelled;
    g.preemptions = l.preemptions;
    out.push_back(std::move(g));
  }
  return out;
}

void worker_node::impl::keep_registered(const node_config& r, std::size_t k,
                                        std::atomic<std::uint32_t>& connections) {
  backoff retry(cfg.reconnect_initial, cfg.reconnect_max);
  // A connect attempt may take as long as a peer may stay silent, but not less than 5 s.
  const auto connect_timeout = std::max<std::chrono::milliseconds>(std::chrono::seconds(5), cfg.heartbeat_timeout);
  std::uint32_t failures = 0;
  while (!stop_requested()) {
    auto router = connect_router(sys, r, sys_cfg.tls(), connect_timeout);
    if (!router) {
      const auto d = retry.next();
      ++failures;
      if ((failures & (failures - 1)) == 0)  // the 1st, 2nd, 4th, 8th ... failure
        log("cannot reach " + router_address(r) + " (" + sys.render(router.error()) + "); next try in "
            + std::to_string(d.count()) + " ms");
      if (wait(d))
        break;
      continue;
    }
    failures = 0;
    retry.reset();
    ++connections;
    log("connected to " + router_address(r) + (sys_cfg.tls() ? " (mutual TLS)" : "") + "; registering "
        + std::to_string(runtimes.size()) + " worker(s)");
    if (!serve(*router, retry, r, k))
      break;
    log("reconnecting to " + router_address(r));
    if (wait(retry.next()))
      break;
  }
}

void worker_node::run() {
  auto& st = *impl_;
  // One connection per router replica, each in its own thread; the workers' serving loops are
  // shared: every router places on them, each through worker actors of its own.
  const auto routers = st.cfg.routers();
  std::vector<std::thread> others;
  for (std::size_t k = 1; k < routers.size(); ++k)
    others.emplace_back([&st, r = routers[k], k, this] { st.keep_registered(*r, k, connections_); });
  if (!routers.empty())
    st.keep_registered(*routers[0], 0, connections_);
  for (auto& t : others)
    t.join();
  st.log("stopping " + std::to_string(st.runtimes.size()) + " worker(s)");
  for (auto& rt : st.runtimes)
    rt->loop().stop(false);
}

} // namespace lf::cluster
