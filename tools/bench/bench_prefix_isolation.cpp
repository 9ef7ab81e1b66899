// bench_prefix_isolation: what prefix-cache isolation between tenants costs (cache/cache_salt.hpp).
//
// 1. Hits: T tenants each send R requests of one shared system prompt (`--shared` tokens) plus
//    `--own` tokens of their own, round robin, through one block manager (allocate, commit the
//    whole prompt, free), under `shared` and under `tenant` isolation. Prints the prompt tokens
//    computed and served from the cache: what isolation gives up (each tenant computes the shared
//    prefix once, instead of one tenant for all). Deterministic counts.
// 2. Overhead: the time of probe() (hash the prompt's blocks, walk the index) and of a whole
//    allocate + commit + free, unsalted against salted, on a hit and on a miss: `--runs` runs of
//    `--iters` calls each, the two kinds alternating run by run; medians, and the median of the
//    per-run ratios (robust to a shared machine's load changing between runs).
//
//   bench_prefix_isolation [--tenants 8] [--requests 16] [--shared 512] [--own 16] [--block-size 16]
//                          [--runs 21] [--iters 5000]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cache/block_manager.hpp"
#include "cache/cache_salt.hpp"
#include "tools/common/args.hpp"
#include "tools/common/bench_stats.hpp"

using namespace lf::cache;

namespace {

using tokens = std::vector<std::int32_t>;

tokens prompt_of(std::uint32_t shared, std::uint32_t own, std::uint32_t tenant, std::uint32_t request) {
  tokens t;
  for (std::uint32_t i = 0; i < shared; ++i)
    t.push_back(static_cast<std::int32_t>(1000 + i % 40000));
  for (std::uint32_t i = 0; i < own; ++i)
    t.push_back(static_cast<std::int32_t>(45000 + (tenant * 131 + request * 17 + i) % 5000));
  return t;
}

struct hits {
  std::uint64_t computed = 0, cached = 0;
};

hits run_hits(prefix_isolation iso, std::uint32_t tenants, std::uint32_t requests, std::uint32_t shared,
              std::uint32_t own, std::uint32_t bs) {
  const auto per = (shared + own + bs - 1) / bs;
  block_manager bm({per * tenants * 4, bs, true, nullptr});
  hits h;
  std::uint64_t seq = 1;
  for (std::uint32_t r = 0; r < requests; ++r)
    for (std::uint32_t t = 0; t < tenants; ++t) {
      const auto p = prompt_of(shared, own, t, r);
      const auto salt = request_salt(iso, "tenant-" + std::to_string(t));
      const seq_id s{seq++};
      const auto got = bm.allocate(s, p, base_model, salt);
      if (!got)
        throw std::runtime_error("pool too small");
      h.cached += *got;
      h.computed += p.size() - *got;
      bm.commit_tokens(s, p, static_cast<std::uint32_t>(p.size()));
      bm.free(s);
    }
  return h;
}

/// Mean nanoseconds per call of `fn` over `iters` calls.
template <class F>
double ns_per_call(int iters, F& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i)
    fn(i);
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iters;
}

/// `a` and `b` timed in alternating runs (so a load change on a shared machine hits both): the
/// medians over `runs` of each one's ns per call, and the median of the per-run ratios b / a.
struct pair_times {
  double a = 0, b = 0, ratio = 0;
};
template <class A, class B>
pair_times median_pair(int runs, int iters, A&& fa, B&& fb) {
  std::vector<double> ta, tb, ratio;
  for (int r = 0; r < runs; ++r) {
    ta.push_back(ns_per_call(iters, fa));
    tb.push_back(ns_per_call(iters, fb));
    ratio.push_back(tb.back() / ta.back());
  }
  return {lf::tools::percentile(ta, 50), lf::tools::percentile(tb, 50), lf::tools::percentile(ratio, 50)};
}

volatile std::uint32_t sink = 0;

} // namespace

