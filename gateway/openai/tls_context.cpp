// The HTTP gateway's TLS context. See tls_context.hpp.
#include "gateway/openai/tls_context.hpp"

#include <stdexcept>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace lf::gateway {

namespace {

/// OpenSSL's queued errors as one line (and the queue emptied: it is per thread, and a stale
/// entry would make a later call on this thread look failed).
std::string openssl_errors() {
  std::string out;
  while (const auto e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += out.empty() ? "" : "; ";
    out += buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

} // namespace

tls_context::tls_context(const tls_files& f) {
  if (auto err = check_tls_paths(f, "TLS certificate", "TLS key"); !err.empty())
    throw std::runtime_error("http: " + err);
  ERR_clear_error();
  ctx_ = SSL_CTX_new(TLS_server_method());
  if (ctx_ == nullptr)
    throw std::runtime_error("http: cannot create a TLS context: " + openssl_errors());
  auto fail = [this](const std::string& what) {
    const auto why = openssl_errors();
    SSL_CTX_free(ctx_);
    ctx_ = nullptr;
    throw std::runtime_error("http: " + what + " (" + why + ")");
  };
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx_, SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // libevent may hand SSL_write a retried write from a moved buffer.
  SSL_CTX_set_mode(ctx_, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // An encrypted key would make OpenSSL's default callback ask for a passphrase on the terminal
  // and hang the start: refuse it instead.
  SSL_CTX_set_default_passwd_cb(ctx_, [](char*, int, int, void*) { return 0; });
  if (SSL_CTX_use_certificate_chain_file(ctx_, f.cert.c_str()) != 1)
    fail("TLS certificate " + f.cert + " is not a PEM certificate");
  if (SSL_CTX_use_PrivateKey_file(ctx_, f.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL compares the key with the certificate as it loads it.
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
      fail("TLS key " + f.key + " does not match the certificate in " + f.cert);
    fail("TLS key " + f.key + " is not an unencrypted PEM private key");
  }
  if (SSL_CTX_check_private_key(ctx_) != 1)
    fail("TLS key " + f.key + " does not match the certificate in " + f.cert);
}

tls_context::~tls_context() {
  if (ctx_ != nullptr)
    SSL_CTX_free(ctx_);
}

std::string check_tls_files(const tls_files& f) {
  if (!f.enabled())
    return {};
  try {
    tls_context ctx(f);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

} // namespace lf::gateway
