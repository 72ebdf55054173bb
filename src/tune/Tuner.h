// The tuner: measures schedules of one kernel on a device and records every measurement
// in the tuning database. It starts from the auto-scheduler's schedule and, for each
// register-blocked contraction, runs a small beam search over the GEMM tiling
// (mr, nr, kc, mc, nc, the parallel block mg x ng, packing), skipping tilings the HCD
// says cannot fit and checking every candidate against the sim device on a small shape
// before timing it.
#pragma once

#include "runtime/Session.h"
#include "tune/TuningDatabase.h"

#include <functional>
#include <optional>

namespace unitile {

struct TuneOptions {
  int trials = 0;            // stop after this many candidates (0: no limit)
  double budget_s = 0;       // stop after this many seconds (0: no limit)
  int repeat = 5;            // timed runs per measurement (the median is recorded)
  size_t beam = 3;           // tilings kept per round
  int64_t check_extent = 37; // each shape symbol is at most this in the correctness check
  uint64_t seed = 0;         // of the random inputs
  // Re-timing: after the search, the `confirm_top` fastest schedules and the
  // auto-scheduler's are timed again in `confirm_rounds` interleaved rounds (each a row
  // of the database), so the recorded best is the lowest median over several
  // measurements, not one lucky run. With a budget, the search stops at 70% of it and
  // the rounds run while time is left (a round once begun is finished; the first always
  // runs). 0 rounds: no re-timing.
  int confirm_rounds = 3;
  size_t confirm_top = 3;
};

struct TuneProgress {
  int trial = 0, trials = 0; // trials is 0 without a trial limit
  double elapsed_s = 0;
  std::optional<double> best_ms;
  const TuningRecord* last = nullptr;
  int retimed = 0; // re-timing measurements so far (after the search)
};

struct TuneResult {
  int trials = 0;
  int retimed = 0; // re-timing measurements of the leaders and the auto schedule
  int gemm_sites = 0;
  int matrix_sites = 0; // contractions on tile registers (AMX) whose task and micro-tile were searched
  int tiled_nests = 0;  // `tile` primitives of the auto schedule whose factors were searched
  std::optional<TuningRecord> best;
};

/// Tune `k` under bindings `b` on `device`, checking against `sim` (the plain default
/// lowering there is the reference). Every candidate and every re-timing becomes a row
/// of `db`; `best` is then db.best() for the key (the lowest median over each schedule's
/// measurements).
TuneResult tune_kernel(Session& device, Session& sim, TuningDatabase& db, const Kernel& k,
                       const ShapeBindings& b, const ParamValues& params,
                       const TuneOptions& options,
                       const std::function<void(const TuneProgress&)>& progress);

} // namespace unitile
