// microkernel: the register-blocked inner kernel of a contraction.
//
// Why: a matrix multiply runs at the machine's peak only when an mr x nr tile of the
// output lives in vector registers for a whole pass over the reduction axis, each step
// loading one short column of A (broadcast) and one vector row of B and issuing mr x
// nr/lanes fused multiply-adds. This primitive builds exactly that from the nest below
// loop `at`: the tile is cached in registers, the mr loop is unrolled so every
// accumulator has a constant name, the nr loop is vectorized. It refuses tiles that do
// not fit the HCD's vector register file, since spilling accumulators is slower than
// not blocking at all.
//
// On a CPU the tile of the next iteration of `at` is hinted into the cache at the start
// of each iteration (one prefetch per row and cache line): a blocked reduction reloads
// C's tile once per reduction block, from memory when C is larger than the caches, and
// without the hint the first multiply-adds wait for those loads (2048^3 f32 on the
// AVX-512 Xeon: 121 -> 106-111 ms, docs/PERFORMANCE.md).
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

namespace {

// Prefetches of the tile that iteration `at` + 1 accumulates (rows 0..m of `mr`, one per
// `per_line` columns of `nr`; the last iteration hints its own tile again, so every
// address stays inside the buffer), at the start of each iteration of `at`. Loops of
// one iteration have no next tile and are left alone.
Stmt hint_next_tile(const Stmt& body, const std::string& at, const std::string& out, const std::vector<Expr>& idx,
                    const std::string& mr, int64_t m, const std::string& nr, int64_t n, int64_t per_line) {
  per_line = std::max<int64_t>(1, per_line);
  return mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For || s->var != at) return s;
    auto extent = const_int_value(s->extent);
    if (!extent || *extent < 2) return s;
    const Expr next = call(MathFn::Min, {binary(BinaryOp::Add, var(at), int_imm(1)),
                                         binary(BinaryOp::Add, s->min, int_imm(*extent - 1))});
    std::vector<Stmt> stmts;
    for (int64_t row = 0; row < m; ++row)
      for (int64_t col = 0; col < n; col += per_line) {
        std::vector<Expr> moved;
        for (const Expr& i : idx)
          moved.push_back(simplify(rewrite(i, [&](const Expr& e) -> Expr {
            if (e->kind != ExprKind::Var) return e;
            if (e->name == at) return next;
            if (e->name == mr) return int_imm(row);
            if (e->name == nr) return int_imm(col);
            return e;
          })));
        stmts.push_back(prefetch(out, std::move(moved)));
      }
    for (const Stmt& b : s->body) stmts.push_back(b);
    return with_body(s, {block(std::move(stmts))});
  });
}

} // namespace

Stmt micro_kernel(const LoopProgram& p, const Stmt& body, const std::string& at, const hcd::Hcd& hcd) {
  auto loops = find_loops(body, at);
  if (loops.empty()) throw UserError(fmt::format("error: schedule: microkernel {}: no loop '{}' here", at, at));
  // The chain below `at` down to the one store.
  std::vector<const StmtNode*> chain;
  const StmtNode* s = loops[0]->body[0].get();
  while (s->kind == StmtKind::For) {
    chain.push_back(s);
    if (s->body.size() != 1) break;
    s = s->body[0].get();
  }
  if (s->kind != StmtKind::Store || chain.size() < 3)
    throw UserError(fmt::format(
        "error: schedule: microkernel {}: the body of '{}' must be a perfect nest [reduction "
        "loops][mr][nr] around one store",
        at, at));
  const StmtNode* mr = chain[chain.size() - 2];
  const StmtNode* nr = chain.back();
  const std::string& out = s->buffer;
  bool reads_itself = false;
  visit(s->value, [&](const Expr& e) { reads_itself |= e->kind == ExprKind::Access && e->name == out; });
  bool mr_moves = false, nr_moves = false;
  for (const Expr& i : s->indices) {
    mr_moves |= depends_on(i, mr->var);
    nr_moves |= depends_on(i, nr->var);
  }
  if (!reads_itself || !mr_moves || !nr_moves)
    throw UserError(fmt::format(
        "error: schedule: microkernel {}: the store must accumulate into {} at an element that "
        "moves with both '{}' and '{}'",
        at, out, mr->var, nr->var));
  const LoopBuffer* b = p.find_buffer(out);
  auto m = max_extent(mr->extent), n = max_extent(nr->extent);
  if (!m || !n)
    throw UserError(fmt::format("error: schedule: microkernel {}: loops '{}' and '{}' need constant extents",
                                at, mr->var, nr->var));
  const int lanes = std::max(1, hcd.lanes_for(b->dtype));
  const int64_t vectors = (*n + lanes - 1) / lanes;
  const int64_t needed = *m * vectors + vectors + 1; // accumulators + one B row + one A broadcast
  if (needed > hcd.vector_registers)
    throw UserError(fmt::format(
        "error: schedule: microkernel {}: a {} x {} tile of {} needs {} vector registers ({} "
        "accumulators of {} lanes, plus operands); HCD '{}' has {}",
        at, *m, *n, dtype_name(b->dtype), needed, *m * vectors, lanes, hcd.name, hcd.vector_registers));
  const std::vector<Expr> tile_indices = s->indices;
  Stmt r = cache_write(p, body, out, MemScope::Register, at);
  r = unroll_loop(r, mr->var);
  r = vectorize_loop(r, nr->var);
  if (hcd.kind == hcd::DeviceKind::Cpu) {
    int line = 64; // the innermost cache's line
    for (const hcd::MemoryLevel& l : hcd.memory)
      if (l.scope != "register" && l.size_bytes > 0) {
        line = std::max(1, l.line_bytes);
        break;
      }
    r = hint_next_tile(r, at, out, tile_indices, mr->var, *m, nr->var, *n, line / dtype_bytes(b->dtype));
  }
  return r;
}

} // namespace unitile
