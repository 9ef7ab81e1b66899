#include "tools/soak/soak_run.hpp"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iomanip>
#include <thread>

#include <sys/wait.h>

#include "cluster/cluster_config.hpp"
#include "text/tokenizer.hpp"
#include "tools/common/passage.hpp"
#include "tools/soak/driver.hpp"
#include "tools/soak/fault_sequence.hpp"
#include "tools/soak/fleet.hpp"
#include "tools/soak/report.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"

namespace lf::soak {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

/// The config's adapters: directories under adapter_dir with an adapter_config.json.
std::vector<std::string> adapters_of(const cluster::cluster_config& cfg) {
  std::vector<std::string> out;
  if (cfg.adapter_dir.empty() || !fs::is_directory(cfg.adapter_dir))
    return out;
  for (const auto& e : fs::directory_iterator(cfg.adapter_dir))
    if (e.is_directory() && fs::exists(e.path() / "adapter_config.json"))
      out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// Worker nodes in file order.
std::vector<std::string> worker_nodes_of(const cluster::cluster_config& cfg) {
  std::vector<std::string> out;
  for (const auto& n : cfg.nodes)
    if (!cfg.is_router(n.name) && !cfg.is_gateway(n.name) && n.workers.count > 0)
      out.push_back(n.name);
  return out;
}

/// Router replicas in router_nodes order (one: no router fault).
std::vector<std::string> router_nodes_of(const cluster::cluster_config& cfg) {
  std::vector<std::string> out;
  for (const auto* r : cfg.routers())
    out.push_back(r->name);
  return out;
}

double stat(const std::map<std::string, double>& s, const std::string& k) {
  auto it = s.find(k);
  return it == s.end() ? 0 : it->second;
}

std::optional<std::uint32_t> workers_in(const std::map<std::string, double>& s) {
  if (auto it = s.find("router.workers"); it != s.end())
    return static_cast<std::uint32_t>(it->second);
  return std::nullopt;
}

/// Every worker's KV blocks free (free_blocks == total_blocks), polled up to `limit`.
bool wait_kv_free(const fleet& f, std::chrono::seconds limit, std::string& detail) {
  const auto until = clock::now() + limit;
  for (;;) {
    const auto s = f.stats();
    std::vector<std::string> busy;
    std::size_t workers = 0;
    double total = 0;
    for (const auto& [k, v] : s) {
      constexpr std::string_view suffix = ".total_blocks";
      if (k.rfind("worker.", 0) != 0 || k.size() < suffix.size() || k.compare(k.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      const auto p = k.substr(0, k.size() - suffix.size());
      ++workers;
      total = v;
      const auto free = stat(s, p + ".free_blocks");
      if (free != v)
        busy.push_back(p + " " + std::to_string(static_cast<long>(free)) + "/" + std::to_string(static_cast<long>(v)));
    }
    if (!s.empty() && busy.empty() && workers > 0) {
      detail = std::to_string(workers) + " workers, " + std::to_string(static_cast<long>(total)) + " blocks each, all free";
      return true;
    }
    if (clock::now() > until) {
      detail = s.empty() ? std::string("the gateway did not answer") : "free/total:";
      for (const auto& b : busy)
        detail += " " + b;
      return false;
    }
    std::this_thread::sleep_for(250ms);
  }
}

void sample_rss(const fleet& f, std::vector<node_memory>& mem, bool before) {
  for (const auto& [name, pid] : f.pids()) {
    auto it = std::find_if(mem.begin(), mem.end(), [&](const node_memory& m) { return m.node == name; });
    if (it == mem.end()) {
      node_memory m;
      m.node = name;
      mem.push_back(m);
      it = mem.end() - 1;
    }
    const auto kib = read_rss_kib(pid);
    if (kib)
      it->peak_kib = std::max(it->peak_kib, *kib);
    if (before) {
      it->pid_before = pid;
      it->before_kib = kib;
    } else {
      it->pid_after = pid;
      it->after_kib = kib;
    }
  }
}

/// Takes one fault step; adds a violation when it could not be done.
void take_step(const fleet& f, const fault_step& st, double now_s, std::ostream& out, std::vector<std::string>& violations) {
  const auto& flt = *st.f;
  out << std::fixed << std::setprecision(1) << "[soak] " << now_s << " s: ";
  if (st.what == fault_step::action::resume) {
    out << "SIGCONT " << flt.node << std::endl;
    if (!f.signal_node(flt.node, SIGCONT))
      violations.push_back("fault: could not SIGCONT node " + flt.node);
    return;
  }
  switch (flt.kind) {
    case fault_kind::kill:
    case fault_kind::kill_router:
      out << "SIGKILL " << flt.node << " (launch starts it again)" << std::endl;
      if (!f.signal_node(flt.node, SIGKILL))
        violations.push_back("fault: could not SIGKILL node " + flt.node);
      break;
    case fault_kind::stop:
      out << "SIGSTOP " << flt.node << " for " << flt.hold.count() << " ms" << std::endl;
      if (!f.signal_node(flt.node, SIGSTOP))
        violations.push_back("fault: could not SIGSTOP node " + flt.node);
      break;
    case fault_kind::drain: {
      out << "lorafleet drain " << flt.node << std::endl;
      const auto d = f.drain(flt.node, 60s);
      auto text = d.output;
      while (!text.empty() && text.back() == '\n')
        text.pop_back();
      out << "[soak] drain: " << text << " (exit status " << d.exit_status << ")" << std::endl;
      if (d.exit_status != 0)
        violations.push_back("fault: `lorafleet drain " + flt.node + "` exited with status "
                             + std::to_string(d.exit_status) + ": " + text);
      break;
    }
  }
}

} // namespace

int run_soak(const soak_options& o, std::ostream& out) {
  const auto cfg = cluster::load_cluster_config(o.config);
  if (cfg.clients.enabled())
    throw std::invalid_argument(o.config + ": the soak's clients speak plaintext; [security.clients] is not supported");
  if (o.faults && !cfg.launch.restart)
    throw std::invalid_argument(o.config + ": [launch] restart = false, but the soak kills a node for launch to restart");
  if (o.faults && cfg.heartbeat_timeout.count() == 0)
    throw std::invalid_argument(o.config + ": heartbeats are off, so a stopped node would never be noticed");
  const auto workers = cfg.total_workers();
  const auto model = engine::gpt2_config::load(cfg.model_dir + "/config.json");
  const auto tok = text::tokenizer::from_dir(cfg.tokenizer_dir.empty() ? cfg.model_dir : cfg.tokenizer_dir);
  const auto passage = tok.encode(loadtest::passage_text());
  plan_settings ps;
  ps.requests = o.requests;
  ps.seed = o.seed;
  ps.adapters = adapters_of(cfg);
  ps.context_window = static_cast<std::uint32_t>(model.n_positions);
  ps.max_tokens_limit = static_cast<std::uint32_t>(cfg.router_cfg.limits.max_tokens_limit);
  ps.output_hi = std::min<std::uint32_t>(200, ps.context_window - ps.prompt_hi - 8);
  const auto plans = plan_requests(ps, [&](std::uint32_t n, std::uint64_t salt) {
    auto ids = tok.encode("Request " + std::to_string(salt % 1'000'000'000) + ": ");
    ids.resize(std::min<std::size_t>(ids.size(), n));
    for (std::size_t i = (salt >> 20) % passage.size(); ids.size() < n; i = (i + 1) % passage.size())
      ids.push_back(passage[i]);
    return tok.decode(ids);
  });
  std::vector<fault> faults;
  if (o.faults)
    faults = plan_faults(worker_nodes_of(cfg), cfg.heartbeat_interval, cfg.heartbeat_timeout, o.drain,
                         router_nodes_of(cfg));
  out << "[soak] " << cfg.name << ": " << o.requests << " requests from " << o.clients << " clients, seed " << o.seed
      << ", adapters " << ps.adapters.size() << ", context " << ps.context_window << ", faults " << faults.size()
      << (o.faults && !o.drain ? " (no drain)" : "") << "; logs in " << o.work_dir << std::endl;

  fleet f({o.binary, o.config, o.work_dir, {"--log-level", o.log_level}});
  const auto t_launch = clock::now();
  if (!f.wait_ready(cfg.launch.ready_timeout + 30s)) {
    out << "[soak] the cluster did not become ready; see " << f.log_path() << std::endl;
    for (const auto& l : f.notable_lines())
      out << "  " << l << "\n";
    return 1;
  }
  out << "[soak] cluster ready in " << std::fixed << std::setprecision(1)
      << std::chrono::duration<double>(clock::now() - t_launch).count() << " s at " << f.endpoint() << std::endl;

  soak_report rep;
  rep.requests = o.requests;
  rep.clients = o.clients;
  rep.seed = o.seed;
  rep.bound = o.rss;
  auto& violations = rep.violations;

  driver_options dopt;
  dopt.endpoint = f.endpoint();
  dopt.clients = o.clients;
  dopt.threads = o.threads;
  dopt.limit = o.limit;
  driver drv(dopt, plans);
  // The last share of the run waits for the faults to be over, so that a fast machine cannot run
  // out of requests before them (the summary says when it had to wait).
  if (!faults.empty())
    drv.hold_back_after(plans.size() - static_cast<std::size_t>(o.tail_share * static_cast<double>(plans.size())));
  std::atomic<bool> finished{false};
  std::thread runner([&] {
    drv.run();
    finished = true;
  });
  fault_sequence seq(faults, plans.size(), workers);
  // Whatever ends the run (an exception included), no node is left stopped.
  struct resume_stopped {
    const fleet& f;
    const fault_sequence& seq;
    ~resume_stopped() {
      if (auto n = seq.stopped_node())
        f.signal_node(*n, SIGCONT);
    }
  } guard{f, seq};
  bool warm = false;
  const auto start = clock::now();
  auto next_progress = start + o.progress_every;
  std::size_t last_ended = 0;
  auto last_change = start;
  bool stalled = false;
  while (!finished) {
    std::this_thread::sleep_for(250ms);
    const auto now = clock::now();
    const double now_s = std::chrono::duration<double>(now - start).count();
    const auto& p = drv.progress();
    const auto ended = p.ended.load();
    const auto s = f.stats(1s);
    if (!warm && ended >= static_cast<std::size_t>(o.warmup_share * static_cast<double>(plans.size()))) {
      sample_rss(f, rep.memory, true);
      warm = true;
      out << "[soak] " << now_s << " s: warm-up RSS sampled (" << ended << " requests ended)" << std::endl;
    } else if (warm) {
      for (auto& m : rep.memory)  // peaks of the processes sampled at warm-up
        if (auto kib = read_rss_kib(m.pid_before))
          m.peak_kib = std::max(m.peak_kib, *kib);
    }
    if (warm)
      if (auto st = seq.next(now_s, ended, p.sent.load() - ended, workers_in(s)))
        take_step(f, *st, now_s, out, violations);
    if (seq.finished()) {
      drv.release();
    } else if (drv.held() && !rep.held_for_faults) {
      rep.held_for_faults = true;
      out << "[soak] " << now_s << " s: the last " << o.tail_share * 100 << "% of the requests wait for the faults to end"
          << std::endl;
    }
    if (ended != last_ended || p.sent.load() == ended) {
      last_ended = ended;
      last_change = now;
    } else if (now - last_change > o.stall) {
      out << "[soak] " << now_s << " s: no request has ended for " << o.stall.count() << " s with "
          << p.sent.load() - ended << " in flight; giving up" << std::endl;
      std::string why = "the cluster stopped answering: " + std::to_string(p.sent.load() - ended)
                        + " requests in flight and none ended for " + std::to_string(o.stall.count()) + " s; stats then:";
      for (const auto& [k, v] : s)
        if (k.rfind("router.", 0) == 0 || k.rfind("gateway.", 0) == 0 || k.find(".running") != std::string::npos
            || k.find(".waiting") != std::string::npos)
          why += " " + k + "=" + std::to_string(static_cast<long long>(v));
      violations.push_back(why);
      drv.abort();
      stalled = true;
      break;
    }
    if (now >= next_progress) {
      next_progress = now + o.progress_every;
      out << "[soak] " << now_s << " s: " << ended << "/" << plans.size() << " ended (done " << p.done << ", cancelled "
          << p.cancelled << ", errors " << p.errors << "), " << p.tokens << " tokens; workers " << stat(s, "router.workers")
          << ", resumed " << stat(s, "router.resumed") << ", replaced " << stat(s, "router.replaced") << ", worker_lost "
          << stat(s, "router.worker_lost") << std::endl;
    }
  }
  runner.join();
  // A fault under way finishes (its hold, its recovery), so the replays see a whole cluster; one
  // that had not fired stays unfired.
  while (seq.busy()) {
    const double now_s = std::chrono::duration<double>(clock::now() - start).count();
    if (auto st = seq.next(now_s, plans.size(), 0, workers_in(f.stats(1s))))
      take_step(f, *st, now_s, out, violations);
    std::this_thread::sleep_for(250ms);
  }
  rep.duration_s = drv.duration_s();
  rep.faults = seq.records();
  if (seq.failed())
    violations.push_back("fault: the cluster did not have all its workers again within 120 s of a fault");
  for (const auto& r : rep.faults)
    if (r.fired_s < 0)
      violations.push_back("fault: " + std::string(to_string(r.f.kind)) + " " + r.f.node + " never fired (the run ended first)");
  std::size_t unsent = 0;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (!drv.logs()[i].submitted && stalled) {
      ++unsent;  // one line for all of them, below
      continue;
    }
    for (auto& v : check_request(plans[i], drv.logs()[i]))
      violations.push_back(std::move(v));
  }
  if (unsent > 0)
    violations.push_back(std::to_string(unsent) + " requests were never sent (the soak gave up first)");
  for (auto& s : drv.strays())
    violations.push_back("stray message: " + s);
  rep.counts = count_run(plans, drv.logs());
  out << "[soak] " << (stalled ? "gave up" : "requests ended") << " after " << rep.duration_s << " s"
      << (stalled ? "; no replays" : "; replaying on the calm cluster") << std::endl;

  // Replays: the resumed requests (and a control sample) again, undisturbed, with their seeds;
  // not after a stall (the cluster would not answer them either).
  const auto picked = stalled ? std::vector<std::size_t>{} : pick_replays(plans, drv.logs(), o.controls);
  std::vector<planned_request> replays;
  for (std::size_t k = 0; k < picked.size(); ++k) {
    const auto i = picked[k];
    const auto* t = drv.logs()[i].terminal();
    replays.push_back(replay_of(plans[i], t->seed, 1'000'000'000ULL + k));
    rep.replays_resumed += t->resumed > 0;
  }
  rep.replays = replays.size();
  driver_options ropt = dopt;
  ropt.clients = std::min<std::uint32_t>(o.clients, 32);
  ropt.limit = std::min<std::chrono::milliseconds>(dopt.limit, std::chrono::minutes(5));
  driver rdrv(ropt, replays);
  rdrv.run();
  for (std::size_t k = 0; k < picked.size(); ++k) {
    for (auto& v : check_request(replays[k], rdrv.logs()[k]))
      violations.push_back("replay: " + v);
    auto diff = compare_replay(plans[picked[k]], drv.logs()[picked[k]], rdrv.logs()[k]);
    rep.replay_mismatches += !diff.empty();
    for (auto& v : diff)
      violations.push_back(std::move(v));
  }
  for (auto& s : rdrv.strays())
    violations.push_back("stray message during the replays: " + s);

  rep.kv_free = wait_kv_free(f, 30s, rep.kv_detail);
  if (!rep.kv_free)
    violations.push_back("KV blocks still held 30 s after the run: " + rep.kv_detail);
  sample_rss(f, rep.memory, false);
  for (auto& v : check_memory(rep.memory, rep.bound))
    violations.push_back(std::move(v));
  rep.router = f.stats();
  if (rep.router.empty())
    violations.push_back("the gateway did not answer stats after the run");
  else if (stat(rep.router, "router.worker_lost") > 0)
    violations.push_back("router.worker_lost is " + std::to_string(static_cast<long>(stat(rep.router, "router.worker_lost"))));
  const auto st = f.stop(60s);
  out << "[soak] cluster stopped: " << (st ? cluster::describe_exit(*st) : std::string("did not stop within 60 s")) << std::endl;
  if (!st || !WIFEXITED(*st) || WEXITSTATUS(*st) != 0)
    violations.push_back("lorafleet launch did not stop cleanly on SIGTERM");
  print_report(rep, out);
  if (!violations.empty()) {
    out << "cluster log lines worth a look (all in " << f.log_path() << "):\n";
    const auto lines = f.notable_lines();
    for (std::size_t i = 0; i < lines.size() && i < 60; ++i)
      out << "  " << lines[i] << "\n";
  }
  return violations.empty() ? 0 : 1;
}

} // namespace lf::soak
