// compute_at: run a producer statement inside its consumer's outermost loop, one launch
// instead of two.
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

bool writes(const Stmt& s, const std::string& b) {
  if (s->kind == StmtKind::Store && s->buffer == b) return true;
  for (const Stmt& c : s->body)
    if (writes(c, b)) return true;
  return false;
}

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
    if (writes(p.funcs[n].body, buffer)) producers.push_back(n);
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
  if (cons->kind != StmtKind::For || cons->var != at)
    throw fail(fmt::format("'{}' is not the outermost loop of the statement that reads '{}'", at, buffer));
  if (prod->kind != StmtKind::For) throw fail("the producer has no outermost loop");
  auto pe = const_int_value(prod->extent), ce = const_int_value(cons->extent);
  if (!pe || !ce || *pe != *ce || prod->for_kind != cons->for_kind)
    throw fail(fmt::format("the producer's outermost loop '{}' and '{}' differ in extent or kind", prod->var, at));
  // The producer's iteration v writes exactly the elements the consumer's iteration v reads.
  std::vector<std::vector<Expr>> w, r;
  accesses(prod, buffer, true, w);
  accesses(cons, buffer, false, r);
  size_t dim = SIZE_MAX;
  for (size_t d = 0; d < w[0].size(); ++d) {
    bool ok = true;
    for (const auto& x : w) ok &= x[d]->kind == ExprKind::Var && x[d]->name == prod->var;
    for (const auto& x : r) ok &= x[d]->kind == ExprKind::Var && x[d]->name == at;
    if (ok) {
      dim = d;
      break;
    }
  }
  if (dim == SIZE_MAX)
    throw fail(fmt::format("the consumer reads '{}' at elements another iteration of '{}' writes", buffer, at));
  // Renaming the producer's loop variable to `at` must not capture a loop of its own
  // named `at` (a transposing producer: `T[i1, i0] = X[i0, i1]` read as T[i0, i1]).
  if (prod->var != at && binds(prod->body[0], at))
    throw fail(fmt::format("the producer has a loop of its own named '{}'", at));
  Stmt moved = prod->var == at ? prod->body[0] : substitute(prod->body[0], prod->var, var(at));
  LoopProgram out = p;
  out.funcs[ci].body = with_body(cons, {block({moved, cons->body[0]})});
  out.funcs.erase(out.funcs.begin() + static_cast<std::ptrdiff_t>(pi));
  return out;
}

} // namespace unitile
