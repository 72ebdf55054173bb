// stage (cache_read): copy the part of an input a loop's body reads into a small buffer
// in a faster memory scope, packed in the order of the loops that read it.
//
// Why: a contraction's operands are read many times per tile, often with a large stride
// (B[k, j] walks rows of length N). Copying each tile once into a contiguous buffer laid
// out in loop order makes every later read unit-stride and keeps the tile in the cache
// level it was sized for; on GPU-style devices the same primitive fills shared memory.
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <set>

namespace unitile {

namespace {

struct Site {
  std::vector<Expr> indices;
  Expr guard;
};

// Every read of `buffer` in `s` (stores to it are an error: staging is for inputs).
void collect_reads(const Stmt& s, const std::string& buffer, std::vector<Site>& sites, const std::string& what) {
  auto scan = [&](const Expr& e) {
    visit(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Access && x->name == buffer) sites.push_back({x->operands, x->guard});
    });
  };
  if (s->kind == StmtKind::Store && s->buffer == buffer)
    throw UserError(fmt::format("error: schedule: {}: the loop body writes {}; only buffers it "
                                "only reads can be staged",
                                what, buffer));
  for (const Expr& e : {s->min, s->extent, s->cond, s->value})
    if (e) scan(e);
  for (const Expr& i : s->indices) scan(i);
  for (const Stmt& b : s->body) collect_reads(b, buffer, sites, what);
}

// The loops inside `s` (a For) that enclose the first read of `buffer`, outermost first.
bool loops_to_read(const Stmt& s, const std::string& buffer, std::vector<const StmtNode*>& loops) {
  bool reads = false;
  auto scan = [&](const Expr& e) {
    if (e) visit(e, [&](const Expr& x) { reads |= x->kind == ExprKind::Access && x->name == buffer; });
  };
  for (const Expr& e : {s->cond, s->value}) scan(e);
  for (const Expr& i : s->indices) scan(i);
  if (reads) return true;
  for (const Stmt& b : s->body) {
    if (b->kind == StmtKind::For) loops.push_back(b.get());
    if (loops_to_read(b, buffer, loops)) return true;
    if (b->kind == StmtKind::For) loops.pop_back();
  }
  return false;
}

// The affine form of `e` in the variables `vars`, treating every subexpression that
// mentions none of them as an opaque constant (a tile's offset such as `(t // 4) * 210`
// is not affine, but it does not move with the copy loops).
std::optional<AffineForm> affine_in(const Expr& e, const std::vector<std::string>& vars) {
  int opaque = 0;
  std::function<Expr(const Expr&)> hide = [&](const Expr& x) -> Expr {
    bool mentions = false;
    for (const std::string& v : vars) mentions |= depends_on(x, v);
    if (!mentions) return x->kind == ExprKind::IntImm ? x : var(fmt::format("$opaque{}", opaque++));
    if (x->kind != ExprKind::Binary && x->kind != ExprKind::Unary && x->kind != ExprKind::Cast) return x;
    std::vector<Expr> ops;
    for (const Expr& o : x->operands) ops.push_back(hide(o));
    return with_operands(x, std::move(ops), x->guard);
  };
  return linearize(hide(e));
}

Expr zero_of(DType t) { return is_float(t) ? float_imm(0.0, t) : int_imm(0, t); }

} // namespace

