// bench_constrain: what structured output costs (a program, not a test).
//
//   bench_constrain [--model DIR] [--threads N] [--tokens N] [--reps R] [--json FILE]
//
// 1. compile: the typical schema (an object of 6 fields: a string, an enum, an integer, a number,
//    an array of strings, a nested object) compiled from its text, median of 50; and the first
//    mask over GPT-2's vocabulary (the walk of the vocabulary trie from the start state).
// 2. mask per token per row: random constrained decodes of the typical schema over GPT-2's
//    vocabulary (uniform among allowed tokens); per step the mask lookup (cached or computed),
//    the masking of a 50,257-float row, and the automaton's advance. Also with the vocabulary cut
//    to its first 8k / 16k / 32k tokens: what depends on the vocabulary's size.
// 3. throughput: the serving loop on the CPU engine over --model (default models/default),
//    greedy, 1 and 32 concurrent closed-loop streams, with and without the typical schema;
//    generated tokens per second over --tokens tokens per stream count, median of --reps runs
//    taken in turn (on, off, on, off, ...). The unconstrained requests get the lengths the
//    constrained ones had (ignore_eos, max_tokens = that length), so the work differs only by
//    the constraint.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <random>

#include <nlohmann/json.hpp>

#include "constrain/constraint.hpp"
#include "text/tokenizer.hpp"
#include "tools/common/args.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/serving_loop.hpp"

using namespace lf;
using clock_type = std::chrono::steady_clock;

namespace {

const char* typical_schema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":12},
  "kind":{"enum":["cat","dog","bird"]},
  "age":{"type":"integer"},
  "score":{"type":"number"},
  "tags":{"type":"array","items":{"type":"string","maxLength":5},"maxItems":3},
  "owner":{"type":"object","properties":{"id":{"type":"integer"},"vip":{"type":"boolean"}},
           "required":["id","vip"],"additionalProperties":false}},
  "required":["name","kind","age","score","tags","owner"],"additionalProperties":false})";

