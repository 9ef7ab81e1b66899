#pragma once
/// An adapter manager (cache/adapter_manager.hpp) serving Hugging Face PEFT LoRA directories from a
/// root: names are paths under it (resolve_adapter_path's rules), a load reads and validates the
/// adapter against the base model, and an engine-specific factory turns it into the payload that
/// engine's forward pass reads. Pure C++ (both engines use it).

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "cache/adapter_manager.hpp"
#include "worker/engine/gpt2_config.hpp"
#include "worker/engine/lora_adapter.hpp"

namespace lf::engine {

/// Turns a loaded, validated adapter into an engine's payload.
using payload_factory =
  std::function<std::shared_ptr<const cache::adapter_payload>(const lora_adapter&)>;

/// A load function: name -> resolve_adapter_path(root, name) -> load_peft_adapter(dir, base) ->
/// make(adapter). Errors: a refused name is invalid_request; a missing directory is
/// unknown_adapter ("not found under ROOT"); anything wrong with the files (corrupt, shape
/// mismatch, unsupported option) is unknown_adapter with the loader's message, which names the
/// file and the key.
cache::adapter_load_fn peft_loader(std::string root, gpt2_config base, payload_factory make);

/// A name check: resolve_adapter_path's refusals (empty, "..", absolute, odd characters, outside
/// the root) as messages.
cache::adapter_name_check peft_name_check(std::string root);

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

/// A manager serving PEFT adapters from `root` as `make` builds them. Throws std::invalid_argument
/// for an empty root.
std::unique_ptr<cache::adapter_manager> make_peft_manager(std::string root, gpt2_config base,
                                                          payload_factory make,
                                                          cache::adapter_cache_config cfg = {});

} // namespace lf::engine
