// `lorafleet loadtest`: closed-loop, Poisson and sweep workloads against a cluster, with a live
// progress line, a summary table, and JSON / CSV / SVG files.
#include <unistd.h>

#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "router/local_cluster.hpp"
#include "tools/args.hpp"
#include "tools/commands.hpp"
#include "tools/loadtest/driver.hpp"
#include "tools/loadtest/passage.hpp"
#include "tools/loadtest/report.hpp"
#include "tools/serve_options.hpp"
#include "worker/engine/tokenizer.hpp"

namespace lf::tools {

namespace {

using namespace lf::loadtest;

const engine::tokenizer& tok() {
  static const auto t = engine::tokenizer::from_dir(default_tokenizer_dir());
  return t;
}

/// About `n` tokens of public-domain English, starting at a salt-chosen place.
std::string synthetic_text(std::uint32_t n, std::uint64_t salt) {
  static const auto ids = tok().encode(passage_text());
  std::vector<std::int32_t> out;
  for (std::size_t i = salt % ids.size(); out.size() < n; i = (i + 1) % ids.size())
    out.push_back(ids[i]);
  return tok().decode(out);
}

std::vector<double> parse_list(const std::string& s, const std::string& flag) {
  std::vector<double> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) {
    try {
      v.push_back(std::stod(x));
    } catch (const std::exception&) {
      throw std::invalid_argument("--" + flag + ": not a number: '" + x + "'");
    }
    if (!(v.back() > 0))
      throw std::invalid_argument("--" + flag + ": values must be > 0");
  }
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

} // namespace

int cmd_loadtest(int argc, char** argv) {
  args a(argc, argv, 2, {"self-host", "chat", "no-ignore-eos", "quiet"});
  const bool self_host = a.has("self-host");
  std::unique_ptr<router::local_cluster> cluster;
  std::string endpoint = a.positional().empty() ? std::string{} : a.positional()[0];
  std::optional<router::cluster_settings> cs;
  if (self_host) {
    cs = cluster_settings_from(a);
    cs->gateway.endpoint = "tcp://127.0.0.1:*";
  }
  workload_config w;
  const auto mode = a.str("arrival", "closed");
  if (mode != "closed" && mode != "poisson")
    throw std::invalid_argument("--mode must be closed or poisson");
  w.mode = mode == "closed" ? arrival_mode::closed : arrival_mode::poisson;
  w.concurrency = static_cast<std::uint32_t>(a.integer("concurrency", 8));
  w.rate = a.real("rate", 4);
  w.burstiness = a.real("burstiness", 1);
  w.num_requests = static_cast<std::uint32_t>(a.integer("requests", 64));
  w.input = parse_length_range(a.str("input", "128"), "--input");
  w.output = parse_length_range(a.str("output", "128"), "--output");
  w.ignore_eos = !a.has("no-ignore-eos");
  if (a.has("adapters")) {
    std::stringstream ss(a.str("adapters"));
    for (std::string x; std::getline(ss, x, ',');)
      w.adapters.push_back(x);
  }
  w.skew = a.real("skew", 0);
  w.chat = a.has("chat");
  if (a.has("prompts"))
    w.prompts = read_prompts(a.str("prompts"));
  w.seed = static_cast<std::uint64_t>(a.integer("seed", 1));
  w.long_every = static_cast<std::uint32_t>(a.integer("long-every", 0));
  w.long_output = static_cast<std::uint32_t>(a.integer("long-output", 100));
  const auto per_client = static_cast<std::uint32_t>(a.integer("per-client", 0));
  const auto sweep_c = a.has("sweep-concurrency") ? parse_list(a.str("sweep-concurrency"), "sweep-concurrency") : std::vector<double>{};
  const auto sweep_r = a.has("sweep-rate") ? parse_list(a.str("sweep-rate"), "sweep-rate") : std::vector<double>{};
  goodput_limits lim;
  if (a.has("goodput-ttft-ms"))
    lim.ttft_ms = a.real("goodput-ttft-ms", 0);
  if (a.has("goodput-tpot-ms"))
    lim.tpot_ms = a.real("goodput-tpot-ms", 0);
  if (a.has("goodput-e2e-ms"))
    lim.e2e_ms = a.real("goodput-e2e-ms", 0);
  driver_options d;
  d.duration_s = a.real("duration", 0);
  d.drain = std::chrono::milliseconds(static_cast<long>(a.real("timeout", 120) * 1000));
  d.chat = w.chat;
  d.ignore_eos = w.ignore_eos;
  d.temperature = a.real("temperature", 0);
  const auto out_prefix = a.str("out");
  const bool quiet = a.has("quiet");
  client::client_options co;
  co.server_public_key = a.str("server-key");
  a.finish();
  if (w.concurrency < 1 || w.num_requests < 1)
    throw std::invalid_argument("--concurrency and --requests must be >= 1");
  if (self_host) {
    std::cerr << "loadtest: starting an in-process cluster (" << cs->workers << " worker(s) on "
              << cs->worker.model_dir << ")\n";
    cluster = std::make_unique<router::local_cluster>(*cs);
    endpoint = cluster->endpoint();
  }
  if (endpoint.empty())
    throw std::invalid_argument("give the cluster's ENDPOINT, or --self-host");
  co.endpoint = endpoint;
  client::client c(co);
  if (!c.ping(std::chrono::seconds(10)))
    throw std::runtime_error("no answer from " + endpoint + " within 10 s");

  struct point { std::string label; double x; workload_config w; driver_options d; };
  std::vector<point> points;
  if (!sweep_c.empty()) {
    for (double x : sweep_c) {
      point p{"concurrency " + std::to_string(static_cast<int>(x)), x, w, d};
      p.w.mode = p.d.mode = arrival_mode::closed;
      p.w.concurrency = p.d.concurrency = static_cast<std::uint32_t>(x);
      if (per_client > 0)
        p.w.num_requests = per_client * p.w.concurrency;
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
    points.push_back(p);
  }
  nlohmann::json report{{"endpoint", endpoint}, {"arrival", mode}, {"requests", w.num_requests},
                        {"input", a.str("input", "128")}, {"output", a.str("output", "128")},
                        {"adapters", w.adapters}, {"points", nlohmann::json::array()}};
  std::vector<sweep_point> summaries;
  std::vector<request_sample> last_samples;
  std::size_t total_lost = 0;
  for (auto& p : points) {
    const auto plan_ = plan(p.w, synthetic_text);
    if (!quiet)
      p.d.progress = [n = plan_.size()](std::size_t e, std::size_t s, std::uint64_t t, double el) {
        progress_line(e, s, t, el, n);
      };
    std::cerr << "loadtest: " << p.label << ": " << plan_.size() << " requests\n";
    auto r = run_workload(c, plan_, p.d);
    if (!quiet)
      std::cerr << "\n";
    auto s = summarize(r.samples, r.duration_s, lim, r.lost);
    total_lost += r.lost;
    summaries.push_back({p.label, p.x, s});
    auto j = to_json(s);
    j["label"] = p.label;
    j["x"] = p.x;
    report["points"].push_back(j);
    if (points.size() == 1)
      print_summary(std::cout, s);
    last_samples = std::move(r.samples);
  }
  if (points.size() > 1)
    print_sweep(std::cout, summaries);
  if (!out_prefix.empty()) {
    std::ofstream(out_prefix + ".json") << report.dump(2) << "\n";
    std::ofstream csv(out_prefix + ".csv");
    write_csv(csv, last_samples);
    std::ofstream(out_prefix + ".svg")
      << (points.size() > 1 ? sweep_svg(summaries, "lorafleet: throughput vs latency")
                            : latency_svg(last_samples, "lorafleet: latency distribution"));
    std::cerr << "loadtest: wrote " << out_prefix << ".json, .csv (last run), .svg\n";
  }
  if (cluster)
    cluster->shutdown(std::chrono::seconds(5));
  return total_lost == 0 ? 0 : 3;
}

} // namespace lf::tools
