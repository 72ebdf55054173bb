// The measurement loop of `unitile bench`: one case is a Unitile kernel on one shape
// against one or more baselines, all fed the same input tensors in one process.
//
// Order per case: compile; run Unitile once (its output); prepare each baseline, run it
// once (warm-up and output) and compare Unitile's output with it under the case's
// tolerance; time the baseline (median of --repeat runs); then, only if Unitile agreed
// with at least one baseline, time Unitile (Session::run: one more warm-up, then the
// median of --repeat runs between device timer events). A disagreement is a `failed`
// record, never a timed one. A pause between the two sides lets the other runtime's
// spinning threads go idle first.
#pragma once

#include "harness/BaselineLibrary.h"
#include "harness/BenchRecord.h"
#include "profile/Profiler.h"
#include "runtime/OutputCheck.h"
#include "runtime/Session.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace unitile::bench {

struct BenchOptions {
  std::vector<std::string> ops;    // suites to run; empty: every default suite
  std::vector<std::string> shapes; // "2048x768x768" texts; empty: each suite's defaults
  std::string dtype = "f32";
  int threads = 1;
  int repeat = 5;
  bool quick = false;
  double max_run_s = 30; // a Unitile run slower than this is reported, not timed
  uint64_t seed = 0;
  // Whether the cpu device puts large buffers on huge pages (UNITILE_HUGE_PAGES=1); the
  // baselines read the same buffers. Recorded with each result.
  bool huge_pages = false;
  // When set, each case's Unitile kernel runs `repeat` more times under this profiler
  // after it was timed (so the timed numbers carry no profiling overhead).
  profile::Profiler* profiler = nullptr;
  // Consulted before the auto-scheduler (the tuning database, as every other compile
  // does); empty: the auto-scheduler's schedules only (`--no-tuned`).
  ScheduleLookup schedule_lookup;
};

/// One baseline of a case.
struct BaselineSpec {
  std::string record_name; // "openblas", "onednn", "loops", "triad"
  std::string library;     // library run for the reference output (and timed)
  std::string op;          // operation name in that library
  std::vector<double> params;
  // "triad": the library run is the correctness reference only; baseline_ms is the time
  // the case's bytes take at the triad bandwidth measured just before (the plain loop,
  // same array size, same threads), so ratio = fraction of triad bandwidth.
  bool at_triad_bandwidth = false;
};

struct BenchCase {
  std::string op, shape, dtype;
  const Kernel* kernel = nullptr;
  ShapeBindings bindings;
  ParamValues params;
  std::vector<std::string> inputs; // kernel input names, in the baselines' input order
  std::string output;              // the kernel output compared and fed to the baseline
  std::vector<int64_t> dims;       // baseline sizes
  std::optional<double> bytes;     // bandwidth ops: bytes read + written per run
  Tolerance tolerance;
  std::vector<BaselineSpec> baselines;
};

class BenchRunner {
public:
  BenchRunner(BenchOptions options, std::ostream& progress);

  const BenchOptions& options() const { return options_; }
  Session& session() { return *session_; }

  /// The library, opened on first use with its threads set; nullptr with `why` set when
  /// it is unavailable (reported once on the progress stream).
  const BaselineLibrary* library(const std::string& name, std::string* why);

  /// Measure `c` and append one record per baseline.
  void run_case(const BenchCase& c);
  /// Record a case that was not run (reason in `note`).
  void add_record(BenchRecord r);

  /// Bandwidth (GB/s, 12 bytes per element) of the plain-loop triad over `elements`
  /// f32 per array, measured now: the median of --repeat runs after a warm-up. The row
  /// ops measure it right before themselves, so both see the same machine load.
  std::optional<double> measure_triad_gbs(int64_t elements, std::string* why);

  const std::vector<BenchRecord>& records() const { return records_; }

private:
  BenchOptions options_;
  std::ostream& progress_;
  std::unique_ptr<Session> session_;
  std::map<std::string, std::optional<BaselineLibrary>> libraries_;
  std::map<std::string, std::string> unavailable_;
  std::vector<BenchRecord> records_;
};

/// Median of the samples (mean of the middle two for an even count).
double median(std::vector<double> samples);

/// Compare `got` with `ref` elementwise: |got - ref| <= atol + rtol*|ref|; NaN in both
/// agrees. Returns the max abs error and, on failure, where.
struct Agreement {
  bool ok = true;
  double max_abs_err = 0;
  std::string first_bad; // "[i, j]: got X, expected Y (N of M outside)"
};
Agreement compare(const Tensor& got, const Tensor& ref, const Tolerance& tol);

std::string tolerance_text(const Tolerance& tol);

} // namespace unitile::bench
