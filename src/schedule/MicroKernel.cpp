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
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

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
  Stmt r = cache_write(p, body, out, MemScope::Register, at);
  r = unroll_loop(r, mr->var);
  r = vectorize_loop(r, nr->var);
  return r;
}

} // namespace unitile