int main(int argc, char** argv) try {
  lf::tools::args a(argc, argv, 1);
  const auto tenants = static_cast<std::uint32_t>(a.integer_in("tenants", 8, 1, 1000));
  const auto requests = static_cast<std::uint32_t>(a.integer_in("requests", 16, 1, 100000));
  const auto shared = static_cast<std::uint32_t>(a.integer_in("shared", 512, 0, 100000));
  const auto own = static_cast<std::uint32_t>(a.integer_in("own", 16, 1, 100000));
  const auto bs = static_cast<std::uint32_t>(a.integer_in("block-size", 16, 1, 1024));
  const int runs = static_cast<int>(a.integer_in("runs", 21, 1, 1000));
  const int iters = static_cast<int>(a.integer_in("iters", 5000, 1, 100000000));
  a.finish();

  std::printf("hits: %u tenants x %u requests, %u shared + %u own prompt tokens, block %u\n", tenants, requests,
              shared, own, bs);
  std::printf("| isolation | prompt tokens computed | served from cache | hit rate |\n| --- | --- | --- | --- |\n");
  for (auto iso : {prefix_isolation::shared, prefix_isolation::tenant}) {
    const auto h = run_hits(iso, tenants, requests, shared, own, bs);
    std::printf("| %s | %llu | %llu | %.1f%% |\n", std::string(to_string(iso)).c_str(),
                static_cast<unsigned long long>(h.computed), static_cast<unsigned long long>(h.cached),
                100.0 * static_cast<double>(h.cached) / static_cast<double>(h.cached + h.computed));
  }

  const auto p = prompt_of(shared, own, 0, 0);
  const auto salt = tenant_salt("tenant-0");
  std::printf("\noverhead: median of %d runs x %d calls, %zu-token prompt (%zu blocks)\n", runs, iters, p.size(),
              p.size() / bs);
  std::printf("| call | unsalted ns | salted ns | median of per-run ratios |\n| --- | --- | --- | --- |\n");
  auto row = [&](const char* name, pair_times t) {
    std::printf("| %s | %.0f | %.0f | %.3f |\n", name, t.a, t.b, t.ratio);
  };
  {  // probe on a hit: the prompt's blocks are cached under both namespaces
    block_manager bm({static_cast<std::uint32_t>(4 * p.size() / bs + 8), bs, true, nullptr});
    for (auto [s, k] : {std::pair{seq_id{1}, no_salt}, std::pair{seq_id{2}, salt}}) {
      bm.allocate(s, p, base_model, k);
      bm.commit_tokens(s, p, static_cast<std::uint32_t>(p.size()));
      bm.free(s);
    }
    row("probe, all blocks hit",
        median_pair(runs, iters, [&](int) { sink += bm.probe(p, base_model, no_salt).hit_blocks; },
                    [&](int) { sink += bm.probe(p, base_model, salt).hit_blocks; }));
    const auto other = tenant_salt("tenant-1");  // nothing cached there: the first block misses
    row("probe, all blocks hit (unsalted) vs another tenant's namespace (miss)",
        median_pair(runs, iters, [&](int) { sink += bm.probe(p, base_model, no_salt).hit_blocks; },
                    [&](int) { sink += bm.probe(p, base_model, other).hit_blocks; }));
  }
  {  // a whole admission cycle on a hit
    block_manager bm({static_cast<std::uint32_t>(4 * p.size() / bs + 8), bs, true, nullptr});
    std::uint64_t next = 10;
    auto cycle = [&](cache_salt k) {
      const seq_id s{next++};
      sink += *bm.allocate(s, p, base_model, k);
      bm.commit_tokens(s, p, static_cast<std::uint32_t>(p.size()));
      bm.free(s);
    };
    cycle(no_salt);
    cycle(salt);
    row("allocate + commit + free, hit",
        median_pair(runs, iters, [&](int) { cycle(no_salt); }, [&](int) { cycle(salt); }));
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_prefix_isolation: " << e.what() << "\n";
  return 2;
}
