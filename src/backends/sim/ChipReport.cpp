// The chip-model report as a table and as JSON.
#include "backends/sim/ChipReport.h"

#include <fmt/core.h>

namespace unitile::sim {
namespace {

// 1234567 -> "1.23 M": counts and bytes at a glance.
std::string si(double v) {
  const char* units[] = {"", " k", " M", " G", " T", " P"};
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}{}", v, units[i]);
}

std::string seconds(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

std::string size_text(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.3g}GiB", static_cast<double>(b) / double(int64_t{1} << 30));
  if (b >= (int64_t{1} << 20) && b % (int64_t{1} << 20) == 0) return fmt::format("{}MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{}KiB", b >> 10);
  return fmt::format("{}B", b);
}

double total_ops(const LaunchReport& l) {
  double t = 0;
  for (size_t i = 0; i < l.scalar_ops.size(); ++i) t += l.scalar_ops[i] + l.vector_ops[i];
  return t;
}

} // namespace

std::string format_report(const KernelReport& r) {
  std::string out = fmt::format("report: kernel {} on {} ({} units, {} caches)\n", r.kernel, r.device, r.units,
                                r.warm ? "warm" : "cold");
  for (const LaunchReport& l : r.launches) {
    out += fmt::format("  launch {}: {} blocks on {} units\n", l.func, l.blocks, l.busy_units);
    std::string ops;
    for (size_t i = 0; i < l.scalar_ops.size(); ++i) {
      double all = l.scalar_ops[i] + l.vector_ops[i];
      if (all == 0) continue;
      ops += fmt::format("{}{} {} ({:.0f}% vector)", ops.empty() ? "" : ", ", dtype_name(static_cast<DType>(i)),
                         si(all), 100 * l.vector_ops[i] / all);
    }
    out += fmt::format("    ops: {}{}; other instructions {}\n", ops.empty() ? "none" : ops,
                       l.math_calls > 0 ? fmt::format(" (math calls {})", si(l.math_calls)) : "",
                       si(l.overhead_ops));
    out += fmt::format("    loads {} ({}B), stores {} ({}B), register accesses {}\n", si(double(l.loads)),
                       si(double(l.load_bytes)), si(double(l.stores)), si(double(l.store_bytes)),
                       si(double(l.register_accesses)));
    out += fmt::format("    {:<10} {:<8} {:>8} {:>5} {:>5} {:>10} {:>7} {:>10} {:>10} {:>10}\n", "level", "scope",
                       "size", "line", "inst", "requests", "hit%", "read", "written", "time");
    for (const LevelReport& lv : l.levels) {
      std::string hit = lv.simulated && lv.requests > 0
                            ? fmt::format("{:.1f}", 100.0 * double(lv.hits) / double(lv.requests))
                            : "-";
      out += fmt::format("    {:<10} {:<8} {:>8} {:>5} {:>5} {:>10} {:>7} {:>10} {:>10} {:>10}{}\n", lv.desc.name,
                         lv.desc.scope, size_text(lv.desc.size_bytes), lv.desc.line_bytes, lv.instances,
                         si(double(lv.requests)), hit, si(double(lv.read_bytes)) + "B",
                         si(double(lv.write_bytes)) + "B", seconds(lv.time_s), lv.latency_bound ? " (latency)" : "");
    }
    out += fmt::format("    compute {}{}; estimate {} (bound: {})\n", seconds(l.compute_time_s),
                       l.compute_known ? "" : " (some dtypes have no peak rate in the HCD)", seconds(l.time_s),
                       l.bound);
  }
  out += fmt::format("  estimate: {} for {} launch{} ({} ops)\n", seconds(r.time_s), r.launches.size(),
                     r.launches.size() == 1 ? "" : "es", [&] {
                       double t = 0;
                       for (const LaunchReport& l : r.launches) t += total_ops(l);
                       return si(t);
                     }());
  return out;
}

nlohmann::json report_json(const KernelReport& r) {
  nlohmann::json launches = nlohmann::json::array();
  for (const LaunchReport& l : r.launches) {
    nlohmann::json ops = nlohmann::json::object();
    for (size_t i = 0; i < l.scalar_ops.size(); ++i) {
      if (l.scalar_ops[i] == 0 && l.vector_ops[i] == 0) continue;
      ops[dtype_name(static_cast<DType>(i))] = {{"scalar", l.scalar_ops[i]}, {"vector", l.vector_ops[i]}};
    }
    nlohmann::json levels = nlohmann::json::array();
    for (const LevelReport& lv : l.levels) {
      levels.push_back({{"name", lv.desc.name},
                        {"scope", lv.desc.scope},
                        {"size_bytes", lv.desc.size_bytes},
                        {"line_bytes", lv.desc.line_bytes},
                        {"shared_by", lv.desc.shared_by},
                        {"instances", lv.instances},
                        {"simulated", lv.simulated},
                        {"requests", lv.requests},
                        {"hits", lv.hits},
                        {"exposed_reads", lv.exposed},
                        {"read_bytes", lv.read_bytes},
                        {"write_bytes", lv.write_bytes},
                        {"bytes", lv.read_bytes + lv.write_bytes},
                        {"time_s", lv.time_s},
                        {"latency_bound", lv.latency_bound}});
    }
    launches.push_back({{"func", l.func},
                        {"blocks", l.blocks},
                        {"busy_units", l.busy_units},
                        {"ops", ops},
                        {"math_calls", l.math_calls},
                        {"other_instructions", l.overhead_ops},
                        {"loads", l.loads},
                        {"stores", l.stores},
                        {"load_bytes", l.load_bytes},
                        {"store_bytes", l.store_bytes},
                        {"register_accesses", l.register_accesses},
                        {"levels", levels},
                        {"compute_time_s", l.compute_time_s},
                        {"compute_known", l.compute_known},
                        {"time_s", l.time_s},
                        {"bound", l.bound}});
  }
  return {{"kernel", r.kernel}, {"device", r.device},   {"units", r.units},
          {"warm", r.warm},     {"time_s", r.time_s},   {"launches", launches}};
}

} // namespace unitile::sim
