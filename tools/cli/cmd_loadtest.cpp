// `lorafleet loadtest`: closed-loop, Poisson and sweep workloads against a cluster, with a live
// progress line, a summary table, and JSON / CSV / SVG files.
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cluster/local_cluster.hpp"
#include "text/tokenizer.hpp"
#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/loadtest/chat_driver.hpp"
#include "tools/loadtest/driver.hpp"
#include "tools/loadtest/http_client.hpp"
#include "tools/common/passage.hpp"
#include "tools/loadtest/report.hpp"
#include "tools/cli/log_flags.hpp"
#include "tools/cli/serve_options.hpp"

namespace lf::tools {

namespace {

using namespace lf::loadtest;

const text::tokenizer& tok() {
  static const auto t = text::tokenizer::from_dir(default_tokenizer_dir());
  return t;
}

/// About `n` tokens: a salt-derived request number, then public-domain English from a salt-chosen
/// place. The number makes every prompt's first KV block its own, so the server's prefix cache
/// cannot serve one request's prompt from another's (or from an earlier sweep point's) and flatter
/// the figures; a prompt file (--prompts) is sent as it is.
std::string synthetic_text(std::uint32_t n, std::uint64_t salt) {
  static const auto ids = tok().encode(passage_text());
  auto out = tok().encode("Request " + std::to_string(salt % 1'000'000'000) + ": ");
  out.resize(std::min<std::size_t>(out.size(), n));
  for (std::size_t i = (salt >> 32) % ids.size(); out.size() < n; i = (i + 1) % ids.size())
    out.push_back(ids[i]);
  return tok().decode(out);
}

/// "1,2,4" -> {1, 2, 4}: finite values > 0 (whole numbers when `whole`), at least one.
std::vector<double> parse_list(const std::string& s, const std::string& flag, bool whole) {
  std::vector<double> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) {
    double d = 0;
    std::size_t used = 0;
    try {
      d = std::stod(x, &used);
    } catch (const std::exception&) {
    }
    if (used == 0 || used != x.size() || !std::isfinite(d))
      throw std::invalid_argument("--" + flag + ": not a number: '" + x + "'");
    if (!(d > 0) || (whole && (d != std::floor(d) || d > 100'000)))
      throw std::invalid_argument("--" + flag + ": values must be " + (whole ? "whole numbers in [1, 100000]" : "> 0")
                                  + " (got '" + x + "')");
    v.push_back(d);
  }
  if (v.empty())
    throw std::invalid_argument("--" + flag + ": give a comma-separated list, e.g. 1,2,4");
  return v;
}

std::vector<std::string> read_prompts(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::invalid_argument("--prompts: cannot read " + path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      out.push_back(line);
  if (out.empty())
    throw std::invalid_argument("--prompts: no prompts in " + path);
  return out;
}

void progress_line(std::size_t ended, std::size_t sent, std::uint64_t tokens, double t, std::size_t total) {
  const int width = 30;
  const int fill = total ? static_cast<int>(width * ended / total) : 0;
  std::ostringstream os;
  os << "\r[" << std::string(static_cast<std::size_t>(fill), '#')
     << std::string(static_cast<std::size_t>(width - fill), '.') << "] " << ended << "/" << total
     << " done, " << sent - ended << " in flight, " << std::fixed << std::setprecision(1)
     << (t > 0 ? static_cast<double>(tokens) / t : 0.0) << " tok/s, " << t << " s   ";
  std::cerr << os.str() << (isatty(2) ? "" : "\n") << std::flush;
}

/// `--workload chat`: one run of the multi-turn chat workload; prints the summary with the
/// prompt tokens computed and cached, the refused share, conversations finished; writes
/// OUT.json / .csv / .svg like a single run. Returns the command's exit status.
int run_chat_workload(const chat_workload_config& cw, driver_options d, const goodput_limits& lim,
                      const submit_fn& submit, const std::string& out_prefix, bool quiet,
                      cluster::local_cluster* cluster, const std::string& endpoint) {
  const auto convs = plan_chat(cw, synthetic_text);
  std::size_t turns = 0;
  for (const auto& c : convs)
    turns += c.turns.size();
  if (!quiet)
    d.progress = [turns](std::size_t e, std::size_t s, std::uint64_t t, double el) { progress_line(e, s, t, el, turns); };
  std::cerr << "loadtest: chat: " << convs.size() << " conversations of " << cw.turns << " turns, "
            << cw.group_size << " per system prompt, " << cw.rate << " conversations/s\n";
  auto r = run_chat(submit, convs, d);
  if (!quiet)
    std::cerr << "\n";
  auto s = summarize(r.run.samples, r.run.duration_s, lim, r.run.lost);
  std::size_t refused = 0;
  for (const auto& [code, n] : s.errors)
    if (code == "overloaded" || code == "deadline_unmeetable" || code == "no_workers" || code == "rate_limited")
      refused += n;
  const double refused_share = s.sent > 0 ? static_cast<double>(refused) / static_cast<double>(s.sent) : 0;
  print_summary(std::cout, s);
  std::cout << "chat: " << r.conversations_finished << " conversations finished, " << r.conversations_cut
            << " cut; prompt tokens computed " << (s.input_tokens - s.cached_tokens) << ", cached " << s.cached_tokens
            << "; refused " << refused << " (" << std::fixed << std::setprecision(1) << 100 * refused_share << "%)\n";
  if (!out_prefix.empty()) {
    auto j = to_json(s);
    j["workload"] = "chat";
    j["conversations"] = cw.conversations;
    j["turns"] = cw.turns;
    j["group_size"] = cw.group_size;
    j["think_s"] = cw.think_s;
    j["rate"] = cw.rate;
    j["conversations_finished"] = r.conversations_finished;
    j["conversations_cut"] = r.conversations_cut;
    j["refused"] = refused;
    j["refused_share"] = refused_share;
    j["computed_tokens"] = s.input_tokens - s.cached_tokens;
    j["endpoint"] = endpoint;
    std::ofstream(out_prefix + ".json") << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    std::ofstream csv(out_prefix + ".csv");
    write_csv(csv, r.run.samples);
    std::ofstream(out_prefix + ".svg") << latency_svg(r.run.samples, "lorafleet: chat workload latency");
    std::cerr << "loadtest: wrote " << out_prefix << ".json, .csv, .svg\n";
  }
  if (cluster)
    cluster->shutdown(std::chrono::seconds(5));
  return r.run.lost == 0 ? 0 : 3;
}

} // namespace

int cmd_loadtest(int argc, char** argv) {
  auto switches = setting_switches();  // --self-host takes serve's flags
  switches.insert({"self-host", "chat", "no-ignore-eos", "quiet"});
  args a(argc, argv, 2, switches);
  const bool self_host = a.has("self-host");
  // A self-hosted server logs warnings only: the report is this command's output.
  log::configure(log_settings_from(a, "warn"));
  std::unique_ptr<cluster::local_cluster> cluster;
  std::string endpoint = a.positional().empty() ? std::string{} : a.positional()[0];
  std::optional<cluster::cluster_settings> cs;
  // --via http: drive the self-hosted cluster through its OpenAI HTTP gateway (on a free
  // loopback port unless --http names one) instead of the ZeroMQ one.
  const auto via = a.str("via", "zmq");
  if (via != "zmq" && via != "http")
    throw std::invalid_argument("--via must be zmq or http (got '" + via + "')");
  if (a.has("via") && !self_host)
    throw std::invalid_argument("--via needs --self-host (otherwise the ENDPOINT's scheme picks the protocol)");
  if (self_host) {
    cs = cluster_settings_from(a, "adapter-dir");
    cs->gateway.endpoint = "tcp://127.0.0.1:*";
    if (via == "http" && cs->http.listen.empty())
      cs->http.listen = "127.0.0.1:0";
  }
  workload_config w;
  const auto mode = a.str("arrival", "closed");
  if (mode != "closed" && mode != "poisson")
    throw std::invalid_argument("--arrival must be closed or poisson (got '" + mode + "')");
  w.mode = mode == "closed" ? arrival_mode::closed : arrival_mode::poisson;
  w.concurrency = static_cast<std::uint32_t>(a.integer_in("concurrency", 8, 1, 100'000));
  w.rate = a.real_above("rate", 4, 0);
  w.burstiness = a.real_above("burstiness", 1, 0);
  w.num_requests = static_cast<std::uint32_t>(a.integer_in("requests", 64, 1, 10'000'000));
  w.input = parse_length_range(a.str("input", "128"), "--input");
  w.output = parse_length_range(a.str("output", "128"), "--output");
  w.ignore_eos = !a.has("no-ignore-eos");
  const auto prefix = a.str("adapter-prefix", "a");
  if (a.has("adapters"))
    w.adapters = parse_adapter_list(a.str("adapters"), prefix);
  if (a.has("skew"))
    parse_skew(a.str("skew"), w);
  w.chat = a.has("chat");
  if (a.has("prompts"))
    w.prompts = read_prompts(a.str("prompts"));
  w.seed = static_cast<std::uint64_t>(a.integer("seed", 1));
  w.long_every = static_cast<std::uint32_t>(a.integer_in("long-every", 0, 0, 1'000'000));
  w.long_output = static_cast<std::uint32_t>(a.integer_in("long-output", 100, 1, 1'000'000));
  if (a.has("tenants"))
    w.tenants = parse_tenants(a.str("tenants"), "--tenants");
  service_weights sw;
  if (a.has("service-weights")) {
    const auto v = parse_list(a.str("service-weights"), "service-weights", false);
    if (v.size() != 2)
      throw std::invalid_argument("--service-weights: give the prompt and output token weights, e.g. 1,2");
    sw = {v[0], v[1]};
  }
  const auto per_client = static_cast<std::uint32_t>(a.integer_in("per-client", 0, 0, 1'000'000));
  const auto sweep_c = a.has("sweep-concurrency") ? parse_list(a.str("sweep-concurrency"), "sweep-concurrency", true) : std::vector<double>{};
  const auto sweep_r = a.has("sweep-rate") ? parse_list(a.str("sweep-rate"), "sweep-rate", false) : std::vector<double>{};
  if (!sweep_c.empty() && !sweep_r.empty())
    throw std::invalid_argument("give --sweep-concurrency or --sweep-rate, not both");
  for (double c : sweep_c)  // checked before connecting; the same bound as --requests
    if (static_cast<double>(per_client) * c > 10'000'000)
      throw std::invalid_argument("--per-client x concurrency is " + std::to_string(per_client * static_cast<std::uint64_t>(c))
                                  + " requests; at most 10000000");
  goodput_limits lim;
  if (a.has("goodput-ttft-ms"))
    lim.ttft_ms = a.real_above("goodput-ttft-ms", 0, 0);
  if (a.has("goodput-tpot-ms"))
    lim.tpot_ms = a.real_above("goodput-tpot-ms", 0, 0);
  if (a.has("goodput-e2e-ms"))
    lim.e2e_ms = a.real_above("goodput-e2e-ms", 0, 0);
  driver_options d;
  d.duration_s = a.real_above("duration", 0, 0, true, 30 * 86400.0);
  d.drain = std::chrono::milliseconds(static_cast<long>(a.real_above("timeout", 120, 0.001, true, 86400) * 1000));
  d.chat = w.chat;
  d.ignore_eos = w.ignore_eos;
  d.temperature = a.real_above("temperature", 0, 0, true);
  if (a.has("deadline-ms"))
    d.deadline_ms = static_cast<std::uint64_t>(a.integer_in("deadline-ms", 0, 1, static_cast<std::int64_t>(proto::max_deadline_ms)));
  if (a.has("ttft-ms"))
    d.ttft_ms = static_cast<std::uint64_t>(a.integer_in("ttft-ms", 0, 1, static_cast<std::int64_t>(proto::max_deadline_ms)));
  // Goodput with a deadline: requests that finished within it.
  if (d.deadline_ms && !lim.e2e_ms)
    lim.e2e_ms = static_cast<double>(*d.deadline_ms);
  if (d.ttft_ms && !lim.ttft_ms)
    lim.ttft_ms = static_cast<double>(*d.ttft_ms);
  // The multi-turn chat workload (--workload chat): conversations instead of single requests.
  const auto workload = a.str("workload", "requests");
  if (workload != "requests" && workload != "chat")
    throw std::invalid_argument("--workload must be requests or chat (got '" + workload + "')");
  chat_workload_config cw;
  if (workload == "chat") {
    cw.conversations = static_cast<std::uint32_t>(a.integer_in("conversations", 16, 1, 1'000'000));
    cw.turns = static_cast<std::uint32_t>(a.integer_in("turns", 4, 1, 1000));
    cw.group_size = static_cast<std::uint32_t>(a.integer_in("group-size", 4, 1, 1'000'000));
    cw.system = parse_length_range(a.str("system", "256"), "--system");
    cw.user = parse_length_range(a.str("user", "32"), "--user");
    cw.output = w.output;
    cw.rate = w.rate;
    cw.think_s = a.real_above("think-s", 1, 0, true, 3600);
    cw.seed = w.seed;
  }
  const auto out_prefix = a.str("out");
  const bool quiet = a.has("quiet");
  client::client_options co;
  co.server_public_key = a.str("server-key");
  const auto http_model = a.str("model-name");
  a.finish();
  if (self_host) {
    std::cerr << "loadtest: starting an in-process cluster (" << cs->workers << " worker(s) on "
              << cs->worker.model_dir << ")\n";
    cluster = std::make_unique<cluster::local_cluster>(*cs);
    endpoint = via == "http" ? "http://" + cluster->http_address() : cluster->endpoint();
  }
  if (endpoint.empty())
    throw std::invalid_argument("give the cluster's ENDPOINT, or --self-host");
  // http://host:port: the OpenAI API (any compatible server); otherwise lorafleet's ZeroMQ protocol.
  std::unique_ptr<http_client> web;
  std::unique_ptr<client::client> zmq;
  submit_fn submit;
  if (endpoint.rfind("http://", 0) == 0) {
    web = std::make_unique<http_client>(endpoint, http_model);
    std::cerr << "loadtest: OpenAI API at " << endpoint << ", model " << web->model() << "\n";
    submit = [&web](const proto::submit_msg& m, client::stream_callbacks cb) { web->submit(m, std::move(cb)); };
  } else {
    co.endpoint = endpoint;
    zmq = std::make_unique<client::client>(co);
    if (!zmq->ping(std::chrono::seconds(10)))
      throw std::runtime_error("no answer from " + endpoint + " within 10 s");
    submit = [&zmq](const proto::submit_msg& m, client::stream_callbacks cb) { zmq->submit(std::move(m), std::move(cb)); };
  }

  if (workload == "chat")
    return run_chat_workload(cw, d, lim, submit, out_prefix, quiet, cluster.get(), endpoint);

  struct point { std::string label; double x; workload_config w; driver_options d; };
  std::vector<point> points;
  if (!sweep_c.empty()) {
    for (double x : sweep_c) {
      point p{"concurrency " + std::to_string(static_cast<int>(x)), x, w, d};
      p.w.mode = p.d.mode = arrival_mode::closed;
      p.w.concurrency = p.d.concurrency = static_cast<std::uint32_t>(x);
      if (!w.tenants.empty())
        p.d.tenant_concurrency = split_by_share(w.tenants, x);
      if (per_client > 0)  // <= 10000000, checked above
        p.w.num_requests = static_cast<std::uint32_t>(static_cast<std::uint64_t>(per_client) * p.w.concurrency);
      points.push_back(p);
    }
  } else if (!sweep_r.empty()) {
    for (double x : sweep_r) {
      std::ostringstream label;
      label << "rate " << x << "/s";
      point p{label.str(), x, w, d};
      p.w.mode = p.d.mode = arrival_mode::poisson;
      p.w.rate = x;
      points.push_back(p);
    }
  } else {
    point p{"run", 0, w, d};
    p.d.mode = w.mode;
    p.d.concurrency = w.concurrency;
    if (!w.tenants.empty())
      p.d.tenant_concurrency = split_by_share(w.tenants, w.concurrency);
    points.push_back(p);
  }
  nlohmann::json tenants_json = nlohmann::json::array();
  for (const auto& t : w.tenants)
    tenants_json.push_back({{"name", t.name}, {"share", t.share}});
  nlohmann::json report{{"endpoint", endpoint}, {"arrival", mode}, {"requests", w.num_requests},
                        {"tenants", tenants_json}, {"service_weights", {sw.prompt, sw.output}},
                        {"input", a.str("input", "128")}, {"output", a.str("output", "128")},
                        {"adapters", w.adapters}, {"zipf", w.zipf}, {"points", nlohmann::json::array()}};
  {  // what produced these figures: the exact command line and when it started (UTC)
    std::string cmdline = "lorafleet";
    for (int i = 1; i < argc; ++i) {
      const std::string prev = argv[i - 1];
      const bool secret = prev.size() > 11 && prev.compare(prev.size() - 11, 11, "-secret-key") == 0;
      cmdline += std::string(" ") + (secret ? "(secret)" : argv[i]);
    }
    const auto now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
    report["command"] = cmdline;
    report["started_utc"] = stamp;
  }
  std::vector<sweep_point> summaries;
  std::vector<request_sample> last_samples;
  std::size_t total_lost = 0;
  for (std::size_t k = 0; k < points.size(); ++k)
    points[k].w.seed = w.seed + k;  // each point its own prompts and adapter draws
  for (auto& p : points) {
    const auto plan_ = plan(p.w, synthetic_text);
    if (!quiet)
      p.d.progress = [n = plan_.size()](std::size_t e, std::size_t s, std::uint64_t t, double el) {
        progress_line(e, s, t, el, n);
      };
    std::cerr << "loadtest: " << p.label << ": " << plan_.size() << " requests\n";
    const std::uint64_t resent_before = web ? web->stale_retries() : 0;
    auto r = run_workload(submit, plan_, p.d);
    if (!quiet)
      std::cerr << "\n";
    auto s = summarize(r.samples, r.duration_s, lim, r.lost);
    s.stale_retries = web ? static_cast<std::size_t>(web->stale_retries() - resent_before) : 0;
    total_lost += r.lost;
    summaries.push_back({p.label, p.x, s});
    auto j = to_json(s);
    j["label"] = p.label;
    j["x"] = p.x;
    const auto wasted = waste(r.samples);
    j["waste"] = to_json(wasted);
    std::optional<fairness_summary> fair;
    if (!w.tenants.empty()) {
      fair = fairness(r.samples, w.tenants, sw);
      j["fairness"] = to_json(*fair);
    }
    report["points"].push_back(j);
    if (points.size() == 1) {
      print_summary(std::cout, s);
      if (fair)
        print_fairness(std::cout, *fair);
      if (d.deadline_ms || wasted.timed_out > 0)
        print_waste(std::cout, wasted);
    }
    if (fair && !out_prefix.empty() && points.size() == 1)
      std::ofstream(out_prefix + "-tenants.svg") << tenant_service_svg(r.samples, *fair, sw, "lorafleet: service per tenant");
    last_samples = std::move(r.samples);
  }
  if (points.size() > 1)
    print_sweep(std::cout, summaries);
  if (!out_prefix.empty()) {
    std::ofstream(out_prefix + ".json") << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    std::ofstream csv(out_prefix + ".csv");
    write_csv(csv, last_samples);
    std::ofstream(out_prefix + ".svg")
      << (points.size() <= 1 ? latency_svg(last_samples, "lorafleet: latency distribution")
          : !sweep_r.empty() ? rate_sweep_svg(summaries, "lorafleet: goodput and latency vs offered rate")
                             : sweep_svg(summaries, "lorafleet: throughput vs latency"));
    std::cerr << "loadtest: wrote " << out_prefix << ".json, .csv (last run), .svg\n";
  }
  if (cluster)
    cluster->shutdown(std::chrono::seconds(5));
  return total_lost == 0 ? 0 : 3;
}

} // namespace lf::tools
