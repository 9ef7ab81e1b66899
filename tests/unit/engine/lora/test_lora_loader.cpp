// Loading PEFT adapters into the adapter manager from an adapter directory: a good adapter loads
// once and serves lora_weights; every broken case (unknown id, "../" path, corrupt file, shape
// mismatch, unsupported option) fails with its error code and a message that says why.
#include "tests/support/catch_aten.hpp"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/lora_fixture.hpp"

using namespace lf::engine;
using lf::cache::adapter_state;
using lf::serve_errc;
using Catch::Contains;
namespace fs = std::filesystem;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_lora_loader {

namespace {

struct fixture {
  lf::test::temp_dir tmp;
  std::string dir = lf::test::write_tiny_model(tmp);
  gpt2_model model{load_gpt2_weights(dir)};
  std::string root = tmp / "adapters";

  fixture() {
    const auto& cfg = model.config();
    write_peft_adapter(root + "/good", lf::test::tiny_adapter(cfg, 1));
    write_peft_adapter(root + "/styles/nested", lf::test::tiny_adapter(cfg, 2));
    write_peft_adapter(root + "/corrupt", lf::test::tiny_adapter(cfg, 3));
    std::ofstream(root + "/corrupt/adapter_model.safetensors", std::ios::trunc) << "not safetensors";
    auto wide = cfg;
    wide.n_embd = 32;
    wide.n_inner = 128;
    write_peft_adapter(root + "/wrong_shape", lf::test::tiny_adapter(wide, 4));
    write_peft_adapter(root + "/dora", lf::test::tiny_adapter(cfg, 5));
    auto config_path = root + "/dora/adapter_config.json";
    nlohmann::json j;
    std::ifstream(config_path) >> j;
    j["use_dora"] = true;
    std::ofstream(config_path, std::ios::trunc) << j.dump();
    fs::create_directories(tmp / "secret");
  }
};

fixture& fx() {
  static fixture f;
  return f;
}

/// Acquires `name` and waits for its load to settle.
lf::cache::adapter_acquire acquire_settled(lf::cache::adapter_manager& m, const std::string& name) {
  auto r = m.acquire(name);
  if (r.state != adapter_state::failed)
    r.state = m.wait_settled(r.id, std::chrono::seconds(30));
  return r;
}

} // namespace

TEST_CASE("adapters load from the adapter directory by name", "[lora][loader]") {
  auto mgr = make_lora_manager(fx().root, fx().model);
  auto good = acquire_settled(*mgr, "good");
  REQUIRE(good.state == adapter_state::ready);
  auto w = std::dynamic_pointer_cast<const lora_weights>(mgr->get(good.id));
  REQUIRE(w);
  CHECK(w->name() == "good");
  CHECK(w->bytes() == lf::test::tiny_adapter(fx().model.config(), 1).bytes());
  CHECK(find_lora(mgr->lookup(), good.id).get() == w.get());
  auto nested = acquire_settled(*mgr, "styles/nested");
  CHECK(nested.state == adapter_state::ready);
  CHECK(nested.id != good.id);
  auto s = mgr->stats();
  CHECK(s.loads == 2);
  CHECK(s.bytes == 2 * w->bytes());
  mgr->release(good.id);
  mgr->release(nested.id);
}

TEST_CASE("broken adapters fail with a code and a reason", "[lora][loader]") {
  auto mgr = make_lora_manager(fx().root, fx().model);
  struct expect {
    std::string name;
    serve_errc code;
    std::string says;
  };
  const std::vector<expect> cases = {
    {"nope", serve_errc::unknown_adapter, "not found under"},
    {"../secret", serve_errc::invalid_request, "'..' components are not allowed"},
    {"/etc", serve_errc::invalid_request, "absolute paths are not allowed"},
    {"", serve_errc::invalid_request, "empty"},
    {"corrupt", serve_errc::unknown_adapter, "adapter_model.safetensors"},
    {"wrong_shape", serve_errc::unknown_adapter, "shape"},
    {"dora", serve_errc::unknown_adapter, "DoRA is not supported"},
  };
  for (const auto& c : cases) {
    INFO("adapter \"" << c.name << "\"");
    auto r = acquire_settled(*mgr, c.name);
    REQUIRE(r.state == adapter_state::failed);
    auto info = r.id == lf::cache::base_model ? lf::cache::adapter_info{} : mgr->info(r.id);
    auto code = r.id == lf::cache::base_model ? r.error : info.error;
    auto message = r.id == lf::cache::base_model ? r.message : info.message;
    CHECK(code == c.code);
    CHECK_THAT(message, Contains(c.says));
    if (r.id != lf::cache::base_model)
      mgr->release(r.id);  // the failed load left the reference with the request
  }
  // The worker goes on serving good adapters.
  auto good = acquire_settled(*mgr, "good");
  CHECK(good.state == adapter_state::ready);
  CHECK(mgr->stats().failures == 4);
  mgr->release(good.id);
}

} // namespace test_lora_loader
