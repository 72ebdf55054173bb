// Loop IR: what lowering and schedules produce and what codegen and the sim device
// consume. Loops, stores, scoped allocations and grid axes over concrete shapes.
//
// A kernel lowers to a LoopProgram: its buffers (inputs, outputs and workspace for
// locals, all with concrete shapes) and one or more LoopFuncs, each of which is one
// device launch. Funcs run in order; each sees every buffer and every runtime param, so
// the calling convention is the same for all: buffers in declaration order, then params.
#pragma once

#include "ir/Expr.h"
#include "ir/Kernel.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace unitile {

enum class ForKind : uint8_t {
  Serial, Parallel, Vectorized, Unrolled,
  GridX, GridY, GridZ,       // one iteration per block of the launch grid
  ThreadX, ThreadY, ThreadZ, // one iteration per thread of a block
};
const char* for_kind_name(ForKind k); // "serial", "parallel", "vectorized", "unrolled", "grid.x", ..., "thread.z"

enum class MemScope : uint8_t { Global, Shared, Local, Register };
const char* mem_scope_name(MemScope s); // "global", "shared", "local", "register"

enum class StmtKind : uint8_t {
  For,      // var in [min, min+extent) of for_kind; body = {stmt}
  If,       // cond; body = {then} or {then, else}
  Store,    // buffer[indices] = value
  Allocate, // buffer of dtype/shape in scope, live for body = {stmt}
  Let,      // var = value, immutable, in body = {stmt}
  Block,    // body = statements in order
  Barrier,  // all threads of a block wait (shared-memory sync)
  Prefetch, // a hint: buffer[indices] will be read soon (no effect on results)
  Matrix,   // a tile operation of the HCD's matrix unit (matrix_op; see MatrixOp)
};

/// The tile operations of a matrix unit (tensor cores, an NPU's matrix engine). Each
/// works on m x n (x k) tiles whose origin is `indices` (of `buffer`) or the indices of
/// the Access operands in `value`; a tile spans the last two dimensions of its buffer
/// (rows, then columns). The unit shape is `shape` = {m, n} or {m, n, k}.
///
/// They are collective: on a device with SIMT lanes (HCD warp_size > 1) every lane of a
/// warp executes the statement together, so it sits inside the thread loop over warps
/// (thread.y) and outside any loop over lanes (thread.x, whose extent is the warp size);
/// the accumulator is a register allocation whose first index is that warp loop's
/// variable. Codegen distributes the tile over the lanes in the unit's fragment layout;
/// the sim runs the statement once, as the whole-tile operation below.
enum class MatrixOp : uint8_t {
  Zero,    // buffer[origin + (r, c)] = 0 for r < m, c < n
  Mma,     // buffer[origin + (r, c)] += sum_k A[a + (r, k)] * B[b + (k, c)]; value = A * B
  MmaTf32, // Mma with both operands first rounded to tf32 (10-bit mantissa, nearest, ties away)
  Store,   // buffer[origin + (r, c)] = value[acc + (r, c)], skipping elements outside buffer
  // Mma whose B tile holds k in pairs (Intel AMX's VNNI layout): B tile row x / 2 holds, for
  // each column c, the two values of k = x and x + 1 side by side, so
  // buffer[origin + (r, c)] += sum_x A[a + (r, x)] * B[b + (x / 2, 2 c + x % 2)]; k is even.
  MmaPairs,
};
const char* matrix_op_name(MatrixOp op); // "matrix_zero", "matrix_mma", "matrix_mma_tf32", "matrix_store",
                                         // "matrix_mma_pairs"