double us_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t).count();
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double pct(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

std::vector<std::string> vocab_bytes(const text::tokenizer& tok, std::size_t n) {
  std::vector<std::string> b;
  for (std::size_t i = 0; i < n; ++i)
    b.push_back(tok.decode_token(static_cast<std::int32_t>(i)));
  return b;
}

/// Random decodes of the typical schema: per-step costs in microseconds.
nlohmann::json mask_costs(const text::tokenizer& tok, std::size_t vocab, int walks) {
  const lf::output_constraint c{"json_schema", typical_schema};
  auto trie = std::make_shared<const constrain::vocab_trie>(vocab_bytes(tok, vocab),
                                                            vocab > 50256 ? tok.eos_id() : -1);
  constrain::constraint_cache cache(trie, 4);
  auto a = cache.get(c);
  std::mt19937_64 rng(1);
  std::vector<double> lookup, cold, apply, step;
  std::vector<float> row(vocab, 0.5f), compact;
  int steps = 0, compacted = 0;
  for (int w = 0; w < walks; ++w) {
    auto cur = a->start();
    for (int s = 0; s < 400; ++s) {
      const auto before = a->states();
      auto t = clock_type::now();
      const auto m = a->mask(cur);
      const double mt = us_since(t);
      (a->states() != before || s == 0 ? cold : lookup).push_back(mt);
      // What the serving loop does with it (worker/constraint_runner.cpp): gather the few allowed
      // logits, or set the others to -inf.
      t = clock_type::now();
      if (!m->ids.empty()) {
        compact.resize(m->ids.size());
        for (std::size_t j = 0; j < m->ids.size(); ++j)
          compact[j] = row[static_cast<std::size_t>(m->ids[j])];
        ++compacted;
      } else {
        for (std::size_t wd = 0; wd * 64 < vocab; ++wd) {
          const auto bits = m->bits[wd];
          if (bits == ~std::uint64_t{0})
            continue;
          const auto end = std::min(vocab, (wd + 1) * 64);
          for (auto i = wd * 64; i < end; ++i)
            if (!((bits >> (i - wd * 64)) & 1u))
              row[i] = -1e30f;
        }
      }
      apply.push_back(us_since(t));
      std::vector<std::int32_t> ids;
      for (std::size_t i = 0; i < vocab; ++i)
        if (m->test(static_cast<std::int32_t>(i)))
          ids.push_back(static_cast<std::int32_t>(i));
      if (ids.empty())
        break;
      const auto tokid = ids[rng() % ids.size()];
      if (tokid == tok.eos_id())
        break;
      t = clock_type::now();
      auto n = a->advance(cur, tokid);
      step.push_back(us_since(t));
      if (!n)
        break;
      cur = *n;
      ++steps;
      if (a->accepting(cur) && cur.state->stacks.size() == 1)
        break;
    }
  }
  nlohmann::json j{{"vocab", vocab}, {"steps", steps},
                   {"lookup_us_p50", median(lookup)}, {"lookup_us_p99", pct(lookup, 0.99)},
                   {"computed_us_p50", median(cold)}, {"computed_us_p99", pct(cold, 0.99)},
                   {"computed_share", static_cast<double>(cold.size()) / static_cast<double>(cold.size() + lookup.size())},
                   {"apply_us_p50", median(apply)}, {"advance_us_p50", median(step)},
                   {"states", a->states()},
                   {"compact_share", static_cast<double>(compacted) / static_cast<double>(std::max<std::size_t>(1, apply.size()))}};
  std::vector<double> all = lookup;
  all.insert(all.end(), cold.begin(), cold.end());
  double mean = 0;
  for (auto x : all)
    mean += x;
  j["mask_us_mean"] = all.empty() ? 0 : mean / static_cast<double>(all.size());
  return j;
}

/// Closed loop: `streams` clients each submitting greedy requests until `total_tokens` are made.
/// Constrained requests end when their JSON is complete; `lengths` (filled by the constrained
/// run, used by the other) gives each unconstrained request the same length, so both runs do
/// the same work but for the constraint.
double throughput(engine::cpu_model& model, const text::tokenizer& tok, int streams, int total_tokens,
                  bool schema, std::vector<int>& lengths) {
  const auto& mc = model.config();
  worker::serving_config cfg;
  cfg.block_size = 16;
  cfg.num_blocks = 1024;
  cfg.sched.max_seqs = 64;
  cfg.sched.max_batched_tokens = 512;
  cfg.eos_id = tok.eos_id();
  kernels::kv_cache kv(engine::kv_shape_of(mc, 16, cfg.num_blocks, kernels::kv_type::bf16));
  engine::cpu_runner runner(model, kv);
  std::mutex m;
  std::condition_variable cv;
  int made = 0, live = 0, submitted = 0;
  const auto prompt = tok.encode("Here is a pet record as JSON:");
  worker::serving_loop loop(runner, tok, cfg);
  std::function<void()> submit_one = [&] {  // m held
    request_draft d;
    d.prompt = prompt;
    d.prompt.push_back(static_cast<std::int32_t>(220 + submitted % 50));  // prompts differ a little
    d.params.temperature = 0;
    d.params.max_tokens = 160;
    if (schema) {
      d.params.constraint = {"json_schema", typical_schema};
    } else {
      d.params.ignore_eos = true;
      if (!lengths.empty())
        d.params.max_tokens = lengths[static_cast<std::size_t>(submitted) % lengths.size()];
    }
    const int index = submitted;
    ++submitted;
    ++live;
    worker::request_callbacks cb;
    cb.on_done = [&, index](worker::request_result r) {
      std::lock_guard<std::mutex> g(m);
      made += static_cast<int>(r.tokens.size());
      if (schema) {
        if (lengths.size() <= static_cast<std::size_t>(index))
          lengths.resize(static_cast<std::size_t>(index) + 1, 1);
        lengths[static_cast<std::size_t>(index)] = std::max(1, static_cast<int>(r.tokens.size()));
      }
      --live;
      if (made < total_tokens)
        submit_one();
      cv.notify_all();
    };
    loop.submit(validate_or_throw(std::move(d), mc.limits()), std::nullopt, std::move(cb));
  };
  const auto t0 = clock_type::now();
  {
    std::lock_guard<std::mutex> g(m);
    for (int i = 0; i < streams; ++i)
      submit_one();
  }
  std::unique_lock<std::mutex> lk(m);
  cv.wait(lk, [&] { return live == 0; });
  const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
  lk.unlock();
  loop.stop(true);
  return made / s;
}

} // namespace

