// JSON, table and summary of benchmark records.
#include "harness/BenchRecord.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <tuple>

namespace unitile::bench {

const char* status_name(RecordStatus s) {
  switch (s) {
  case RecordStatus::Ok: return "ok";
  case RecordStatus::Failed: return "failed";
  case RecordStatus::Unavailable: return "unavailable";
  case RecordStatus::Skipped: return "skipped";
  }
  return "?";
}

std::optional<double> BenchRecord::ratio() const {
  if (status != RecordStatus::Ok || !unitile_ms || !baseline_ms || *unitile_ms <= 0) return std::nullopt;
  return *baseline_ms / *unitile_ms;
}

namespace {

nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string cell(const std::optional<double>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : "-";
}

} // namespace

nlohmann::json to_json(const BenchRecord& r) {
  const bool timed = r.status == RecordStatus::Ok;
  return {
      {"op", r.op},
      {"shape", r.shape},
      {"dtype", r.dtype},
      {"threads", r.threads},
      {"unitile_ms", timed ? optional_number(r.unitile_ms) : nullptr},
      {"baseline", r.baseline},
      {"baseline_ms", optional_number(r.baseline_ms)},
      {"ratio", optional_number(r.ratio())},
      {"status", status_name(r.status)},
      {"note", r.note},
      {"unitile_gbs", timed ? optional_number(r.unitile_gbs) : nullptr},
      {"baseline_gbs", optional_number(r.baseline_gbs)},
      {"max_abs_err", optional_number(r.max_abs_err)},
      {"tolerance", r.tolerance},
      {"runs", r.runs},
      {"schedule", r.schedule},
      {"huge_pages", r.huge_pages},
  };
}

void print_report(std::ostream& os, const std::vector<BenchRecord>& records) {
  os << fmt::format("{:<10} {:<24} {:<5} {:>3} {:>11} {:<9} {:>11} {:>7} {:>15}  {}\n", "op",
                    "shape", "dtype", "thr", "unitile_ms", "baseline", "baseline_ms", "ratio",
                    "GB/s (u/b)", "status");
  for (const BenchRecord& r : records) {
    const bool timed = r.status == RecordStatus::Ok;
    const std::string gbs = r.unitile_gbs || r.baseline_gbs
                                ? fmt::format("{}/{}", cell(timed ? r.unitile_gbs : std::nullopt, "{:.1f}"),
                                              cell(r.baseline_gbs, "{:.1f}"))
                                : "";
    std::string status = status_name(r.status);
    if (!r.note.empty() && r.status != RecordStatus::Ok) status += ": " + r.note;
    if (r.status == RecordStatus::Ok && r.schedule == "tuned") status += " (tuned schedule)";
    os << fmt::format("{:<10} {:<24} {:<5} {:>3} {:>11} {:<9} {:>11} {:>7} {:>15}  {}\n", r.op,
                      r.shape, r.dtype, r.threads, cell(timed ? r.unitile_ms : std::nullopt, "{:.3f}"),
                      r.baseline, cell(r.baseline_ms, "{:.3f}"), cell(r.ratio(), "{:.3f}"), gbs, status);
  }

  using Group = std::tuple<std::string, std::string, std::string, int>;
  std::map<Group, std::vector<const BenchRecord*>> groups;
  for (const BenchRecord& r : records)
    groups[{r.op, r.dtype, r.baseline, r.threads}].push_back(&r);
  for (const auto& [group, members] : groups) {
    double log_sum = 0;
    int timed = 0;
    const BenchRecord* worst = nullptr;
    for (const BenchRecord* r : members) {
      if (!r->ratio()) continue;
      log_sum += std::log(*r->ratio());
      ++timed;
      if (!worst || *r->ratio() < *worst->ratio()) worst = r;
    }
    if (timed < 2) continue;
    const auto& [op, dtype, baseline, threads] = group;
    os << fmt::format("summary {} {} vs {} threads={}: geomean ratio {:.3f} over {} shapes, worst "
                      "{:.3f} ({}){}\n",
                      op, dtype, baseline, threads, std::exp(log_sum / timed), timed,
                      *worst->ratio(), worst->shape,
                      timed < static_cast<int>(members.size())
                          ? fmt::format("; {} not timed", members.size() - timed)
                          : "");
  }
}

} // namespace unitile::bench
