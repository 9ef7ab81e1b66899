// The cluster's adapter registry over the tiny GPT-2 and real PEFT files: add checks the files on
// a worker (every bad kind refused, nothing registered), update and remove under load with each
// in-flight request finishing on the version it started with, removed versions freed once their
// last request ends, the log replayed to a worker that joins later and by a restarted router.
#include "tests/unit/router/model_worker.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "worker/engine/lora/lora_adapter.hpp"
#include "worker/engine/lora/peft_loader.hpp"

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;
using lf::test::cluster;

namespace {

namespace fs = std::filesystem;

/// Adapter directories under one root: "v1", "v2" (random, strong enough to change greedy
/// choices), plus the broken kinds an add must refuse.
struct adapter_files {
  test::temp_dir tmp;
  std::string root = tmp / "adapters";

  adapter_files() {
    write("v1", test::tiny_config(), 4, 1);
    write("v2", test::tiny_config(), 4, 2);
    write("rank16", test::tiny_config(), 16, 3);
    auto wide = test::tiny_config();  // another base model: its widths do not fit
    wide.n_embd *= 2;
    write("wrong-shape", wide, 4, 4);
    write("corrupt", test::tiny_config(), 4, 5);
    const auto st = root + "/corrupt/adapter_model.safetensors";
    fs::resize_file(st, fs::file_size(st) / 2);
    write("bad-target", test::tiny_config(), 4, 6);
    std::ofstream(root + "/bad-target/adapter_config.json")
      << R"({"peft_type":"LORA","r":4,"lora_alpha":8,"target_modules":["q_proj"]})";
    write_outside();
  }

  void write(const std::string& name, const engine::gpt2_config& base, int rank, std::uint64_t seed) {
    std::vector<engine::lora_module> all(engine::all_lora_modules.begin(), engine::all_lora_modules.end());
    engine::write_peft_adapter(root + "/" + name, engine::make_random_adapter(base, rank, 8.0f, all, seed, 0.2f));
  }

  void write_outside() {
    std::vector<engine::lora_module> all(engine::all_lora_modules.begin(), engine::all_lora_modules.end());
    engine::write_peft_adapter(tmp / "elsewhere", engine::make_random_adapter(test::tiny_config(), 4, 8.0f, all, 7, 0.2f));
  }
};

router_config registry_router(const adapter_files& f, const std::string& log = "") {
  router_config rc;
  rc.adapter_roots = {f.root};
  rc.adapter_log = log;
  rc.max_adapter_rank = 8;
  return rc;
}

adapter_reply command(cluster& c, const std::string& op, const std::string& name, const std::string& path = "") {
  caf::scoped_actor self(c.sys);
  adapter_reply out;
  self->request(c.router, std::chrono::seconds(60), adapter_command{op, name, path})
    .receive([&](adapter_reply& r) { out = std::move(r); },
             [&](const caf::error& e) { FAIL("adapter command: " << caf::to_string(e)); });
  return out;
}

test::request_log run_alone(client& cl, std::uint64_t id, const std::string& adapter, int max_tokens = 12) {
  auto r = test::greedy(id, "Once upon a time", max_tokens);
  r.draft.adapter = adapter;
  cl.submit(r);
  REQUIRE(cl.run_until([id](const client& k) { return k.log.count(id) && k.log.at(id).terminals > 0; }));
  return cl.log[id];
}

/// Whether any worker reports `key` resident.
bool resident_anywhere(client& cl, const std::string& key) {
  for (const auto& l : cl.stats().loads)
    if (std::find(l.adapters.begin(), l.adapters.end(), key) != l.adapters.end())
      return true;
  return false;
}

} // namespace

TEST_CASE("adapters add refuses every bad adapter kind and registers nothing", "[cluster][registry][model]") {
  adapter_files f;
  cluster c(registry_router(f), {test::model_worker(test::tiny_worker())});
  struct bad {
    std::string name, path, says;
    serve_errc code = serve_errc::invalid_request;
  };
  const std::vector<bad> cases = {
    {"x", f.root + "/wrong-shape", "wrong-shape"},
    {"x", f.root + "/corrupt", "adapter_model.safetensors"},
    {"x", f.root + "/bad-target", "target_modules\" (with layers_to_transform) matches no"},
    {"x", f.root + "/rank16", "rank 16 is above the cluster's limit of 8"},
    {"x", f.root + "/missing", "is not a directory"},
    {"x", f.tmp / "elsewhere", "outside the allowed roots"},
    {"x", f.root + "/../elsewhere", "outside the allowed roots"},
    {"../x", f.root + "/v1", "not a relative path"},
    {"x@2", f.root + "/v1", "not a relative path"},
  };
  for (const auto& b : cases) {
    INFO(b.path);
    auto r = command(c, "add", b.name, b.path);
    CHECK(r.error == b.code);
    CHECK_THAT(r.message, Catch::Contains(b.says));
  }
  auto up = command(c, "update", "never-added", f.root + "/v1");
  CHECK(up.error == serve_errc::unknown_adapter);
  CHECK(command(c, "rename", "x").error == serve_errc::invalid_request);
  auto list = command(c, "list", "");
  CHECK(list.error == serve_errc::none);
  CHECK(list.adapters.empty());
  CHECK(list.seq == 0);
}

