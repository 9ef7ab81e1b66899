#pragma once
/// The HTTP gateway's TLS files as settings: the pair and the checks that need no OpenSSL (both or
/// neither, each a readable file), shared by `serve`'s flags and the cluster config's [http]
/// table. Pure C++ and POSIX; the OpenSSL side is tls_context.hpp.

#include <string>

namespace lf::gateway {

/// The certificate and key files the HTTP gateway serves TLS with; both empty: plain HTTP.
struct tls_files {
  std::string cert;  ///< PEM: the server certificate, then any intermediates
  std::string key;   ///< PEM: its private key (unencrypted)
  bool enabled() const noexcept { return !cert.empty() || !key.empty(); }
};

/// Checks what needs no OpenSSL: both files or neither ("--tls-cert and --tls-key go together"
/// in the words of `cert_name` / `key_name`), each a readable file. An error message, or empty.
std::string check_tls_paths(const tls_files& f, const std::string& cert_name, const std::string& key_name);

} // namespace lf::gateway
