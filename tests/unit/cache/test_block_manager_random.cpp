// Randomized test of the KV block manager against a shadow of the K/V memory. A fake engine
// admits prompts built from a few shared prefixes, prefills them in random chunks, decodes, and
// cancels or preempts sequences at random. Every written slot records a fingerprint of (adapter,
// all tokens up to that position), so a block reused from the prefix cache, or one evicted or
// handed out twice while referenced, shows up as a wrong fingerprint at some computed position.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include "cache/block_manager.hpp"

using namespace lf::cache;

// Plain checks: millions of them run, and Catch's REQUIRE is comparatively slow.
#define ENSURE(cond)                                                                               \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      FAIL("op " << op_ << ": " #cond);                                                            \
  } while (false)

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_block_manager_random {

namespace {

using tokens = std::vector<std::int32_t>;

std::uint64_t four_buckets(std::uint64_t parent, adapter_id a, const std::int32_t* t,
                           std::uint32_t n) {
  return default_block_hash(parent, a, t, n) & 3;
}

std::uint64_t one_bucket(std::uint64_t, adapter_id, const std::int32_t*, std::uint32_t) {
  return 42;
}

struct scenario {
  const char* name;
  block_manager_config cfg;
  std::uint64_t seed;
};

/// What the fake engine knows about one of its sequences.
struct live_seq {
  seq_id id;
  adapter_id adapter;
  tokens toks;              // prompt, then sampled tokens
  std::uint32_t target = 0; // finish once toks reaches this length and is computed
  std::uint32_t computed = 0;
};

/// Fingerprint of the K/V at every position: a function of the adapter and the whole prefix.
std::vector<std::uint64_t> kv_fingerprints(adapter_id a, const tokens& t) {
  std::vector<std::uint64_t> out;
  out.reserve(t.size());
  std::uint64_t h = 0x243f6a8885a308d3ULL ^ (std::uint64_t{a.value()} << 32);
  for (auto tok : t) {
    h = (h ^ static_cast<std::uint32_t>(tok)) * 0x100000001b3ULL;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
    out.push_back(h);
  }
  return out;
}

bool same_stats(const block_manager::stats& a, const block_manager::stats& b) {
  return a.total == b.total && a.free == b.free && a.cached == b.cached && a.in_use == b.in_use
         && a.indexed == b.indexed && a.prefix_query_tokens == b.prefix_query_tokens
         && a.prefix_hit_tokens == b.prefix_hit_tokens && a.evictions == b.evictions;
}

class fake_engine {
public:
  explicit fake_engine(const scenario& sc)
    : bm_(sc.cfg),
      bs_(sc.cfg.block_size),
      rng_(sc.seed),
      kv_fp_(std::size_t{sc.cfg.num_blocks} * bs_, 0),
      kv_tok_(kv_fp_.size(), -1) {
    // Shared prefixes over a 3-token vocabulary: equal blocks under different parents abound.
    for (int i = 0; i < 4; ++i)
      prefixes_.push_back(random_tokens(uniform(0, 3 * bs_ + 1)));
  }

  void run(int num_ops) {
    for (op_ = 0; op_ < num_ops; ++op_) {
      const auto dice = uniform(0, 99);
      if (dice < 30 && live_.size() < 6)
        admit();
      else if (dice < 90 && !live_.empty())
        step(live_[uniform(0, live_.size() - 1)].id);
      else if (!live_.empty())
        drop(uniform(0, live_.size() - 1), false);
      verify();
    }
    while (!live_.empty())
      drop(live_.size() - 1, false);
    verify();
    const auto st = bm_.get_stats();
    REQUIRE(st.in_use == 0);
    REQUIRE(st.free + st.cached == st.total);
    REQUIRE(st.indexed == st.cached);
  }

  block_manager& manager() { return bm_; }
  std::uint64_t failed_admissions = 0;
  std::uint64_t preemptions = 0;

private:
  std::size_t uniform(std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng_);
  }

  tokens random_tokens(std::size_t n) {
    tokens t(n);
    for (auto& x : t)
      x = static_cast<std::int32_t>(uniform(0, 2));
    return t;
  }

  void admit() {
    live_seq s;
    s.id = seq_id{next_seq_++};
    if (!readmit_.empty() && uniform(0, 3) == 0) {
      // A preempted sequence comes back with its generated tokens as prompt.
      const auto i = uniform(0, readmit_.size() - 1);
      std::tie(s.adapter, s.toks) = readmit_[i];
      readmit_.erase(readmit_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      s.adapter = adapter_id{static_cast<std::uint32_t>(uniform(0, 3) < 2 ? 0 : uniform(1, 2))};
      s.toks = prefixes_[uniform(0, prefixes_.size() - 1)];
      const auto suffix = random_tokens(uniform(s.toks.empty() ? 1 : 0, bs_ + 1));
      s.toks.insert(s.toks.end(), suffix.begin(), suffix.end());
    }
    s.target = static_cast<std::uint32_t>(s.toks.size() + uniform(0, 2 * bs_));

    const auto probe = bm_.probe(s.toks, s.adapter);
    ENSURE(bm_.blocks_needed(s.toks, s.adapter) == probe.blocks_needed);
    const bool fits = probe.blocks_needed <= bm_.num_free_blocks();
    const auto before = bm_.get_stats();
    const auto cached = bm_.allocate(s.id, s.toks, s.adapter);
    ENSURE(cached.has_value() == fits);
    if (!cached) {
      ++failed_admissions;
      ENSURE(!bm_.contains(s.id));
      ENSURE(same_stats(before, bm_.get_stats()));
      return;
    }
    ENSURE(*cached == probe.hit_tokens);
    ENSURE(*cached < s.toks.size()); // the last prompt token is always computed
    ENSURE(*cached % bs_ == 0);
    ENSURE(bm_.prefix_cache_enabled() || *cached == 0);
    ENSURE(bm_.num_slots(s.id) == s.toks.size());
    // Reused blocks hold exactly this prompt's K/V: same tokens, same prefix, same adapter.
    const auto fps = kv_fingerprints(s.adapter, s.toks);
    for (std::uint32_t pos = 0; pos < *cached; ++pos) {
      const auto slot = bm_.slot_of(s.id, pos);
      ENSURE(kv_tok_[slot] == s.toks[pos]);
      ENSURE(kv_fp_[slot] == fps[pos]);
    }
    s.computed = *cached;
    live_.push_back(std::move(s));
  }

  /// One forward over the next prefill chunk or decode token of `id`.
  void step(seq_id id) {
    auto it = std::find_if(live_.begin(), live_.end(), [id](auto& s) { return s.id == id; });
    auto& s = *it;
    if (s.computed == s.toks.size()) {
      if (s.toks.size() >= s.target)
        return drop(static_cast<std::size_t>(it - live_.begin()), false); // finished
      s.toks.push_back(static_cast<std::int32_t>(uniform(0, 2))); // sampled
    }
    const auto n = static_cast<std::uint32_t>(uniform(1, s.toks.size() - s.computed));
    const auto total = s.computed + n;
    const auto grow = bm_.blocks_to_grow(id, total);
    const auto free_before = bm_.num_free_blocks();
    const auto before = bm_.get_stats();
    const auto table_before = bm_.block_table(id);
    const auto slots = bm_.num_slots(id);
    const bool ok = total > slots && uniform(0, 1) == 0 ? bm_.append_slots(id, total - slots)
                                                        : bm_.ensure_slots(id, total);
    ENSURE(ok == (grow <= free_before));
    if (!ok) {
      ENSURE(same_stats(before, bm_.get_stats()));
      ENSURE(bm_.block_table(id) == table_before);
      ++preemptions;
      return drop(uniform(0, live_.size() - 1), true);
    }
    ENSURE(bm_.num_slots(id) >= total);
    // The forward writes K/V only into private blocks; a shared or indexed one would be corrupted.
    const auto fps = kv_fingerprints(s.adapter, s.toks);
    const auto& table = bm_.block_table(id);
    for (auto pos = s.computed; pos < total; ++pos) {
      const auto blk = table[pos / bs_];
      ENSURE(bm_.ref_count(blk) == 1);
      ENSURE(!bm_.is_indexed(blk));
      const auto slot = bm_.slot_of(id, pos);
      kv_fp_[slot] = fps[pos];
      kv_tok_[slot] = s.toks[pos];
    }
    bm_.commit_tokens(id, s.toks, total);
    s.computed = total;
    for (std::uint32_t i = 0; bm_.prefix_cache_enabled() && i < total / bs_; ++i)
      ENSURE(bm_.is_indexed(table[i]));
  }

  /// Finish or cancel (`preempted` false) or preempt live_[i].
  void drop(std::size_t i, bool preempted) {
    auto s = std::move(live_[i]);
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
    ENSURE(bm_.free(s.id));
    ENSURE(!bm_.free(s.id));
    if (preempted && s.computed > 0 && readmit_.size() < 8) {
      s.toks.resize(s.computed);
      readmit_.emplace_back(s.adapter, std::move(s.toks));
    }
  }

  void verify() {
    REQUIRE_NOTHROW(bm_.check_invariants());
    const auto st = bm_.get_stats();
    ENSURE(st.free + st.cached + st.in_use == st.total);
    ENSURE(bm_.num_free_blocks() == st.free + st.cached);
    ENSURE(bm_.num_sequences() == live_.size());
    std::map<block_id, std::vector<std::pair<const live_seq*, std::size_t>>> owners;
    for (const auto& s : live_) {
      const auto& table = bm_.block_table(s.id);
      ENSURE(bm_.num_computed(s.id) == s.computed);
      ENSURE(table.size() == (bm_.num_slots(s.id) + bs_ - 1) / bs_);
      for (std::size_t i = 0; i < table.size(); ++i)
        owners[table[i]].emplace_back(&s, i);
      // Every computed position still holds this sequence's K/V: nothing it references was
      // evicted, handed out again or overwritten.
      const auto fps = kv_fingerprints(s.adapter, s.toks);
      for (std::uint32_t pos = 0; pos < s.computed; ++pos) {
        const auto slot = bm_.slot_of(s.id, pos);
        ENSURE(kv_fp_[slot] == fps[pos]);
        ENSURE(kv_tok_[slot] == s.toks[pos]);
      }
    }
    ENSURE(st.in_use == owners.size());
    for (const auto& [blk, list] : owners) {
      ENSURE(bm_.ref_count(blk) == list.size());
      if (list.size() == 1)
        continue;
      // Shared: a full, computed, indexed block at the same position of every owner (whose
      // fingerprints were checked above, so all owners saw the same prefix in it).
      ENSURE(bm_.is_indexed(blk));
      for (const auto& [s, pos] : list) {
        ENSURE(pos == list.front().second);
        ENSURE(pos < s->computed / bs_);
      }
    }
  }

  block_manager bm_;
  std::uint32_t bs_;
  std::mt19937_64 rng_;
  std::vector<std::uint64_t> kv_fp_; // per slot: fingerprint of the K/V written there
  std::vector<std::int32_t> kv_tok_; // per slot: token written there
  std::vector<tokens> prefixes_;
  std::vector<live_seq> live_;
  std::vector<std::pair<adapter_id, tokens>> readmit_;
  std::uint64_t next_seq_ = 1;
  int op_ = 0;
};

} // namespace

TEST_CASE("random workloads keep every invariant and never reuse wrong K/V", "[cache]") {
  const scenario scenarios[] = {
    {"block size 1", {12, 1, true, nullptr}, 1},
    {"block size 2", {14, 2, true, nullptr}, 2},
    {"block size 4", {16, 4, true, nullptr}, 3},
    {"block size 16", {12, 16, true, nullptr}, 4},
    {"roomy pool, block size 3", {64, 3, true, nullptr}, 5},
    {"four hash buckets", {16, 4, true, &four_buckets}, 6},
    {"one hash bucket", {12, 2, true, &one_bucket}, 7},
    {"prefix cache off", {12, 4, false, nullptr}, 8},
  };
  for (const auto& sc : scenarios) {
    for (std::uint64_t rep = 0; rep < 3; ++rep) {
      auto run_sc = sc;
      run_sc.seed = sc.seed * 1000 + rep;
      INFO(sc.name << ", seed " << run_sc.seed);
      fake_engine engine{run_sc};
      engine.run(4000);
      const auto st = engine.manager().get_stats();
      if (sc.cfg.enable_prefix_cache) {
        // The workload must actually exercise sharing, eviction and pool exhaustion.
        CHECK(st.prefix_hit_tokens > 0);
        CHECK(st.evictions > 0);
      } else {
        CHECK(st.prefix_hit_tokens == 0);
      }
      if (sc.cfg.num_blocks < 32) // small pools must run dry now and then
        CHECK(engine.failed_admissions + engine.preemptions > 0);
      if (std::getenv("LF_CACHE_TEST_VERBOSE") != nullptr)
        WARN(sc.name << ": hit rate " << st.hit_rate() << ", evictions " << st.evictions
                     << ", failed admissions " << engine.failed_admissions << ", preemptions "
                     << engine.preemptions);
    }
  }
}

} // namespace test_block_manager_random
