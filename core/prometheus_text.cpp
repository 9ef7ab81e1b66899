#include "core/prometheus_text.hpp"

#include <charconv>

namespace lf {

std::string prom_number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string prom_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void prom_writer::head(const std::string& name, const char* type, const char* help) {
  out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void prom_writer::sample(const std::string& name, const std::string& labels, double v) {
  out_ += name + (labels.empty() ? "" : "{" + labels + "}") + " " + prom_number(v) + "\n";
}

void prom_writer::hist(const std::string& name, const std::string& labels, const histogram& h) {
  std::uint64_t cum = 0;
  const auto sep = labels.empty() ? "" : ",";
  for (std::size_t i = 0; i < h.bounds.size(); ++i) {
    cum += h.counts[i];
    out_ += name + "_bucket{" + labels + sep + "le=\"" + prom_number(h.bounds[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  out_ += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(h.count) + "\n";
  sample(name + "_sum", labels, h.sum);
  sample(name + "_count", labels, static_cast<double>(h.count));
}

} // namespace lf
