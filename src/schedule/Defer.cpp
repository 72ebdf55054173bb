// defer: a slice's last pass, the one that writes the output, runs one slice later,
// inside the previous pass of the next slice.
//
// Why: a row chain (softmax, layernorm, rmsnorm) reads a row, computes on it in L1, then
// writes the whole output row at the end with streaming stores. One core issues those
// 16 KiB of stores in a burst at the end of every row: the write-combining buffers fill
// and the core waits on memory with nothing to compute, then computes the next row's
// passes with the store path idle. Writing row i - 1 from inside the pass that computes
// row i spreads the stores over that pass's compute (measured on one Zen 4 core, softmax
// over 4096 x 4096 f32: 1.57 -> 1.35 us a row, the same as with no output stores at
// all).
//
// How: the slice loop `at` (extent N, a multiple of `rows`) becomes a loop over chunks of
// `rows` slices (the same loop kind, so one task per chunk) around a serial loop over the
// chunk's slices. The last loop nest L, the last statement of the slice (through its
// allocations and lets), writes `out`; the partner P is the last loop nest before it
// whose iterations cover the same count as L's loop (a perfect nest, numbered in row-major
// order). Each slice but a chunk's first runs P fused with L's body for the previous slice
// (the slice variable one less, L's loop variable the nest's row-major number), and L
// runs once more after the chunk for its last slice. Buffers allocated in the slice that L
// reads (keep_terms' row of terms) get two copies, the slice's parity picking one; lets on
// the way to L get a copy for the previous slice. Prefetch hints in L stay with the
// current slice (they point at the next one already). Results are those of the original
// order: every slice's output is written once, from the same values.
#include "schedule/IndexArith.h"
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <functional>
#include <map>
#include <set>