int main(int argc, char** argv) try {
  std::cout << std::unitbuf << std::fixed << std::setprecision(2);
  tools::args a(argc, argv, 1);
  const auto model_dir = a.str("model", LF_MODELS_DIR "/default");
  const int threads = static_cast<int>(a.integer_in("threads", 2, 1, 256));
  const int tokens = static_cast<int>(a.integer_in("tokens", 1500, 1, 1 << 24));
  const int reps = static_cast<int>(a.integer_in("reps", 3, 1, 100));
  const auto json_path = a.str("json");
  a.finish();
  auto tok = text::tokenizer::from_dir(LF_TOKENIZER_DIR);
  nlohmann::json report;

  std::vector<double> compile_ms;
  for (int i = 0; i < 50; ++i) {
    const auto t = clock_type::now();
    auto g = constrain::compile_constraint({"json_schema", typical_schema});
    compile_ms.push_back(us_since(t) / 1000);
  }
  auto trie_t = clock_type::now();
  auto trie = std::make_shared<const constrain::vocab_trie>(vocab_bytes(tok, tok.vocab_size()), tok.eos_id());
  const double trie_ms = us_since(trie_t) / 1000;
  std::vector<double> first_ms;
  for (int i = 0; i < 10; ++i) {
    const auto t = clock_type::now();
    constrain::token_automaton au(std::make_shared<const constrain::grammar>(
                                      constrain::compile_constraint({"json_schema", typical_schema})), trie);
    au.mask(au.start());
    first_ms.push_back(us_since(t) / 1000);
  }
  std::cout << "[compile] typical schema: " << median(compile_ms) << " ms (median of 50); compile + first mask: "
            << median(first_ms) << " ms (median of 10); vocabulary trie (once per worker): " << trie_ms << " ms\n";
  report["compile_ms"] = median(compile_ms);
  report["compile_and_first_mask_ms"] = median(first_ms);
  report["trie_ms"] = trie_ms;

  std::cout << "[mask] random decodes of the typical schema, per token per row (us):\n"
            << "   vocab | steps | lookup p50 | computed p50 | computed p99 | computed share | mask mean | apply p50 | advance p50 | few-ids share\n";
  for (std::size_t v : {std::size_t{8192}, std::size_t{16384}, std::size_t{32768}, tok.vocab_size()}) {
    auto j = mask_costs(tok, v, 40);
    std::cout << "  " << std::setw(6) << v << " | " << std::setw(5) << j["steps"].get<int>() << " | " << std::setw(10)
              << j["lookup_us_p50"].get<double>() << " | " << std::setw(12) << j["computed_us_p50"].get<double>()
              << " | " << std::setw(12) << j["computed_us_p99"].get<double>() << " | " << std::setw(14)
              << j["computed_share"].get<double>() << " | " << std::setw(9) << j["mask_us_mean"].get<double>()
              << " | " << std::setw(9) << j["apply_us_p50"].get<double>() << " | " << std::setw(11)
              << j["advance_us_p50"].get<double>() << " | " << j["compact_share"].get<double>() << "\n";
    report["mask"].push_back(j);
  }

  engine::cpu_model model(engine::load_cpu_weights(model_dir, engine::compute_dtype::int8), threads);
  std::cout << "[throughput] " << model_dir << " (int8, " << threads << " threads), greedy, generated tokens/s, "
            << tokens << " tokens per run, median of " << reps << " runs taken in turn:\n";
  for (int streams : {1, 32}) {
    std::vector<double> off, on;
    for (int r = 0; r < reps; ++r) {
      std::vector<int> lengths;
      on.push_back(throughput(model, tok, streams, tokens, true, lengths));
      off.push_back(throughput(model, tok, streams, tokens, false, lengths));
    }
    const double o = median(off), s = median(on);
    std::cout << "  streams " << std::setw(2) << streams << ": without " << o << " tok/s, with the schema " << s
              << " tok/s: " << 100.0 * (o - s) / o << "% lost\n";
    report["throughput"].push_back({{"streams", streams}, {"off", off}, {"on", on}, {"loss_pct", 100.0 * (o - s) / o}});
  }
  if (!json_path.empty())
    std::ofstream(json_path) << report.dump(2) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_constrain: " << e.what() << "\n";
  return 1;
}
