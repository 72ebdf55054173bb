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
};

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind kind;
  std::string var;      // For, Let
  Expr min, extent;     // For
  ForKind for_kind = ForKind::Serial;
  Expr cond;            // If
  std::string buffer;   // Store, Allocate, Prefetch
  std::vector<Expr> indices; // Store, Prefetch
  Expr value;           // Store, Let
  DType dtype = DType::F32;      // Allocate
  std::vector<int64_t> shape;    // Allocate
  MemScope scope = MemScope::Register; // Allocate
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
Stmt prefetch(std::string buffer, std::vector<Expr> indices);

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
/// the Thread* loops inside them at block level (threads per block; Lets, Allocates
/// and Blocks may come between; sibling thread loops on one axis take the larger
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
