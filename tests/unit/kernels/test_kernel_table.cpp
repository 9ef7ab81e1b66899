// The kernel tables themselves: every table of this build is complete and named once, the
// portable one runs everywhere, a table this CPU cannot run is refused, and the sampler's passes
// give the same results in every table this machine runs.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <cstdlib>
#include <string>

#include "tests/unit/kernels/kernel_reference.hpp"

using namespace lf::kernels;
using lf::test::table_scope;

TEST_CASE("every table of this build is complete, and the portable one runs on any CPU", "[kernels][table]") {
  std::set<std::string> names;
  for (const auto* t : all_tables()) {
    INFO(t->name);
    CHECK(names.insert(std::string(t->name)).second);
    CHECK_FALSE(t->summary.empty());
    CHECK(t->gemm_f32);
    CHECK(t->gemm_bf16);
    CHECK(t->gemm_int8);
    CHECK(t->gemm_int4);
    CHECK(t->rows_to_bf16);
    CHECK(t->rows_to_u8);
    CHECK(t->attend);
    CHECK(t->layer_norm);
    CHECK(t->gelu_tanh);
    CHECK(t->lora_row);
    CHECK(t->logits_max);
    CHECK(t->first_index_of);
    CHECK(t->scale_and_exp);
    CHECK(t->block_masses);
    CHECK(t->peak);
  }
  CHECK(all_tables().front()->name == "portable");
  CHECK(runnable_tables(cpu_features{}).size() == 1);
  CHECK(&best_table(cpu_features{}) == all_tables().front());
  CHECK(find_table("generic") == all_tables().front());
  CHECK(find_table("no-such-table") == nullptr);
  // This machine runs its best table, and at least the portable one.
  WARN("kernel tables runnable here: " << runnable_names(host_features()) << " (cpu: " << describe(host_features()) << ")");
  const auto here = runnable_tables(host_features());
  REQUIRE_FALSE(here.empty());
  CHECK(here.front()->name == "portable");
  CHECK(&best_table(host_features()) == here.back());
}

TEST_CASE("a table this CPU cannot run is refused, one it runs is taken", "[kernels][table]") {
  for (const auto* t : all_tables()) {
    INFO(t->name);
    if (host_features().has_all(t->needs)) {
      table_scope scope(*t);
      CHECK(&active_table() == t);
    } else {
      CHECK_THROWS_AS(set_active_table(*t), std::invalid_argument);
    }
  }
  CHECK(&active_table() == &best_table(host_features()));
  // Capability sets, not levels: on x86 a table's needs name each extension it uses.
  if (const auto* vnni = find_table("avx512_vnni")) {
    CHECK(vnni->needs.has(cpu_cap::avx512_vnni));
    CHECK_FALSE(vnni->needs.has(cpu_cap::avx512_bf16));
    const cpu_features no_vnni{cpu_cap::avx2, cpu_cap::fma, cpu_cap::avx512f, cpu_cap::avx512bw, cpu_cap::avx512vl};
    CHECK(best_table(no_vnni).name == "avx512");
  }
  if (const auto* dot = find_table("neon_dotprod")) {
    CHECK(dot->needs.has(cpu_cap::dotprod));
    CHECK(best_table(cpu_features{cpu_cap::neon}).name == "neon");
  }
}

TEST_CASE("the sampler's passes give the same results in every table", "[kernels][table]") {
  for (std::size_t n : {1u, 15u, 16u, 17u, 1000u, 50257u}) {
    auto logits = lf::test::random_floats(n, n, 3.0f);
    logits[n / 2] = 1000.0f;  // the maximum, once
    if (n > 20)
      logits[n - 3] = -std::numeric_limits<float>::infinity();
    const auto& first = *all_tables().front();
    bool bad0 = true;
    const float max0 = first.logits_max(logits.data(), n, bad0);
    std::vector<float> z0(logits), p0(n);
    first.scale_and_exp(z0.data(), p0.data(), n, max0, 0.7f);
    std::vector<double> m0((n + 63) / 64);
    const double total0 = first.block_masses(p0.data(), n, 64, m0.data());
    CHECK_FALSE(bad0);
    CHECK(max0 == 1000.0f);
    for (const auto* t : runnable_tables(host_features())) {
      INFO(t->name << " n " << n);
      bool bad = true;
      CHECK(t->logits_max(logits.data(), n, bad) == max0);
      CHECK_FALSE(bad);
      CHECK(t->first_index_of(logits.data(), n, max0) == static_cast<std::int32_t>(n / 2));
      std::vector<float> z(logits), p(n);
      t->scale_and_exp(z.data(), p.data(), n, max0, 0.7f);
      CHECK(z == z0);
      CHECK(p == p0);
      std::vector<double> m(m0.size());
      CHECK(t->block_masses(p.data(), n, 64, m.data()) == total0);
      CHECK(m == m0);
      auto broken = logits;
      broken[n - 1] = std::numeric_limits<float>::quiet_NaN();
      t->logits_max(broken.data(), n, bad);
      CHECK(bad);
    }
  }
}

// Run by ctest with LF_ISA set (tests/unit/kernels/CMakeLists.txt): a name this build has no
// table for is reported and the best table is used; a runnable name is followed. Hidden from the
// default run, which has no LF_ISA.
TEST_CASE("LF_ISA: a runnable table is followed, anything else is reported and ignored", "[.][lf_isa]") {
  const char* env = std::getenv("LF_ISA");
  REQUIRE(env != nullptr);
  const auto* named = find_table(env);
  if (named != nullptr && host_features().has_all(named->needs)) {
    CHECK(&active_table() == named);
    CHECK_FALSE(lf_isa_problem());
  } else {
    CHECK(&active_table() == &best_table(host_features()));
    const auto problem = lf_isa_problem();
    REQUIRE(problem);
    CHECK(problem->find(std::string("LF_ISA=") + env) != std::string::npos);
    CHECK(problem->find(std::string("using ") + std::string(best_table(host_features()).name)) != std::string::npos);
  }
}