TEST_CASE("update and remove under load: in-flight requests finish on their version",
          "[cluster][registry][model]") {
  adapter_files f;
  cluster c(registry_router(f), {test::model_worker(test::tiny_worker()), test::model_worker(test::tiny_worker())});
  client cl(c.sys, c.router);
  auto added = command(c, "add", "tone", f.root + "/v1");
  REQUIRE(added.error == serve_errc::none);
  REQUIRE(added.adapters.size() == 1);
  CHECK(added.adapters[0].latest == 1);
  CHECK(added.adapters[0].source.rank == 4);
  CHECK(added.adapters[0].source.targets.size() == 4);
  const int long_run = 200;  // still streaming while the update and the remove happen
  auto v1 = run_alone(cl, 1, "tone", long_run);
  REQUIRE(v1.done);
  auto base = run_alone(cl, 2, "", 12);
  REQUIRE(base.done);

  // A long request on version 1 is streaming when version 2 arrives: its credit window holds it
  // after 4 tokens until the test grants more.
  auto r = test::greedy(10, "Once upon a time", long_run);
  r.draft.adapter = "tone";
  r.window = 4;
  cl.submit(r);
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(10) && k.log.at(10).tokens.size() >= 4; }));
  // Load around the update: requests for tone and the base model sent just before it ...
  auto burst = [&](std::uint64_t first, bool with_base) {
    for (std::uint64_t id = first; id < first + 6; ++id) {
      auto b = test::greedy(id, "Once upon a time", 24);
      b.draft.adapter = with_base && id % 2 == 1 ? "" : "tone";
      cl.submit(b);
    }
  };
  burst(40, true);
  auto updated = command(c, "update", "tone", f.root + "/v2");
  REQUIRE(updated.error == serve_errc::none);
  CHECK(updated.adapters[0].latest == 2);
  burst(50, false);  // ... and just after it
  cl.drain();
  CHECK(cl.log[10].terminals == 0);  // the update came while it streamed
  REQUIRE(cl.run_until([](const client& k) {
    for (std::uint64_t id : {40, 41, 42, 43, 44, 45, 50, 51, 52, 53, 54, 55})
      if (!k.log.count(id) || k.log.at(id).terminals == 0)
        return false;
    return true;
  }));
  auto v2 = run_alone(cl, 11, "tone", 12);  // new requests get the newest
  REQUIRE(v2.done);
  CHECK(run_alone(cl, 12, "tone@2", 12).done->tokens == v2.done->tokens);
  CHECK(v2.done->tokens != std::vector<std::int32_t>(v1.done->tokens.begin(), v1.done->tokens.begin() + 12));
  const std::vector<std::int32_t> v1_24(v1.done->tokens.begin(), v1.done->tokens.begin() + 24);
  const auto v2_24 = run_alone(cl, 13, "tone", 24).done->tokens;
  const auto base_24 = run_alone(cl, 14, "", 24).done->tokens;
  for (std::uint64_t id : {40, 41, 42, 43, 44, 45, 50, 51, 52, 53, 54, 55}) {
    INFO("request " << id);
    const auto& l = cl.log[id];
    CHECK(l.terminals == 1);
    REQUIRE(l.done);
    const auto& want = id >= 50 ? v2_24 : id % 2 == 1 ? base_24 : v1_24;  // the version it was sent under
    CHECK(l.done->tokens == want);
  }

  // Another long one on version 2 streams while the name is removed.
  r.id = sink_request_id{20};
  cl.submit(r);
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(20) && k.log.at(20).tokens.size() >= 4; }));
  auto removed = command(c, "remove", "tone");
  REQUIRE(removed.error == serve_errc::none);
  CHECK(removed.adapters[0].removed);
  for (auto [id, name] : {std::pair<std::uint64_t, const char*>{21, "tone"}, {22, "tone@1"}, {23, "tone@2"}}) {
    auto refused = run_alone(cl, id, name, 4);
    REQUIRE(refused.error);
    CHECK(refused.error->code == serve_errc::unknown_adapter);
    CHECK(refused.error->message == "adapter tone was removed");
  }
  CHECK(cl.log[20].terminals == 0);
  for (std::uint64_t id : {10, 20})
    cl.self->send(c.router, credit_request{sink_request_id{id}, 1000});
  REQUIRE(cl.run_until([](const client& k) { return k.log.at(10).terminals > 0 && k.log.at(20).terminals > 0; }));
  REQUIRE(cl.log[10].done);
  CHECK(cl.log[10].done->tokens == v1.done->tokens);  // version 1 to its end
  REQUIRE(cl.log[20].done);
  CHECK(std::vector<std::int32_t>(cl.log[20].done->tokens.begin(), cl.log[20].done->tokens.begin() + 12)
        == v2.done->tokens);  // version 2 to its end, though removed meanwhile
  CHECK(cl.log[20].done->tokens != v1.done->tokens);

  // Once their requests ended, the withdrawn versions leave the workers' memory.
  bool freed = false;
  for (int i = 0; i < 100 && !freed; ++i) {
    freed = !resident_anywhere(cl, "tone@1") && !resident_anywhere(cl, "tone@2");
    if (!freed)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(freed);
  CHECK(run_alone(cl, 30, "", 12).done->tokens == base.done->tokens);

  // Added again, the name continues its versions; old ones stay gone.
  auto again = command(c, "add", "tone", f.root + "/v1");
  REQUIRE(again.error == serve_errc::none);
  CHECK(again.adapters[0].latest == 3);
  CHECK(run_alone(cl, 31, "tone", long_run).done->tokens == v1.done->tokens);
  CHECK(run_alone(cl, 32, "tone@2", 4).error->code == serve_errc::unknown_adapter);
}

