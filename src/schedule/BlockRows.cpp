// block_rows V T: each iteration of the row loop V (a launch's grid.x loop) runs on one
// block of T threads that share the row's work: every loop in the row is strided over the
// threads (thread t takes elements t, t + T, ...: consecutive threads on consecutive
// elements, coalesced), and each reduction into a one-element register accumulator is
// combined across the block through a shared-memory tree.
//
// Why it is a pass: a per-row chain (softmax's max, sum and normalise; layernorm's mean,
// variance and map; rmsnorm) on blocks of SIMT threads would otherwise run one row per
// thread (`threads`), each thread walking its own row: reads a row apart (not coalesced)
// and few threads where rows are few. Sharing a row needs a cross-thread reduction, whose
// partial results must meet in shared memory between barriers: no loop primitive writes
// that. The row body it takes (what lowering and compute_at make) is a sequence of
//   - reductions: `allocate acc[1] register { acc[0] = identity; for j { acc[0] = acc[0]
//     OP e } ; OUT[..] = f(acc[0]) }` with OP +, *, max or min, and
//   - loop nests whose stores all move with their outer loop (the row's maps),
// and it becomes, for each item in order (a barrier after each, so that what an item
// stores, a row statistic in memory, is visible to every thread of the block):
//   reduction: for t thread.x { acc[0] = identity; for jj { if j < E: acc[0] OP= e };
//              part[t] = acc[0] }; barrier; for s = T/2 .. 1: for t thread.x
//              { if t < s: part[t] = part[t] OP part[t + s] }, barrier;
//              for t thread.x { if t == 0: OUT[..] = f(part[0]) }
//   map:       for t thread.x { for jj { if j < E: body } }
// The tree reassociates sums (rounding-level differences; max and min are exact).
// Barriers sit between thread loops, never inside them, which is what sim executes.
#include "schedule/BlockRows.h"

#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"
#include "schedule/Threads.h"

#include <fmt/core.h>

#include <set>