Stmt stage_buffer(const LoopProgram& p, const Stmt& body, const std::string& buffer, MemScope scope,
                  const std::string& at) {
  const std::string what = fmt::format("stage {} {} at {}", buffer, mem_scope_name(scope), at);
  const LoopBuffer* src = p.find_buffer(buffer);
  if (!src) throw UserError(fmt::format("error: schedule: {}: no tensor '{}'", what, buffer));
  if (find_loops(body, at).empty())
    throw UserError(fmt::format("error: schedule: {}: no loop '{}' here", what, at));
  const std::string staged = fresh_name(p, fmt::format("{}_{}", buffer, mem_scope_name(scope)));

  LoopExtents outer; // max extents of the loops enclosing the current point
  int applied = 0;
  std::function<Stmt(const Stmt&)> walk = [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::For) {
      if (s->body.empty()) return s;
      std::vector<Stmt> b;
      for (const Stmt& c : s->body) b.push_back(walk(c));
      return with_body(s, std::move(b));
    }
    if (s->var != at) {
      auto ext = max_extent(s->extent);
      if (ext) outer[s->var] = *ext;
      Stmt r = with_body(s, {walk(s->body[0])});
      outer.erase(s->var);
      return r;
    }
    std::vector<Site> sites;
    collect_reads(s->body[0], buffer, sites, what);
    if (sites.empty()) return s;
    for (const Site& x : sites) {
      bool same = x.indices.size() == sites[0].indices.size() &&
                  ((!x.guard && !sites[0].guard) || (x.guard && sites[0].guard && equal(x.guard, sites[0].guard)));
      for (size_t n = 0; same && n < x.indices.size(); ++n) same = equal(x.indices[n], sites[0].indices[n]);
      if (!same)
        throw UserError(fmt::format("error: schedule: {}: the body reads {} at different indices; "
                                    "a stage needs one access pattern",
                                    what, buffer));
    }
    const Site& site = sites[0];
    // The loops inside `at` that move the reads, in nesting order, with their largest extents.
    std::vector<const StmtNode*> inner;
    loops_to_read(s, buffer, inner);
    std::vector<std::string> vars;
    std::vector<int64_t> extents;
    std::set<std::string> seen;
    for (const StmtNode* l : inner) {
      bool used = false;
      for (const Expr& i : site.indices) used |= depends_on(i, l->var);
      if (!used || seen.count(l->var)) continue;
      auto ext = max_extent(l->extent);
      auto mn = const_int_value(l->min);
      if (!ext || !mn || *mn != 0)
        throw UserError(fmt::format("error: schedule: {}: loop '{}' has no constant extent", what, l->var));
      seen.insert(l->var);
      vars.push_back(l->var);
      extents.push_back(*ext);
    }
    // The loop `at` itself moves the tile; its variable stays a free (outer) variable.
    auto at_ext = max_extent(s->extent);
    LoopExtents all = outer;
    if (at_ext) all[at] = *at_ext;
    for (size_t n = 0; n < vars.size(); ++n) all[vars[n]] = extents[n];

    const std::vector<int64_t> staged_shape = extents;
    // Copy nest: staged[v...] = buffer[indices], zero outside the tensor. Its loops get
    // names of their own (v_BUFFER), so later primitives naming v find the compute loops.
    std::vector<Expr> staged_index;
    for (const std::string& v : vars) staged_index.push_back(var(v));
    std::vector<std::string> copy_vars;
    std::vector<int64_t> copy_extents = extents;
    std::vector<Expr> copy_index, source_index = site.indices;
    for (const std::string& v : vars) {
      copy_vars.push_back(v + "_" + buffer);
      copy_index.push_back(var(copy_vars.back()));
      for (Expr& i : source_index)
        i = rewrite(i, [&](const Expr& e) { return e->kind == ExprKind::Var && e->name == v ? copy_index.back() : e; });
    }
    // Copy order. A staged buffer whose innermost dimension is a short micro-panel that
    // is strided in the source (GEMM's A_local[i_m, k_i, i_r]: 6 rows of A) is filled in
    // its own order:
    // each run of the innermost copy loop reads at most kMicroPanel source lines, and the
    // next run reads the next element of the same lines, so every read hits L1 and every
    // write is unit-stride. Otherwise the copy walks the source in memory order: its
    // loops are sorted by how far each moves the source (strided writes into a small
    // buffer are cheap, strided reads from a large one are not). Staged indices keep the
    // compute loops' order either way.
    std::vector<int64_t> stride(copy_vars.size(), 0);
    {
      int64_t dim_stride = 1;
      for (size_t d = source_index.size(); d-- > 0;) {
        if (auto lin = affine_in(source_index[d], copy_vars))
          for (size_t n = 0; n < copy_vars.size(); ++n) stride[n] += lin->coefficient(copy_vars[n]) * dim_stride;
        dim_stride *= src->shape[d];
      }
    }
    constexpr int64_t kMicroPanel = 16;
    // A transposing copy (the staged innermost dimension strided in the source) of a
    // dense block, whose elements are one contiguous range of the source (an attention
    // key tile: 32 whole rows of K), is filled in the staged order too: its source lines
    // are adjacent whatever the order, and the writes become unit-stride. Walked in source
    // order, LLVM (PoCL) vectorized the strided writes as scatters, a fifth of the
    // attention kernel (256x64 on PoCL, one thread: 0.23 -> 0.20 ms; cpu unchanged).
    bool dense = false;
    if (!extents.empty() && std::llabs(stride.back()) != 1) {
      std::vector<std::pair<int64_t, int64_t>> dims; // |stride|, extent of the moving dimensions
      for (size_t n = 0; n < stride.size(); ++n)
        if (extents[n] > 1) dims.emplace_back(std::llabs(stride[n]), extents[n]);
      std::sort(dims.begin(), dims.end());
      dense = !dims.empty() && dims[0].first == 1;
      for (size_t n = 1; dense && n < dims.size(); ++n) dense = dims[n].first == dims[n - 1].first * dims[n - 1].second;
    }
    const bool panel_order = !extents.empty() && std::llabs(stride.back()) != 1 && (extents.back() <= kMicroPanel || dense);
    std::vector<size_t> copy_order(copy_vars.size());
    for (size_t n = 0; n < copy_order.size(); ++n) copy_order[n] = n;
    if (!panel_order)
      std::stable_sort(copy_order.begin(), copy_order.end(),
                       [&](size_t x, size_t y) { return std::llabs(stride[x]) > std::llabs(stride[y]); });
    {
      std::vector<std::string> v;
      std::vector<int64_t> e;
      for (size_t n : copy_order) {
        v.push_back(copy_vars[n]);
        e.push_back(extents[n]);
      }
      copy_vars = v;
      copy_extents = e;
    }
    // A copy that walks the source in memory order, row by row, where a row is one run
    // of the inner loops and the next row is far away (GEMM's B block: kc rows of nc
    // elements, N apart): each row starts a new page, where the hardware prefetchers
    // start late, and the copy waits on memory. Each step of the loop just outside the
    // innermost one hints the same place kPrefetchRows rows ahead (clamped into the
    // tensor), so the rows are in cache when the copy reaches them. Eight rows of the
    // B block measured best on the Zen 3 host (the 128 x 50257 x 768 GEMM, whose B
    // is read from memory); the hint is a no-op where the dialect has none.
    constexpr int64_t kPrefetchRows = 8;
    std::optional<Stmt> row_hint;
    if (!panel_order && copy_vars.size() >= 2) {
      int64_t inner_span = 1;
      for (size_t n = 1; n < copy_order.size(); ++n) inner_span += std::llabs(stride[copy_order[n]]) * (extents[copy_order[n]] - 1);
      if (std::llabs(stride[copy_order[0]]) > inner_span && extents[copy_order[0]] > kPrefetchRows) {
        const std::string row = copy_vars[0], inner = copy_vars.back();
        std::vector<Expr> ahead;
        for (size_t d = 0; d < source_index.size(); ++d) {
          Expr e = rewrite(source_index[d], [&](const Expr& x) -> Expr {
            if (x->kind != ExprKind::Var) return x;
            if (x->name == row) return binary(BinaryOp::Add, x, int_imm(kPrefetchRows));
            if (x->name == inner) return int_imm(0);
            return x;
          });
          e = call(MathFn::Max, {call(MathFn::Min, {e, int_imm(src->shape[d] - 1)}), int_imm(0)});
          ahead.push_back(simplify(e));
        }
        row_hint = prefetch(buffer, std::move(ahead));
      }
    }
    auto hinted = [&](size_t n, Stmt s) {
      return row_hint && n + 2 == vars.size() ? block({*row_hint, s}) : s;
    };
    // The copy loops from position `from` inward, around `leaf`; the innermost is
    // vectorized when `vector` is set.
    auto copy_loops = [&](size_t from, Stmt leaf, bool vector) {
      for (size_t n = vars.size(); n-- > from;)
        leaf = for_loop(copy_vars[n], int_imm(0), int_imm(copy_extents[n]),
                        vector && n + 1 == vars.size() ? ForKind::Vectorized : ForKind::Serial, hinted(n, leaf));
      return leaf;
    };
    auto copy_nest = [&](Expr guard) {
      return copy_loops(0, store(staged, copy_index, access(buffer, source_index, src->dtype, guard)), true);
    };
    bool in_range = true;
    for (size_t d = 0; d < site.indices.size(); ++d) {
      auto r = bounds_of(site.indices[d], all);
      in_range &= r && r->min >= 0 && r->max < src->shape[d];
    }
    Stmt copy;
    if (site.guard || in_range || vars.empty()) {
      copy = copy_nest(site.guard);
    } else {
      // The range test is hoisted out of the loops from `test_at` inward: once per
      // micro-panel in panel order, once per run of the innermost loop otherwise. Full
      // runs copy without range tests (vector code), partial ones read zeros past the
      // edge.
      const size_t test_at = panel_order ? std::min<size_t>(1, vars.size() - 1) : vars.size() - 1;
      const std::vector<std::string> inner_vars(copy_vars.begin() + static_cast<std::ptrdiff_t>(test_at),
                                                copy_vars.end());
      Expr full;
      LoopExtents copy_ranges = outer;
      if (at_ext) copy_ranges[at] = *at_ext;
      for (size_t n = 0; n < copy_vars.size(); ++n) copy_ranges[copy_vars[n]] = copy_extents[n];
      bool testable = true;
      for (size_t d = 0; d < source_index.size() && testable; ++d) {
        if (auto r = bounds_of(source_index[d], copy_ranges); r && r->min >= 0 && r->max < src->shape[d])
          continue; // this index never leaves the tensor
        auto lin = affine_in(source_index[d], inner_vars);
        if (!lin) {
          testable = false;
          break;
        }
        // The index is affine in the inner loops: its extremes are at their corners.
        auto corner = [&](bool high) {
          return simplify(rewrite(source_index[d], [&](const Expr& e) {
            if (e->kind != ExprKind::Var) return e;
            for (size_t n = test_at; n < copy_vars.size(); ++n)
              if (e->name == copy_vars[n]) {
                bool up = (lin->coefficient(e->name) > 0) == high;
                return int_imm(up ? copy_extents[n] - 1 : 0);
              }
            return e;
          }));
        };
        Expr ok = binary(BinaryOp::And, binary(BinaryOp::Ge, corner(false), int_imm(0)),
                         binary(BinaryOp::Lt, corner(true), int_imm(src->shape[d])));
        full = full ? binary(BinaryOp::And, full, ok) : ok;
      }
      if (!testable || !full) {
        copy = copy_nest(zero_of(src->dtype));
      } else {
        Stmt fast = copy_loops(test_at, store(staged, copy_index, access(buffer, source_index, src->dtype)), true);
        Stmt slow = copy_loops(
            test_at, store(staged, copy_index, access(buffer, source_index, src->dtype, zero_of(src->dtype))), false);
        Stmt inner = if_then(full, fast, slow);
        for (size_t n = test_at; n-- > 0;)
          inner = for_loop(copy_vars[n], int_imm(0), int_imm(copy_extents[n]), ForKind::Serial, hinted(n, inner));
        copy = inner;
      }
    }
    ++applied;
    Stmt rest = map_exprs(s->body[0], [&](const Expr& e) -> Expr {
      if (e->kind != ExprKind::Access || e->name != buffer) return e;
      return access(staged, staged_index, src->dtype, nullptr, e->loc);
    });
    // The buffer is allocated once around the loop (every iteration refills all of it),
    // unless the loop is a grid loop, whose iterations run in parallel.
    if (s->for_kind >= ForKind::GridX)
      return with_body(s, {allocate(staged, src->dtype, staged_shape, scope, block({copy, rest}))});
    return allocate(staged, src->dtype, staged_shape, scope, with_body(s, {block({copy, rest})}));
  };
  Stmt r = walk(body);
  if (!applied)
    throw UserError(fmt::format("error: schedule: {}: loop '{}' does not read {}", what, at, buffer));
  return r;
}

} // namespace unitile
