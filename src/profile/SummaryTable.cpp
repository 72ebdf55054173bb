// Printing the per-device summary tables.
#include "profile/SummaryTable.h"

#include <fmt/core.h>

#include <algorithm>

namespace unitile::profile {

std::string format_tables(const std::vector<DeviceSummary>& summaries) {
  std::string out;
  for (const DeviceSummary& s : summaries) {
    if (!out.empty())
      out += "\n";
    out += fmt::format("{} ({}): {} kernel{}, {} launch{}, device time {:.3f} ms\n", s.device.label,
                       s.device.hcd.name, s.rows.size(), s.rows.size() == 1 ? "" : "s", s.launches,
                       s.launches == 1 ? "" : "es", s.total_us / 1e3);
    size_t name_w = 4;
    for (const KernelRow& r : s.rows)
      name_w = std::max(name_w, r.name.size());
    out += fmt::format("  {:<{}} {:>6} {:>11} {:>10} {:>10} {:>10} {:>6} {:>9} {:>8}  {}\n", "name",
                       name_w, "calls", "total_ms", "avg_ms", "min_ms", "max_ms", "time%",
                       "GFLOP/s", "GB/s", "shapes");
    for (const KernelRow& r : s.rows) {
      const std::string gflops = r.gflops() ? fmt::format("{:.2f}", *r.gflops()) : "-";
      out += fmt::format(
          "  {:<{}} {:>6} {:>11.4f} {:>10.4f} {:>10.4f} {:>10.4f} {:>6.1f} {:>9} {:>8.2f}  {}\n",
          r.name, name_w, r.calls, r.total_us / 1e3, r.avg_us() / 1e3, r.min_us / 1e3,
          r.max_us / 1e3, r.percent, gflops, r.gbs(), r.shapes.empty() ? "-" : r.shapes);
    }
  }
  return out;
}

} // namespace unitile::profile
