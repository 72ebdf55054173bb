// What a traced run of a SimKernel tells its observer: every element read and written,
// the arithmetic of every statement executed, and which compute unit runs each
// iteration of the parallel loops. The chip model (ChipModel.h) is the one observer.
//
// Tracing costs one predictable branch per access when it is off, so the reference
// interpreter keeps its speed; it is the same interpreter either way, so the trace is
// exactly the address stream of the Loop IR being checked.
#pragma once

#include "ir/Loop.h"
#include "ir/Type.h"

#include <array>
#include <cstdint>
#include <vector>

namespace unitile::sim {

inline constexpr int kNumDTypes = 10; // the DType enumerators, f16 .. bool

/// The arithmetic of one statement, counted once from its expression when the kernel is
/// prepared and charged every time the statement runs. `vector` holds operations inside
/// a vectorized or thread loop (they run at the HCD's vector rate), `scalar` the rest.
/// Transcendental calls (exp, log, tanh, ...) count kTranscendentalOps each.
struct OpRecord {
  std::array<double, kNumDTypes> scalar{};
  std::array<double, kNumDTypes> vector{};
  double math_calls = 0;
  /// The statement accumulates into the element it reads (`acc[0] = acc[0] + x`) outside
  /// any vector loop: each run waits for the previous one's result.
  bool dependent = false;
  bool empty() const;
};

/// Cost of one transcendental call, in arithmetic operations: a vectorised exp or tanh
/// (range reduction, a polynomial, reconstruction) is roughly this many per element; a
/// scalar call goes through libm, a function call with its own branches, and costs
/// about kScalarTranscendentalOps issue slots.
inline constexpr double kTranscendentalOps = 40;
inline constexpr double kScalarTranscendentalOps = 160;

/// Issue slots a dependent accumulation costs: the latency of a floating-point add
/// (about 3 cycles) on a core that issues about 4 operations per cycle.
inline constexpr double kDependentChainOps = 12;

/// One storage slot of a prepared kernel: the program's buffers first (in order), then
/// each Allocate.
struct SlotInfo {
  std::string name;
  DType dtype = DType::F32;
  MemScope scope = MemScope::Global;
  int64_t elements = 0;
};

/// The observer of a traced run. `unit` is the compute unit running the current
/// iteration; a parallel loop met while `distributing` is false spreads its iterations
/// over `units` units in contiguous chunks (as the cpu device runs grid blocks) and runs
/// them in waves: the first iteration of every unit's chunk, then the second, ... so
/// that shared caches see the units' accesses interleaved as they would be when the
/// units run at once. Iterations of grid and parallel loops are independent, so the
/// order changes no result.
class Tracer {
public:
  virtual ~Tracer() = default;
  /// An element read or written; `in_vector`: by a vectorized or thread loop.
  virtual void access(int slot, int64_t element, bool is_store, bool in_vector) = 0;
  virtual void ops(const OpRecord& r) = 0;
  /// A serial, unrolled or vectorized loop starts `iterations` iterations.
  virtual void loop(int64_t iterations, bool vectorized) = 0;
  /// The current unit starts one iteration of a distributed loop (a grid block).
  virtual void block_start() = 0;

  int units = 1;
  int unit = 0;
  bool distributing = false;
};

} // namespace unitile::sim