namespace unitile {

namespace {

// The perfect nest at `l`: its loops, outermost first (each with min 0 and a constant
// extent), or empty when it is not one.
std::vector<const StmtNode*> perfect_nest(const StmtNode* l) {
  std::vector<const StmtNode*> loops;
  for (;;) {
    auto mn = const_int_value(l->min);
    auto ex = const_int_value(l->extent);
    if (!mn || *mn != 0 || !ex || *ex < 1) return {};
    loops.push_back(l);
    const Stmt& b = l->body[0];
    if (b->kind != StmtKind::For) return loops;
    l = b.get();
  }
}

int64_t trip_count(const std::vector<const StmtNode*>& nest) {
  int64_t n = 1;
  for (const StmtNode* l : nest) n *= *const_int_value(l->extent);
  return n;
}

// `e` with variable `v` replaced by `by`.
Expr substitute_expr(const Expr& e, const std::string& v, const Expr& by) {
  return rewrite(e, [&](const Expr& x) -> Expr { return x->kind == ExprKind::Var && x->name == v ? by : x; });
}

// Rewrite every access and store of the buffers in `doubled` (name -> rank) to take the
// copy `parity` (a new first index); those that have one already keep it.
Stmt with_parity(const Stmt& s, const std::map<std::string, size_t>& doubled, const Expr& parity) {
  std::function<Expr(const Expr&)> fix = [&](const Expr& e) -> Expr {
    if (!e) return e;
    return rewrite(e, [&](const Expr& a) -> Expr {
      if (a->kind != ExprKind::Access || !doubled.count(a->name) || a->operands.size() != doubled.at(a->name))
        return a;
      std::vector<Expr> idx{parity};
      idx.insert(idx.end(), a->operands.begin(), a->operands.end());
      return access(a->name, std::move(idx), a->type, a->guard);
    });
  };
  Stmt r = map_exprs(s, fix);
  return mutate(r, [&](const Stmt& x) -> Stmt {
    if ((x->kind != StmtKind::Store && x->kind != StmtKind::Prefetch) || !doubled.count(x->buffer) ||
        x->indices.size() != doubled.at(x->buffer))
      return x;
    auto n = std::make_shared<StmtNode>(*x);
    n->indices.insert(n->indices.begin(), parity);
    return n;
  });
}

} // namespace

Stmt defer_last_pass(const LoopProgram& p, const Stmt& body, const std::string& out, const std::string& at,
                     int64_t rows) {
  auto fail = [&](const std::string& why) {
    return UserError(fmt::format("error: schedule: defer {} at {}: {}", out, at, why));
  };
  if (rows < 2) throw fail(fmt::format("rows {}: a chunk holds 2 slices or more", rows));
  if (find_loops(body, at).empty()) throw fail(fmt::format("no loop '{}' here", at));
  int applied = 0;
  Stmt result = mutate(body, [&](const Stmt& loop) -> Stmt {
    if (loop->kind != StmtKind::For || loop->var != at) return loop;
    auto mn = const_int_value(loop->min);
    auto n = const_int_value(loop->extent);
    if (!mn || *mn != 0 || !n) throw fail(fmt::format("loop '{}' needs the range 0..N with a constant N", at));
    if (*n % rows != 0 || *n < 2 * rows)
      throw fail(fmt::format("loop '{}' has {} iterations: not two chunks or more of {} slices", at, *n, rows));
    const Stmt& slice = loop->body[0];

    // The path to L: through the last statement of each block, the body of each
    // allocation and let.
    struct Step {
      Stmt node;
      size_t child;
    };
    std::vector<Step> path;
    Stmt cur = slice;
    while (cur->kind != StmtKind::For) {
      if (cur->kind == StmtKind::Block && !cur->body.empty()) {
        path.push_back({cur, cur->body.size() - 1});
        cur = cur->body.back();
      } else if (cur->kind == StmtKind::Allocate || cur->kind == StmtKind::Let) {
        path.push_back({cur, 0});
        cur = cur->body[0];
      } else {
        throw fail(fmt::format("the last statement of loop '{}' is not a loop nest", at));
      }
    }
    const Stmt last = cur;
    if (!stmt_writes(last, out)) throw fail(fmt::format("the last loop nest of '{}' does not write {}", at, out));
    // L: one loop whose body stores only into `out` (and hints the caches).
    const std::vector<const StmtNode*> l_nest = perfect_nest(last.get());
    if (l_nest.size() != 1) throw fail(fmt::format("the loop nest writing {} is not one loop from 0", out));
    bool only_out = true;
    std::function<void(const Stmt&)> check_l = [&](const Stmt& x) {
      if (x->kind == StmtKind::Store && x->buffer != out) only_out = false;
      if (x->kind == StmtKind::For || x->kind == StmtKind::Allocate || x->kind == StmtKind::Matrix) only_out = false;
      for (const Stmt& c : x->body) check_l(c);
    };
    check_l(last->body[0]);
    if (!only_out) throw fail(fmt::format("the loop writing {} does more than store {} (or nests loops)", out, out));
    const int64_t l_trips = trip_count(l_nest);

    // What L reads that the slice allocates: those get two copies. Lets on the path get
    // a copy for the previous slice.
    std::map<std::string, size_t> doubled; // name -> rank
    std::vector<const StmtNode*> lets;
    for (const Step& s : path) {
      if (s.node->kind == StmtKind::Allocate && stmt_reads(last, s.node->buffer)) doubled[s.node->buffer] = s.node->shape.size();
      if (s.node->kind == StmtKind::Let) lets.push_back(s.node.get());
    }
    for (const StmtNode* l : lets)
      for (const auto& [b, rank] : doubled)
        if (expr_reads(l->value, b))
          throw fail(fmt::format("the let '{}' before the loop writing {} reads the slice's buffer {}", l->var, out, b));
    // No other statement of the slice may write `out`, and nothing after L may read it.
    bool out_elsewhere = false;
    for (const Step& s : path)
      if (s.node->kind == StmtKind::Block)
        for (size_t c = 0; c < s.child; ++c) out_elsewhere |= stmt_writes(s.node->body[c], out) || stmt_reads(s.node->body[c], out);
    if (out_elsewhere) throw fail(fmt::format("another statement of the slice touches {}", out));

    // P: the last loop nest before L (depth first, from the end) with L's trip count.
    const StmtNode* partner = nullptr;
    std::function<void(const Stmt&)> search = [&](const Stmt& x) {
      if (partner) return;
      if (x->kind == StmtKind::For) {
        std::vector<const StmtNode*> nest = perfect_nest(x.get());
        if (!nest.empty() && trip_count(nest) == l_trips && nest.back()->body[0]->kind != StmtKind::For) {
          bool plain = true; // its innermost body: stores and hints only
          std::function<void(const Stmt&)> look = [&](const Stmt& y) {
            if (y->kind != StmtKind::Store && y->kind != StmtKind::Prefetch && y->kind != StmtKind::Block) plain = false;
            for (const Stmt& z : y->body) look(z);
          };
          look(nest.back()->body[0]);
          if (plain) partner = x.get();
        }
        return;
      }
      if (x->kind == StmtKind::Block) {
        for (size_t c = x->body.size(); c-- > 0;) search(x->body[c]);
        return;
      }
      if (x->kind == StmtKind::Allocate || x->kind == StmtKind::Let) search(x->body[0]);
    };
    for (size_t s = path.size(); s-- > 0 && !partner;)
      if (path[s].node->kind == StmtKind::Block)
        for (size_t c = path[s].child; c-- > 0 && !partner;) search(path[s].node->body[c]);
    if (!partner)
      throw fail(fmt::format("no loop nest before the one writing {} runs its {} iterations", out, l_trips));
    const std::vector<const StmtNode*> p_nest = perfect_nest(partner);

    // The chunk's loops and the slice's index in them.
    const std::string chunk = fresh_name(p, at + "_c"), row = fresh_name(p, at + "_r");
    const Expr slice_index = binary(BinaryOp::Add, binary(BinaryOp::Mul, var(chunk), int_imm(rows)), var(row));
    const Expr parity = binary(BinaryOp::Mod, var(row), int_imm(2));
    const Expr previous_parity = binary(BinaryOp::Mod, binary(BinaryOp::Add, var(row), int_imm(1)), int_imm(2));

    // L's body for the previous slice, at P's row-major element number.
    Expr element = var(p_nest[0]->var);
    for (size_t k = 1; k < p_nest.size(); ++k)
      element = binary(BinaryOp::Add, binary(BinaryOp::Mul, element, p_nest[k]->extent), var(p_nest[k]->var));
    Stmt deferred = substitute(last->body[0], l_nest[0]->var, element);
    std::vector<Stmt> moved;
    const std::vector<Stmt> parts = deferred->kind == StmtKind::Block ? deferred->body : std::vector<Stmt>{deferred};
    for (const Stmt& x : parts)
      moved.push_back(x->kind == StmtKind::Prefetch
                          ? x
                          : substitute(x, at, binary(BinaryOp::Sub, var(at), int_imm(1))));
    deferred = block(std::move(moved));
    std::vector<std::string> let_copies;
    for (const StmtNode* l : lets) {
      let_copies.push_back(fresh_name(p, l->var + "_prev"));
      deferred = substitute(deferred, l->var, var(let_copies.back(), l->value->type));
    }
    deferred = with_parity(deferred, doubled, previous_parity);
    // The fused nest: P with the deferred body after its own, in the innermost loop.
    std::function<Stmt(const StmtNode*, size_t)> fuse = [&](const StmtNode* l, size_t depth) -> Stmt {
      auto copy = std::make_shared<StmtNode>(*l);
      if (depth + 1 < p_nest.size())
        copy->body = {fuse(l->body[0].get(), depth + 1)};
      else
        copy->body = {block({l->body[0], deferred})};
      return copy;
    };
    Stmt fused = fuse(partner, 0);
    for (size_t k = lets.size(); k-- > 0;)
      fused = let_stmt(let_copies[k], substitute_expr(lets[k]->value, at, binary(BinaryOp::Sub, var(at), int_imm(1))),
                       fused);
    // The slice without L (and the wrappers that held only L), with P chosen per slice.
    std::function<std::optional<Stmt>(size_t)> without_last = [&](size_t depth) -> std::optional<Stmt> {
      if (depth == path.size()) return std::nullopt;
      const Step& s = path[depth];
      std::optional<Stmt> inner = without_last(depth + 1);
      if (s.node->kind == StmtKind::Block) {
        std::vector<Stmt> kids(s.node->body.begin(), s.node->body.begin() + static_cast<std::ptrdiff_t>(s.child));
        if (inner) kids.push_back(*inner);
        if (kids.empty()) return std::nullopt;
        return block(std::move(kids));
      }
      if (!inner) return std::nullopt;
      if (s.node->kind == StmtKind::Allocate && doubled.count(s.node->buffer)) return *inner; // hoisted
      return with_body(s.node, {*inner});
    };
    std::optional<Stmt> rest = without_last(0);
    if (!rest) throw fail("the slice holds nothing before the loop writing " + out);
    bool placed = false;
    Stmt per_slice = mutate(*rest, [&](const Stmt& x) -> Stmt {
      if (x.get() != partner) return x;
      placed = true;
      return if_then(binary(BinaryOp::Gt, var(row), int_imm(0)), fused, x);
    });
    if (!placed) throw fail("the loop nest before the one writing " + out + " is not in the slice's own statements");
    per_slice = with_parity(per_slice, doubled, parity);
    // L once more for the chunk's last slice, inside the lets of its path.
    Stmt tail = with_parity(last, doubled, int_imm((rows - 1) % 2));
    for (size_t k = lets.size(); k-- > 0;) tail = let_stmt(lets[k]->var, lets[k]->value, tail);
    const Expr last_index = binary(BinaryOp::Add, binary(BinaryOp::Mul, var(chunk), int_imm(rows)), int_imm(rows - 1));
    Stmt chunk_body = block({for_loop(row, int_imm(0), int_imm(rows), ForKind::Serial, substitute(per_slice, at, slice_index)),
                             substitute(tail, at, last_index)});
    for (const Step& s : path)
      if (s.node->kind == StmtKind::Allocate && doubled.count(s.node->buffer)) {
        std::vector<int64_t> shape{2};
        shape.insert(shape.end(), s.node->shape.begin(), s.node->shape.end());
        chunk_body = allocate(s.node->buffer, s.node->dtype, shape, s.node->scope, chunk_body);
      }
    ++applied;
    return for_loop(chunk, int_imm(0), int_imm(*n / rows), loop->for_kind, chunk_body);
  });
  if (!applied) throw fail(fmt::format("no loop '{}' here", at));
  return simplify(result);
}

} // namespace unitile
