// bench_spec: what speculative decoding with n-gram (prompt-lookup) proposals or a draft model
// buys, through the worker's serving loop on one model (a program, not a test).
//
//   bench_spec --model DIR [--draft DIR] [--threads N] [--dtype int8|f32] [--kv-dtype T]
//              [--streams 1,4,32] [--workload grounded|chat] [--modes off,on,auto,draft,draft-auto]
//              [--tokens N] [--repeats R] [--speculative-tokens K] [--draft-threads N] [--json FILE]
//
// Modes: off; on / auto: n-gram proposals always / by the automatic rule; draft / draft-auto: the
// draft model's (--draft: the same vocabulary, in the same dtype, its own K/V pool; prompts are
// cut to fit its context too).
// Closed loop: `streams` clients, each sending its next request when the last one ended
// (max(2 * streams, 6) requests a run; 32 streams: 32 requests), greedy, `tokens` tokens out
// (ignore_eos, so every mode generates the same tokens: speculation never changes them).
// Workloads: grounded (prompts that ask to repeat a passage they contain: paragraphs of the
// repository's own docs) and chat (the chat template's short questions). Modes run in turn,
// `repeats` times, and the medians are printed: output tokens/s, acceptance, tokens per
// speculative row per step.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "proto/chat_template.hpp"
#include "text/tokenizer.hpp"
#include "tools/common/args.hpp"
#include "tools/common/kv_dtype_flag.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/serving_loop.hpp"

using namespace lf;
using namespace lf::engine;
using namespace lf::worker;
using clock_type = std::chrono::steady_clock;

namespace {

/// Paragraphs of README.md / docs/architecture.md of at least 200 characters, cut to `max_chars`.
std::vector<std::string> passages(std::size_t max_chars) {
  std::vector<std::string> out;
  for (const char* f : {"README.md", "docs/architecture.md"}) {
    std::ifstream in(std::string(LF_SOURCE_DIR) + "/" + f);
    std::string line, para;
    auto flush = [&] {
      if (para.size() >= 200 && para.find('|') == std::string::npos && para.find("```") == std::string::npos)
        out.push_back(para.substr(0, max_chars));
      para.clear();
    };
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#')
        flush();
      else
        para += (para.empty() ? "" : " ") + line;
    }
    flush();
  }
  return out;
}

std::vector<std::vector<std::int32_t>> prompts(const std::string& workload, const text::tokenizer& tok,
                                               std::size_t context, int out_tokens) {
  std::vector<std::vector<std::int32_t>> ps;
  if (workload == "grounded") {
    const auto budget = context - static_cast<std::size_t>(out_tokens) - 8;
    const char* asks[] = {"Repeat the following passage exactly.", "Copy this text word for word.",
                          "Summarise the passage below, quoting it where you can.",
                          "Edit the passage below: fix any mistakes, keep the rest as it is."};
    std::size_t k = 0;
    for (const auto& p : passages(1200)) {
      auto t = tok.encode(std::string(asks[k++ % 4]) + "\n\n" + p + "\n\nAnswer:\n");
      if (t.size() > budget)
        t.erase(t.begin(), t.end() - static_cast<std::ptrdiff_t>(budget));
      ps.push_back(std::move(t));
    }
  } else {
    const char* qs[] = {"What is the capital of France?", "Tell me a story about a dragon.",
                        "How do I bake bread?", "What is your favourite colour and why?",
                        "Explain how a bicycle works.", "Write a poem about the sea."};
    for (const char* q : qs)
      ps.push_back(tok.encode(proto::render_chat_prompt({{proto::chat_role::user, q}})));
  }
  if (ps.empty())
    throw std::runtime_error("bench_spec: no prompts for workload " + workload);
  return ps;
}

struct run_out {
  double wall_s = 0, tokens = 0;
  speculation_stats spec;
  std::vector<std::vector<std::int32_t>> outputs;
};

