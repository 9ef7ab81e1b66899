// The doors' decision (core/access.hpp): the table in its header, row by row, the presented key
// from Authorization / x-api-key, loopback hosts and local ZeroMQ endpoints.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "core/access.hpp"

using namespace lf::auth;

namespace {

const key_table& keys() {
  static const key_table t = parse_key_file("alice user sk-alice-0123456789abcdef\n"
                                            "ops admin sk-ops-fedcba9876543210abcd platform\n",
                                            "k");
  return t;
}

} // namespace

TEST_CASE("check_http without keys: everything but admin is open, admin only from loopback", "[access]") {
  door_policy p;
  CHECK(check_http(p, std::nullopt, op_class::user, false).verdict == verdict::allowed);
  CHECK(check_http(p, std::string("anything-at-all-here"), op_class::user, false).verdict == verdict::allowed);
  CHECK(check_http(p, std::nullopt, op_class::admin, true).verdict == verdict::allowed);
  const auto far = check_http(p, std::nullopt, op_class::admin, false);
  CHECK(far.verdict == verdict::forbidden);
  CHECK(far.why.find("loopback") != std::string::npos);
  CHECK_FALSE(far.caller.keyed());
}

TEST_CASE("check_http with keys: 401 for none or a wrong key, 403 for a user on admin, the key's identity", "[access]") {
  door_policy p{&keys(), false};
  CHECK(check_http(p, std::nullopt, op_class::open, false).verdict == verdict::allowed);
  CHECK(check_http(p, std::nullopt, op_class::metrics, false).verdict == verdict::allowed);
  CHECK(check_http(p, std::nullopt, op_class::user, true).verdict == verdict::unauthenticated);  // loopback is no key
  CHECK(check_http(p, std::string("sk-wrong-0123456789abcdef"), op_class::user, false).verdict == verdict::unauthenticated);
  CHECK(check_http(p, std::nullopt, op_class::admin, true).verdict == verdict::unauthenticated);

  const auto user = check_http(p, std::string("sk-alice-0123456789abcdef"), op_class::user, false);
  CHECK(user.verdict == verdict::allowed);
  CHECK(user.caller.name == "alice");
  CHECK(user.caller.tenant == "alice");
  const auto denied = check_http(p, std::string("sk-alice-0123456789abcdef"), op_class::admin, true);
  CHECK(denied.verdict == verdict::forbidden);
  CHECK(denied.caller.name == "alice");
  CHECK(denied.why == "key alice has role user; this operation needs admin");

  const auto admin = check_http(p, std::string("sk-ops-fedcba9876543210abcd"), op_class::admin, false);
  CHECK(admin.verdict == verdict::allowed);
  CHECK(admin.caller.role == role::admin);
  CHECK(admin.caller.tenant == "platform");

  door_policy closed{&keys(), true};
  CHECK(check_http(closed, std::nullopt, op_class::metrics, true).verdict == verdict::unauthenticated);
  CHECK(check_http(closed, std::string("sk-alice-0123456789abcdef"), op_class::metrics, false).verdict == verdict::allowed);
  CHECK(check_http(closed, std::nullopt, op_class::open, false).verdict == verdict::allowed);
}

TEST_CASE("check_zmq and may: named CURVE callers by role, anonymous admin only locally without keys", "[access]") {
  caller anon_far, anon_local;
  anon_local.local = true;
  caller user{"alice", role::user, "alice", false}, admin{"ops", role::admin, "platform", false};
  CHECK(check_zmq(anon_far, false, op_class::user).verdict == verdict::allowed);
  CHECK(check_zmq(anon_far, false, op_class::admin).verdict == verdict::forbidden);
  CHECK(check_zmq(anon_local, false, op_class::admin).verdict == verdict::allowed);
  CHECK(check_zmq(anon_local, true, op_class::admin).verdict == verdict::unauthenticated);
  CHECK(check_zmq(user, true, op_class::admin).verdict == verdict::forbidden);
  CHECK(check_zmq(user, false, op_class::user).verdict == verdict::allowed);
  CHECK(check_zmq(admin, true, op_class::admin).verdict == verdict::allowed);
  CHECK(check_zmq(admin, false, op_class::admin).verdict == verdict::allowed);
  CHECK(may(admin, op_class::admin, true));
  CHECK_FALSE(may(user, op_class::admin, false));
  CHECK(may(user, op_class::user, true));
}

TEST_CASE("presented_key: Bearer in any case, x-api-key, odd spacing, malformed headers are no key", "[access]") {
  CHECK(presented_key("Bearer sk-1", nullptr) == std::string("sk-1"));
  CHECK(presented_key("bearer   sk-1  ", nullptr) == std::string("sk-1"));
  CHECK(presented_key("  BEARER\tsk-1", nullptr) == std::string("sk-1"));
  CHECK(presented_key(nullptr, " sk-2 ") == std::string("sk-2"));
  CHECK(presented_key("Bearer sk-1", "sk-2") == std::string("sk-1"));  // Authorization first
  CHECK(presented_key("Basic YWxhZGRpbjpvcGVu", "sk-2") == std::string("sk-2"));
  CHECK_FALSE(presented_key("Bearer", nullptr));
  CHECK_FALSE(presented_key("Bearer ", nullptr));
  CHECK_FALSE(presented_key("Bearersk-1", nullptr));
  CHECK_FALSE(presented_key("Bearer a b", nullptr));
  CHECK_FALSE(presented_key("", ""));
  CHECK_FALSE(presented_key(nullptr, nullptr));
  CHECK_FALSE(presented_key(("Bearer " + std::string(5000, 'k')).c_str(), nullptr));
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {  // random bytes: no crash, and never a key with spaces
    std::string h(rng() % 40, '\0');
    for (auto& c : h)
      c = static_cast<char>(1 + rng() % 255);
    if (auto k = presented_key(h.c_str(), h.c_str()))
      CHECK(k->find(' ') == std::string::npos);
  }
}

TEST_CASE("loopback_host and local_endpoint", "[access]") {
  CHECK(loopback_host("127.0.0.1"));
  CHECK(loopback_host("127.1.2.3"));
  CHECK(loopback_host("::1"));
  CHECK(loopback_host("[::1]"));
  CHECK(loopback_host("::ffff:127.0.0.1"));
  CHECK_FALSE(loopback_host("10.0.0.1"));
  CHECK_FALSE(loopback_host("127.0.0"));
  CHECK_FALSE(loopback_host("127.0.0.256"));
  CHECK_FALSE(loopback_host("0.0.0.0"));
  CHECK_FALSE(loopback_host(""));
  CHECK_FALSE(loopback_host("1270.0.0.1"));
  CHECK(local_endpoint("ipc:///tmp/lf.sock"));
  CHECK(local_endpoint("inproc://x"));
  CHECK(local_endpoint("tcp://127.0.0.1:5555"));
  CHECK(local_endpoint("tcp://127.0.0.1:*"));
  CHECK(local_endpoint("tcp://localhost:5555"));
  CHECK(local_endpoint("tcp://[::1]:5555"));
  CHECK_FALSE(local_endpoint("tcp://*:5555"));
  CHECK_FALSE(local_endpoint("tcp://0.0.0.0:5555"));
  CHECK_FALSE(local_endpoint("tcp://10.0.0.10:5555"));
  CHECK_FALSE(local_endpoint("tcp://eth0:5555"));
}
