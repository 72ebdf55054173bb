// The sim device as a chip model: run a Loop IR program through the traced interpreter
// and a simulated cache hierarchy built from any HCD, and estimate each launch's time.
//
// It exists so that a kernel can be sized and validated for a chip nobody here has:
// the traffic at every memory level comes from the program's real address stream, the
// time from the HCD's bandwidths, latencies and peak rates. The time model is a
// roofline over compute units (docs/ARCHITECTURE.md, "sim chip model"):
//   unit u's compute   = sum over dtypes of vector ops / (peak/units)
//                                          + scalar ops / (peak/units/lanes)
//                        where ops include one issue slot per element load and store,
//                        per loop iteration, kBlockStartOps per block and
//                        kDependentChainOps per scalar accumulation (at f32 rates)
//   a level instance's = max(bytes / bandwidth,
//                            exposed reads * latency / (kMissesInFlight * its busy units))
//                      (exposed: lines read from it that no stream prefetcher fetched
//                      ahead, CacheModel.h; no latency term for the innermost level: its
//                      hits are pipelined)
//   launch time        = max of all of these over units and instances.
#pragma once

#include "backends/sim/CacheModel.h"
#include "backends/sim/SimKernel.h"
#include "hcd/Hcd.h"
#include "ir/Loop.h"

#include <array>
#include <string>
#include <vector>

namespace unitile::sim {

/// Memory requests one unit keeps in flight (a core's line-fill buffers, roughly): how
/// far latency is hidden when bandwidth is not the limit.
inline constexpr double kMissesInFlight = 12;

/// Issue slots one grid block (an iteration of a distributed loop) costs to start: the
/// call into the block's code and the setup of its indices.
inline constexpr double kBlockStartOps = 64;

struct ChipModelOptions {
  /// Model a repeated launch: run the program once to warm the caches, then report
  /// the second run (what `unitile run --repeat` measures). Default: cold caches.
  bool warm = false;
};

struct LevelReport {
  hcd::MemoryLevel desc;
  bool simulated = false; // false: the backing memory
  size_t instances = 0;
  int64_t requests = 0, hits = 0;
  int64_t exposed = 0; // reads whose latency no stream prefetcher hid (the latency term's count)
  int64_t read_bytes = 0, write_bytes = 0; // summed over instances
  double time_s = 0;                       // the slowest instance's time
  bool latency_bound = false;              // that time comes from latency, not bandwidth
};

struct LaunchReport {
  std::string func;
  int64_t blocks = 1;     // grid blocks (launch_dims)
  int busy_units = 0;     // units that ran anything
  std::array<double, kNumDTypes> scalar_ops{}, vector_ops{};
  double math_calls = 0;
  double overhead_ops = 0; // memory instructions, loop control and block starts
  int64_t loads = 0, stores = 0, load_bytes = 0, store_bytes = 0;
  int64_t register_accesses = 0; // to register-scope allocations (not memory traffic)
  std::vector<LevelReport> levels;
  double compute_time_s = 0; // the busiest unit's
  bool compute_known = true; // false when the HCD gives no peak rate
  double time_s = 0;
  std::string bound; // "compute" or the binding level's name
};

struct KernelReport {
  std::string kernel;
  std::string device; // the HCD's name
  int units = 1;
  bool warm = false;
  std::vector<LaunchReport> launches; // one per func, in order
  double time_s = 0;                  // the launches' sum
};

/// Model every func of `p` in order on the chip `hcd` describes. `buffers` and `params`
/// are as for SimKernel::run (the run writes into the buffers, so pass copies you do
/// not need). Throws what SimKernel throws, and UserError for an HCD the cache model
/// cannot use.
KernelReport model_program(const LoopProgram& p, const hcd::Hcd& hcd, const std::vector<BufferArg>& buffers,
                           const std::vector<ParamArg>& params, const ChipModelOptions& options = {});

} // namespace unitile::sim
