// Every kind of config error names the file, the line, the key and the reason.
#include "tests/unit/cluster/config_fixture.hpp"

using namespace lf;
using Catch::Matchers::Contains;
using lf::test::config_dir;

namespace {

/// The minimal config with `extra` appended (a new table or [[nodes]]).
std::string with(const std::string& extra) { return std::string(test::minimal_config) + extra; }

/// The minimal config with `from` replaced by `to` (once).
std::string replaced(const std::string& from, const std::string& to) {
  std::string s = test::minimal_config;
  auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("a message reads FILE:LINE:COL: KEY: reason", "[cluster][config][errors]") {
  config_dir d;
  const auto text = replaced("port = 4200", "port = 4200\n  bnid = \"0.0.0.0\"");
  auto i = d.issue(text);
  CHECK(i.key == "nodes[1].bnid");
  CHECK(i.pos.line == 10);
  CHECK(i.pos.column == 3);
  CHECK_THAT(i.reason, Contains("unknown key") && Contains("bind"));
  const auto path = (d.dir.path() / "cluster.toml").string();
  CHECK(to_string(i) == path + ":10:3: nodes[1].bnid: " + i.reason);
  try {
    d.load(text);
    FAIL("loaded");
  } catch (const cluster::config_error& e) {
    CHECK_THAT(e.what(), Contains(path + ":10:3: nodes[1].bnid: unknown key"));
  }
  // A misspelt key can leave a required one missing: both are reported.
  auto both = d.issues(replaced("port = 4200", "prot = 4200"));
  REQUIRE(both.size() == 2);
  CHECK(both[0].reason == "the router node needs a port (worker nodes connect to it there)");
  CHECK(both[1].key == "nodes[1].prot");
}

TEST_CASE("a file that does not exist or is not TOML", "[cluster][config][errors]") {
  config_dir d;
  try {
    cluster::load_cluster_config(d.dir / "missing.toml");
    FAIL("loaded a missing file");
  } catch (const cluster::config_error& e) {
    CHECK_THAT(e.what(), Contains("missing.toml") && Contains("cannot read"));
  }
  auto i = d.issue("[cluster]\nrouter_node = \"head\nmodel_dir = 1\n");
  CHECK(i.pos.line == 2);
  CHECK_THAT(i.reason, Contains("TOML syntax"));
}

TEST_CASE("unknown keys, in every table", "[cluster][config][errors]") {
  config_dir d;
  CHECK(d.issue(with("\n[gateway]\nlisten_on = \"tcp://127.0.0.1:1\"\n")).key == "gateway.listen_on");
  CHECK(d.issue(with("\n[router]\npolicy = \"round_robin\"\n")).key == "router.policy");
  CHECK(d.issue(with("\n[heartbeat]\ninterval = 100\n")).key == "heartbeat.interval");
  CHECK(d.issue(with("\n[security.nodes]\ncert = \"x\"\n")).key == "security.nodes.cert");
  CHECK(d.issue(replaced("count = 2", "count = 2\nthread = 4")).key == "nodes[1].workers.thread");
  CHECK(d.issue(with("\n[routers]\n")).key == "routers");
}

TEST_CASE("wrong types", "[cluster][config][errors]") {
  config_dir d;
  auto i = d.issue(replaced("port = 4200", "port = \"4200\""));
  CHECK(i.key == "nodes[1].port");
  CHECK(i.reason == "expected an integer, got a string");
  i = d.issue(replaced("count = 2", "count = 2.5"));
  CHECK(i.key == "nodes[1].workers.count");
  CHECK(i.reason == "expected an integer, got a float");
  i = d.issue(replaced("router_node = \"head\"", "router_node = \"head\"\nname = 3"));
  CHECK(i.reason == "expected a string, got an integer");
  i = d.issue(with("\n[launch]\nrestart = \"yes\"\n"));
  CHECK(i.key == "launch.restart");
  CHECK_THAT(i.reason, Contains("expected a boolean"));
  i = d.issue(with("\n[launch]\nssh_options = [\"-p\", 22]\n"));
  CHECK(i.key == "launch.ssh_options[1]");
  i = d.issue("gateway = \"tcp://127.0.0.1:1\"\n" + std::string(test::minimal_config));
  CHECK_THAT(i.reason, Contains("expected a table"));
}

TEST_CASE("values out of range or not in the allowed set", "[cluster][config][errors]") {
  config_dir d;
  auto i = d.issue(replaced("port = 4200", "port = 70000"));
  CHECK(i.reason == "70000 is out of range [1, 65535]");
  CHECK(d.issue(replaced("count = 2", "count = 2\nthreads = -1")).key == "nodes[1].workers.threads");
  i = d.issue(with("\n[router]\nplacement = \"random\"\n"));
  CHECK(i.key == "router.placement");
  CHECK_THAT(i.reason, Contains("round_robin"));
  i = d.issue(with("\n[router]\nmax_adapter_rank = 0\n"));
  CHECK(i.key == "router.max_adapter_rank");
  CHECK(i.reason == "0 is out of range [1, 4096]");
  CHECK(d.issue(with("\n[router]\nprefetch_copies = -1\n")).key == "router.prefetch_copies");
  CHECK(d.issue(with("\n[router]\nadapter_roots = \"adapters\"\n")).key == "router.adapter_roots");
  i = d.issue(with("\n[router]\nadapter_log = \"\"\n"));
  CHECK(i.key == "router.adapter_log");
  CHECK_THAT(i.reason, Contains("must not be empty"));
  i = d.issue(with("\n[router]\ndrain_kv = \"teleport\"\n"));
  CHECK(i.key == "router.drain_kv");
  CHECK_THAT(i.reason, Contains("\"ship\" or \"recompute\""));
  i = d.issue(replaced("count = 2", "count = 2\ndevice = \"cuda:0\""));
  CHECK(i.key == "nodes[1].workers.device");
  CHECK_THAT(i.reason, Contains("f32"));
  i = d.issue(replaced("count = 2", "count = 2\ndevice = \"gpu0\""));
  CHECK(i.key == "nodes[1].workers.device");
  CHECK_THAT(i.reason, Contains("cpu, cuda or cuda:N"));
  CHECK(d.issue(replaced("count = 2", "count = 2\ndtype = \"f16\"")).key == "nodes[1].workers.dtype");
  i = d.issue(with("\n[gateway]\nlisten = \"127.0.0.1:5555\"\n"));
  CHECK(i.key == "gateway.listen");
  CHECK_THAT(i.reason, Contains("tcp://HOST:PORT"));
  i = d.issue(with("\n[http]\nlisten = \"tcp://127.0.0.1:8000\"\n"));
  CHECK(i.key == "http.listen");
  CHECK_THAT(i.reason, Contains("without a scheme"));
  CHECK(d.issue(with("\n[http]\nlisten = \"127.0.0.1:http\"\n")).key == "http.listen");
  CHECK(d.issue(with("\n[http]\nlisten = \"8000\"\n")).key == "http.listen");
  CHECK(d.issue(with("\n[http]\nlisten = \"127.0.0.1:8000\"\nport = 1\n")).key == "http.port");
  i = d.issue(with("\n[heartbeat]\ninterval_ms = 1000\ntimeout_ms = 1500\n"));
  CHECK(i.key == "heartbeat.timeout_ms");
  CHECK_THAT(i.reason, Contains("twice"));
  CHECK(d.issue(with("\n[reconnect]\ninitial_ms = 500\nmax_ms = 100\n")).key == "reconnect.max_ms");
  CHECK(d.issue(replaced("count = 2", "count = 2\nmax_seqs = 64\nmax_batched_tokens = 32")).key
        == "nodes[1].workers.max_batched_tokens");
}

TEST_CASE("the cache_aware load guard's keys", "[cluster][config][errors]") {
  config_dir d;
  auto i = d.issue(with("\n[router]\nbalance_abs = -1\n"));
  CHECK(i.key == "router.balance_abs");
  CHECK_THAT(i.reason, Contains("out of range"));
  i = d.issue(with("\n[router]\nbalance_abs = 1.5\n"));
  CHECK(i.key == "router.balance_abs");
  CHECK(i.reason == "expected an integer, got a float");
  i = d.issue(with("\n[router]\nbalance_abs = \"2\"\n"));
  CHECK(i.key == "router.balance_abs");
  CHECK(i.reason == "expected an integer, got a string");
  i = d.issue(with("\n[router]\nbalance_rel = 0.5\n"));
  CHECK(i.key == "router.balance_rel");
  CHECK_THAT(i.reason, Contains("out of range"));
  i = d.issue(with("\n[router]\nbalance_rel = 5000\n"));
  CHECK(i.key == "router.balance_rel");
  CHECK_THAT(i.reason, Contains("out of range"));
  i = d.issue(with("\n[router]\nbalance_rel = \"1.5\"\n"));
  CHECK(i.key == "router.balance_rel");
  CHECK(i.reason == "expected a number, got a string");
  i = d.issue(with("\n[router]\nbalance_scope = \"everything\"\n"));
  CHECK(i.key == "router.balance_scope");
  CHECK_THAT(i.reason, Contains("\"prefix\" or \"all\""));
  i = d.issue(with("\n[router]\nbalance_scope = 1\n"));
  CHECK(i.key == "router.balance_scope");
  CHECK_THAT(i.reason, Contains("expected a string"));
  // In range, they load.
  auto c = d.load(with("\n[router]\nplacement = \"cache_aware\"\nbalance_abs = 0\nbalance_rel = 1\n"
                       "balance_scope = \"all\"\n"));
  CHECK(c.router_cfg.placement.balance_abs == 0);
  CHECK(c.router_cfg.placement.balance_rel == 1);
  CHECK_FALSE(c.router_cfg.placement.balance_on_prefix);
  CHECK(d.load(test::minimal_config).router_cfg.placement.balance_on_prefix);
}

TEST_CASE("tenants and scheduling", "[cluster][config][errors]") {
  config_dir d;
  auto i = d.issue(with("\n[router]\nscheduling = \"fair\"\n"));
  CHECK(i.key == "router.scheduling");
  CHECK_THAT(i.reason, Contains("\"fcfs\" or \"vtc\""));
  i = d.issue(with("\n[tenants.a]\nweight = 0\n"));
  CHECK(i.key == "tenants.a.weight");
  CHECK_THAT(i.reason, Contains("out of range"));
  i = d.issue(with("\n[tenants.a]\nweight = \"2\"\n"));
  CHECK(i.reason == "expected a number, got a string");
  CHECK(d.issue(with("\n[tenants.a]\nmax_inflight = 0\n")).key == "tenants.a.max_inflight");
  CHECK(d.issue(with("\n[tenants.a]\nmax_queue = 3\n")).key == "tenants.a.max_queue");
  CHECK(d.issue(with("\n[tenant_defaults]\nmax_queued = -1\n")).key == "tenant_defaults.max_queued");
  i = d.issue(with("\n[tenants]\na = 3\n"));
  CHECK(i.key == "tenants.a");
  CHECK_THAT(i.reason, Contains("expected a table"));
  i = d.issue(with("\n[tenants.\"" + std::string(65, 'x') + "\"]\nweight = 1\n"));
  CHECK_THAT(i.reason, Contains("not a tenant name"));
  CHECK(d.issue(with("\n[router]\noutput_token_weight = -1\n")).key == "router.output_token_weight");
}

TEST_CASE("missing and wrong directories", "[cluster][config][errors]") {
  config_dir d;
  auto i = d.issue(replaced("model_dir = \"model\"", "model_dir = \"no-such-model\""));
  CHECK(i.key == "cluster.model_dir");
  CHECK(i.pos.line == 4);
  CHECK_THAT(i.reason, Contains((d.dir.path() / "no-such-model").string()) && Contains("does not exist"));
  std::filesystem::create_directories(d.dir.path() / "empty");
  i = d.issue(replaced("model_dir = \"model\"", "model_dir = \"empty\""));
  CHECK_THAT(i.reason, Contains("no config.json"));
  i = d.issue(replaced("model_dir = \"model\"", "model_dir = \"model\"\nadapter_dir = \"adapters\""));
  CHECK(i.key == "cluster.adapter_dir");
  i = d.issue(replaced("model_dir = \"model\"", ""));
  CHECK(i.key == "cluster.model_dir");
  CHECK_THAT(i.reason, Contains("missing"));
  CHECK(d.issue(replaced("model_dir = \"model\"", "model_dir = \"\"")).reason
        == "must not be empty (leave the key out instead)");
}

TEST_CASE("nodes: duplicate names, unknown router node, port clashes", "[cluster][config][errors]") {
  config_dir d;
  auto i = d.issue(with("\n[[nodes]]\nname = \"head\"\nhost = \"127.0.0.1\"\nport = 4300\n"));
  CHECK(i.key == "nodes[2].name");
  CHECK(i.pos.line == 14);
  CHECK(i.reason == "duplicate node name \"head\" (also nodes[1] at line 6)");

  i = d.issue(replaced("router_node = \"head\"", "router_node = \"hed\""));
  CHECK(i.key == "cluster.router_node");
  CHECK(i.reason == "no node named \"hed\" (nodes: head)");

  // localhost and 127.0.0.1 are the same machine.
  i = d.issue(with("\n[[nodes]]\nname = \"w1\"\nhost = \"localhost\"\nport = 4200\n"));
  CHECK(i.key == "nodes[2].port");
  CHECK(i.reason == "port 4200 on localhost is already used by node \"head\"");
  // Other machines may reuse a port, but must be able to reach the router node.
  auto far = replaced("host = \"127.0.0.1\"", "host = \"10.1.1.0\"");
  CHECK(d.load(far + "\n[[nodes]]\nname = \"w1\"\nhost = \"10.1.1.1\"\nport = 4200\n").nodes.size() == 2);
  i = d.issue(with("\n[[nodes]]\nname = \"w1\"\nhost = \"10.1.1.1\"\n"));
  CHECK(i.key == "nodes[2].host");
  CHECK_THAT(i.reason, Contains("only reaches this machine"));

  i = d.issue(with("\n[gateway]\nlisten = \"tcp://*:4200\"\n"));
  CHECK(i.key == "gateway.listen");
  CHECK_THAT(i.reason, Contains("\"head\"'s CAF port"));

  CHECK(d.issue(replaced("port = 4200", "")).reason == "the router node needs a port (worker nodes connect to it there)");
  CHECK(d.issue(with("\n[[nodes]]\nname = \"w 1\"\nhost = \"localhost\"\n")).key == "nodes[2].name");
  CHECK(d.issue(replaced("host = \"127.0.0.1\"", "")).reason == "missing host");
  i = d.issue(with("\n[[nodes]]\nname = \"w1\"\nhost = \"localhost\"\n[nodes.workers]\ncount = 0\n"));
  CHECK(i.key == "nodes[2].workers.count");
  // No worker anywhere: an elastic cluster that worker nodes join (node --join).
  CHECK(d.load(replaced("count = 2", "count = 0")).total_workers() == 0);
  CHECK_THAT(d.issue("[cluster]\nrouter_node = \"x\"\nmodel_dir = \"model\"\n").reason, Contains("no [[nodes]]"));
  CHECK_THAT(d.issue("nodes = 3\n[cluster]\nrouter_node = \"x\"\nmodel_dir = \"model\"\n").reason,
             Contains("array of tables"));
}

TEST_CASE("CURVE keys and TLS settings", "[cluster][config][errors]") {
  config_dir d;
  const std::string pub = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  auto i = d.issue(with("\n[security.clients]\npublic_key = \"short\"\nsecret_key = \"" + pub + "\"\n"));
  CHECK(i.key == "security.clients.public_key");
  CHECK_THAT(i.reason, Contains("40 Z85"));
  i = d.issue(with("\n[security.clients]\npublic_key = \"" + pub + "\"\n"));
  CHECK_THAT(i.reason, Contains("both public_key and secret_key"));
  i = d.issue(with("\n[security.clients]\npublic_key = \"" + pub + "\"\nsecret_key_file = \"nope.key\"\n"));
  CHECK(i.key == "security.clients.secret_key_file");
  CHECK_THAT(i.reason, Contains("cannot read key file"));
  i = d.issue(with("\n[security.clients]\npublic_key = \"" + pub + "\"\npublic_key_file = \"x\"\nsecret_key = \"" + pub + "\"\n"));
  CHECK_THAT(i.reason, Contains("not both"));
  i = d.issue(with("\n[security.clients]\nallowed_keys = [\"" + pub + "\"]\n"));
  CHECK_THAT(i.reason, Contains("allow-list needs CURVE"));

  i = d.issue(with("\n[security.nodes]\ncertificate = \"node.crt\"\nkey = \"node.key\"\n"), [] {
    cluster::load_options o;
    o.check_paths = false;
    return o;
  }());
  CHECK(i.key == "security.nodes");
  CHECK_THAT(i.reason, Contains("ca_file"));
  i = d.issue(with("\n[security.nodes]\nca_file = \"ca.crt\"\n"), [] {
    cluster::load_options o;
    o.check_paths = false;
    return o;
  }());
  CHECK(i.key == "nodes[1]");
  CHECK_THAT(i.reason, Contains("no certificate and key"));
  auto all = d.issues(with("\n[security.nodes]\nca_file = \"ca.crt\"\ncertificate = \"n.crt\"\nkey = \"n.key\"\n"));
  REQUIRE(all.size() == 3);
  CHECK(all[0].key == "security.nodes.ca_file");
  CHECK_THAT(all[0].reason, Contains("CA file") && Contains("does not exist"));
  CHECK(all[1].key == "security.nodes.certificate");
  CHECK(all[2].key == "security.nodes.key");
}

TEST_CASE("several problems are all reported, in file order", "[cluster][config][errors]") {
  config_dir d;
  auto all = d.issues(R"(
[cluster]
router_node = "head"
model_dir = "model"
colour = "blue"

[[nodes]]
name = "head"
host = "127.0.0.1"
port = 0
)");
  REQUIRE(all.size() == 2);  // the refused port is not reported again as "missing"
  CHECK(all[0].key == "cluster.colour");
  CHECK(all[1].key == "nodes[1].port");
}

TEST_CASE("[auth]: the key file is checked like at start, metrics_need_key needs it", "[cluster][config][errors]") {
  config_dir d;
  const auto keys = d.write("alice user sk-alice-0123456789abcdef\nops admin sk-ops-0123456789abcdef0\n", "keys.txt");
  std::filesystem::permissions(keys, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const auto c = d.load(with("\n[auth]\nkey_file = \"keys.txt\"\nmetrics_need_key = true\n"));
  CHECK(c.api_key_file == keys);
  CHECK(c.metrics_need_key);
  std::filesystem::permissions(keys, std::filesystem::perms::others_read, std::filesystem::perm_options::add);
  auto i = d.issue(with("\n[auth]\nkey_file = \"keys.txt\"\n"));
  CHECK(i.key == "auth.key_file");
  CHECK_THAT(i.reason, Contains("has mode 0604"));
  std::filesystem::permissions(keys, std::filesystem::perms::others_read, std::filesystem::perm_options::remove);
  d.write("alice root sk-alice-0123456789abcdef\n", "keys.txt");
  CHECK_THAT(d.issue(with("\n[auth]\nkey_file = \"keys.txt\"\n")).reason, Contains("keys.txt:1: unknown role \"root\""));
  CHECK(d.issue(with("\n[auth]\nmetrics_need_key = true\n")).key == "auth.metrics_need_key");
  // A key file of CURVE keys only: nothing could open /metrics (a node would refuse to start).
  d.write("cli user curve:" + std::string(40, 'A') + "\n", "keys.txt");
  const auto curve_only = d.issue(with("\n[auth]\nkey_file = \"keys.txt\"\nmetrics_need_key = true\n"));
  CHECK(curve_only.key == "auth.metrics_need_key");
  CHECK_THAT(curve_only.reason, Contains("needs an HTTP key"));
  CHECK(d.issue(with("\n[auth]\nkeyfile = \"keys.txt\"\n")).key == "auth.keyfile");
}

TEST_CASE("[http] TLS files: both or neither, with a listen address, files that exist", "[cluster][config][errors]") {
  config_dir d;
  const auto cert = d.write("cert", "cert.pem"), key = d.write("key", "key.pem");
  auto c = d.load(with("\n[http]\nlisten = \"127.0.0.1:8443\"\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n"));
  CHECK(c.http_tls_cert == cert);  // relative to the config file
  CHECK(c.http_tls_key == key);
  auto i = d.issue(with("\n[http]\nlisten = \"127.0.0.1:8443\"\ntls_cert = \"cert.pem\"\n"));
  CHECK(i.key == "http.tls_cert");
  CHECK_THAT(i.reason, Contains("go together") && Contains("tls_key is missing"));
  i = d.issue(with("\n[http]\nlisten = \"127.0.0.1:8443\"\ntls_key = \"key.pem\"\n"));
  CHECK(i.key == "http.tls_key");
  CHECK_THAT(i.reason, Contains("tls_cert is missing"));
  i = d.issue(with("\n[http]\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n"));
  CHECK_THAT(i.reason, Contains("need [http] listen"));
  i = d.issue(with("\n[http]\nlisten = \"127.0.0.1:8443\"\ntls_cert = \"cert.pem\"\ntls_key = \"nope.pem\"\n"));
  CHECK(i.key == "http.tls_key");
  CHECK_THAT(i.reason, Contains("nope.pem") && Contains("No such file"));
  // Without path checks (a config for other hosts) the files need not exist here.
  cluster::load_options no_paths;
  no_paths.check_paths = false;
  CHECK_NOTHROW(d.load(with("\n[http]\nlisten = \"127.0.0.1:8443\"\ntls_cert = \"a.pem\"\ntls_key = \"b.pem\"\n"), no_paths));
}

TEST_CASE("prefix_cache_isolation is tenant or shared", "[cluster][config][errors]") {
  config_dir d;
  auto i = d.issue(replaced("count = 2", "count = 2\nprefix_cache_isolation = \"none\""));
  CHECK(i.key == "nodes[1].workers.prefix_cache_isolation");
  CHECK_THAT(i.reason, Contains("\"tenant\" or \"shared\""));
}
