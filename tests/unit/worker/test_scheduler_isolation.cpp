// Prefix-cache isolation through the scheduler (scheduler_config::isolation): under `tenant`
// two named tenants with the same prompt never hit each other's blocks, one tenant hits its own,
// the default tenant "" shares as before; under `shared` everyone hits everyone's.
#include <catch2/catch.hpp>

#include "tests/unit/worker/scheduler_harness.hpp"

using namespace lf::worker;
using namespace lf::worker::testing;
using lf::cache::base_model;
using lf::cache::prefix_isolation;

namespace {

/// Runs one request of `tenant` with the same 13-token prompt (three full 4-token blocks
/// reusable) to its end; returns the prompt tokens its admission found cached.
std::uint64_t run_one(harness& h, std::uint64_t id, const std::string& tenant) {
  const auto before = h.bm.get_stats().prefix_hit_tokens;
  h.add(id, iota_tokens(13, 40), 2, base_model, std::nullopt, tenant);
  while (!h.s.idle())
    h.step();
  return h.bm.get_stats().prefix_hit_tokens - before;
}

harness make(prefix_isolation iso) {
  scheduler_config cfg{4, 64};
  cfg.isolation = iso;
  return harness{cfg, 64};
}

} // namespace

TEST_CASE("tenant isolation: no prefix hit across tenants, hits within one", "[scheduler][isolation]") {
  auto h = make(prefix_isolation::tenant);
  CHECK(run_one(h, 1, "acme") == 0);
  CHECK(run_one(h, 2, "globex") == 0);  // acme's blocks are cached, but not for globex
  CHECK(run_one(h, 3, "") == 0);        // nor for the default tenant
  CHECK(run_one(h, 4, "acme") == 12);
  CHECK(run_one(h, 5, "globex") == 12);
  CHECK(run_one(h, 6, "") == 12);       // anonymous requests share among themselves
}

TEST_CASE("shared isolation: hits across tenants as before", "[scheduler][isolation]") {
  auto h = make(prefix_isolation::shared);
  CHECK(run_one(h, 1, "acme") == 0);
  CHECK(run_one(h, 2, "globex") == 12);
  CHECK(run_one(h, 3, "") == 12);
}
