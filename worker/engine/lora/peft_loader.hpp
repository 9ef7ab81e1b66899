#pragma once
/// An adapter manager (cache/adapter_manager.hpp) serving Hugging Face PEFT LoRA directories from a
/// root: names are paths under it (resolve_adapter_path's rules), a load reads and validates the
/// adapter against the base model, and an engine-specific factory turns it into the payload that
/// engine's forward pass reads. Pure C++ (both engines use it).

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "cache/adapter_manager.hpp"
#include "cache/adapter_registry.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/lora/lora_adapter.hpp"

namespace lf::engine {

/// Turns a loaded, validated adapter into an engine's payload.
using payload_factory =
  std::function<std::shared_ptr<const cache::adapter_payload>(const lora_adapter&)>;

/// The files of a registered adapter version ("NAME@V", cache/adapter_registry.hpp), or nullopt
/// for a name the cluster's registry does not know (then the adapter root decides). Thread-safe.
using adapter_source_fn = std::function<std::optional<cache::adapter_source>(const std::string&)>;

/// A load function. A registered key loads from its source's path after checking that the files'
/// adapter_content_hash is still the one registered (else unknown_adapter: "changed since it was
/// registered"); any other name: resolve_adapter_path(root, name). Then load_peft_adapter(dir,
/// base) -> make(adapter). Errors: a refused name is invalid_request; a missing directory is
/// unknown_adapter ("not found under ROOT"); anything wrong with the files (corrupt, shape
/// mismatch, unsupported option) is unknown_adapter with the loader's message, which names the
/// file and the key.
cache::adapter_load_fn peft_loader(std::string root, gpt2_config base, payload_factory make,
                                   adapter_source_fn sources = {});

/// A name check: registered keys pass; other names get resolve_adapter_path's refusals (empty,
/// "..", absolute, odd characters, outside the root) as messages. Without a root every name
/// passes (the load of an unregistered one fails with unknown_adapter).
cache::adapter_name_check peft_name_check(std::string root, adapter_source_fn sources = {});

/// FNV-1a 64 over adapter_config.json then adapter_model.safetensors of `dir` (a content check
/// between the nodes of a cluster, not a cryptographic one). Throws std::runtime_error naming the
/// file that cannot be read.
std::uint64_t adapter_content_hash(const std::string& dir);

/// What `lorafleet adapters add` checks before an adapter enters the registry, on a worker (it
/// has the base model): `dir` is a directory, load_peft_adapter(dir, base) accepts it (corrupt
/// files, unknown target modules, shapes of another base model, unsupported options all fail
/// there), its rank is at most `max_rank` and its weights fit `max_bytes` (a worker's adapter
/// cache). Returns its source (path as given, hash, rank, targets, bytes); throws
/// std::runtime_error with a message for the operator.
cache::adapter_source check_peft_adapter(const std::string& dir, const gpt2_config& base,
                                         std::uint32_t max_rank, std::size_t max_bytes);

/// The engine payload `Payload` behind `lookup(id)`: nullptr for base_model. Throws
/// std::runtime_error naming the adapter when it is not ready (the lookup returns nothing, or a
/// payload of another engine).
template <class Payload>
std::shared_ptr<const Payload> find_adapter_payload(const cache::adapter_lookup_fn& lookup, cache::adapter_id id) {
  if (id == cache::base_model)
    return nullptr;
  std::shared_ptr<const cache::adapter_payload> p;
  if (lookup)
    p = lookup(id);
  auto w = std::dynamic_pointer_cast<const Payload>(p);
  if (!w)
    throw std::runtime_error("LoRA adapter " + std::to_string(id.value()) + " is not loaded");
  return w;
}

/// A manager serving PEFT adapters from `root` (may be empty: registered adapters only) and the
/// registered `sources`, as `make` builds them.
std::unique_ptr<cache::adapter_manager> make_peft_manager(std::string root, gpt2_config base,
                                                          payload_factory make,
                                                          cache::adapter_cache_config cfg = {},
                                                          adapter_source_fn sources = {});

} // namespace lf::engine