run_out run(cpu_model& model, cpu_model* draft, const text::tokenizer& tok, kernels::kv_type kt,
            serving_config cfg, const std::vector<std::vector<std::int32_t>>& ps, std::size_t streams,
            int out_tokens) {
  const auto& mc = model.config();
  cfg.block_size = 16;
  cfg.num_blocks = static_cast<std::uint32_t>(streams * ((mc.n_positions + 15) / 16) + 16);
  cfg.sched.max_seqs = static_cast<std::uint32_t>(std::max<std::size_t>(streams, 1));
  cfg.sched.max_batched_tokens = 512;
  kernels::kv_cache kv(kv_shape_of(mc, 16, cfg.num_blocks, kt));
  cpu_runner runner(model, kv);
  std::unique_ptr<kernels::kv_cache> draft_kv;
  std::unique_ptr<cpu_runner> draft_runner;
  if (draft && cfg.method == speculation_method::draft) {
    const auto& dc = draft->config();
    cfg.draft_block_size = 16;
    cfg.draft_context = static_cast<std::uint32_t>(dc.n_positions);
    cfg.draft_blocks = static_cast<std::uint32_t>(streams * ((dc.n_positions + 15) / 16) + 16);
    draft_kv = std::make_unique<kernels::kv_cache>(kv_shape_of(dc, 16, cfg.draft_blocks, kt));
    draft_runner = std::make_unique<cpu_runner>(*draft, *draft_kv);
  }
  serving_loop loop(runner, tok, cfg, nullptr, draft_runner.get());
  const std::size_t n = streams >= 32 ? streams : std::max<std::size_t>(2 * streams, 6);
  run_out out;
  out.outputs.resize(n);
  std::mutex m;
  std::condition_variable cv;
  std::size_t next = 0, done = 0;
  std::function<void()> submit_next = [&] {
    if (next >= n)
      return;
    const auto i = next++;
    request_draft d;
    d.prompt = ps[i % ps.size()];
    d.params.temperature = 0;
    d.params.ignore_eos = true;
    d.params.max_tokens = out_tokens;
    request_callbacks cb;
    cb.on_done = [&, i](request_result r) {
      std::lock_guard<std::mutex> g(m);
      if (r.outcome != request_outcome::finished)
        std::cerr << "request " << i << " failed: " << r.message << "\n";
      out.tokens += static_cast<double>(r.tokens.size());
      out.outputs[i] = std::move(r.tokens);
      ++done;
      submit_next();
      cv.notify_all();
    };
    loop.submit(validate_or_throw(std::move(d), mc.limits()), std::nullopt, std::move(cb));
  };
  const auto t0 = clock_type::now();
  {
    std::unique_lock<std::mutex> lk(m);
    for (std::size_t k = 0; k < std::min(streams, n); ++k)
      submit_next();
    cv.wait(lk, [&] { return done == n; });
  }
  out.wall_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  loop.stop(true);
  out.spec = loop.load().speculation;
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ','))
    out.push_back(x);
  return out;
}

} // namespace

