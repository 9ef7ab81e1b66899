// Security of a launched cluster: CURVE on the client gateway (keys from `lorafleet keygen`, an
// allow-list) and mutual TLS between nodes (a cluster CA made with the openssl command).
#include "tests/integration/cluster_processes.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>

#include "client/client.hpp"
#include "cluster/cluster_config.hpp"

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

namespace {

std::string read_key(const std::string& path) {
  std::ifstream in(path);
  std::string k;
  in >> k;
  return k;
}

void keygen(const temp_dir& d, const std::string& name) {
  REQUIRE(run_to_end({LF_LORAFLEET_BIN, "keygen", "--out", d / "keys", "--name", name}, 30s));
}

/// stats through a client with these keys; std::nullopt when the gateway does not answer.
std::optional<std::map<std::string, double>> stats_with(const std::string& endpoint, const std::string& server_key,
                                                        const std::string& pub, const std::string& sec) {
  client::client_options o;
  o.endpoint = endpoint;
  o.server_public_key = server_key;
  o.public_key = pub;
  o.secret_key = sec;
  client::client c(o);
  return c.stats(3s);
}

bool openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_to_end(argv, 60s);
}

/// A CA (ca.crt, ca.key) and certificates signed by it, in dir/tls.
void make_ca(const temp_dir& d, const std::string& ca, const std::vector<std::string>& nodes) {
  const auto t = d / "tls";
  std::filesystem::create_directories(t);
  REQUIRE(openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", "/CN=" + ca,
                   "-keyout", t + "/" + ca + ".key", "-out", t + "/" + ca + ".crt"}));
  for (const auto& n : nodes) {
    REQUIRE(openssl({"req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + n, "-keyout", t + "/" + n + ".key",
                     "-out", t + "/" + n + ".csr"}));
    REQUIRE(openssl({"x509", "-req", "-in", t + "/" + n + ".csr", "-CA", t + "/" + ca + ".crt", "-CAkey",
                     t + "/" + ca + ".key", "-CAcreateserial", "-days", "30", "-out", t + "/" + n + ".crt"}));
  }
}

/// `text` with every node given its own certificate: tls_certificate/tls_key after its name.
std::string with_node_certs(std::string text, const std::map<std::string, std::string>& cert_of) {
  for (const auto& [node, cert] : cert_of) {
    const auto line = "name = \"" + node + "\"\n";
    const auto at = text.find(line);
    REQUIRE(at != std::string::npos);
    text.insert(at + line.size(), "tls_certificate = \"tls/" + cert + ".crt\"\ntls_key = \"tls/" + cert + ".key\"\n");
  }
  return text;
}

} // namespace

TEST_CASE("CURVE: a plaintext client and an unknown client key are refused, an allowed key works",
          "[cluster][processes][security]") {
  launched_cluster c([](const temp_dir& d) {
    for (const char* n : {"server", "alice", "launcher", "mallory"})
      keygen(d, n);
    return config_from("single-node.toml", d) + R"(
[security.clients]
public_key_file = "keys/server.public"
secret_key_file = "keys/server.secret"
allowed_key_files = ["keys/alice.public", "keys/launcher.public"]
)" + "\n[launch]\nclient_public_key_file = \"keys/launcher.public\"\nclient_secret_key_file = \"keys/launcher.secret\"\n"
           + "\n[tenants.alice]\nmax_inflight = 1\nmax_queued = 0\n";
  });
  const auto& d = c.dir();
  const auto server = read_key(d / "keys/server.public");
  REQUIRE(cluster::valid_z85_key(server));
  // The secret key file is private to its owner.
  CHECK((std::filesystem::status(d / "keys/server.secret").permissions() & std::filesystem::perms::group_read)
        == std::filesystem::perms::none);

  auto ok = stats_with(c.endpoint(), server, read_key(d / "keys/alice.public"), read_key(d / "keys/alice.secret"));
  REQUIRE(ok);
  CHECK(ok->at("router.workers") == 2);
  {
    client::client_options o;
    o.endpoint = c.endpoint();
    o.server_public_key = server;
    o.public_key = read_key(d / "keys/alice.public");
    o.secret_key = read_key(d / "keys/alice.secret");
    client::client alice(o);
    proto::submit_msg m;
    m.prompt = "Once upon a time";
    m.max_tokens = 8;
    m.ignore_eos = true;
    auto r = alice.submit(m).get();
    CHECK(r.ok());
    CHECK(r.usage.completion_tokens == 8);
    // The key's name (keys/alice.public) is the tenant, whatever the request says: alice may
    // have one request in flight and none queued, so a second at once is refused as hers.
    m.tenant = "somebody-else";
    m.max_tokens = 64;
    auto first = alice.submit(m);
    auto second = alice.submit(m).get();
    CHECK(second.error == serve_errc::overloaded);
    CHECK_THAT(second.message, Catch::Matchers::Contains("tenant \"alice\""));
    CHECK(first.get().ok());
  }
  CHECK_FALSE(stats_with(c.endpoint(), server, read_key(d / "keys/mallory.public"),
                         read_key(d / "keys/mallory.secret")));
  CHECK_FALSE(stats_with(c.endpoint(), server, "", ""));  // a fresh, unlisted key pair
  CHECK_FALSE(stats_with(c.endpoint(), "", "", ""));      // plaintext
  REQUIRE(c.stop(60s));
}

