// `lorafleet serve`, `lorafleet client` and `lorafleet status`: a local cluster behind a ZeroMQ
// gateway, a one-shot streaming client, and the cluster's counters.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include <pthread.h>

#include "client/client.hpp"
#include "core/worker_state.hpp"
#include "cluster/local_cluster.hpp"
#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/curve_flags.hpp"
#include "tools/cli/log_flags.hpp"
#include "tools/cli/sampling_flags.hpp"
#include "tools/cli/serve_options.hpp"

namespace lf::tools {

namespace fs = std::filesystem;

int cmd_serve(int argc, char** argv) {
  auto switches = setting_switches();
  args a(argc, argv, 2, switches);
  auto s = cluster_settings_from(a);
  const auto drain = std::chrono::seconds(a.integer_in("drain-timeout", 30, 0, 86400));
  const auto ready_file = a.str("ready-file");
  const auto logs = log_settings_from(a);
  a.finish();
  log::configure(logs);
  // Signals go to this thread only (sigwait below); every thread started later inherits the mask.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  log::info("serve", "loading",
            {{"model", s.worker.model_dir}, {"workers", s.workers}, {"threads", s.worker.threads},
             {"dtype", s.worker.dtype},
             {"kv_cache_mb", s.worker.kv_cache_mb}, {"max_seqs", s.worker.max_seqs},
             {"mode", worker::to_string(s.worker.mode)},
             {"adapters", s.worker.adapter_dir.empty() ? std::string("-") : s.worker.adapter_dir}});
  cluster::local_cluster cluster(s);
  std::cout << "lorafleet serve: serving on " << cluster.endpoint() << " with " << s.workers
            << " worker(s), placement " << router::to_string(s.router.placement.policy)
            << "; Ctrl-C drains and stops" << std::endl;
  if (!cluster.http_address().empty())
    std::cout << "lorafleet serve: OpenAI API, /metrics and dashboard on "
              << (s.http.tls.enabled() ? "https://" : "http://") << cluster.http_address()
              << "/" << std::endl;
  if (!ready_file.empty())
    std::ofstream(ready_file) << cluster.endpoint() << "\n";
  int sig = 0;
  sigwait(&sigs, &sig);
  log::info("serve", std::string(sig == SIGINT ? "SIGINT" : "SIGTERM")
                       + ": not accepting new requests, draining", {{"drain_timeout_s", drain.count()}});
  const auto st = cluster.stats();
  const auto cancelled = cluster.shutdown(drain);
  log::info("serve", "stopped", {{"completed", st.completed}, {"failed", st.failed},
                                 {"cancelled_at_shutdown", cancelled}});
  return 0;
}

int cmd_client(int argc, char** argv) {
  args a(argc, argv, 2, {"no-stream", "ignore-eos", "quiet", "json-object"});
  client::client_options co;
  co.endpoint = a.str("endpoint", "tcp://127.0.0.1:5555");
  co.request_timeout = std::chrono::milliseconds(static_cast<long>(a.real_above("timeout", 300, 0.001, true, 86400) * 1000));
  apply_curve_flags(a, co);
  proto::submit_msg m;
  m.prompt = a.str("prompt");
  const auto system = a.str("system"), user = a.str("user");
  if (!user.empty()) {
    if (!system.empty())
      m.messages.push_back({proto::chat_role::system, system});
    m.messages.push_back({proto::chat_role::user, user});
  }
  if (m.prompt.empty() == m.messages.empty())
    throw std::invalid_argument("give either --prompt TEXT or --user TEXT [--system TEXT]");
  m.adapter = a.str("adapter");
  lf::sampling_params defaults;  // a chat-like default: some randomness, 64 tokens
  defaults.temperature = 0.8f;
  defaults.top_p = 0.95f;
  defaults.max_tokens = 64;
  const auto p = read_sampling(a, defaults);
  m.max_tokens = p.max_tokens;
  m.temperature = p.temperature;
  m.top_k = p.top_k;
  m.top_p = p.top_p;
  m.repetition_penalty = p.repetition_penalty;
  m.seed = p.seed;
  m.stop = p.stop;
  m.ignore_eos = p.ignore_eos;
  m.logit_bias = p.logit_bias;
  m.stream = !a.has("no-stream");
  co.tenant = a.str("tenant");
  if (co.tenant.size() > proto::max_tenant_bytes)
    throw std::invalid_argument("--tenant must be at most " + std::to_string(proto::max_tenant_bytes) + " bytes");
  if (a.has("deadline-ms"))
    m.deadline_ms = static_cast<std::uint64_t>(a.integer_in("deadline-ms", 0, 1, static_cast<std::int64_t>(proto::max_deadline_ms)));
  if (a.has("ttft-ms"))
    m.ttft_ms = static_cast<std::uint64_t>(a.integer_in("ttft-ms", 0, 1, static_cast<std::int64_t>(proto::max_deadline_ms)));
  // Structured output: at most one; the gateway compiles it and refuses one that cannot.
  const std::pair<const char*, const char*> kinds[] = {
    {"json-object", "json_object"}, {"json-schema", "json_schema"}, {"regex", "regex"}, {"choice", "choice"},
    {"grammar", "grammar"}};
  for (const auto& [flag, kind] : kinds) {
    if (!a.has(flag))
      continue;
    if (!m.constraint_kind.empty())
      throw std::invalid_argument("give at most one of --json-object, --json-schema, --regex, --choice, --grammar");
    m.constraint_kind = kind;
    if (std::string(flag) != "json-object")
      m.constraint = a.str(flag);
  }
  const bool quiet = a.has("quiet");
  a.finish();
  client::client c(co);
  client::stream_callbacks cb;
  std::promise<client::result> done;
  cb.on_token = [](const proto::token_msg& t) { std::cout << t.text << std::flush; };
  cb.on_done = [&](const client::result& r) { done.set_value(r); };
  c.submit(m, cb);
  auto r = done.get_future().get();
  if (!r.ok()) {
    std::cerr << "\nlorafleet client: " << client::describe(r) << "\n";
    return 1;
  }
  if (!m.stream)
    std::cout << r.text;
  std::cout << std::endl;
  if (!quiet)
    std::cerr << std::fixed << std::setprecision(1) << "[" << r.finish_reason << "; "
              << r.usage.prompt_tokens << " prompt + " << r.usage.completion_tokens
              << " completion tokens (" << r.usage.cached_tokens << " cached); queue "
              << r.timings.queue_ms << " ms, first token " << r.timings.ttft_ms << " ms, total "
              << r.timings.total_ms << " ms]\n";
  return 0;
}

