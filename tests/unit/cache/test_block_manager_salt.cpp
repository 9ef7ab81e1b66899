// Prefix-cache isolation: blocks published under one salt (a tenant) are never reused under
// another, are reused under the same one, and the shared namespace (no_salt) behaves as before.

#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <vector>

#include "cache/block_manager.hpp"
#include "cache/cache_salt.hpp"

using namespace lf::cache;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_block_manager_salt {

namespace {

using tokens = std::vector<std::int32_t>;

tokens iota_tokens(std::size_t n, std::int32_t first) {
  tokens t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

block_manager make(std::uint32_t num_blocks, std::uint32_t block_size,
                   block_hasher hasher = nullptr) {
  return block_manager{block_manager_config{num_blocks, block_size, true, hasher}};
}

/// allocate + commit the whole prompt, as a finished prefill would; returns the cached tokens.
std::uint32_t prefill(block_manager& bm, seq_id s, const tokens& prompt, cache_salt salt) {
  auto cached = bm.allocate(s, prompt, base_model, salt);
  REQUIRE(cached.has_value());
  bm.commit_tokens(s, prompt, static_cast<std::uint32_t>(prompt.size()));
  bm.check_invariants();
  return *cached;
}

std::uint64_t always_zero(std::uint64_t, adapter_id, const std::int32_t*, std::uint32_t) {
  return 0;  // every key collides
}

} // namespace

TEST_CASE("tenant salts are deterministic, distinct and never the shared namespace", "[cache][salt]") {
  CHECK(tenant_salt("acme") == tenant_salt("acme"));
  CHECK(tenant_salt("acme") != tenant_salt("globex"));
  CHECK(tenant_salt("ab") != tenant_salt("ba"));
  CHECK(tenant_salt("") != no_salt);
  CHECK(salted_root(no_salt) == root_block_hash);
  CHECK(salted_root(tenant_salt("acme")) != root_block_hash);
  CHECK(salted_root(tenant_salt("acme")) != salted_root(tenant_salt("globex")));
}

TEST_CASE("two tenants, same prompt: no hit across tenants, hits within one", "[cache][salt]") {
  auto bm = make(32, 16);
  const auto prompt = iota_tokens(40, 100);  // two full blocks reusable, the rest recomputed
  const auto a = tenant_salt("acme"), b = tenant_salt("globex");
  CHECK(prefill(bm, seq_id{1}, prompt, a) == 0);
  CHECK(bm.probe(prompt, base_model, b).hit_tokens == 0);
  CHECK(bm.probe(prompt, base_model, no_salt).hit_tokens == 0);
  CHECK(prefill(bm, seq_id{2}, prompt, b) == 0);   // acme's blocks are still there, unreferenced by b
  CHECK(prefill(bm, seq_id{3}, prompt, a) == 32);  // acme again: both full blocks hit
  CHECK(prefill(bm, seq_id{4}, prompt, b) == 32);  // and globex's own
  // Each tenant's sequences share that tenant's blocks only.
  CHECK(bm.block_table(seq_id{3})[0] == bm.block_table(seq_id{1})[0]);
  CHECK(bm.block_table(seq_id{4})[0] == bm.block_table(seq_id{2})[0]);
  CHECK(bm.block_table(seq_id{1})[0] != bm.block_table(seq_id{2})[0]);
  const auto s = bm.get_stats();
  CHECK(s.prefix_hit_tokens == 64);
  for (std::uint64_t i = 1; i <= 4; ++i)
    bm.free(seq_id{i});
  bm.check_invariants();
}

TEST_CASE("shared mode (no salt) hits across requests as before", "[cache][salt]") {
  auto bm = make(32, 16);
  const auto prompt = iota_tokens(40, 7);
  CHECK(prefill(bm, seq_id{1}, prompt, no_salt) == 0);
  CHECK(prefill(bm, seq_id{2}, prompt, no_salt) == 32);
  CHECK(bm.allocate(seq_id{3}, prompt, base_model).value() == 32);  // the default argument
  bm.check_invariants();
}

TEST_CASE("a salt is compared exactly even when every hash collides", "[cache][salt]") {
  auto bm = make(32, 4, &always_zero);
  const auto prompt = iota_tokens(9, 0);
  const auto a = tenant_salt("acme"), b = tenant_salt("globex");
  CHECK(prefill(bm, seq_id{1}, prompt, a) == 0);
  CHECK(prefill(bm, seq_id{2}, prompt, b) == 0);
  CHECK(prefill(bm, seq_id{3}, prompt, no_salt) == 0);
  CHECK(prefill(bm, seq_id{4}, prompt, b) == 8);
  bm.check_invariants();
}

TEST_CASE("a salted sequence's decoded blocks stay in its namespace", "[cache][salt]") {
  auto bm = make(16, 4);
  const auto a = tenant_salt("acme"), b = tenant_salt("globex");
  auto toks = iota_tokens(3, 50);
  REQUIRE(bm.allocate(seq_id{1}, toks, base_model, a));
  bm.commit_tokens(seq_id{1}, toks, 3);
  for (std::int32_t t = 0; t < 6; ++t) {  // decode: the first two blocks fill and are published
    REQUIRE(bm.append_slots(seq_id{1}, 1));
    toks.push_back(t);
    bm.commit_tokens(seq_id{1}, toks, static_cast<std::uint32_t>(toks.size()));
  }
  bm.check_invariants();
  CHECK(bm.probe(toks, base_model, a).hit_tokens == 8);
  CHECK(bm.probe(toks, base_model, b).hit_tokens == 0);
}

TEST_CASE("request_salt: tenant isolation salts named tenants only, shared salts nobody", "[cache][salt]") {
  CHECK(request_salt(prefix_isolation::tenant, "") == no_salt);
  CHECK(request_salt(prefix_isolation::tenant, "acme") == tenant_salt("acme"));
  CHECK(request_salt(prefix_isolation::shared, "acme") == no_salt);
  CHECK(parse_prefix_isolation("tenant") == prefix_isolation::tenant);
  CHECK(parse_prefix_isolation("shared") == prefix_isolation::shared);
  CHECK_FALSE(parse_prefix_isolation("Tenant"));
  CHECK(to_string(prefix_isolation::shared) == "shared");
}

} // namespace test_block_manager_salt
