// A schedule: the list of primitives that turn a kernel's default loop nests into fast
// ones, with its two serialised forms (the text `schedule { ... }` block a .ut file may
// carry after a kernel, and JSON for the tuning database and --explain).
//
// A schedule is data, not code, so that the auto-scheduler, the tuner and a user's
// hand-written block all produce the same thing, the tuner can store and replay it, and
// one canonical text form identifies it (two schedules are the same exactly when their
// texts are).
#pragma once

#include "ir/Diagnostic.h"
#include "ir/Loop.h"

#include <cstdint>
#include <string>
#include <vector>

namespace unitile {

enum class PrimitiveKind : uint8_t {
  Split,       // var factor -> outer, inner
  Tile,        // vars[n] by factors[n]: split each, then order outers before inners
  Reorder,     // vars in the new nesting order
  Fuse,        // vars[0], vars[1] (perfectly nested) -> outer (the fused name)
  Parallel,    // vars[0] runs its iterations on the device's compute units
  Vectorize,   // vars[0] runs as SIMD lanes
  Unroll,      // vars[0] is unrolled completely, or by factors[0] when given (a hint)
  Bind,        // vars[0] becomes the loop kind `bind` (grid.x, thread.x, ...)
  Stage,       // buffer is copied into `scope` at loop `at`, packed in loop order
  CacheWrite,  // buffer is accumulated in `scope` at loop `at`, written back after it
  ComputeAt,   // the statement writing `buffer` runs inside the consumer's loop `at`
  Inline,      // the local `buffer` is substituted into its readers (Kernel IR)
  MicroKernel, // register-blocked contraction at loop `at` (see MicroKernel.cpp)
  FoldInit,    // buffer's init launch is dropped; the update reads the identity on first visit
  Epilogue,    // the elementwise consumer of local `buffer` runs on its reduction's final tiles
  FlashAttention, // the attention chain writing `buffer` fused (online softmax); factors: {}, {rows, keys} or {rows, keys, threads_y, threads_x}
  Widen,       // the reduction into bf16/f16 `buffer` accumulates in an f32 local, rounded after (Kernel IR)
  Pretranspose, // `buffer`, read by the statement writing `on` across its last index, copied transposed (Kernel IR)
  Prefetch,    // the last loop nest in loop `at` hints the caches with `buffer`'s reads of the next `at` iteration
  MatrixUnit,  // the contraction writing `buffer` on the HCD's matrix unit; factors: {} or {bm, bn, bk, warps_m, warps_n}; vars: {"tf32"} to allow tf32
  KeepTerms,   // in loop `at`, the reduction into `buffer` keeps its terms for the map after it
  Stream,      // the output `buffer` is written with streaming (non-temporal) stores where the dialect has them
  Hoist,       // in loop `at`, the loops storing into `buffer` compute their invariant divisions and calls once, before
  Threads,     // the launch whose outermost loop is vars[0] runs its parallel loops on blocks of factors[0] threads
  BlockRows,   // each row of the grid loop vars[0] on a block of factors[0] threads: strided loops, tree reductions
  Defer,       // the slice loop `at` in chunks of factors[0] slices: each slice's last nest (writing buffer) runs inside the next slice's previous nest
  ThreadGemm,  // the contraction writing `buffer` as a thread-tiled GEMM; factors: {} or {bm, bn, bk, tm, tn}
};

const char* primitive_name(PrimitiveKind k); // "split", "cache_write", ...

struct Primitive {
  PrimitiveKind kind = PrimitiveKind::Split;
  std::vector<std::string> vars;
  std::vector<int64_t> factors;
  std::string outer, inner; // Split names (default VAR_o, VAR_i); Fuse name in `outer`
  std::string buffer;       // Stage, CacheWrite, ComputeAt, Inline, FoldInit, Epilogue, FlashAttention, Widen
  std::string at;           // Stage, CacheWrite, ComputeAt, MicroKernel: a loop variable
  MemScope scope = MemScope::Local;
  ForKind bind = ForKind::GridX;
  std::string on;           // the statement it applies to, by the tensor it writes; empty: every one
  SourceLoc loc;            // where it was written, for diagnostics (not serialised)
};

struct Schedule {
  std::vector<Primitive> primitives;
  bool empty() const { return primitives.empty(); }
};

/// The canonical text form: one primitive per line, the body of a `schedule { }` block.
std::string to_text(const Schedule& s);
/// Parse the body of a `schedule { ... }` block. `file` and `start` (where the body
/// begins in that file) place diagnostics; errors are UserError with line:col.
Schedule parse_schedule(const std::string& body, const std::string& file, SourceLoc start);

/// JSON text: {"primitives": [{"op": "split", "vars": ["i"], "factors": [64], ...}]}.
std::string to_json(const Schedule& s);
/// Inverse of to_json; a malformed document is a UserError naming `what`.
Schedule schedule_from_json(const std::string& json, const std::string& what);

} // namespace unitile
