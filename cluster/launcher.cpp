#include "cluster/launcher.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "client/client.hpp"
#include "cluster/child_process.hpp"
#include "cluster/endpoints.hpp"
#include "cluster/launch_plan.hpp"

namespace lf::cluster {

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

void say(const std::string& who, const std::string& line) {
  std::cout << "[" << who << "] " << line << "\n" << std::flush;
}

/// Asks the gateway for router.workers every half second (own thread) until all have registered.
class readiness_probe {
public:
  readiness_probe(client::client_options o, std::uint32_t expected) : expected_(expected) {
    thread_ = std::thread([this, o] { run(o); });
  }
  ~readiness_probe() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  bool ready() const { return ready_.load(); }
  /// Workers registered at the last answer; -1 before the gateway answered.
  int workers() const { return workers_.load(); }

private:
  void run(client::client_options o) {
    client::client c(o);
    std::unique_lock<std::mutex> lk(m_);
    while (!stop_) {
      lk.unlock();
      if (auto s = c.stats(1s)) {
        auto it = s->find("router.workers");
        workers_ = it == s->end() ? 0 : static_cast<int>(it->second);
        if (workers_ >= static_cast<int>(expected_)) {
          ready_ = true;
          return;
        }
      }
      lk.lock();
      cv_.wait_for(lk, 500ms, [&] { return stop_; });
    }
  }

  std::uint32_t expected_;
  std::atomic<bool> ready_{false};
  std::atomic<int> workers_{-1};
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

/// One started node (local or over ssh).
struct node_proc {
  node_start start;
  std::unique_ptr<child_process> proc;
  line_splitter lines;
  backoff restart_delay{1s, 30s};
  std::optional<clock::time_point> restart_at;
  clock::time_point started;
};

enum class phase { starting, ready, stopping_router, stopping_workers, done };

class launch_run {
public:
  launch_run(const cluster_config& cfg, const launch_options& opts) : cfg_(cfg), opts_(opts) {}

  int run(std::vector<node_start> plan);

private:
  void start(node_proc& n) {
    n.proc = std::make_unique<child_process>(n.start.argv);
    n.started = clock::now();
    say("launch", "started " + n.start.node + " (pid " + std::to_string(n.proc->pid()) + "): "
                    + command_line(n.start.argv));
  }
  void forward(node_proc& n, bool at_end) {
    std::string bytes;
    n.proc->read_some(bytes);
    auto out = [&](const std::string& l) {
      if (opts_.raw_node_output)
        std::cout << l << "\n" << std::flush;
      else
        say(n.start.node, l);
    };
    for (auto& l : n.lines.feed(bytes))
      out(l);
    if (at_end)
      if (auto rest = n.lines.flush(); !rest.empty())
        out(rest);
  }
  void reap(node_proc& n);
  void on_signal(int sig);
  void enter(phase p);
  void step_phase();
  void write_ready_file() const;
  /// Stops first: the node the clients reach (the router node; the gateway nodes of a split front).
  bool is_front(const std::string& node) const {
    return cfg_.split_front() ? cfg_.is_gateway(node) : node == cfg_.router_node;
  }
  bool all_stopped(bool router_only) const;

  const cluster_config& cfg_;
  const launch_options& opts_;
  std::vector<node_proc> nodes_;
  phase phase_ = phase::starting;
  clock::time_point deadline_;
  int exit_code_ = 0;
};

void launch_run::reap(node_proc& n) {
  if (!n.proc || n.proc->running() == false)
    return;
  auto st = n.proc->poll_exit();
  if (!st)
    return;
  forward(n, true);
  say("launch", "node " + n.start.node + " " + describe_exit(*st));
  if (phase_ >= phase::stopping_router)
    return;
  const bool failed_start = phase_ == phase::starting && WIFEXITED(*st) && WEXITSTATUS(*st) != 0;
  if (failed_start || !cfg_.launch.restart) {
    say("launch", failed_start ? "node " + n.start.node + " failed to start; stopping the cluster"
                               : "restart = false; stopping the cluster");
    exit_code_ = 1;
    enter(phase::stopping_router);
    return;
  }
  if (clock::now() - n.started > 60s)
    n.restart_delay.reset();  // it ran a while: not a crash loop
  const auto d = n.restart_delay.next();
  n.restart_at = clock::now() + d;
  say("launch", "restarting " + n.start.node + " in " + std::to_string(d.count()) + " ms");
}

void launch_run::on_signal(int sig) {
  if (phase_ >= phase::stopping_router) {
    say("launch", std::string(sig == SIGINT ? "SIGINT" : "SIGTERM") + " again: killing every node now");
    for (auto& n : nodes_)
      if (n.proc)
        n.proc->signal(SIGKILL);
    enter(phase::done);
    return;
  }
  say("launch", std::string(sig == SIGINT ? "SIGINT" : "SIGTERM") + ": stopping the router node, then the workers");
  enter(phase::stopping_router);
}

void launch_run::enter(phase p) {
  phase_ = p;
  deadline_ = clock::now() + cfg_.launch.stop_timeout;
  for (auto& n : nodes_) {
    if (!n.proc || !n.proc->running())
      continue;
    const bool front = is_front(n.start.node);
    if ((p == phase::stopping_router && front) || (p == phase::stopping_workers && !front))
      n.proc->signal(SIGTERM);
  }
}

bool launch_run::all_stopped(bool router_only) const {
  for (const auto& n : nodes_)
    if (n.proc && n.proc->running() && (!router_only || is_front(n.start.node)))
      return false;
  return true;
}

void launch_run::step_phase() {
  if (phase_ != phase::stopping_router && phase_ != phase::stopping_workers)
    return;
  const bool router_only = phase_ == phase::stopping_router;
  if (!all_stopped(router_only) && clock::now() < deadline_)
    return;
  for (auto& n : nodes_) {
    if (n.proc && n.proc->running() && (!router_only || is_front(n.start.node))) {
      say("launch", "node " + n.start.node + " did not stop within "
                      + std::to_string(cfg_.launch.stop_timeout.count()) + " s: SIGKILL");
      n.proc->signal(SIGKILL);
    }
  }
  enter(router_only ? phase::stopping_workers : phase::done);
}

void launch_run::write_ready_file() const {
  if (opts_.ready_file.empty())
    return;
  const auto tmp = opts_.ready_file + ".tmp";
  {
    std::ofstream out(tmp);
    out << "endpoint " << client_endpoint(cfg_) << "\n";
    for (const auto& n : nodes_)
      if (n.proc)
        out << "node " << n.start.node << " " << n.proc->pid() << "\n";
  }
  std::rename(tmp.c_str(), opts_.ready_file.c_str());
}

int launch_run::run(std::vector<node_start> plan) {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  const int sfd = ::signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0)
    throw std::runtime_error("signalfd failed");