namespace unitile {

namespace {

Expr imm(int64_t v) { return int_imm(v); }

struct Reduction {
  std::string acc;
  DType dtype = DType::F32;
  Expr init;      // the identity stored first
  Stmt loop;      // the loop over the row
  int op = 0;     // 0 +, 1 *, 2 max, 3 min
  Expr term;      // e in acc[0] = acc[0] OP e
  Stmt final;     // the store of f(acc[0])
};

bool is_slot0(const Expr& x, const std::string& buf) {
  return x->kind == ExprKind::Access && x->name == buf && x->operands.size() == 1 &&
         const_int_value(x->operands[0]) == 0;
}

Expr combine(int op, Expr a, Expr b) {
  switch (op) {
  case 0: return binary(BinaryOp::Add, std::move(a), std::move(b));
  case 1: return binary(BinaryOp::Mul, std::move(a), std::move(b));
  case 2: return call(MathFn::Max, {std::move(a), std::move(b)});
  default: return call(MathFn::Min, {std::move(a), std::move(b)});
  }
}

bool plain_loop(const Stmt& s) {
  return s->kind == StmtKind::For && (s->for_kind == ForKind::Serial || s->for_kind == ForKind::Vectorized) &&
         const_int_value(s->min).has_value() && const_int_value(s->extent).has_value();
}

// A row reduction item, or nullopt.
std::optional<Reduction> reduction_item(const Stmt& s) {
  if (s->kind != StmtKind::Allocate || s->scope != MemScope::Register || s->shape != std::vector<int64_t>{1})
    return std::nullopt;
  const Stmt& b = s->body[0];
  if (b->kind != StmtKind::Block || b->body.size() != 3) return std::nullopt;
  Reduction r;
  r.acc = s->buffer;
  r.dtype = s->dtype;
  const Stmt& init = b->body[0];
  if (init->kind != StmtKind::Store || init->buffer != r.acc || init->indices.size() != 1 ||
      const_int_value(init->indices[0]) != 0 ||
      (init->value->kind != ExprKind::FloatImm && init->value->kind != ExprKind::IntImm))
    return std::nullopt;
  r.init = init->value;
  r.loop = b->body[1];
  if (!plain_loop(r.loop)) return std::nullopt;
  const Stmt& step = r.loop->body[0];
  if (step->kind != StmtKind::Store || step->buffer != r.acc || step->indices.size() != 1 ||
      const_int_value(step->indices[0]) != 0)
    return std::nullopt;
  const Expr& v = step->value;
  if (v->kind == ExprKind::Binary && (v->binary_op == BinaryOp::Add || v->binary_op == BinaryOp::Mul) &&
      is_slot0(v->operands[0], r.acc)) {
    r.op = v->binary_op == BinaryOp::Add ? 0 : 1;
  } else if (v->kind == ExprKind::Call && (v->math_fn == MathFn::Max || v->math_fn == MathFn::Min) &&
             v->operands.size() == 2 && is_slot0(v->operands[0], r.acc)) {
    r.op = v->math_fn == MathFn::Max ? 2 : 3;
  } else {
    return std::nullopt;
  }
  r.term = v->operands[1];
  if (expr_reads(r.term, r.acc)) return std::nullopt;
  r.final = b->body[2];
  if (r.final->kind != StmtKind::Store || r.final->buffer == r.acc) return std::nullopt;
  return r;
}

// A map item: a loop nest whose stores (to memory outside it) all move with its loop.
bool map_item(const Stmt& s) {
  return plain_loop(s) && parallel_conflict(s->body[0], s->var).empty();
}

} // namespace

int64_t block_rows_extent(const Stmt& body, const std::string& v) {
  const StmtNode* top = body.get();
  while (top && top->kind == StmtKind::Let) top = top->body[0].get();
  if (!top || top->kind != StmtKind::For || top->var != v) return 0;
  ThreadNest n = thread_nest(body, v);
  if (n.loops.empty() || !n.per_thread_loops) return 0;
  const StmtNode* last = top;
  while (last->var != n.loops.back()) last = last->body[0].get();
  const Stmt& row = last->body[0];
  const std::vector<Stmt> items = row->kind == StmtKind::Block ? row->body : std::vector<Stmt>{row};
  int64_t longest = 0;
  for (const Stmt& x : items) {
    if (auto r = reduction_item(x)) {
      longest = std::max(longest, *const_int_value(r->loop->extent));
    } else if (map_item(x)) {
      longest = std::max(longest, *const_int_value(x->extent));
    } else {
      return 0;
    }
  }
  return longest;
}

Stmt block_rows(const LoopProgram& p, const Stmt& body, const std::string& v, int64_t threads, const hcd::Hcd& h) {
  const std::string what = fmt::format("block_rows {} {}", v, threads);
  if (threads < 1 || (threads & (threads - 1)) != 0)
    throw UserError(fmt::format("error: schedule: {}: the threads of a block must be a power of two (a tree of "
                                "halving steps combines their partial results)",
                                what));
  if (threads > h.max_threads_per_block || (!h.max_block.empty() && threads > h.max_block[0]))
    throw UserError(fmt::format("error: schedule: {}: a block of {} threads exceeds the HCD's limit ({} per block, "
                                "{} along thread.x)",
                                what, threads, h.max_threads_per_block, h.max_block.empty() ? 0 : h.max_block[0]));
  if (block_rows_extent(body, v) == 0)
    throw UserError(fmt::format("error: schedule: {}: loop '{}' is not the grid.x row loop of a launch whose row is "
                                "a sequence of reductions into a one-element register and loop nests that write "
                                "along their loop (see BlockRows.cpp)",
                                what, v));
  // Fuse the independent loops around the row into one grid loop (a rank-3 row chain's
  // i0, i1), as threads does.
  ThreadNest n = thread_nest(body, v);
  Stmt r = body;
  std::string row_var = n.loops[0];
  for (size_t k = 1; k < n.loops.size(); ++k) {
    std::string name = row_var + "_" + n.loops[k];
    r = fuse_loops(r, row_var, n.loops[k], name);
    row_var = name;
  }
  std::set<std::string> taken;
  for (const LoopBuffer& b : p.buffers) taken.insert(b.name);
  std::function<void(const Stmt&)> names = [&](const Stmt& x) {
    if (x->kind == StmtKind::For || x->kind == StmtKind::Let) taken.insert(x->var);
    if (x->kind == StmtKind::Allocate) taken.insert(x->buffer);
    for (const Stmt& c : x->body) names(c);
  };
  names(r);
  auto fresh = [&](const std::string& base) {
    if (taken.insert(base).second) return base;
    for (int k = 0;; ++k)
      if (std::string c = fmt::format("{}_{}", base, k); taken.insert(c).second) return c;
  };

  const int64_t T = threads;
  // `loop`'s body with its variable = min + jj*T + t, for jj over the chunks, guarded.
  auto strided = [&](const Stmt& loop, const std::string& t) {
    const int64_t mn = *const_int_value(loop->min), e = *const_int_value(loop->extent);
    const std::string jj = fresh(loop->var + "_c");
    Expr at = binary(BinaryOp::Add, binary(BinaryOp::Mul, var(jj), imm(T)), var(t));
    Stmt inner = substitute(loop->body[0], loop->var, simplify(binary(BinaryOp::Add, imm(mn), at)));
    if (e % T != 0) inner = if_then(binary(BinaryOp::Lt, simplify(at), imm(e)), inner);
    return for_loop(jj, imm(0), imm((e + T - 1) / T), ForKind::Serial, inner);
  };
  auto thread_loop = [&](const std::string& t, Stmt b) { return for_loop(t, imm(0), imm(T), ForKind::ThreadX, std::move(b)); };

  std::function<Stmt(const Stmt&)> rebuild = [&](const Stmt& s) -> Stmt {
    if (s->kind == StmtKind::For && s->var == row_var) {
      const Stmt& row = s->body[0];
      const std::vector<Stmt> items = row->kind == StmtKind::Block ? row->body : std::vector<Stmt>{row};
      std::vector<Stmt> out;
      for (const Stmt& x : items) {
        if (!out.empty()) out.push_back(barrier());
        if (std::optional<Reduction> red = reduction_item(x)) {
          const std::string part = fresh(red->acc + "_part");
          const std::string t0 = fresh("t");
          Stmt partial = block({store(red->acc, {imm(0)}, red->init), strided(red->loop, t0),
                                store(part, {var(t0)}, access(red->acc, {imm(0)}, red->dtype))});
          std::vector<Stmt> steps{thread_loop(t0, allocate(red->acc, red->dtype, {1}, MemScope::Register, partial)),
                                  barrier()};
          for (int64_t half = T / 2; half >= 1; half /= 2) {
            const std::string t = fresh("t");
            Stmt add = store(part, {var(t)},
                             combine(red->op, access(part, {var(t)}, red->dtype),
                                     access(part, {binary(BinaryOp::Add, var(t), imm(half))}, red->dtype)));
            steps.push_back(thread_loop(t, if_then(binary(BinaryOp::Lt, var(t), imm(half)), add)));
            steps.push_back(barrier());
          }
          const std::string tf = fresh("t");
          Stmt fin = block({store(red->acc, {imm(0)}, access(part, {imm(0)}, red->dtype)), red->final});
          steps.push_back(thread_loop(tf, if_then(binary(BinaryOp::Eq, var(tf), imm(0)),
                                                  allocate(red->acc, red->dtype, {1}, MemScope::Register, fin))));
          out.push_back(allocate(part, red->dtype, {T}, MemScope::Shared, block(steps)));
        } else {
          const std::string t = fresh("t");
          out.push_back(thread_loop(t, strided(x, t)));
        }
      }
      return with_body(s, {block(out)});
    }
    if (s->kind == StmtKind::Let) return with_body(s, {rebuild(s->body[0])});
    return s;
  };
  return rebuild(r);
}

} // namespace unitile
