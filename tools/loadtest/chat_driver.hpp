#pragma once
/// Runs the multi-turn chat workload (conversation.hpp) against a cluster: each conversation's
/// first turn at its start time, each next turn its think time after the previous reply, with the
/// whole history resent. Measures every turn as the request driver does (driver.hpp); a turn that
/// fails ends its conversation (its later turns are not sent).

#include "tools/loadtest/conversation.hpp"
#include "tools/loadtest/driver.hpp"

namespace lf::loadtest {

/// What a chat run measured.
struct chat_result {
  driver_result run;                      ///< one sample per turn sent (chat requests)
  std::size_t conversations_finished = 0; ///< every turn answered
  std::size_t conversations_cut = 0;      ///< ended by a failed turn (or the run's end)
};

/// Sends `plan` through `submit` (temperature, ignore_eos, deadlines and drain from `opts`; its
/// arrival settings are not used: the plan has the times) and waits for the replies.
chat_result run_chat(const submit_fn& submit, const std::vector<conversation_plan>& plan, const driver_options& opts);

} // namespace lf::loadtest