/// Whether `op` multiplies tiles (Mma, MmaTf32, MmaPairs).
inline bool is_matrix_mma(MatrixOp op) { return op == MatrixOp::Mma || op == MatrixOp::MmaTf32 || op == MatrixOp::MmaPairs; }

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind kind;
  std::string var;      // For, Let
  Expr min, extent;     // For
  ForKind for_kind = ForKind::Serial;
  int64_t unroll_by = 0; // For (serial): a hint that the host compiler unroll the loop by
                         // this factor (the dialect's unroll pragma); 0: no hint
  Expr cond;            // If
  std::string buffer;   // Store, Allocate, Prefetch
  std::vector<Expr> indices; // Store, Prefetch
  Expr value;           // Store, Let
  DType dtype = DType::F32;      // Allocate
  std::vector<int64_t> shape;    // Allocate; Prefetch of rows: {rows}
  MemScope scope = MemScope::Register; // Allocate
  MatrixOp matrix_op = MatrixOp::Zero; // Matrix (shape holds the unit's m, n[, k])
  int cache_level = 1;  // Prefetch: the cache level the hint fills (1: the nearest, 2: the
                        // second, leaving the first to the lines in use)
  std::vector<Stmt> body;
};

Stmt for_loop(std::string var, Expr min, Expr extent, ForKind kind, Stmt body);
Stmt if_then(Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt store(std::string buffer, std::vector<Expr> indices, Expr value);
Stmt allocate(std::string buffer, DType t, std::vector<int64_t> shape, MemScope scope,
              Stmt body);
Stmt let_stmt(std::string var, Expr value, Stmt body);
Stmt block(std::vector<Stmt> stmts); // flattens nested blocks; one statement stays itself
Stmt barrier();
/// A hint that buffer[indices] will be read soon; rows > 1: that element's line and those
/// of the rows - 1 rows after it along the second-last dimension (a tile's rows; `shape`
/// holds {rows}). `cache_level` 2 asks for the second-level cache (a hint the dialect
/// may print as the first-level one).
Stmt prefetch(std::string buffer, std::vector<Expr> indices, int64_t rows = 1, int cache_level = 1);
Stmt matrix_zero(std::string acc, std::vector<Expr> origin, int64_t m, int64_t n);
/// `a` and `b` are Accesses at the operand tiles' origins.
Stmt matrix_mma(std::string acc, std::vector<Expr> origin, Expr a, Expr b, int64_t m, int64_t n, int64_t k,
                bool tf32);
/// MmaPairs: `b` is an Access at the origin of a B tile of k / 2 rows and 2 n columns.
Stmt matrix_mma_pairs(std::string acc, std::vector<Expr> origin, Expr a, Expr b, int64_t m, int64_t n, int64_t k);
/// `acc` is an Access at the accumulator tile's origin.
Stmt matrix_store(std::string dst, std::vector<Expr> origin, Expr acc, int64_t m, int64_t n);

/// A buffer of a LoopProgram. Locals of the kernel become Local-role workspace buffers
/// that the runtime allocates for the duration of a call.
struct LoopBuffer {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::Input;
  bool stream = false; // written with streaming (non-temporal) stores where the dialect has them
};

struct LoopFunc {
  std::string name; // unique within the program, a valid C identifier
  Stmt body;
};

struct LoopProgram {
  std::string kernel; // the Kernel IR name it came from
  std::vector<LoopBuffer> buffers;
  std::vector<ParamDecl> params; // runtime params only (specialised ones are folded in)
  std::vector<LoopFunc> funcs;
  const LoopBuffer* find_buffer(const std::string& name) const;
};

/// Launch geometry of a func: the product of its outermost Grid* loops (blocks) and of
/// the Thread* loops inside them at block level (threads per block; Lets, Allocates,
/// Blocks and serial loops may come between; sibling thread loops on one axis take the larger
/// extent). Extents must be constant.
struct LaunchDims {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
};
LaunchDims launch_dims(const LoopFunc& f);

/// Text form; parse_loop_program(print(p)) == p.
std::string to_string(const Stmt& s, int indent = 0);
std::string to_string(const LoopProgram& p);
bool equal(const Stmt& a, const Stmt& b);

} // namespace unitile
