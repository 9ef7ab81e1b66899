#pragma once
/// TLS for the HTTP gateway: a server context (OpenSSL) made from a PEM certificate chain and its
/// private key, checked at start so a missing, unreadable, malformed or mismatched file stops the
/// server with a message naming the file, instead of failing every handshake later.

#include <string>

#include "gateway/common/tls_files.hpp"

struct ssl_ctx_st;

namespace lf::gateway {

/// An OpenSSL server context (TLS 1.2 or newer) holding the certificate and key.
class tls_context {
public:
  /// Loads and checks `f`; throws std::runtime_error naming the file and OpenSSL's reason (not
  /// found, not PEM, a key that does not match the certificate).
  explicit tls_context(const tls_files& f);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  /// The context every connection's SSL object is made from.
  ssl_ctx_st* get() const noexcept { return ctx_; }

private:
  ssl_ctx_st* ctx_ = nullptr;
};

/// Builds a tls_context from `f` and drops it: the full start-up check (files, PEM, key match),
/// for command lines and configs before anything starts. An error message, or empty.
std::string check_tls_files(const tls_files& f);

} // namespace lf::gateway
