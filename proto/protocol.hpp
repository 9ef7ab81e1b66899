#pragma once
/// The client <-> gateway wire protocol: message structs, their msgpack encoding and a decoder
/// that is safe on untrusted bytes. Shared by the gateway and the C++ client; docs/protocol.md is
/// the specification and this header follows it field for field.
///
/// Pure C++17: no ZeroMQ, CAF or torch here, and no msgpack in this header either (the codec's
/// .cpp files include it). One frame = one msgpack map {"v": 1, "type": "...", fields...}.
///
/// Decoding never throws: malformed, oversized or out-of-range input comes back as a
/// decode_error (code invalid_request) carrying the request id whenever the frame had a readable
/// one, so the gateway can answer the right request. A decoded submit_msg has also passed
/// validate(): the protocol's size limits, so nothing downstream holds unbounded input. The
/// request's meaning (sampling ranges, context window, adapter name) is checked once, by the
/// router (lf::validate_request, core/request.hpp).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/serve_errc.hpp"
#include "core/strong_id.hpp"
#include "proto/chat_template.hpp"
#include "core/sampling_params.hpp"

namespace lf::proto {

/// A request id chosen by the client, unique among that client's live requests. Only the
/// (client connection, id) pair is unique; the router maps it to its own ids.
using client_request_id = lf::strong_id<struct client_request_tag, std::uint64_t>;

// --- limits (docs/protocol.md, "Limits") ---

/// The value of every frame's "v" field.
inline constexpr std::uint64_t protocol_version = 1;
/// Larger frames are rejected before any parsing.
inline constexpr std::size_t max_frame_bytes = std::size_t{1} << 20;
/// Longest prompt; for chat requests, the sum of the message contents.
inline constexpr std::size_t max_prompt_bytes = std::size_t{256} << 10;
/// Most chat messages in one submit.
inline constexpr std::size_t max_messages = 256;
/// Most stop strings per request, chat defaults included (the engine's limit).
inline constexpr std::size_t max_stop_strings = 16;
/// Longest stop string, in bytes (the engine's limit).
inline constexpr std::size_t max_stop_bytes = 256;
/// Largest max_tokens; the context window usually ends a request long before.
inline constexpr int max_tokens_limit = 1 << 20;
/// Longest adapter name, in bytes.
inline constexpr std::size_t max_adapter_bytes = 128;
/// Longest tenant name, in bytes (lf::max_tenant_name_length).
inline constexpr std::size_t max_tenant_bytes = 64;
/// Longest deadline: one day.
inline constexpr std::uint64_t max_deadline_ms = 86'400'000;
/// Largest credit window and credit grant, in tokens.
inline constexpr std::uint32_t max_window = 1u << 20;
/// Longest server-side text field (token delta, full text, error message).
inline constexpr std::size_t max_text_bytes = std::size_t{512} << 10;
/// Longest short name (finish_reason, stats key).
inline constexpr std::size_t max_name_bytes = 128;
/// Most entries in a stats reply.
inline constexpr std::size_t max_stats_entries = 4096;

// --- client -> server ---

/// Start a generation. Exactly one of `prompt` (non-empty) and `messages` (non-empty) is used.
struct submit_msg {
  client_request_id id;
  std::string prompt;                  ///< plain completion; empty when `messages` is used
  std::vector<chat_message> messages;  ///< chat; rendered with render_chat_prompt()
  std::string adapter;                 ///< LoRA adapter name; empty => base model
  float temperature = 1.0f;            ///< 0 => greedy
  int top_k = 0;                       ///< 0 => off
  float top_p = 1.0f;                  ///< in (0, 1]
  float repetition_penalty = 1.0f;     ///< > 0; 1 => off
  std::optional<std::uint64_t> seed;   ///< absent => the server picks one
  int max_tokens = 16;                 ///< in [1, max_tokens_limit]
  std::vector<std::string> stop;       ///< extra stop strings; the stop text is not returned
  bool ignore_eos = false;             ///< keep going past end-of-text (load tests)
  bool stream = true;                  ///< false => no token messages, done carries the text
  std::optional<std::uint64_t> deadline_ms;  ///< relative to arrival at the gateway, in [1, max]
  /// Credit window (streaming): the server streams at most this many tokens beyond the credits
  /// the client has granted (credit_msg), then pauses the request, which leaves the batch until
  /// credits come. In [1, max_window]; absent => unlimited (no credits needed).
  std::optional<std::uint32_t> window;
  /// First-token target, relative to arrival, in [1, max_deadline_ms]: admission refuses a
  /// request predicted to miss it (deadline_unmeetable); it never ends an admitted one.
  std::optional<std::uint64_t> ttft_ms;
  /// Speculative decoding (never changes the output): -2 on, 0 off, n in [1, 16] on with up to n
  /// proposed tokens per step; absent => the worker's policy.
  std::optional<std::int32_t> speculative;
  /// Who the request is for (scheduling share, per-tenant limits); empty => the default tenant.
  /// At most max_tenant_bytes of UTF-8 without control characters. A gateway that knows the
  /// client's CURVE key name uses that instead.
  std::string tenant;
  /// OpenAI's logit_bias: token id -> bias in [-100, 100], added to the logits before sampling.
  /// At most lf::max_logit_bias_entries; ids checked against the vocabulary by the router.
  std::map<std::int32_t, float> logit_bias;
  /// Report each generated token's log-probability (token frames, or done's `logprobs` when
  /// stream=false) ...
  bool logprobs = false;
  /// ... with this many most likely alternatives, in [0, lf::max_top_logprobs]; needs logprobs.
  int top_logprobs = 0;
  /// Structured output (docs/protocol.md): "json_object", "json_schema", "regex", "choice" or
  /// "grammar"; empty => none. Its text (the schema, pattern, JSON array of choices, GBNF) is
  /// `constraint`, at most lf::max_constraint_text bytes.
  std::string constraint_kind;
  std::string constraint;
  /// A continuation (a client moving its request from a lost gateway to another): the tokens it
  /// already received, in order. The stream goes on after them (the first token frame has index
  /// continued.size()) exactly as an undisturbed run would: a sampled request must carry the seed
  /// it was drawn with. At most max_tokens; empty for a new request.
  std::vector<std::int32_t> continued;

