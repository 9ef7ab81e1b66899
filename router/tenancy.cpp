#include "router/tenancy.hpp"

namespace lf::router {

std::string tenant_label(const std::string& tenant) {
  return tenant.empty() ? std::string("the default tenant") : "tenant \"" + tenant + "\"";
}

} // namespace lf::router
