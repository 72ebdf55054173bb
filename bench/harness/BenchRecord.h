// One benchmark result (Unitile against one baseline on one shape), its JSON form, the
// printed table and the per-group summary (geometric mean and worst ratio).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace unitile::bench {

enum class RecordStatus {
  Ok,          // both sides checked and timed
  Failed,      // Unitile's result disagreed with the baseline's, or a run failed: not timed
  Unavailable, // the baseline library or operation is missing here
  Skipped,     // not timed on purpose (one run exceeded --max-run-s)
};
const char* status_name(RecordStatus s);

struct BenchRecord {
  std::string op;       // "gemm", "softmax", ...
  std::string shape;    // named sizes: "M=2048,N=768,K=768"
  std::string dtype;    // "f32"
  int threads = 0;      // Unitile's and the baseline's thread count
  std::optional<double> unitile_ms; // median
  std::string baseline; // "openblas", "onednn", "triad", "target"
  std::optional<double> baseline_ms;
  RecordStatus status = RecordStatus::Ok;
  std::string note;     // why failed/unavailable/skipped, or what the baseline ran
  std::optional<double> unitile_gbs, baseline_gbs; // bandwidth ops: bytes moved / time
  std::optional<double> max_abs_err;
  std::string tolerance; // "rtol=1e-4 atol=6.4e-3"
  int runs = 0;          // timed runs behind each median
  std::string schedule;  // where Unitile's schedule came from: "auto", "tuned", "kernel", ...
  bool huge_pages = false; // both sides' buffers of 2 MiB or more on huge pages (UNITILE_HUGE_PAGES=1)

  /// baseline_ms / unitile_ms when both exist (above 1: Unitile is faster).
  std::optional<double> ratio() const;
};

nlohmann::json to_json(const BenchRecord& r);

/// The table of all records, then one summary line per (op, dtype, baseline, threads)
/// group with two or more timed records: geometric mean and worst ratio with its shape.
void print_report(std::ostream& os, const std::vector<BenchRecord>& records);

} // namespace unitile::bench