  /// True for a chat request.
  bool is_chat() const noexcept { return !messages.empty(); }
};

/// Cancel a live request; ignored when the id is unknown or already finished.
struct cancel_msg {
  client_request_id id;
};

/// Grants a streaming request with a window `tokens` more tokens (the application consumed
/// that many). Ignored when the id is unknown, already finished or has no window.
struct credit_msg {
  client_request_id id;
  std::uint32_t tokens = 0;  ///< in [1, max_window]
};

/// Ask for a stats_reply.
struct stats_msg {};

/// Ask for a pong_msg.
struct ping_msg {};

/// Operator: drain a worker node (or one worker, "node/N"): no new requests are placed there and
/// its running ones move to other workers, continuing exactly. Answered by drained_msg.
struct drain_msg {
  std::string node;  ///< non-empty, at most max_name_bytes
};

/// Operator: undo a drain of a worker node (or one worker, "node/N"): its drained workers take
/// new requests again. Answered by undrained_msg. An admin operation, like drain.
struct undrain_msg {
  std::string node;  ///< non-empty, at most max_name_bytes
};

/// Longest adapter path in an adapters message, in bytes.
inline constexpr std::size_t max_path_bytes = 4096;
/// Most adapters in one adapters_result.
inline constexpr std::size_t max_adapter_rows = 4096;

/// Operator: the cluster's adapter registry. `op` "list"; "add" or "update" with `name` and
/// `path` (a PEFT directory the router's node resolves inside its adapter roots); "remove" with
/// `name`. Answered by adapters_result.
struct adapters_msg {
  std::string op;    ///< list, add, update or remove
  std::string name;  ///< at most max_adapter_bytes; empty for list
  std::string path;  ///< at most max_path_bytes; add and update only
};

// --- server -> client ---

/// The request passed validation and admission; not terminal.
struct accepted_msg {
  client_request_id id;
};

/// One generated token (streaming requests only).
struct token_msg {
  client_request_id id;
  std::string text;          ///< text released by this token; may be empty (partial character)
  std::int32_t token = 0;    ///< GPT-2 token id, >= 0
  std::uint32_t index = 0;   ///< 0 for the first generated token
  /// Present exactly when the request asked for logprobs (optional on the wire).
  std::optional<lf::token_logprobs> logprobs;
};

/// Token counts of a finished request.
struct usage_info {
  std::uint32_t prompt_tokens = 0;
  std::uint32_t completion_tokens = 0;
  std::uint32_t cached_tokens = 0;  ///< prompt tokens served by the prefix cache
  std::uint32_t resumed = 0;        ///< times it moved to another worker mid-stream (optional on the wire)
};

/// Where a finished request's time went, in milliseconds from arrival at the gateway.
struct timing_info {
  double queue_ms = 0;  ///< until first scheduled on a worker
  double ttft_ms = 0;   ///< until the first token
  double total_ms = 0;  ///< until done
};

/// Terminal: the request finished normally.
struct done_msg {
  client_request_id id;
  std::string finish_reason;        ///< "eos", "stop" or "length"
  usage_info usage;
  timing_info timings;
  std::optional<std::string> text;  ///< the whole completion; present exactly when stream=false
  /// The sampling seed used: the request's, or the one the router assigned (optional on the
  /// wire; 0 when absent). Submitting again with it reproduces the text.
  std::uint64_t seed = 0;
  /// With stream=false and logprobs: each generated token's id and log-probabilities, in order
  /// (optional on the wire; empty otherwise). At most max_done_logprobs entries.
  std::vector<std::int32_t> tokens;
  std::vector<lf::token_logprobs> logprobs;
};

/// Most per-token entries in a done frame's `logprobs` (the decoder's array limit; a generation
/// longer than this reports its first ones only; GPT-2's context window is 1024).
inline constexpr std::size_t max_done_logprobs = 1024;

/// Terminal for the request `id`; without an id, about a frame whose id could not be read.
struct error_msg {
  std::optional<client_request_id> id;
  serve_errc code = serve_errc::internal;  ///< never serve_errc::none; a string on the wire
  std::string message;
  std::optional<std::uint32_t> retry_after_ms;  ///< with overloaded, no_workers, rate_limited: try again after this
};

/// Terminal: the request was cancelled by the client.
struct cancelled_msg {
  client_request_id id;
};

/// Answer to stats_msg: flat, dotted names ("router.queued", "worker.0.running") to numbers.
/// Values are finite.
struct stats_reply {
  std::map<std::string, double> values;
};

/// Answer to ping_msg.
struct pong_msg {};

/// Answer to drain_msg.
struct drained_msg {
  std::string node;
  std::uint32_t workers = 0;  ///< workers newly drained (0: no live worker has that name)
  std::uint32_t moved = 0;    ///< running or queued-on-worker requests moved off them
};

/// Answer to undrain_msg.
struct undrained_msg {
  std::string node;
  std::uint32_t workers = 0;  ///< workers put back (0: no live drained worker has that name)
};

/// One registry entry in an adapters_result.
struct adapter_row {
  std::string name;
  std::uint32_t version = 0;  ///< newest version ("NAME@V" addresses older ones)
  bool removed = false;
  std::string path;
  std::string hash;           ///< content hash, 16 hex digits
  std::uint32_t rank = 0;
  std::string targets;        ///< the modules it adapts, comma-separated ("attn.c_attn,mlp.c_fc")
  std::uint64_t bytes = 0;    ///< weights in a worker's memory
  std::int64_t updated_ms = 0;  ///< wall-clock ms of its last change
  std::uint32_t resident = 0;   ///< live workers holding its newest version
};

/// Answer to adapters_msg: `error` absent => done, and `adapters` holds every name (list) or the
/// one changed; present => refused, `message` says why.
struct adapters_result {
  std::optional<serve_errc> error;
  std::string message;
  std::uint64_t seq = 0;  ///< the registry log's newest event
  std::vector<adapter_row> adapters;
};

/// Anything a client sends.
using client_message =
  std::variant<submit_msg, cancel_msg, stats_msg, ping_msg, drain_msg, credit_msg, adapters_msg, undrain_msg>;
/// Anything the server sends.
using server_message = std::variant<accepted_msg, token_msg, done_msg, error_msg, cancelled_msg,
                                    stats_reply, pong_msg, drained_msg, adapters_result, undrained_msg>;

/// Why a frame was rejected.
struct decode_error {
  serve_errc code = serve_errc::invalid_request;
  std::string message;  ///< names the field and the rule; valid UTF-8, safe to send back
  std::optional<client_request_id> id;  ///< the frame's "id" when it could be read
};

/// decode_client's result: a client message or a decode_error.
using client_decode_result =
  std::variant<submit_msg, cancel_msg, stats_msg, ping_msg, drain_msg, credit_msg, adapters_msg, undrain_msg,
               decode_error>;
/// decode_server's result: a server message or a decode_error.
using server_decode_result = std::variant<accepted_msg, token_msg, done_msg, error_msg,
                                          cancelled_msg, stats_reply, pong_msg, drained_msg,
                                          adapters_result, undrained_msg, decode_error>;

// --- codec ---

/// One frame each. Encoding does not validate: an out-of-limit message encodes, and the peer
/// rejects it.
std::string encode(const submit_msg& m);
std::string encode(const cancel_msg& m);
std::string encode(const credit_msg& m);
std::string encode(const stats_msg& m);
std::string encode(const ping_msg& m);
std::string encode(const accepted_msg& m);
std::string encode(const token_msg& m);
std::string encode(const done_msg& m);
std::string encode(const error_msg& m);
std::string encode(const cancelled_msg& m);
std::string encode(const stats_reply& m);
std::string encode(const pong_msg& m);
std::string encode(const drain_msg& m);
std::string encode(const drained_msg& m);
std::string encode(const undrain_msg& m);
std::string encode(const undrained_msg& m);
std::string encode(const adapters_msg& m);
std::string encode(const adapters_result& m);
/// Encodes whichever message `m` holds.
std::string encode(const client_message& m);
/// Encodes whichever message `m` holds.
std::string encode(const server_message& m);

/// Decodes a frame sent by a client (what the gateway calls). Never throws.
client_decode_result decode_client(std::string_view bytes);

/// Decodes a frame sent by the server (what a client calls). Never throws.
server_decode_result decode_server(std::string_view bytes);

// --- submit helpers ---

/// Rules beyond the wire types: prompt xor messages, sizes (prompt, messages, adapter, stop
/// strings with a chat's defaults), UTF-8, deadline range. Returns the first problem.
std::optional<std::string> validate(const submit_msg& m);

/// The engine's view of `m`'s sampling fields. Chat requests get chat_stop_sequences() appended
/// (those not already in `m.stop`).
lf::sampling_params to_sampling_params(const submit_msg& m);

/// The text to tokenize: `m.prompt`, or the chat template applied to `m.messages`.
std::string prompt_text(const submit_msg& m);

/// The reply to a frame that failed to decode.
error_msg to_error_msg(const decode_error& e);

/// True for done, error and cancelled: nothing follows for that request id.
bool is_terminal(const server_message& m) noexcept;

/// The request a server message is about; std::nullopt for stats, pong and id-less errors.
std::optional<client_request_id> request_of(const server_message& m) noexcept;

// --- equality (field by field; used by round-trip tests) ---

bool operator==(const submit_msg& a, const submit_msg& b);
bool operator==(const cancel_msg& a, const cancel_msg& b);
bool operator==(const credit_msg& a, const credit_msg& b);
bool operator==(const stats_msg& a, const stats_msg& b);
bool operator==(const ping_msg& a, const ping_msg& b);
bool operator==(const accepted_msg& a, const accepted_msg& b);
bool operator==(const token_msg& a, const token_msg& b);
bool operator==(const usage_info& a, const usage_info& b);
bool operator==(const timing_info& a, const timing_info& b);
bool operator==(const done_msg& a, const done_msg& b);
bool operator==(const error_msg& a, const error_msg& b);
bool operator==(const cancelled_msg& a, const cancelled_msg& b);
bool operator==(const stats_reply& a, const stats_reply& b);
bool operator==(const pong_msg& a, const pong_msg& b);
bool operator==(const drain_msg& a, const drain_msg& b);
bool operator==(const drained_msg& a, const drained_msg& b);
bool operator==(const undrain_msg& a, const undrain_msg& b);
bool operator==(const undrained_msg& a, const undrained_msg& b);
bool operator==(const adapters_msg& a, const adapters_msg& b);
bool operator==(const adapters_result& a, const adapters_result& b);
bool operator==(const decode_error& a, const decode_error& b);

/// !(a == b), for each type above.
bool operator!=(const submit_msg& a, const submit_msg& b);
bool operator!=(const cancel_msg& a, const cancel_msg& b);
bool operator!=(const credit_msg& a, const credit_msg& b);
bool operator!=(const stats_msg& a, const stats_msg& b);
bool operator!=(const ping_msg& a, const ping_msg& b);
bool operator!=(const accepted_msg& a, const accepted_msg& b);
bool operator!=(const token_msg& a, const token_msg& b);
bool operator!=(const usage_info& a, const usage_info& b);
bool operator!=(const timing_info& a, const timing_info& b);
bool operator!=(const done_msg& a, const done_msg& b);
bool operator!=(const error_msg& a, const error_msg& b);
bool operator!=(const cancelled_msg& a, const cancelled_msg& b);
bool operator!=(const stats_reply& a, const stats_reply& b);
bool operator!=(const pong_msg& a, const pong_msg& b);
bool operator!=(const drain_msg& a, const drain_msg& b);
bool operator!=(const drained_msg& a, const drained_msg& b);
bool operator!=(const undrain_msg& a, const undrain_msg& b);
bool operator!=(const undrained_msg& a, const undrained_msg& b);
bool operator!=(const adapters_msg& a, const adapters_msg& b);
bool operator!=(const adapters_result& a, const adapters_result& b);
bool operator!=(const decode_error& a, const decode_error& b);

} // namespace lf::proto
