// The K/V porter alone, over block managers and an engine whose K/V is bytes per block: a
// sequence's whole computed blocks leave as a blob and come in on another worker's prefix cache,
// where a request with the same tokens finds them; every blob that does not fit is refused with
// its reason and leaves the pool as it was.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "cache/block_manager.hpp"
#include "worker/engine/model/step_engine.hpp"
#include "worker/kv_porter.hpp"

using namespace lf;
using namespace lf::worker;

namespace test_kv_porter {

namespace {

constexpr std::uint32_t block_size = 4;

/// K/V as 8 bytes a block, kept per block id; format "bytes/1".
class byte_engine : public engine::step_engine {
public:
  explicit byte_engine(std::string format = "bytes/1") : format_(std::move(format)) {}
  void step(const std::vector<engine::engine_chunk>&) override {}
  float* logits(std::size_t) override { return nullptr; }
  std::size_t vocab_size() const override { return 100; }
  std::string kv_format() const override { return format_; }
  std::size_t kv_block_bytes() const override { return 8; }
  void read_kv(const std::vector<cache::block_id>& blocks, std::string& out) const override {
    for (auto b : blocks)
      out += kv_.at(b.value());
  }
  void write_kv(const std::vector<cache::block_id>& blocks, std::string_view bytes) override {
    for (std::size_t i = 0; i < blocks.size(); ++i)
      kv_[blocks[i].value()] = std::string(bytes.substr(i * 8, 8));
  }
  std::map<std::uint32_t, std::string> kv_;

private:
  std::string format_;
};

cache::block_manager pool(std::uint32_t blocks = 16) { return cache::block_manager({blocks, block_size, true}); }

/// `tokens` computed in `bm` as `seq` (every whole block written by `e`, a byte pattern each).
void compute(cache::block_manager& bm, byte_engine& e, cache::seq_id seq, const std::vector<std::int32_t>& tokens) {
  REQUIRE(bm.allocate(seq, tokens, cache::base_model));
  const auto& table = bm.block_table(seq);
  for (std::size_t i = 0; i < table.size(); ++i)
    e.kv_[table[i].value()] = std::string(8, static_cast<char>('a' + i));
  bm.commit_tokens(seq, tokens, static_cast<std::uint32_t>(tokens.size()));
}

} // namespace

TEST_CASE("K/V leaves in whole blocks and comes in where a request with its tokens finds it", "[kv_porter]") {
  auto from = pool(), to = pool();
  byte_engine e1, e2;
  kv_porter out(e1, from), in(e2, to);
  const std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // 2 whole blocks and 2 tokens
  compute(from, e1, cache::seq_id{1}, tokens);
  const auto blob = out.export_kv(cache::seq_id{1}, tokens);
  CHECK(blob.format == "bytes/1");
  CHECK(blob.tokens == std::vector<std::int32_t>(tokens.begin(), tokens.begin() + 8));
  CHECK(blob.bytes == "aaaaaaaabbbbbbbb");
  CHECK(out.counts().exported_tokens == 8);
  std::string why;
  CHECK(in.import_kv(cache::seq_id{7}, cache::base_model, cache::no_salt, tokens, blob, why) == 8);
  CHECK(why.empty());
  CHECK(in.counts().imported_tokens == 8);
  CHECK_FALSE(to.contains(cache::seq_id{7}));  // the porter's sequence is gone, its blocks cached
  // The request itself now hits both blocks, whose bytes are the exported ones.
  REQUIRE(to.allocate(cache::seq_id{8}, tokens, cache::base_model) == 8u);
  const auto& table = to.block_table(cache::seq_id{8});
  CHECK(e2.kv_.at(table[0].value()) == "aaaaaaaa");
  CHECK(e2.kv_.at(table[1].value()) == "bbbbbbbb");
  to.check_invariants();
}

TEST_CASE("nothing leaves without whole computed blocks or a K/V format", "[kv_porter]") {
  auto bm = pool();
  byte_engine e, none("");
  compute(bm, e, cache::seq_id{1}, {1, 2, 3});
  CHECK(kv_porter(e, bm).export_kv(cache::seq_id{1}, {1, 2, 3}).empty());
  compute(bm, e, cache::seq_id{2}, {1, 2, 3, 4, 5});
  CHECK(kv_porter(none, bm).export_kv(cache::seq_id{2}, {1, 2, 3, 4, 5}).empty());
  CHECK(kv_porter(e, bm).export_kv(cache::seq_id{9}, {1, 2, 3, 4, 5}).empty());  // unknown
}

TEST_CASE("a blob that does not fit is refused with its reason and changes nothing", "[kv_porter]") {
  auto bm = pool(3);
  byte_engine e;
  kv_porter porter(e, bm);
  const std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8, 9};
  kv_blob good{"bytes/1", {1, 2, 3, 4, 5, 6, 7, 8}, std::string(16, 'x')};
  struct bad_case {
    const char* what;
    kv_blob blob;
    const char* reason;
  };
  const std::vector<bad_case> cases{
    {"format", {"bytes/2", good.tokens, good.bytes}, "another K/V format"},
    {"partial block", {"bytes/1", {1, 2, 3, 4, 5, 6}, std::string(16, 'x')}, "not whole blocks"},
    {"other tokens", {"bytes/1", {1, 2, 3, 4, 5, 6, 7, 9}, good.bytes}, "not whole blocks"},
    {"the whole request", {"bytes/1", {1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9}, std::string(24, 'x')}, "not whole blocks"},
    {"size", {"bytes/1", good.tokens, std::string(15, 'x')}, "size does not match"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    std::string why;
    CHECK(porter.import_kv(cache::seq_id{1}, cache::base_model, cache::no_salt, tokens, c.blob, why) == 0);
    CHECK(why.find(c.reason) != std::string::npos);
    CHECK(bm.num_free_blocks() == 3);
  }
  CHECK(porter.counts().refused == cases.size());
  // A pool too small for the blob: refused, and the pool as it was.
  auto tiny = pool(1);
  kv_porter small(e, tiny);
  std::string why;
  CHECK(small.import_kv(cache::seq_id{1}, cache::base_model, cache::no_salt, tokens, good, why) == 0);
  CHECK(why == "the K/V pool is full");
  CHECK(tiny.num_free_blocks() == 1);
  // The prefix cache off: nothing to import into.
  cache::block_manager plain({8, block_size, false});
  kv_porter off(e, plain);
  CHECK(off.import_kv(cache::seq_id{1}, cache::base_model, cache::no_salt, tokens, good, why) == 0);
  CHECK(why == "this worker's prefix cache is off");
}

} // namespace test_kv_porter
