#pragma once
/// API keys and their roles, read from a key file (`serve --api-key-file`, `[auth] key_file`).
/// Pure C++ (standard library only): parsing, checks and a constant-time lookup.
///
///   # NAME  ROLE   KEY                                 [TENANT]  [rpm=N] [tpm=N]
///   alice   user   sk-alice-0123456789abcdef                     rpm=60 tpm=40000
///   ops     admin  sk-ops-fedcba9876543210abcd         platform
///   robot   admin  curve:rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7   (a CURVE client's public key)
///
/// `rpm=N` and `tpm=N` (after the tenant, if any) limit the key to N requests, or N tokens (prompt
/// plus max_tokens), per minute (core/rate_limit.hpp); without them the key is not limited.
/// A key is a secret of at least `min_key_bytes` printable ASCII characters. A `curve:` key names
/// a ZeroMQ client by its CURVE public key (Z85, 40 characters): that client gets the line's name,
/// role and tenant; such a key is never accepted over HTTP. A line's tenant defaults to its name.
/// A name may hold one HTTP key and one `curve:` key (two lines, which must give the same role,
/// tenant and limits): one caller over both doors, with one set of rate-limit buckets.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rate_limit.hpp"

namespace lf::auth {

/// What a caller may do: `user` completions, chat, models; `admin` also drain / undrain, the
/// adapter registry's changes and anything else that changes the cluster.
enum class role : unsigned char { user, admin };

/// "user" / "admin".
std::string_view to_string(role r) noexcept;
/// Inverse of to_string.
std::optional<role> parse_role(std::string_view s) noexcept;

/// The shortest secret key accepted (bytes).
inline constexpr std::size_t min_key_bytes = 16;
/// The prefix of a CURVE client key's line.
inline constexpr std::string_view curve_prefix = "curve:";

/// One line of a key file.
struct api_key {
  std::string name;    ///< names the caller in logs (never the key itself); on at most one line per kind
  auth::role role = auth::role::user;
  std::string key;     ///< the secret (or, for a CURVE client, its Z85 public key without `curve:`)
  std::string tenant;  ///< the tenant of the caller's requests (the name unless the line says)
  bool curve = false;  ///< a ZeroMQ CURVE client key, not an HTTP secret
  rate_limits limits;  ///< rpm= / tpm= (none: not limited)
};

/// Are `a` and `b` equal? Takes the same time for any two strings of a given length of `a`
/// whatever their contents (no early exit at the first difference).
bool constant_time_equal(std::string_view a, std::string_view b) noexcept;

/// The keys of one key file; immutable once built.
class key_table {
public:
  key_table() = default;
  /// Checks names, keys, roles and duplicates (a name twice only as one HTTP and one curve: key
  /// that agree); throws std::invalid_argument naming the problem.
  explicit key_table(std::vector<api_key> keys);

  /// The HTTP key equal to `secret`, or nullptr. Compares against every key in constant time
  /// per key, so neither the match nor its position shows in the time taken.
  const api_key* find_secret(std::string_view secret) const noexcept;
  /// The CURVE client key `z85`, or nullptr.
  const api_key* find_curve(std::string_view z85) const noexcept;
  /// The key named `name` (its first line; a second agrees on role, tenant and limits), or nullptr.
  const api_key* find_name(std::string_view name) const noexcept;

  /// Every key, in file order.
  const std::vector<api_key>& keys() const noexcept { return keys_; }
  /// No keys at all.
  bool empty() const noexcept { return keys_.empty(); }
  /// Any HTTP (secret) keys.
  bool has_secrets() const noexcept;

private:
  std::vector<api_key> keys_;
};

/// Parses a key file's text: one key per line, `NAME ROLE KEY [TENANT] [rpm=N] [tpm=N]`, a `#`
/// that begins a word starts a comment (so a key may hold '#' but not begin with it), blank lines
/// are skipped. Throws std::invalid_argument "FILE:LINE: reason" on the first bad line (a short
/// key, an unknown role, too many fields, a duplicate name or key, a name's two lines that
/// disagree); the message never quotes a key.
key_table parse_key_file(std::string_view text, const std::string& file);

/// Reads and parses `path`; refuses (std::invalid_argument naming the file and its mode) a file
/// that its group or others may read or write, and one that cannot be read.
key_table load_key_file(const std::string& path);

} // namespace lf::auth