TEST_CASE("mutual TLS between nodes: nodes with the cluster CA's certificates serve, a node with another CA's or none is refused",
          "[cluster][processes][security]") {
  if (!run_to_end({"openssl", "version"}, 10s)) {
    WARN("skipped: no openssl command to make certificates with");
    return;
  }
  std::string plain_text;
  launched_cluster c([&](const temp_dir& d) {
    make_ca(d, "ca", {"head", "w1", "w2"});
    make_ca(d, "rogue-ca", {"rogue"});
    plain_text = config_from("three-nodes.toml", d);
    auto text = with_node_certs(plain_text, {{"head", "head"}, {"w1", "w1"}, {"w2", "w2"}});
    text.replace(text.find("[launch]"), 8, "[security.nodes]\nca_file = \"tls/ca.crt\"\n\n[launch]");
    // A copy in which w2 presents a certificate of another CA.
    auto rogue = text;
    const auto w2 = rogue.find("tls/w2.crt");
    rogue.replace(w2, 10, "tls/rogue.crt");
    rogue.replace(rogue.find("tls/w2.key"), 10, "tls/rogue.key");
    std::ofstream(d / "rogue.toml") << rogue;
    return text;
  });
  CHECK_THAT(c.log(), Catch::Matchers::Contains("(mutual TLS)"));
  REQUIRE(c.stats().at("router.workers") == 4);
  // The plaintext config uses the same ports: written next to the cluster's so paths resolve.
  std::ofstream(c.dir() / "plain.toml") << plain_text;

  // Two intruders try for a few seconds: the node of another CA, and a node without TLS.
  for (const char* cfg : {"rogue.toml", "plain.toml"}) {
    cluster::child_process p({LF_LORAFLEET_BIN, "node", c.dir() / cfg, "--name", "w2"});
    std::string out;
    const auto until = std::chrono::steady_clock::now() + 6s;
    while (std::chrono::steady_clock::now() < until) {
      p.read_some(out);
      std::this_thread::sleep_for(100ms);
    }
    p.signal(SIGTERM);
    while (!p.poll_exit()) {
      p.read_some(out);
      std::this_thread::sleep_for(20ms);
    }
    p.read_some(out);
    INFO(cfg << ":\n" << out);
    CHECK_THAT(out, Catch::Matchers::Contains("cannot reach the router"));
    CHECK_THAT(out, !Catch::Matchers::Contains("connected to the router"));
  }
  // The intruders did not register, and the legitimate nodes were never disconnected by them
  // (cluster/openssl_guard.hpp: CAF's OpenSSL error queue).
  CHECK(c.stats().at("router.workers") == 4);
  CHECK_THAT(c.log(), !Catch::Matchers::Contains("lost the router"));
  REQUIRE(c.stop(60s));
}
