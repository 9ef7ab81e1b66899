// The worker keys (one row per setting: name, range, doc) and check_settings, the one place of
// the rules between them, worded for a config file or for the flags.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "worker/worker_settings.hpp"

using namespace lf;
using worker::worker_settings;
using Catch::Matchers::Contains;

namespace test_worker_settings {

const settings::setting_key<worker_settings>& key(std::string_view name) {
  const auto* k = settings::find(worker::worker_keys(), name);
  REQUIRE(k != nullptr);
  return *k;
}

std::vector<settings::setting_issue> file_issues(const worker_settings& s) {
  return worker::check_settings(s, settings::file_key);
}

std::vector<settings::setting_issue> flag_issues(const worker_settings& s) {
  return worker::check_settings(s, settings::flag_namer(worker::worker_keys()));
}

} // namespace test_worker_settings

using namespace test_worker_settings;

TEST_CASE("worker keys are unique and their defaults pass the check", "[worker][settings]") {
  std::set<std::string> names;
  for (const auto& k : worker::worker_keys()) {
    CHECK(names.insert(k.name).second);
    CHECK_FALSE(k.doc.empty());
    CHECK(k.flag_name() == settings::flag_of(k.name));  // no worker key renames its flag
  }
  const worker_settings defaults;
  CHECK(file_issues(defaults).empty());
  CHECK(worker::check_settings(defaults).empty());
}

TEST_CASE("worker keys hold the ranges both readers used", "[worker][settings]") {
  CHECK(settings::range_text(key("max_seqs")) == "1..4096");
  CHECK(settings::range_text(key("max_batched_tokens")) == "1..2^20");
  CHECK(settings::range_text(key("block_size")) == "1..1024");
  CHECK(settings::range_text(key("kv_cache_mb")) == "1..2^20");
  CHECK(settings::range_text(key("threads")) == "0..256");
  CHECK(settings::range_text(key("speculative_tokens")) == "1..16");
  CHECK(settings::range_text(key("draft_threads")) == "1..256");
  CHECK(settings::range_text(key("max_adapters")) == "1..2^20");
  CHECK(key("dtype").choices == std::vector<std::string>{"f32", "bf16", "int8", "int4"});
  CHECK(key("speculation").choices == std::vector<std::string>{"off", "on", "auto"});
  CHECK(key("mode").choices == std::vector<std::string>{"continuous", "static", "static_no_cache"});
  CHECK(key("mode").scope == settings::key_scope::flags_only);  // not a config file key
  CHECK(key("prefix_cache").bool_style == settings::bool_flag::no_switch);
  CHECK(key("draft_model").type == settings::key_type::path);
}

TEST_CASE("max_seqs above max_batched_tokens is one rule with one wording", "[worker][settings]") {
  worker_settings s;
  s.max_seqs = 64;
  s.max_batched_tokens = 32;
  const auto f = file_issues(s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].key == "max_batched_tokens");
  CHECK(f[0].message
        == "max_seqs (64) must not exceed max_batched_tokens (32), or a full batch of decodes never fits a step");
  const auto g = flag_issues(s);
  REQUIRE(g.size() == 1);
  CHECK(g[0].message
        == "--max-seqs (64) must not exceed --max-batched-tokens (32), or a full batch of decodes never fits a step");
  s.max_batched_tokens = 64;
  CHECK(file_issues(s).empty());
}

TEST_CASE("a GPU device computes in f32, continuous only, without a draft model", "[worker][settings]") {
  worker_settings s;
  s.device = "gpu";
  auto i = flag_issues(s);
  REQUIRE(i.size() == 1);
  CHECK(i[0].key == "device");
  CHECK(i[0].message == "--device must be cpu, cuda or cuda:N (got \"gpu\")");
  s.device = "cuda:0";
  i = file_issues(s);
  REQUIRE(i.size() == 1);
  CHECK(i[0].message == "device cuda:0 computes in f32: set dtype and kv_dtype to \"f32\" (got \"int8\" and \"bf16\")");
  s.dtype = s.kv_dtype = "f32";
  CHECK(file_issues(s).empty());
  s.mode = worker::batching_mode::static_batch;
  i = flag_issues(s);
  REQUIRE(i.size() == 1);
  CHECK_THAT(i[0].message, Contains("--device cuda:0 runs continuous batching only (--mode \"static\""));
  s.mode = worker::batching_mode::continuous;
  s.draft_model = "/draft";
  i = file_issues(s);
  REQUIRE(i.size() == 1);
  CHECK(i[0].key == "draft_model");
  CHECK(i[0].message == "draft_model runs on the CPU engine only (device is \"cuda:0\")");
}

TEST_CASE("speculation_method draft needs a draft model", "[worker][settings]") {
  worker_settings s;
  s.speculation_method = "draft";
  auto i = flag_issues(s);
  REQUIRE(i.size() == 1);
  CHECK(i[0].message == "--speculation-method \"draft\" needs a --draft-model");
  s.draft_model = "/draft";
  CHECK(flag_issues(s).empty());
  CHECK(worker::method_of(s) == worker::speculation_method::draft);
}

TEST_CASE("settings built in code are held to the keys' ranges and choices", "[worker][settings]") {
  worker_settings s;
  s.max_seqs = 0;
  s.dtype = "f16";
  s.speculative_tokens = 17;
  const auto i = file_issues(s);
  REQUIRE(i.size() == 3);
  CHECK(i[0].message == "dtype must be \"f32\", \"bf16\", \"int8\" or \"int4\"");
  CHECK(i[1].message == "max_seqs must be in [1, 4096] (got 0)");
  CHECK(i[2].message == "speculative_tokens must be in [1, 16] (got 17)");
  CHECK(worker::check_settings(s) == i[0].message);
}

TEST_CASE("a static mode needs a static batch", "[worker][settings]") {
  worker_settings s;
  s.mode = worker::batching_mode::static_no_cache;
  s.static_batch = 0;
  const auto i = flag_issues(s);
  REQUIRE(i.size() == 1);
  CHECK(i[0].message == "static_batch must be > 0 in --mode \"static_no_cache\"");
}

TEST_CASE("a worker's share of the cores is 1 to 256 threads", "[worker][settings]") {
  CHECK(worker::share_of_cores(1) >= 1);
  CHECK(worker::share_of_cores(1) <= 256);
  CHECK(worker::share_of_cores(1'000'000) == 1);
  CHECK(worker::resolve_for_process(worker_settings{}, 1).threads == worker::share_of_cores(1));
}
