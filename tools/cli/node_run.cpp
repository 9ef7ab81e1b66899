#include "tools/cli/node_run.hpp"

#include <atomic>
#include <ctime>
#include <fstream>
#include <future>
#include <memory>
#include <thread>

#include <pthread.h>

#include "cluster/local_cluster.hpp"
#include "cluster/probe_server.hpp"
#include "cluster/worker_node.hpp"
#include "core/log.hpp"

namespace lf::tools {

void log_line(const std::string& line) { log::info("node", line); }

std::string config_arg(args& a, const char* usage) {
  if (a.positional().size() != 1)
    throw std::invalid_argument(std::string("usage: ") + usage);
  return a.positional()[0];
}

sigset_t block_stop_signals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);  // an ssh session that ends
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  return sigs;
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP"; }

int run_worker_node(const cluster::cluster_config& cfg, const cluster::node_config& node, const worker_node_run& run,
                    sigset_t sigs) {
  // The probe port answers while the models load: alive, not ready (a startupProbe waits).
  std::atomic<cluster::worker_node*> serving{nullptr};
  std::unique_ptr<cluster::probe_server> probes;
  if (!run.probe_listen.empty()) {
    const auto model = cluster::default_model_name(cfg.model_dir);
    probes = std::make_unique<cluster::probe_server>(
      run.probe_listen,
      cluster::probe_handlers{
        [] { return true; },
        [&serving] {
          auto* n = serving.load();
          return n != nullptr && n->ready();
        },
        [&serving, model] {
          auto* n = serving.load();
          const auto now = static_cast<double>(std::time(nullptr));
          return n ? cluster::render_node_metrics(model, n->gauges(), n->ready(), now)
                   : cluster::render_node_metrics(model, {}, false, now);
        }});
    log_line("probe port on http://" + probes->address() + " (/health, /ready, /metrics)");
  }
  cluster::worker_node wn(cfg, node, log_line, run.drain);
  serving = &wn;
  std::promise<void> finished;
  auto done = finished.get_future();
  std::thread runner([&] {
    wn.run();
    finished.set_value();
  });
  std::atomic<bool> stopping{false};
  std::thread ready_writer;
  if (!run.ready_file.empty())
    ready_writer = std::thread([&wn, &stopping, file = run.ready_file] {
      while (!stopping && !wn.ready())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!stopping)
        std::ofstream(file) << "ready\n";
    });
  int sig = 0;
  sigwait(&sigs, &sig);
  stopping = true;
  if (ready_writer.joinable())
    ready_writer.join();
  log_line(std::string(signal_name(sig)) + ": not ready; draining (up to " + std::to_string(run.drain.count())
           + " s) and stopping");
  wn.stop();  // /ready says 503 from here on
  // run() returns within the drain and a connect attempt's timeout; past that, something is stuck.
  const auto limit = std::max<std::chrono::milliseconds>(std::chrono::seconds(10), 2 * cfg.heartbeat_timeout)
                     + std::chrono::duration_cast<std::chrono::milliseconds>(run.drain);
  if (done.wait_for(limit) != std::future_status::ready) {
    log_line("still stopping after " + std::to_string(limit.count()) + " ms: exiting anyway");
    std::_Exit(1);
  }
  runner.join();
  serving = nullptr;
  log_line("stopped");
  return 0;
}

} // namespace lf::tools
