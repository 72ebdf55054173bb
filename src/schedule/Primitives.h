// The schedule primitives, each a pass over one func's Loop IR in a file of its name.
//
// They rewrite loop nests and never change what a kernel computes: each checks that it
// is legal where it is applied (the loops exist, are perfectly nested, a parallel loop's
// iterations write disjoint elements, a staged buffer is only read, ...) and throws a
// UserError naming the primitive and the reason when it is not. A primitive that names
// a loop applies to every loop of that name in the func (the init and update nests of a
// reduction share their spatial names, and both must be split the same way).
#pragma once

#include "hcd/Hcd.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"

#include <functional>

#include <string>
#include <vector>

namespace unitile {

/// split: `for v in 0..E` -> `for outer in 0..ceil(E/f) { for inner in 0..f }`, v =
/// outer*f + inner. A factor that does not divide E leaves a tail: the inner extent is
/// `min(f, E - outer*f)` (partition_tails later gives the full tiles constant extents).
Stmt split_loop(const Stmt& body, const std::string& v, int64_t factor, const std::string& outer,
                const std::string& inner);

/// reorder: permute the named loops within each perfect nest that holds all of them;
/// loops not named keep their places. A loop whose bounds depend on a loop that would
/// end up inside it cannot move there.
Stmt reorder_loops(const Stmt& body, const std::vector<std::string>& order);

/// fuse: perfectly nested `a { b }` with constant extents -> one loop `fused` of
/// extent Ea*Eb (a = fused // Eb, b = fused % Eb).
Stmt fuse_loops(const Stmt& body, const std::string& a, const std::string& b, const std::string& fused);

/// parallel: loop v, outermost in its func (inside other grid loops only), runs its
/// iterations on the device's compute units: it becomes the next free grid axis. Every
/// store to memory outside the loop must depend on v, so iterations never race.
Stmt parallelize_loop(const Stmt& body, const std::string& v);

/// Why loop v's iterations cannot run in parallel (a store that does not move with v),
/// or empty when they can.
std::string parallel_conflict(const Stmt& body, const std::string& v);

/// vectorize: loop v, innermost, runs as SIMD lanes (the printer picks the lanes of the
/// HCD and falls back to scalar code it cannot vectorize).
Stmt vectorize_loop(const Stmt& body, const std::string& v);

/// vectorize on a reduction loop into a one-slot register accumulator: the accumulator
/// gets `lanes` slots and the loop becomes blocks of a vector loop over them, then a
/// tail, then the slots are combined (VectorizeReduction.cpp). Counts the rewrites in
/// `applied`; loops that are not such reductions are left alone.
Stmt vectorize_reduction(const Stmt& body, const std::string& v,
                         const std::function<int(DType)>& lanes_for, int* applied);
/// Whether `loop` is a reduction vectorize_reduction rewrites: serial, from 0, a constant
/// extent of at least two vectors, body `acc[0] = acc[0] OP e` with OP +, *, max or min
/// and e reading unit-stride in the loop's variable.
bool is_vectorizable_reduction(const Stmt& loop, const std::string& acc, int lanes);

/// prefetch: in loop `at` (constant extent), the innermost loop of the last loop nest
/// of its body that reads `buffer` (the longest such nest, if a tail loop follows) also
/// hints the caches with each of its reads of `buffer` that move with `at`, at the next
/// iteration of `at` (the last iteration hints its own elements), into cache level
/// `cache_level` (1 or 2). Results never change: a Prefetch statement is only a hint
/// (Prefetch.cpp).
Stmt prefetch_next(const Stmt& body, const std::string& buffer, const std::string& at, int cache_level = 1);

/// keep_terms: in loop `at`, the reduction into `buffer` (a register accumulator over a
/// loop j: `acc[0] = OP(acc[0], term)`, then `buffer[..] = acc[0]`) is followed by a loop
/// over the same range whose stores compute the same term: the reduction also stores
/// each term into a new row buffer `<buffer>_terms` (local scope, one per iteration of
/// `at`) and the map reads it instead of recomputing; the map's division by the
/// reduction's result becomes a multiply by its reciprocal, computed once (KeepTerms.cpp).
Stmt keep_terms(const LoopProgram& p, const Stmt& body, const std::string& buffer, const std::string& at);

/// hoist: in loop `at`, each innermost loop storing into `buffer` computes the divisions
/// and math calls of the stored values that use no variable bound in it and read no
/// buffer it stores into once, in a let before it (HoistInvariants.cpp).
/// defer: loop `at` (0..N, N a multiple of `rows`, at least two chunks) runs in chunks
/// of `rows` slices; the last loop nest of each slice, which writes `out`, runs inside
/// the previous loop nest of the same trip count of the next slice, and once after the
/// chunk for its last slice (Defer.cpp).
Stmt defer_last_pass(const LoopProgram& p, const Stmt& body, const std::string& out, const std::string& at,
                     int64_t rows);
Stmt hoist_invariants(const LoopProgram& p, const Stmt& body, const std::string& buffer, const std::string& at);

/// stream: the output `buffer` is marked for streaming stores: the printer writes its
/// whole-vector stores with non-temporal instructions where the dialect has them (the
/// C dialect on x86), which skip the read of each line before it is written and keep it
/// out of the caches; a fence ends each launch that made them. Results never change.
LoopProgram stream_output(const LoopProgram& p, const std::string& buffer);

/// unroll: loop v, of constant extent at most 64, is unrolled completely. With a factor
/// (`unroll v F`, F >= 2) the serial loop v instead keeps its extent and carries the hint
/// `unroll_by = F`: the dialect asks the host compiler to unroll it F times (GCC's
/// `#pragma GCC unroll F`), which keeps each iteration's instruction order. For a GEMM's
/// reduction loop inside the register tile this is not the same as splitting k and
/// unrolling the inner part in the source: GCC then schedules the copies' loads together
/// and spills accumulators (1024^3 on one Zen 3 core: 0.73 of OpenBLAS against 1.04).
Stmt unroll_loop(const Stmt& body, const std::string& v, int64_t factor = 0);

/// bind: loop v becomes grid or thread axis `kind` (for GPU-style launches).
Stmt bind_loop(const Stmt& body, const std::string& v, ForKind kind);

/// stage (cache_read): inside loop `at`, copy the part of input `buffer` the body reads
/// into a new buffer in `scope`, laid out in the order of the loops that index it
/// (packing: the innermost loop's reads become unit-stride), and read the copy instead.
/// Out-of-range elements of partial tiles are zero in the copy. Returns the new body;
/// the staged buffer is named `buffer`_`scope`.
Stmt stage_buffer(const LoopProgram& p, const Stmt& body, const std::string& buffer, MemScope scope,
                  const std::string& at);

/// cache_write: inside loop `at`, accumulate into a buffer in `scope` indexed by the
/// loops inside `at` that index `buffer`, loaded before and written back after.
Stmt cache_write(const LoopProgram& p, const Stmt& body, const std::string& buffer, MemScope scope,
                 const std::string& at);

/// microkernel: the register-blocked contraction at loop `at`, whose body is a nest
/// [reduction loops][mr loop][nr loop] around one accumulating store: the output tile
/// stays in vector registers (cache_write register at `at`), the mr loop is unrolled and
/// the nr loop vectorized. The tile must fit the HCD's vector registers.
Stmt micro_kernel(const LoopProgram& p, const Stmt& body, const std::string& at, const hcd::Hcd& hcd);

/// compute_at: the func writing `buffer` moves into the next func that reads it, into
/// that func's loop `at`: its outermost loop or one nested only in loops, matched level
/// by level with the producer's loops (same ranges). Legal when the consumer reads
/// `buffer` only at the element the producer writes in the same iteration of the shared
/// loops.
LoopProgram compute_at(const LoopProgram& p, const std::string& buffer, const std::string& at);

/// fold_init: the init launch of reduction output `buffer` is dropped and its update
/// reads the identity instead of `buffer` at the first visit of each element (a
/// register tile starts as the identity on the first reduction block).
LoopProgram fold_init(const LoopProgram& p, const std::string& buffer);

/// epilogue: the launch that maps the local `buffer` elementwise into an output of the
/// same shape (`Z[i, j] = g(Y[i, j], ..)`) is fused into the one launch that reduces into
/// `buffer`: the output takes the local's place as accumulator and g runs on each
/// element when its reduction is final (after the last reduction block's tile store).
/// The local is dropped. Its init must be folded first (fold_init).
LoopProgram epilogue(const LoopProgram& p, const std::string& buffer);

/// inline (Kernel IR): substitute the local `buffer`, written once by an assignment,
/// into every statement that reads it, and drop it.
Kernel inline_local(const Kernel& k, const std::string& buffer);

/// widen (Kernel IR): the reduction writing the bf16 or f16 tensor `buffer` accumulates
/// into a new f32 local (named `<buffer>_f32`, returned in `local_name`) with its value
/// computed in f32, and a statement right after it rounds the local into `buffer`.
Kernel widen_accumulator(const Kernel& k, const std::string& buffer, std::string* local_name = nullptr);
/// pretranspose (Kernel IR): the statement writing `on` reads `operand` at plain index
/// variables with the output's last index (its unit-stride axis) not last; a new local
/// `<operand>_t` holds it with that dimension moved last (a copy statement right before)
/// and the statement reads the local. Returns the local's name in `local_name`.
Kernel pretranspose_operand(const Kernel& k, const std::string& operand, const std::string& on,
                            std::string* local_name = nullptr);
/// `e` computed in `to`: every bf16/f16 read and literal converted first (explicit
/// casts stay, with their operand widened).
Expr widen_value(const Expr& e, DType to);

/// Give loops of extent `min(c, e)` (split tails) a constant extent on every full tile:
/// `if (c <= e) { the loop with extent c } else { the tail }`.
Stmt partition_tails(const Stmt& body);

} // namespace unitile