int main(int argc, char** argv) try {
  tools::args a(argc, argv, 1);
  const auto model_dir = a.required("model");
  const auto draft_dir = a.str("draft");
  const int draft_threads = static_cast<int>(a.integer("draft-threads", 1));
  const int threads = static_cast<int>(a.integer("threads", 2));
  const auto dtype = parse_compute_dtype(a.str("dtype", "int8"));
  const auto kt = tools::kv_dtype_flag(a, "bf16");
  const auto workload = a.str("workload", "grounded");
  const auto streams = split(a.str("streams", "1,4,32"));
  const auto modes = split(a.str("modes", draft_dir.empty() ? "off,on,auto" : "off,on,draft,draft-auto"));
  const int out_tokens = static_cast<int>(a.integer("tokens", 64));
  const int repeats = static_cast<int>(a.integer("repeats", 3));
  const auto spec_tokens = static_cast<std::uint32_t>(a.integer("speculative-tokens", 4));
  const auto json_out = a.str("json");
  a.finish();
  cpu_model model(load_cpu_weights(model_dir, dtype), threads);
  std::unique_ptr<cpu_model> draft;
  if (!draft_dir.empty())
    draft = std::make_unique<cpu_model>(load_cpu_weights(draft_dir, dtype), draft_threads > 0 ? draft_threads : threads);
  auto tok = text::tokenizer::from_dir(model_dir);
  auto context = static_cast<std::size_t>(model.config().n_positions);
  if (draft)
    context = std::min(context, static_cast<std::size_t>(draft->config().n_positions));
  const auto ps = prompts(workload, tok, context, out_tokens);
  if (draft)
    std::cout << "draft " << draft_dir << " (" << draft->config().n_layer << " layers, " << draft->config().n_embd
              << " embd, context " << draft->config().n_positions << ")\n";
  std::cout << "model " << model_dir << " (" << model.config().n_layer << " layers, " << model.config().n_embd
            << " embd), dtype " << to_string(dtype) << ", kv " << kernels::to_string(kt) << ", threads " << threads
            << ", workload " << workload << " (" << ps.size() << " prompts, " << out_tokens << " tokens out)\n";
  nlohmann::json js = nlohmann::json::array();
  for (const auto& s : streams) {
    const auto n = static_cast<std::size_t>(std::stoul(s));
    std::map<std::string, std::vector<double>> tps, acc, per_row, draft_share;
    std::vector<std::vector<std::int32_t>> reference;
    bool identical = true;
    for (int r = 0; r < repeats; ++r)
      for (const auto& mode_name : modes) {
        serving_config cfg;
        const bool with_draft = mode_name.rfind("draft", 0) == 0;
        if (with_draft && !draft)
          throw std::invalid_argument("mode " + mode_name + " needs --draft DIR");
        const auto m = with_draft ? (mode_name == "draft" ? std::optional<speculation_mode>(speculation_mode::on)
                                                          : parse_speculation_mode(mode_name.substr(6)))
                                  : parse_speculation_mode(mode_name);
        if (!m)
          throw std::invalid_argument("unknown mode " + mode_name + " (off, on, auto, draft, draft-auto)");
        cfg.speculation = *m;
        cfg.method = with_draft ? speculation_method::draft : speculation_method::ngram;
        cfg.speculative_tokens = spec_tokens;
        const auto o = run(model, draft.get(), tok, kt, cfg, ps, n, out_tokens);
        if (reference.empty())
          reference = o.outputs;
        identical = identical && o.outputs == reference;
        tps[mode_name].push_back(o.tokens / o.wall_s);
        acc[mode_name].push_back(o.spec.acceptance_rate());
        per_row[mode_name].push_back(o.spec.tokens_per_row());
        draft_share[mode_name].push_back(o.wall_s > 0 ? o.spec.draft_ms / 1000.0 / o.wall_s : 0.0);
      }
    const double base = median(tps[modes.front()]);
    for (const auto& mode_name : modes) {
      const double t = median(tps[mode_name]);
      std::cout << "streams " << std::setw(2) << n << "  " << std::setw(4) << mode_name << "  " << std::fixed
                << std::setprecision(1) << std::setw(7) << t << " tok/s  x" << std::setprecision(2) << t / base
                << "  acceptance " << median(acc[mode_name]) << "  tokens/row " << median(per_row[mode_name])
                << "  draft time " << median(draft_share[mode_name]) << "  runs";
      for (auto x : tps[mode_name])
        std::cout << " " << std::setprecision(1) << x;
      std::cout << "\n";
      js.push_back({{"streams", n}, {"mode", mode_name}, {"tok_s", t}, {"ratio", t / base},
                    {"acceptance", median(acc[mode_name])}, {"tokens_per_row", median(per_row[mode_name])},
                    {"draft_time_share", median(draft_share[mode_name])},
                    {"runs", tps[mode_name]}});
    }
    std::cout << "streams " << n << ": outputs " << (identical ? "identical in every mode and run" : "DIFFER")
              << "\n";
    if (!identical)
      return 1;
  }
  if (!json_out.empty())
    std::ofstream(json_out) << js.dump(2) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_spec: " << e.what() << "\n";
  return 2;
}