int cmd_status(int argc, char** argv) {
  args a(argc, argv, 2);
  auto endpoint = a.positional().empty() ? a.str("endpoint", "tcp://127.0.0.1:5555") : a.positional()[0];
  client::client_options co;
  co.endpoint = endpoint;
  apply_curve_flags(a, co);
  a.finish();
  client::client c(co);
  auto rtt = c.ping(std::chrono::seconds(5));
  if (!rtt) {
    std::cerr << "lorafleet status: no answer from " << endpoint << " within 5 s\n";
    return 1;
  }
  auto st = c.stats(std::chrono::seconds(5));
  if (!st) {
    std::cerr << "lorafleet status: " << endpoint << " answered ping but not stats\n";
    return 1;
  }
  std::cout << endpoint << ": ping " << rtt->count() / 1000.0 << " ms\n";
  std::map<std::string, std::map<std::string, double>> groups;
  for (const auto& [k, v] : *st) {
    // "worker.N.FIELD": a worker's name (its key "worker.N.name:NAME") may hold dots.
    auto dot = k.rfind('.');
    if (k.rfind("worker.", 0) == 0)
      if (auto second = k.find('.', 7); second != std::string::npos)
        dot = second;
    groups[k.substr(0, dot)][k.substr(dot + 1)] = v;
  }
  for (const auto& [g, kv] : groups) {
    std::cout << "  " << std::left << std::setw(12) << g << std::right;
    for (const auto& [k, v] : kv) {
      // A worker's state travels as its number (stats are numbers); print its name.
      const auto state = static_cast<int>(v);
      if (k.rfind("name:", 0) == 0)
        std::cout << " name=" << k.substr(5);
      else if (k == "state" && state >= 0 && state <= static_cast<int>(last_worker_state) && state == v)
        std::cout << " state=" << to_string(static_cast<worker_state>(state));
      else
        std::cout << " " << k << "=" << v;
    }
    std::cout << "\n";
  }
  return 0;
}

namespace {

/// `lorafleet drain|undrain NODE [--endpoint EP] [CURVE flags]`: the client's options and the node,
/// or nullopt after printing the usage error.
std::optional<std::pair<client::client_options, std::string>> node_command(int argc, char** argv, const char* cmd) {
  args a(argc, argv, 2);
  client::client_options co;
  co.endpoint = a.str("endpoint", "tcp://127.0.0.1:5555");
  apply_curve_flags(a, co);
  const auto pos = a.positional();
  a.finish();
  if (pos.size() != 1 || pos[0].empty()) {
    std::cerr << "lorafleet " << cmd << ": name one node (or one worker, NODE/N)\n";
    return std::nullopt;
  }
  return std::make_pair(co, pos[0]);
}

} // namespace

int cmd_drain(int argc, char** argv) {
  const auto in = node_command(argc, argv, "drain");
  if (!in)
    return 2;
  const auto& [co, node] = *in;
  client::client c(co);
  auto r = c.drain(node, std::chrono::seconds(15));
  if (!r) {
    std::cerr << "lorafleet drain: no answer from " << co.endpoint << " within 15 s\n";
    return 1;
  }
  if (r->workers == 0) {
    std::cerr << "lorafleet drain: no live worker is named " << node << " or " << node
              << "/N (or it is drained already); `lorafleet status` lists them\n";
    return 1;
  }
  std::cout << "drained " << r->workers << " worker(s) of " << r->node << "; moved " << r->moved
            << " request(s) to other workers\n";
  return 0;
}

int cmd_undrain(int argc, char** argv) {
  const auto in = node_command(argc, argv, "undrain");
  if (!in)
    return 2;
  const auto& [co, node] = *in;
  client::client c(co);
  auto r = c.undrain(node, std::chrono::seconds(15));
  if (!r) {
    std::cerr << "lorafleet undrain: no answer from " << co.endpoint << " within 15 s\n";
    return 1;
  }
  if (r->workers == 0) {
    std::cerr << "lorafleet undrain: no drained live worker is named " << node << " or " << node
              << "/N; `lorafleet status` lists the workers and their states\n";
    return 1;
  }
  std::cout << "undrained " << r->workers << " worker(s) of " << r->node << "; they take requests again\n";
  return 0;
}

} // namespace lf::tools