TEST_CASE("a worker that joins later replays the log and a restarted router reads it back",
          "[cluster][registry][model]") {
  adapter_files f;
  const std::string log = f.tmp / "state/adapters.log";
  std::vector<std::int32_t> first_tokens;
  {
    cluster c(registry_router(f, log), {test::model_worker(test::tiny_worker())});
    client cl(c.sys, c.router);
    REQUIRE(command(c, "add", "tone", f.root + "/v1").error == serve_errc::none);
    REQUIRE(command(c, "add", "other", f.root + "/v2").error == serve_errc::none);
    REQUIRE(command(c, "remove", "other").error == serve_errc::none);
    auto first = run_alone(cl, 1, "tone");
    REQUIRE(first.done);
    first_tokens = first.done->tokens;

    // A second worker joins; the first is drained, so "tone" can only run on the newcomer.
    auto b = test::model_worker(test::tiny_worker())();
    c.loops.push_back(b.loop);
    c.owners.push_back(b.owner);
    worker_options o;
    o.name = "late";
    c.workers.push_back(spawn_worker(c.sys, std::move(b), c.router, o));
    for (int i = 0; i < 500 && cl.stats().workers < 2; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(cl.stats().workers == 2);
    caf::scoped_actor self(c.sys);
    self->request(c.router, std::chrono::seconds(30), drain_atom::value, std::string("w1"))
      .receive([](std::uint32_t workers, std::uint32_t) { CHECK(workers == 1); },
               [](const caf::error& e) { FAIL(caf::to_string(e)); });
    auto later = run_alone(cl, 2, "tone");
    REQUIRE(later.done);
    CHECK(later.done->tokens == first_tokens);
    CHECK(c.loops.size() == 2);
    CHECK(run_alone(cl, 3, "other", 4).error->code == serve_errc::unknown_adapter);
  }
  // A new router over the same log: the registry is back, versions and removals included.
  cluster c(registry_router(f, log), {test::model_worker(test::tiny_worker())});
  client cl(c.sys, c.router);
  auto list = command(c, "list", "");
  REQUIRE(list.adapters.size() == 2);
  CHECK(list.seq == 3);
  CHECK(list.adapters[0].name == "other");
  CHECK(list.adapters[0].removed);
  CHECK(list.adapters[1].name == "tone");
  CHECK(list.adapters[1].latest == 1);
  CHECK(list.adapters[1].source.path == fs::weakly_canonical(f.root + "/v1").string());
  auto after = run_alone(cl, 1, "tone");
  REQUIRE(after.done);
  CHECK(after.done->tokens == first_tokens);
  auto next = command(c, "update", "tone", f.root + "/v2");
  CHECK(next.adapters[0].latest == 2);  // the log goes on where it was
}

TEST_CASE("a router that starts over without its log catches up from a registering worker's copy",
          "[cluster][registry][model]") {
  adapter_files f;
  // One runtime (one serving loop) that outlives its first router, as a worker node's does.
  auto backend = actors::backend_of(std::make_shared<worker::worker_runtime>(test::tiny_worker()));
  cluster c(registry_router(f), {[backend] { return backend; }});
  REQUIRE(command(c, "add", "tone", f.root + "/v1").error == serve_errc::none);
  REQUIRE(command(c, "add", "other", f.root + "/v2").error == serve_errc::none);
  REQUIRE(command(c, "update", "tone", f.root + "/v2").error == serve_errc::none);
  // The worker's copy: the router's reply does not wait for the worker to apply the events.
  for (int i = 0; i < 500 && backend.adapter_log().size() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(backend.adapter_log().size() == 3);
  // A second router replica (a restarted one, no log file): its registry is empty until the
  // worker registers with it, then it holds the worker's events, versions included.
  auto fresh = router::spawn_router(c.sys, registry_router(f));
  worker_options o;
  o.name = "w1";
  auto again = spawn_worker(c.sys, backend, fresh, o);
  caf::scoped_actor self(c.sys);
  bool ready = false;
  self->request(fresh, std::chrono::seconds(30), caf::wait_for_atom::value, std::uint32_t{1})
    .receive([&](const router_stats& s) { ready = s.workers == 1; }, [](const caf::error&) {});
  REQUIRE(ready);
  adapter_reply list;
  self->request(fresh, std::chrono::seconds(30), adapter_command{"list", "", ""})
    .receive([&](adapter_reply& r) { list = std::move(r); }, [](const caf::error& e) { FAIL(caf::to_string(e)); });
  CHECK(list.seq == 3);
  REQUIRE(list.adapters.size() == 2);
  CHECK(list.adapters[1].name == "tone");
  CHECK(list.adapters[1].latest == 2);
  CHECK(backend.adapter_log().size() == 3);  // the copy was not replaced by an empty log
  client cl(c.sys, fresh);
  auto served = run_alone(cl, 1, "tone");
  REQUIRE(served.done);
  caf::anon_send_exit(again, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(fresh, caf::exit_reason::user_shutdown);
}

TEST_CASE("an adapter whose demand outgrows its copies is prefetched on another worker",
          "[cluster][registry][model]") {
  adapter_files f;
  auto rc = registry_router(f);
  rc.prefetch_copies = 0;  // no copy at add: only demand makes one
  rc.placement.policy = placement_policy::adapter_affinity;
  cluster c(rc, {test::model_worker(test::tiny_worker()), test::model_worker(test::tiny_worker())});
  client cl(c.sys, c.router);
  REQUIRE(command(c, "add", "tone", f.root + "/v1").error == serve_errc::none);
  CHECK(cl.stats().adapter_prefetches == 0);
  std::set<std::uint32_t> served;
  for (std::uint64_t id = 1; id <= 12; ++id) {
    auto r = run_alone(cl, id, "tone", 4);
    REQUIRE(r.done);
    if (id < 8)  // below adapter_demand's min_requests: no copy asked for yet
      served.insert(r.done->worker.value());
  }
  CHECK(served.size() == 1);  // affinity kept the requests on their first holder (a cold load costs) ...
  std::size_t holders = 0;
  for (int i = 0; i < 100 && holders < 2; ++i) {
    holders = 0;
    for (const auto& l : cl.stats().loads)
      holders += std::count(l.adapters.begin(), l.adapters.end(), "tone@1");
    if (holders < 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(holders == 2);  // ... yet the other worker holds it too: prefetched for the demand
  CHECK(cl.stats().adapter_prefetches >= 1);
}

TEST_CASE("a worker's registry copy is extended by a longer log and replaced by a different one",
          "[cluster][registry][model]") {
  adapter_files f;
  worker::worker_runtime rt(test::tiny_worker());
  auto add = [&](std::uint64_t seq, const std::string& name, const std::string& dir) {
    cache::adapter_event e;
    e.seq = seq;
    e.name = name;
    e.version = 1;
    e.source.path = f.root + "/" + dir;
    e.source.hash = engine::adapter_content_hash(e.source.path);
    return e;
  };
  using names = std::vector<std::string>;
  rt.apply_adapter_events({add(1, "old", "v1")}, true);
  CHECK(rt.servable_adapters() == names{"old"});
  rt.apply_adapter_events({add(1, "old", "v1"), add(2, "more", "v2")}, true);  // a rejoin: extended
  CHECK(rt.servable_adapters() == names{"more", "old"});
  CHECK(rt.prefetch_adapter("old@1"));
  rt.apply_adapter_events({add(1, "new", "v2")}, true);  // a router that started over
  CHECK(rt.servable_adapters() == names{"new"});
}
