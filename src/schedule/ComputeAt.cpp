// compute_at: run a producer statement inside its consumer's loop `at` (the outermost, or
// one nested only in loops: a per-row chain over the last axis of a rank-3 tensor runs
// inside i1 within i0), one launch instead of two.
//
// Why: softmax's row max, row sum and normalisation are three statements; as three
// launches each row is read from memory three times, as one launch the row is still in
// L1 for the second and third. The same holds for any chain of per-row (per-slice)
// statements: layernorm, rmsnorm, attention's score/max/sum/output.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <functional>
#include <set>

namespace unitile {

namespace {

// Each access to `b` in `s` (reads, or stores when `stores`) as its index list.
void accesses(const Stmt& s, const std::string& b, bool stores, std::vector<std::vector<Expr>>& out) {
  if (stores && s->kind == StmtKind::Store && s->buffer == b) out.push_back(s->indices);
  if (!stores) {
    auto scan = [&](const Expr& e) {
      visit(e, [&](const Expr& a) {
        if (a->kind == ExprKind::Access && a->name == b) out.push_back(a->operands);
      });
    };
    for (const Expr& e : {s->min, s->extent, s->cond, s->value})
      if (e) scan(e);
    for (const Expr& i : s->indices) scan(i);
  }
  for (const Stmt& c : s->body) accesses(c, b, stores, out);
}

void collect_buffers(const Stmt& s, std::set<std::string>& writes, std::set<std::string>& reads);

// Every program buffer `s` stores into, and every one it reads (values, indices,
// bounds); buffers it allocates itself (register accumulators) are its own business.
void buffers(const Stmt& s, std::set<std::string>& writes, std::set<std::string>& reads) {
  std::set<std::string> own;
  std::function<void(const Stmt&)> allocated = [&](const Stmt& x) {
    if (x->kind == StmtKind::Allocate) own.insert(x->buffer);
    for (const Stmt& c : x->body) allocated(c);
  };
  allocated(s);
  std::set<std::string> w, r;
  collect_buffers(s, w, r);
  for (const std::string& b : w)
    if (!own.count(b)) writes.insert(b);
  for (const std::string& b : r)
    if (!own.count(b)) reads.insert(b);
}

void collect_buffers(const Stmt& s, std::set<std::string>& writes, std::set<std::string>& reads) {
  if (s->kind == StmtKind::Store) writes.insert(s->buffer);
  auto scan = [&](const Expr& e) {
    visit(e, [&](const Expr& a) {
      if (a->kind == ExprKind::Access) reads.insert(a->name);
    });
  };
  for (const Expr& e : {s->min, s->extent, s->cond, s->value})
    if (e) scan(e);
  for (const Expr& i : s->indices) scan(i);
  for (const Stmt& c : s->body) collect_buffers(c, writes, reads);
}

bool binds(const Stmt& s, const std::string& v) {
  if (s->kind == StmtKind::For && s->var == v) return true;
  for (const Stmt& c : s->body)
    if (binds(c, v)) return true;
  return false;
}

} // namespace

LoopProgram compute_at(const LoopProgram& p, const std::string& buffer, const std::string& at) {
  const std::string what = fmt::format("compute_at {} at {}", buffer, at);
  auto fail = [&](const std::string& why) { return UserError(fmt::format("error: schedule: {}: {}", what, why)); };
  std::vector<size_t> producers;
  for (size_t n = 0; n < p.funcs.size(); ++n)
    if (stmt_writes(p.funcs[n].body, buffer)) producers.push_back(n);
  if (producers.empty()) throw fail(fmt::format("no statement writes '{}'", buffer));
  if (producers.size() > 1) throw fail(fmt::format("'{}' is written by {} launches", buffer, producers.size()));
  const size_t pi = producers[0];
  size_t ci = pi + 1;
  for (; ci < p.funcs.size(); ++ci) {
    std::vector<std::vector<Expr>> r;
    accesses(p.funcs[ci].body, buffer, false, r);
    if (!r.empty()) break;
  }
  if (ci == p.funcs.size()) throw fail(fmt::format("no later statement reads '{}'", buffer));
  const Stmt& prod = p.funcs[pi].body;
  const Stmt& cons = p.funcs[ci].body;
  // Moving the producer past the launches in between must not change what they see: none
  // may read or write what it writes (earlier compute_ats may have gathered several
  // statements into it), nor write what it reads.
  std::set<std::string> prod_writes, prod_reads;
  buffers(prod, prod_writes, prod_reads);
  for (size_t m = pi + 1; m < ci; ++m) {
    std::set<std::string> w, r;
    buffers(p.funcs[m].body, w, r);
    for (const std::string& b : prod_writes)
      if (w.count(b) || r.count(b))
        throw fail(fmt::format("a launch between the producer and the first reader of '{}' uses '{}', which the "
                               "producer writes",
                               buffer, b));
    for (const std::string& b : w)
      if (prod_reads.count(b))
        throw fail(fmt::format("a launch between the producer and the first reader of '{}' writes '{}', which the "
                               "producer reads",
                               buffer, b));
  }
  // The consumer's loops from the outermost down to `at`, perfectly nested (a slice loop
  // inside leading loops: softmax over the last axis of a rank-3 tensor runs per row
  // i1 inside i0), and the producer's loops at the same depths.
  auto inner_loop = [](const Stmt& s) -> const Stmt* {
    const Stmt& b = s->body[0];
    if (b->kind == StmtKind::For) return &b;
    if (b->kind == StmtKind::Block && b->body.size() == 1 && b->body[0]->kind == StmtKind::For) return &b->body[0];
    return nullptr;
  };
  std::vector<const Stmt*> cloops, ploops;
  for (const Stmt* c = &cons; c && (*c)->kind == StmtKind::For; c = inner_loop(*c)) {
    cloops.push_back(c);
    if ((*c)->var == at) break;
  }
  if (cloops.empty() || (*cloops.back())->var != at)
    throw fail(fmt::format("'{}' is not a loop of the statement that reads '{}' with only loops around it", at,
                           buffer));
  for (const Stmt* c = &prod; c && (*c)->kind == StmtKind::For && ploops.size() < cloops.size(); c = inner_loop(*c))
    ploops.push_back(c);
  if (ploops.empty()) throw fail("the producer has no outermost loop");
  if (ploops.size() < cloops.size())
    throw fail(fmt::format("the producer has fewer loops around its body than '{}' has", at));
  // The producer's iteration (v0, .., vk) writes exactly the elements the consumer's
  // iteration (v0, .., vk) reads: each level's variable is alone in one index of every
  // write and every read.
  std::vector<std::vector<Expr>> w, r;
  accesses(prod, buffer, true, w);
  accesses(cons, buffer, false, r);
  for (size_t l = 0; l < cloops.size(); ++l) {
    const Stmt& pl = *ploops[l];
    const Stmt& cl = *cloops[l];
    auto pe = const_int_value(pl->extent), ce = const_int_value(cl->extent);
    if (!pe || !ce || *pe != *ce || pl->for_kind != cl->for_kind || const_int_value(pl->min) != const_int_value(cl->min))
      throw fail(fmt::format("the producer's loop '{}' and '{}' differ in range or kind", pl->var, cl->var));
    size_t dim = SIZE_MAX;
    for (size_t d = 0; d < w[0].size(); ++d) {
      bool ok = true;
      for (const auto& x : w) ok &= x[d]->kind == ExprKind::Var && x[d]->name == pl->var;
      for (const auto& x : r) ok &= x[d]->kind == ExprKind::Var && x[d]->name == cl->var;
      if (ok) {
        dim = d;
        break;
      }
    }
    if (dim == SIZE_MAX)
      throw fail(fmt::format("the consumer reads '{}' at elements another iteration of '{}' writes", buffer, cl->var));
  }
  // Renaming the producer's loop variables to the consumer's must not capture a loop of
  // its own of that name (a transposing producer: `T[i1, i0] = X[i0, i1]` read as
  // T[i0, i1]), nor one renamed variable another.
  Stmt moved = (*ploops.back())->body[0];
  std::set<std::string> pvars;
  for (const Stmt* pl : ploops) pvars.insert((*pl)->var);
  for (size_t l = 0; l < cloops.size(); ++l) {
    const std::string& pv = (*ploops[l])->var;
    const std::string& cv = (*cloops[l])->var;
    if (pv == cv) continue;
    if (binds(moved, cv) || (pvars.count(cv) && cloops.size() > 1))
      throw fail(fmt::format("the producer has a loop of its own named '{}'", cv));
  }
  for (size_t l = 0; l < cloops.size(); ++l)
    if ((*ploops[l])->var != (*cloops[l])->var) moved = substitute(moved, (*ploops[l])->var, var((*cloops[l])->var));
  // Rebuild the consumer's nest with the producer's body first in the `at` loop.
  std::function<Stmt(const Stmt&, size_t)> rebuild = [&](const Stmt& s, size_t l) -> Stmt {
    if (l + 1 == cloops.size()) return with_body(s, {block({moved, s->body[0]})});
    const Stmt& b = s->body[0];
    if (b->kind == StmtKind::For) return with_body(s, {rebuild(b, l + 1)});
    return with_body(s, {with_body(b, {rebuild(b->body[0], l + 1)})});
  };
  LoopProgram out = p;
  out.funcs[ci].body = rebuild(cons, 0);
  out.funcs.erase(out.funcs.begin() + static_cast<std::ptrdiff_t>(pi));
  return out;
}

} // namespace unitile
