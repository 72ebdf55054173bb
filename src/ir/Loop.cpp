// Loop IR statement factories, names and launch geometry.
#include "ir/Loop.h"

#include <algorithm>

namespace unitile {

namespace {
std::shared_ptr<StmtNode> node(StmtKind k) {
  auto n = std::make_shared<StmtNode>();
  n->kind = k;
  return n;
}
} // namespace

const char* for_kind_name(ForKind k) {
  switch (k) {
  case ForKind::Serial: return "serial";
  case ForKind::Parallel: return "parallel";
  case ForKind::Vectorized: return "vectorized";
  case ForKind::Unrolled: return "unrolled";
  case ForKind::GridX: return "grid.x";
  case ForKind::GridY: return "grid.y";
  case ForKind::GridZ: return "grid.z";
  case ForKind::ThreadX: return "thread.x";
  case ForKind::ThreadY: return "thread.y";
  case ForKind::ThreadZ: return "thread.z";
  }
  return "?";
}

const char* mem_scope_name(MemScope s) {
  switch (s) {
  case MemScope::Global: return "global";
  case MemScope::Shared: return "shared";
  case MemScope::Local: return "local";
  case MemScope::Register: return "register";
  }
  return "?";
}

Stmt for_loop(std::string v, Expr min, Expr extent, ForKind kind, Stmt body) {
  auto n = node(StmtKind::For);
  n->var = std::move(v);
  n->min = std::move(min);
  n->extent = std::move(extent);
  n->for_kind = kind;
  n->body = {std::move(body)};
  return n;
}

Stmt if_then(Expr cond, Stmt then_case, Stmt else_case) {
  auto n = node(StmtKind::If);
  n->cond = std::move(cond);
  n->body = {std::move(then_case)};
  if (else_case) n->body.push_back(std::move(else_case));
  return n;
}

Stmt store(std::string buffer, std::vector<Expr> indices, Expr value) {
  auto n = node(StmtKind::Store);
  n->buffer = std::move(buffer);
  n->indices = std::move(indices);
  n->value = std::move(value);
  return n;
}

Stmt allocate(std::string buffer, DType t, std::vector<int64_t> shape, MemScope scope, Stmt body) {
  auto n = node(StmtKind::Allocate);
  n->buffer = std::move(buffer);
  n->dtype = t;
  n->shape = std::move(shape);
  n->scope = scope;
  n->body = {std::move(body)};
  return n;
}

Stmt let_stmt(std::string v, Expr value, Stmt body) {
  auto n = node(StmtKind::Let);
  n->var = std::move(v);
  n->value = std::move(value);
  n->body = {std::move(body)};
  return n;
}

Stmt block(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s) continue;
    if (s->kind == StmtKind::Block)
      flat.insert(flat.end(), s->body.begin(), s->body.end());
    else
      flat.push_back(std::move(s));
  }
  if (flat.size() == 1) return flat[0];
  auto n = node(StmtKind::Block);
  n->body = std::move(flat);
  return n;
}

Stmt barrier() { return node(StmtKind::Barrier); }

const char* matrix_op_name(MatrixOp op) {
  switch (op) {
  case MatrixOp::Zero: return "matrix_zero";
  case MatrixOp::Mma: return "matrix_mma";
  case MatrixOp::MmaTf32: return "matrix_mma_tf32";
  case MatrixOp::Store: return "matrix_store";
  case MatrixOp::MmaPairs: return "matrix_mma_pairs";
  }
  return "?";
}

namespace {
std::shared_ptr<StmtNode> matrix_node(MatrixOp op, std::string buffer, std::vector<Expr> origin,
                                      std::vector<int64_t> shape) {
  auto n = node(StmtKind::Matrix);
  n->matrix_op = op;
  n->buffer = std::move(buffer);
  n->indices = std::move(origin);
  n->shape = std::move(shape);
  return n;
}
} // namespace

Stmt matrix_zero(std::string acc, std::vector<Expr> origin, int64_t m, int64_t n) {
  return matrix_node(MatrixOp::Zero, std::move(acc), std::move(origin), {m, n});
}

