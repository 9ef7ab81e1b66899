#pragma once
/// The CURVE flags of the client-side commands (client, status):
///   --server-key KEY|FILE   the gateway's public key, Z85 or a file holding it (keygen's NAME.public)
///   --client-key PREFIX     this client's key pair: PREFIX.public and PREFIX.secret, as
///                           `lorafleet keygen --out DIR --name NAME` writes them (DIR/NAME);
///                           needed when the gateway has an allow-list

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "client/client.hpp"
#include "tools/common/args.hpp"

namespace lf::tools {

/// The first word of `path`; throws std::invalid_argument naming the flag when unreadable.
inline std::string read_key_word(const std::string& path, const char* flag) {
  std::ifstream in(path);
  std::string k;
  if (!(in >> k) || k.size() != 40)
    throw std::invalid_argument(std::string(flag) + ": " + path + " does not hold a CURVE key (40 Z85 characters)");
  return k;
}

/// Reads --server-key and --client-key into `co`.
inline void apply_curve_flags(args& a, client::client_options& co) {
  auto server = a.str("server-key");
  if (!server.empty() && std::filesystem::is_regular_file(server))
    server = read_key_word(server, "--server-key");
  co.server_public_key = server;
  if (const auto prefix = a.str("client-key"); !prefix.empty()) {
    if (server.empty())
      throw std::invalid_argument("--client-key needs --server-key (CURVE)");
    co.public_key = read_key_word(prefix + ".public", "--client-key");
    co.secret_key = read_key_word(prefix + ".secret", "--client-key");
  }
}

} // namespace lf::tools
