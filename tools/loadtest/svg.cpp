#include "tools/loadtest/svg.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <tuple>

namespace lf::loadtest {

namespace {

constexpr double left = 80, right = 700, plot_top = 40, plot_bottom = 370;

/// `v` with as many decimals as the axis step needs (2.5 x 10^k needs one more than 10^k).
std::string num(double v, double step) {
  const double e = std::floor(std::log10(step));
  const double m = step / std::pow(10, e);
  const int digits = std::max(0, -static_cast<int>(e) + (std::abs(m - 2.5) < 1e-6 ? 1 : 0));
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

} // namespace

std::pair<double, double> nice_axis(double max, bool whole) {
  if (!(max > 0) || !std::isfinite(max))
    return {1, whole ? 1 : 0.2};
  const double raw = max / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * mag >= raw * (1 - 1e-12) && (!whole || std::abs(m * mag - std::round(m * mag)) < 1e-9)) {
      step = m * mag;
      break;
    }
  if (whole)
    step = std::max(1.0, std::round(step));
  const double top = std::max(1.0, std::ceil(max / step - 1e-9)) * step;
  return {top, step};
}

std::string svg_escape(const std::string& s) {
  std::string o;
  for (char c : s)
    o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return o;
}

svg_panel::svg_panel(std::string title, std::string xlabel, std::string ylabel, double xmax, double ymax,
                     bool whole_y) {
  std::tie(xtop_, xstep_) = nice_axis(xmax);
  std::tie(ytop_, ystep_) = nice_axis(ymax, whole_y);
  std::ostringstream h;
  h << std::fixed << std::setprecision(1) << "<text x=\"390\" y=\"24\" text-anchor=\"middle\" font-size=\"14\">"
    << svg_escape(title) << "</text><text x=\"390\" y=\"408\" text-anchor=\"middle\">" << svg_escape(xlabel)
    << "</text><text x=\"18\" y=\"205\" text-anchor=\"middle\" transform=\"rotate(-90 18 205)\">"
    << svg_escape(ylabel) << "</text>";
  for (long k = 0, n = std::lround(xtop_ / xstep_); k <= n; ++k) {
    const double x = static_cast<double>(k) * xstep_;
    h << "<line x1=\"" << px(x) << "\" y1=\"" << plot_top << "\" x2=\"" << px(x) << "\" y2=\"" << plot_bottom
      << "\" stroke=\"#e5e5e5\"/><text x=\"" << px(x) << "\" y=\"386\" text-anchor=\"middle\">" << num(x, xstep_)
      << "</text>";
  }
  for (long k = 0, n = std::lround(ytop_ / ystep_); k <= n; ++k) {
    const double y = static_cast<double>(k) * ystep_;
    h << "<line x1=\"" << left << "\" y1=\"" << py(y) << "\" x2=\"" << right << "\" y2=\"" << py(y)
      << "\" stroke=\"#e5e5e5\"/><text x=\"" << left - 6 << "\" y=\"" << py(y) + 4 << "\" text-anchor=\"end\">"
      << num(y, ystep_) << "</text>";
  }
  h << "<line x1=\"" << left << "\" y1=\"" << plot_bottom << "\" x2=\"" << right << "\" y2=\"" << plot_bottom
    << "\" stroke=\"black\"/><line x1=\"" << left << "\" y1=\"" << plot_top << "\" x2=\"" << left << "\" y2=\""
    << plot_bottom << "\" stroke=\"black\"/>";
  head_ = h.str();
  os_ << std::fixed << std::setprecision(1);
}

double svg_panel::px(double x) const { return left + (right - left) * x / xtop_; }
double svg_panel::py(double y) const { return plot_bottom - (plot_bottom - plot_top) * y / ytop_; }

void svg_panel::line(const std::vector<std::pair<double, double>>& pts, const char* color, const std::string& label) {
  os_ << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
  for (auto [x, y] : pts)
    os_ << px(x) << "," << py(y) << " ";
  os_ << "\"/>";
  for (auto [x, y] : pts)
    os_ << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"3\" fill=\"" << color << "\"/>";
  legend(color, label);
}

void svg_panel::bar(double x0, double x1, double h, const char* color) {
  os_ << "<rect x=\"" << px(x0) << "\" y=\"" << py(h) << "\" width=\"" << std::max(0.5, px(x1) - px(x0) - 1)
      << "\" height=\"" << plot_bottom - py(h) << "\" fill=\"" << color << "\" fill-opacity=\"0.8\"/>";
}

void svg_panel::legend(const char* color, const std::string& label) {
  const int slot = legend_slots_++;
  os_ << "<rect x=\"" << left + 20 << "\" y=\"" << 46 + 16 * slot << "\" width=\"10\" height=\"10\" fill=\""
      << color << "\"/><text x=\"" << left + 36 << "\" y=\"" << 55 + 16 * slot << "\">" << svg_escape(label)
      << "</text>";
}

void svg_panel::text(double x, double y, const std::string& t) {
  os_ << "<text x=\"" << px(x) << "\" y=\"" << py(y) - 6 << "\" text-anchor=\"middle\" font-size=\"10\">"
      << svg_escape(t) << "</text>";
}

std::string svg_panel::render(int top) const {
  return "<g transform=\"translate(0," + std::to_string(top) + ")\">" + head_ + os_.str() + "</g>";
}

std::string svg_document(const std::string& title, const std::vector<const svg_panel*>& panels) {
  const int h = 36 + svg_panel::height * static_cast<int>(panels.size());
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(svg_panel::width)
                    + "\" height=\"" + std::to_string(h) + "\" font-family=\"sans-serif\" font-size=\"12\">"
                    + "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
                    + "<text x=\"360\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">"
                    + svg_escape(title) + "</text>";
  for (std::size_t i = 0; i < panels.size(); ++i)
    out += panels[i]->render(36 + svg_panel::height * static_cast<int>(i));
  return out + "</svg>\n";
}

} // namespace lf::loadtest