  // Nodes started by hand on other hosts may come late: then the ready timeout only warns.
  const bool manual_nodes = std::any_of(plan.begin(), plan.end(),
                                        [](const node_start& s) { return s.mode == start_mode::manual; });
  for (auto& s : plan) {
    if (s.mode == start_mode::manual)
      continue;
    nodes_.push_back(node_proc{std::move(s), nullptr, line_splitter{}, backoff{1s, 30s}, std::nullopt, {}});
    start(nodes_.back());
  }
  std::unique_ptr<readiness_probe> probe;
  const bool can_probe = cfg_.clients.allowed_keys.empty() || !cfg_.launch.client_secret_key.empty();
  if (can_probe) {
    client::client_options co;
    co.endpoint = client_endpoint(cfg_);
    co.server_public_key = cfg_.clients.public_key;
    co.public_key = cfg_.launch.client_public_key;
    co.secret_key = cfg_.launch.client_secret_key;
    probe = std::make_unique<readiness_probe>(co, cfg_.total_workers());
  } else {
    say("launch", "the gateway has an allow-list and [launch] has no client key: not waiting for the workers");
    phase_ = phase::ready;
    write_ready_file();
  }
  const auto ready_by = clock::now() + cfg_.launch.ready_timeout;
  auto last_report = clock::now();

  while (phase_ != phase::done) {
    std::vector<pollfd> fds{{sfd, POLLIN, 0}};
    for (auto& n : nodes_)
      if (n.proc && n.proc->output_fd() >= 0)
        fds.push_back({n.proc->output_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 200);
    signalfd_siginfo si;
    while (::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
      on_signal(static_cast<int>(si.ssi_signo));
    for (auto& n : nodes_) {
      if (!n.proc)
        continue;
      forward(n, false);
      reap(n);
      if (n.restart_at && clock::now() >= *n.restart_at && phase_ < phase::stopping_router) {
        n.restart_at.reset();
        start(n);
        if (phase_ == phase::ready)
          write_ready_file();
      }
    }
    if (phase_ == phase::starting && probe) {
      if (probe->ready()) {
        phase_ = phase::ready;
        write_ready_file();
        say("launch", "cluster \"" + cfg_.name + "\" ready: " + std::to_string(cfg_.total_workers())
                        + " worker(s) on " + std::to_string(cfg_.nodes.size())
                        + " node(s); clients connect to " + client_endpoint(cfg_) + "; Ctrl-C stops it");
      } else if (clock::now() > ready_by && !manual_nodes) {
        say("launch", "not ready after " + std::to_string(cfg_.launch.ready_timeout.count()) + " s ("
                        + std::to_string(std::max(0, probe->workers())) + " of "
                        + std::to_string(cfg_.total_workers()) + " workers registered); stopping");
        exit_code_ = 1;
        enter(phase::stopping_router);
      } else if (clock::now() - last_report > 10s) {
        last_report = clock::now();
        say("launch", "waiting for workers: "
                        + (probe->workers() < 0 ? std::string("gateway not answering yet")
                                                : std::to_string(probe->workers()) + " of "
                                                    + std::to_string(cfg_.total_workers()))
                        + (manual_nodes ? " (start the nodes on the other hosts with the commands above)" : ""));
      }
    }
    step_phase();
  }
  for (auto& n : nodes_) {
    if (n.proc && n.proc->running()) {
      n.proc->signal(SIGKILL);
      while (!n.proc->poll_exit())
        std::this_thread::sleep_for(10ms);
    }
    if (n.proc)
      forward(n, true);
  }
  ::close(sfd);
  say("launch", exit_code_ == 0 ? "stopped" : "stopped after a failure");
  return exit_code_;
}

} // namespace

int run_launch(const cluster_config& cfg, const launch_options& opts) {
  auto plan = plan_launch(cfg, opts.self_binary, local_host_names(), opts.node_args);
  say("launch", "cluster \"" + cfg.name + "\" from " + cfg.file + ": " + std::to_string(cfg.nodes.size())
                  + " node(s), " + std::to_string(cfg.total_workers()) + " worker(s); router node \""
                  + cfg.router_node + "\"; clients connect to " + client_endpoint(cfg));
  for (const auto& s : plan) {
    if (s.mode == start_mode::manual)
      say("launch", "node " + s.node + " is on " + s.host + ": run there\n    " + command_line(s.argv));
    else if (opts.dry_run)
      say("launch", "node " + s.node + " (" + std::string(to_string(s.mode)) + "): " + command_line(s.argv));
  }
  if (opts.dry_run)
    return 0;
  return launch_run(cfg, opts).run(std::move(plan));
}

} // namespace lf::cluster
