// The auto-scheduler: the schedule every kernel gets without user input, derived from
// the HCD alone (cache sizes, vector lanes and registers, compute units), never from a
// device's name.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"
#include "schedule/Schedule.h"

#include <optional>
#include <string>
#include <vector>

namespace unitile {

/// Sizes of a register-blocked contraction schedule; the tuner searches around them.
struct GemmTiling {
  int64_t mr = 0, nr = 0; // register tile
  int64_t kc = 0;         // reduction block (micro-panels in L1)
  int64_t mc = 0;         // rows of a packed A block (mc x kc, in L2)
  int64_t nc = 0;         // columns of a packed B block (kc x nc, in L3, or L2 when M is one block)
  int64_t mg = 0, ng = 0; // the output block of one parallel task: mc x nc blocks, BLIS order
  bool pack_a = true, pack_b = true;
  // A packed once per parallel block, mg x K (at the block's loop), instead of once per
  // mc x kc block and nc columns: where BLIS's order would pack A again for every nc
  // columns (128 x 50257 x 768 packs A 50 times per block in BLIS order, once this way).
  bool a_whole = false;
  // The reduction loop inside the register tile (k_i) is unrolled ku times by the host
  // compiler (`unroll k_i ku`, a hint; 1: not unrolled): its index update, compare and
  // branch then come once per ku x mr x nr/lanes FMAs instead of once per mr x nr/lanes.
  int64_t ku = 4;
};

struct AutoSchedule {
  Schedule schedule;
  /// Why: one line per decision (working set per memory level, vector width, registers
  /// used, threads), for `unitile compile --explain`.
  std::vector<std::string> reasons;
  /// `schedule` already lowered (the scheduler lowers every step it tries), so a caller
  /// need not lower it again; unset when the last lowering was of another schedule.
  std::optional<LoopProgram> program;
};

/// Choose the schedule of `k` under bindings `b` for `hcd`.
AutoSchedule auto_schedule(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& hcd);

/// The contraction statements of `k` that a register-blocked GEMM schedule applies to:
/// for each, its statement index and the analytic tiling. `gemm_schedule` turns a
/// (possibly tuned) tiling into primitives.
struct GemmSite {
  size_t statement = 0;
  std::string output;             // the tensor it writes
  std::vector<std::string> batch; // spatial loops outside i
  std::string i, j, k;            // rows, columns (unit stride), reduction
  int64_t M = 0, N = 0, K = 0;
  DType dtype = DType::F32;
  std::vector<std::string> operands; // the tensors the contraction reads (staged when packed)
  std::vector<char> roles;           // per operand: 'a' moves with i only, 'b' with j only, 0 neither/both
  GemmTiling tiling;
};
std::vector<GemmSite> gemm_sites(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& hcd);
/// The primitives of a register-blocked GEMM schedule for `site` under tiling `t`:
/// blocking splits, the loop order, the parallel block loop, operand packing (when
/// t.pack_a / t.pack_b), the micro-kernel and the init folded into the update.
std::vector<Primitive> gemm_schedule(const GemmSite& site, const GemmTiling& t);
/// The tiling fits the HCD (register file, L1, L2); when not, `why` says which limit.
bool gemm_tiling_fits(const GemmSite& site, const GemmTiling& t, const hcd::Hcd& hcd, std::string* why);

} // namespace unitile
