// thread_gemm: a contraction `C[B.., i, j] += A[.., i, k] * B[.., k, j]` (f32 or f64, not
// taken by a matrix unit) as a tiled GEMM on a block of SIMT threads: per k block the A
// and B tiles are copied into shared memory by all threads of the block, and each thread
// accumulates a small register tile of C from them.
//
// Why it must exist: the CPU GEMM schedule (split, stage, microkernel) gives one thread a
// register tile of vectors and packs operands into its own cache; a GPU needs the opposite
// shape: hundreds of threads per block, each with a tm x tn tile of scalars, reading
// operand tiles that the whole block stages cooperatively into shared memory between
// barriers. `stage` copies for one thread (its copy loops are serial), and the register
// tile must live across the barriers of every k block, outside the thread loops: a launch
// the loop primitives cannot express, so this pass builds it (as matrix_unit does for
// tensor cores):
//
//   for task grid.x                          (batch x row blocks x column blocks)
//     A tile [bk, bm] (transposed) and B tile [bk, bn] in shared memory,
//     the accumulators [ty, tx, tm, tn] in registers (one tm x tn tile per thread)
//     every thread: zero its tile
//     for each k block: all threads copy the A and B tiles (consecutive threads read
//       consecutive elements of the tensor; zeros outside it), barrier, every thread
//       multiplies its rows y + a*ty, columns x + c*tx over the k block, barrier
//     every thread stores its tile (clipped at C's edges): consecutive threads write
//       consecutive columns (coalesced)
//
// Decisions come from the HCD only: registers per thread (the tile), max_threads_per_block
// and max_block (threads), the staging level's scope and size and shared_memory_per_block
// (the k block), warp_size and units (tiles shrink until every compute unit has a block).
#pragma once

#include "hcd/Hcd.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"
#include "schedule/MatrixUnit.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace unitile {

/// A thread-tiled GEMM launch: block tile bm x bn in k blocks of bk; each of the
/// (bm / tm) x (bn / tn) threads owns a tm x tn register tile.
struct ThreadTiles {
  int64_t bm = 0, bn = 0, bk = 0, tm = 0, tn = 0;
  int64_t threads_x() const { return tn ? bn / tn : 0; }
  int64_t threads_y() const { return tm ? bm / tm : 0; }
};

/// Whether `h` runs blocks of SIMT threads with shared memory (warp_size > 1, more than
/// one warp per block, shared memory per block): where thread_gemm and threads apply.
bool simt_blocks(const hcd::Hcd& h);

/// The statement writing `output` as a thread_gemm site on `h` (a contraction whose A, B
/// and C are all f32 or all f64), or nullopt with the reason in `why`.
std::optional<MatrixSite> thread_gemm_site(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& h,
                                           const std::string& output, std::string* why = nullptr);

/// The analytic tiling for `site` on `h` (see the file comment and ThreadGemm.cpp).
ThreadTiles thread_gemm_tiles(const Kernel& k, const MatrixSite& site, const hcd::Hcd& h);

/// Why `t` was chosen: --explain lines (block and thread tiles, threads, shared memory
/// bytes, registers, blocks over compute units).
std::vector<std::string> thread_gemm_reasons(const MatrixSite& site, const ThreadTiles& t, const hcd::Hcd& h);

/// Replace the launches of the statement writing `output` by one thread-tiled launch.
/// `tiles` empty: the analytic tiling; else {bm, bn, bk, tm, tn}.
LoopProgram thread_gemm(const Kernel& k, const LoopProgram& p, const ShapeBindings& b, const hcd::Hcd& h,
                        const std::string& output, const std::vector<int64_t>& tiles);

} // namespace unitile
