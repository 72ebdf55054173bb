// matrix_unit: a contraction `C[B.., i, j] += A[.., i, k] * B[.., k, j]` computed on the
// HCD's matrix unit (tensor cores, an NPU's matrix engine): operand tiles staged in the
// memory next to the unit, each warp accumulating a grid of unit tiles in registers.
//
// Why it must exist: a matrix unit multiplies whole tiles in one instruction, executed
// by all lanes of a warp together with the tiles spread over the lanes' registers. No
// composition of the loop primitives produces that: the register tile of the CPU GEMM
// schedule (microkernel) is one thread's, and its inner step is a vector FMA. So this
// pass builds the whole launch from the contraction and the HCD's [[compute.
// matrix_units]] entry (unit shape m x n x k, input dtypes, precision), using Matrix
// statements (Loop.h) that the sim interprets and the cuda dialect prints as mma.sync:
//
//   for task grid.x                        (batch x row blocks x column blocks)
//     A tile [bm, bk] and B tile [bk, bn] in shared/local memory, the accumulators
//     [warps, bm/warps_m/m, bn/warps_n/n, m, n] in registers
//     every warp: matrix_zero on its tiles
//     for each k block: all threads copy the A and B tiles (zeros outside the tensors),
//       barrier, every warp: matrix_mma over its tiles and the block's k steps, barrier
//     every warp: matrix_store of its tiles into C (clipped at C's edges)
//
// Decisions come from the HCD only: the unit's shape and dtypes, warp_size (lanes per
// warp), max_threads_per_block (warps per block), registers (the accumulator tiles), the
// staging level's scope and size and shared_memory_per_block (the k block), units (block
// tiles shrink until every compute unit has work).
#pragma once

#include "hcd/Hcd.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace unitile {

/// One contraction the matrix unit can take.
struct MatrixSite {
  size_t statement = 0;
  std::string output, a, b;           // C and its operands, A the one indexed by i
  std::string i, j, k;                // C's row and column variables, the reduction
  std::vector<std::string> batch;     // C's leading index variables
  std::vector<int64_t> batch_extents;
  int64_t M = 0, N = 0, K = 0;
  DType input = DType::F32;           // A's and B's dtype
  hcd::MatrixUnit unit;               // the HCD's unit that takes it
  bool tf32 = false;                  // the unit rounds f32 operands to tf32
  bool a_rows = false;                // A is read as A[.., i, k]: rows of k in memory
  bool b_rows = false;                // B is read as B[.., k, j]: rows of j in memory
};

/// The tiling of a matrix-unit launch: the block tile (bm x bn, k blocks of bk) and the
/// warps per block along rows and columns; each warp owns (bm / warps_m) x (bn / warps_n).
/// A tile-register launch (tile_registers_launch) uses warps_m x warps_n as the
/// accumulator tiles of one core's micro-tile instead (tm x tn unit tiles).
struct MatrixTiles {
  int64_t bm = 0, bn = 0, bk = 0, warps_m = 1, warps_n = 1;
};

/// The statement writing `output` as a contraction `C[B.., i, j] += A[.., i, k] * B[.., k, j]`
/// (plain reads, any index order, A and B of one dtype), whatever unit runs it; `unit` is
/// left empty. nullopt with the reason in `why` otherwise.
std::optional<MatrixSite> contraction_site(const Kernel& k, const ShapeBindings& b, const std::string& output,
                                           std::string* why = nullptr);

/// The statement writing `output` as a matrix-unit site on `h`, or nullopt with the reason
/// in `why`. `tf32`: f32 operands may use a unit of precision "tf32" (never otherwise:
/// rounding an f32 GEMM's operands changes its results, so it is the schedule's choice).
std::optional<MatrixSite> matrix_site(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& h,
                                      const std::string& output, bool tf32, std::string* why = nullptr);

/// Whether `u` is a 1x16x2 unit: one vector instruction adding to each of 16 f32 lanes a
/// pair of products (AVX512-BF16's vdpbf16ps), run as a vector pair launch whose tiling
/// is tm rows x tn vectors of accumulators (MatrixTiles warps_m x warps_n).
bool pair_unit(const hcd::MatrixUnit& u);

/// The most accumulator rows (tm) of a vector pair micro-tile tn vectors wide on `h`: tm x
/// tn accumulators, tn B vectors and an A broadcast in its vector registers.
int64_t pair_max_rows(int64_t tn, const hcd::Hcd& h);

/// Whether the c dialect prints unit `u` of `h`: a 16x16x32 bf16 unit as Intel AMX's
/// tdpbf16ps where the isa lists amx-tile and amx-bf16 (tile registers), a 1x16x2 bf16
/// unit as AVX512-BF16's vdpbf16ps where it lists avx512_bf16 and vectors are 512 bits
/// (accumulators in vector registers).
bool c_prints_unit(const hcd::Hcd& h, const hcd::MatrixUnit& u);

/// Whether the HCD's dialect prints matrix statements: cuda (mma.sync), loopir (the sim
/// interprets them), and c where it prints one of the HCD's units (c_prints_unit).
/// opencl has no matrix-unit instructions, nor has c without AMX or AVX512-BF16, so such
/// an HCD that lists a unit keeps its contractions on the vector units.
bool dialect_issues_matrix_units(const hcd::Hcd& h);

/// Whether matrix launches on `h` are tile-register launches: single-lane cores (HCD
/// warp_size 1) of the c dialect. A 1x16x2 unit (AVX512-BF16) is a vector instruction:
/// per task the A block packed in k pairs, per column micro-panel the B panel in k
/// pairs, and per micro-tile of tm rows x tn vectors a k-pair loop of matrix_mma_pairs
/// on accumulators in vector registers. Otherwise the unit is a file of 8 tile registers (Intel AMX:
/// 16 x 16 f32 accumulators += 16 x 32 bf16 A x 32 x 16 bf16 B with B in k pairs). Per
/// task (a block of rows x columns, one per core at a time): the B panel packed in k
/// pairs and each 32-row A panel packed in k blocks, both in local memory, and per
/// micro-tile of tm x tn unit tiles a k loop of matrix_mma_pairs on accumulators that
/// stay in tile registers; stores clipped at C's edges.
bool tile_registers_launch(const hcd::Hcd& h);

/// Every statement of `k` that is a matrix-unit site on `h` at its inputs' own precision
/// (none where the dialect cannot issue them).
std::vector<MatrixSite> matrix_sites(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& h);

/// The analytic tiling for `site` on `h` (see the file comment).
MatrixTiles matrix_tiles(const MatrixSite& site, const hcd::Hcd& h);

/// Why `t` was chosen (unit, warps, registers, staging memory, tasks): --explain lines.
std::vector<std::string> matrix_reasons(const MatrixSite& site, const MatrixTiles& t, const hcd::Hcd& h);

/// Replace the launches of the statement writing `output` by one matrix-unit launch.
/// `tiles` empty: the analytic tiling; else {bm, bn, bk, warps_m, warps_n}. A statement
/// that is no site, or tiles the unit cannot take, is a UserError saying why.
LoopProgram matrix_unit(const Kernel& k, const LoopProgram& p, const ShapeBindings& b, const hcd::Hcd& h,
                        const std::string& output, const std::vector<int64_t>& tiles, bool tf32);

} // namespace unitile
