#include "worker/engine/kernels/kernel_table.hpp"

#include <atomic>
#include <cstdlib>
#include <stdexcept>

namespace lf::kernels {

namespace detail {
extern const kernel_table portable_table;
#if defined(__x86_64__)
extern const kernel_table avx2_table, avx2_vnni_table, avx512_table, avx512_vnni_table, avx512_bf16_table;
#elif defined(__aarch64__)
extern const kernel_table neon_table, neon_dotprod_table, neon_i8mm_table;
#endif
} // namespace detail

namespace {

std::atomic<const kernel_table*> forced{nullptr};

/// What a table needs that `f` lacks, "avx512f avx512bw"; empty when runnable.
std::string missing(const kernel_table& t, const cpu_features& f) {
  std::string s;
  for (int i = 0; i < static_cast<int>(cpu_cap::count_); ++i) {
    const auto c = static_cast<cpu_cap>(i);
    if (t.needs.has(c) && !f.has(c))
      s += (s.empty() ? "" : " ") + std::string(to_string(c));
  }
  return s;
}

struct env_choice {
  const kernel_table* table = nullptr;
  std::optional<std::string> problem;
};

const env_choice& from_env() {
  static const env_choice c = [] {
    env_choice out;
    const char* env = std::getenv("LF_ISA");
    if (env == nullptr || *env == '\0')
      return out;
    const auto* t = find_table(env);
    if (t == nullptr) {
      std::string all;
      for (const auto* x : all_tables())
        all += (all.empty() ? "" : " ") + std::string(x->name);
      out.problem = "LF_ISA=" + std::string(env) + " names no kernel table of this build (" + all + "); using " +
                    std::string(best_table(host_features()).name);
      return out;
    }
    if (const auto m = missing(*t, host_features()); !m.empty()) {
      out.problem = "LF_ISA=" + std::string(env) + ": this CPU lacks " + m + "; using " +
                    std::string(best_table(host_features()).name);
      return out;
    }
    out.table = t;
    return out;
  }();
  return c;
}

} // namespace

const std::vector<const kernel_table*>& all_tables() {
  static const std::vector<const kernel_table*> tables = {
    &detail::portable_table,
#if defined(__x86_64__)
    &detail::avx2_table, &detail::avx2_vnni_table, &detail::avx512_table, &detail::avx512_vnni_table,
    &detail::avx512_bf16_table,
#elif defined(__aarch64__)
    &detail::neon_table, &detail::neon_dotprod_table, &detail::neon_i8mm_table,
#endif
  };
  return tables;
}

std::vector<const kernel_table*> runnable_tables(const cpu_features& f) {
  std::vector<const kernel_table*> out;
  for (const auto* t : all_tables())
    if (f.has_all(t->needs))
      out.push_back(t);
  return out;
}

const kernel_table& best_table(const cpu_features& f) { return *runnable_tables(f).back(); }

const kernel_table* find_table(std::string_view name) noexcept {
  if (name == "generic")
    name = "portable";
  for (const auto* t : all_tables())
    if (t->name == name)
      return t;
  return nullptr;
}

const kernel_table& active_table() {
  if (const auto* t = forced.load(std::memory_order_acquire))
    return *t;
  static const kernel_table& chosen = from_env().table ? *from_env().table : best_table(host_features());
  return chosen;
}

std::optional<std::string> lf_isa_problem() { return from_env().problem; }

std::optional<std::string> lf_isa_refusal() {
  const char* env = std::getenv("LF_ISA");
  if (env == nullptr || *env == '\0' || from_env().table != nullptr)
    return std::nullopt;
  const auto* t = find_table(env);
  const auto& f = host_features();
  std::string all;
  for (const auto* x : all_tables())
    all += (all.empty() ? "" : " ") + std::string(x->name);
  return "LF_ISA=" + std::string(env)
         + (t == nullptr ? " names no kernel table of this build (it has: " + all + ")"
                         : ": this CPU cannot run that table (it lacks " + missing(*t, f) + ")")
         + "; this CPU runs: " + runnable_names(f) + " (unset LF_ISA for the best, "
         + std::string(best_table(f).name) + ")";
}

void set_active_table(const kernel_table& t) {
  if (const auto m = missing(t, host_features()); !m.empty())
    throw std::invalid_argument("this CPU cannot run the " + std::string(t.name) + " kernels (it lacks " + m + ")");
  forced.store(&t, std::memory_order_release);
}

std::string runnable_names(const cpu_features& f) {
  std::string s;
  for (const auto* t : runnable_tables(f))
    s += (s.empty() ? "" : " ") + std::string(t->name);
  return s;
}

std::optional<std::string> slow_path_note(const cpu_features& f, const kernel_table& t, std::string_view dtype) {
  const auto& best = best_table(f);
  if (&best != &t)
    return "kernels " + std::string(t.name) + " (forced) while this CPU runs " + std::string(best.name) +
           ": expect it to be slower";
  if (t.name == "portable")
    return std::string("kernels portable: no vector kernels for this CPU (") + describe(f) +
           "); expect several times the step time of an AVX2, AVX-512 or NEON machine";
  if (dtype == "bf16" && (t.name == "avx2" || t.name == "avx2_vnni" || t.name == "avx512" || t.name == "avx512_vnni"))
    return "bf16 on " + std::string(t.name) + " is widened to f32 in registers (no bf16 dot product on this "
           "CPU); --dtype int8 (the default) is faster here";
  return std::nullopt;
}

} // namespace lf::kernels
