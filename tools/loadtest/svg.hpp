#pragma once
/// Dependency-free SVG charts for the load tester's pictures: panels with "nice" axes (ticks at
/// 1, 2, 2.5 or 5 x 10^k), polylines, histogram bars and labels, stacked into one document.

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace lf::loadtest {

/// The axis for data in [0, max]: {top, step} with top = k * step >= max, k <= 5 (k >= 1), and
/// step a 1, 2, 2.5 or 5 times a power of ten (a whole number when `whole`, for counts). max <= 0
/// or not finite gives {1, 0.2} ({1, 1} when `whole`).
std::pair<double, double> nice_axis(double max, bool whole = false);

/// One chart of the document: a title, axes from 0 to nice_axis(xmax / ymax), and what is drawn.
class svg_panel {
public:
  /// Width and height of one panel in pixels.
  static constexpr int width = 720, height = 420;

  /// `whole_y`: the y axis counts things (whole-number ticks).
  svg_panel(std::string title, std::string xlabel, std::string ylabel, double xmax, double ymax,
            bool whole_y = false);

  /// A polyline through `pts` (data coordinates) with dots, and its legend entry.
  void line(const std::vector<std::pair<double, double>>& pts, const char* color, const std::string& label);
  /// A bar from x0 to x1, `h` high.
  void bar(double x0, double x1, double h, const char* color);
  /// A legend entry without a line (for bars).
  void legend(const char* color, const std::string& label);
  /// A small label centred above the data point (x, y).
  void text(double x, double y, const std::string& t);

  /// The panel's SVG elements, drawn with their top edge at `top` pixels.
  std::string render(int top) const;

private:
  double px(double x) const;
  double py(double y) const;

  double xtop_, xstep_, ytop_, ystep_;
  int legend_slots_ = 0;
  std::ostringstream os_;
  std::string head_;
};

/// One SVG document: `title` above the panels, stacked top to bottom.
std::string svg_document(const std::string& title, const std::vector<const svg_panel*>& panels);

/// `s` with <, > and & escaped for SVG text.
std::string svg_escape(const std::string& s);

} // namespace lf::loadtest
