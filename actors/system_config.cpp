#include "actors/system_config.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/deep_to_string.hpp>
#include <caf/message.hpp>

#include "actors/messages.hpp"

namespace lf::actors {

void add_lorafleet_types(caf::actor_system_config& cfg) {
  // The actors are few and light (router, gateway, worker shells) and every token passes two of
  // them, beside the workers' compute threads: a shared queue whose idle threads block on a
  // condition variable (woken per message) instead of work stealing's polling naps, which cost
  // the compute threads a context switch every 50 us on a small machine.
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.add_message_types<caf::id_block::lorafleet>();
  // 0.17.6's add_error_category<T>() does not compile (its lambda misses the renderer's
  // signature), so the renderer is spelled out: "serve: overloaded (detail)".
  cfg.add_error_category(caf::atom("serve"), [](std::uint8_t code, caf::atom_value,
                                                const caf::message& ctx) {
    std::string out = "serve: ";
    out += to_string(static_cast<serve_errc>(code));
    if (!ctx.empty()) {
      out += " (";
      out += ctx.match_element<std::string>(0) && ctx.size() == 1 ? ctx.get_as<std::string>(0)
                                                                   : caf::deep_to_string(ctx);
      out += ")";
    }
    return out;
  });
}

} // namespace lf::actors