Stmt matrix_mma(std::string acc, std::vector<Expr> origin, Expr a, Expr b, int64_t m, int64_t n, int64_t k,
                bool tf32) {
  auto s = matrix_node(tf32 ? MatrixOp::MmaTf32 : MatrixOp::Mma, std::move(acc), std::move(origin), {m, n, k});
  s->value = binary(BinaryOp::Mul, std::move(a), std::move(b));
  return s;
}

Stmt matrix_mma_pairs(std::string acc, std::vector<Expr> origin, Expr a, Expr b, int64_t m, int64_t n, int64_t k) {
  auto s = matrix_node(MatrixOp::MmaPairs, std::move(acc), std::move(origin), {m, n, k});
  s->value = binary(BinaryOp::Mul, std::move(a), std::move(b));
  return s;
}

Stmt matrix_store(std::string dst, std::vector<Expr> origin, Expr acc, int64_t m, int64_t n) {
  auto s = matrix_node(MatrixOp::Store, std::move(dst), std::move(origin), {m, n});
  s->value = std::move(acc);
  return s;
}

Stmt prefetch(std::string buffer, std::vector<Expr> indices, int64_t rows, int cache_level) {
  auto n = node(StmtKind::Prefetch);
  n->buffer = std::move(buffer);
  n->indices = std::move(indices);
  if (rows != 1) n->shape = {rows};
  n->cache_level = cache_level;
  return n;
}

const LoopBuffer* LoopProgram::find_buffer(const std::string& n) const {
  for (const auto& b : buffers)
    if (b.name == n) return &b;
  return nullptr;
}

namespace {
int grid_axis(ForKind k) {
  switch (k) {
  case ForKind::GridX: return 0;
  case ForKind::GridY: return 1;
  case ForKind::GridZ: return 2;
  default: return -1;
  }
}
int thread_axis(ForKind k) {
  switch (k) {
  case ForKind::ThreadX: return 0;
  case ForKind::ThreadY: return 1;
  case ForKind::ThreadZ: return 2;
  default: return -1;
  }
}
uint32_t const_extent(const StmtNode& f) {
  UT_INTERNAL_ASSERT(f.extent && f.extent->kind == ExprKind::IntImm,
                     "grid/thread loop '" + f.var + "' needs a constant extent");
  UT_INTERNAL_ASSERT(f.extent->int_value >= 1 && f.extent->int_value <= 0xffffffffLL,
                     "grid/thread loop extent out of range");
  return static_cast<uint32_t>(f.extent->int_value);
}
} // namespace

// Threads per block along each axis: thread loops of the block level, reached through
// Lets, Allocates, Blocks and serial loops; nested ones multiply (one axis each), siblings on the same
// axis take the larger extent (the block must hold each of them).
void block_extents(const StmtNode* s, std::array<uint32_t, 3>& block) {
  if (!s) return;
  switch (s->kind) {
  case StmtKind::Let:
  case StmtKind::Allocate:
    block_extents(s->body[0].get(), block);
    return;
  case StmtKind::Block:
    for (const auto& b : s->body) block_extents(b.get(), block);
    return;
  case StmtKind::For:
    if (int t = thread_axis(s->for_kind); t >= 0) {
      block[t] = std::max(block[t], const_extent(*s));
      block_extents(s->body[0].get(), block);
    } else if (s->for_kind == ForKind::Serial) {
      // Every thread runs a serial loop of the block level (a GEMM's loop over k
      // blocks), so the thread loops inside it size the block too.
      block_extents(s->body[0].get(), block);
    }
    return;
  default:
    return;
  }
}

LaunchDims launch_dims(const LoopFunc& f) {
  LaunchDims d;
  const StmtNode* s = f.body.get();
  // Outermost grid loops (possibly under lets), then the thread loops inside them.
  while (s) {
    if (s->kind == StmtKind::Let) {
      s = s->body[0].get();
      continue;
    }
    if (s->kind != StmtKind::For) break;
    int g = grid_axis(s->for_kind);
    if (g < 0) break;
    d.grid[g] = const_extent(*s);
    s = s->body[0].get();
  }
  block_extents(s, d.block);
  return d;
}

} // namespace unitile
