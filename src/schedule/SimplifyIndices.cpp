// Division and modulo removal in index expressions (see SimplifyIndices.h).
//
// The rule: write the affine dividend as x = G*y + s, where G divides d, every term of y
// has an integer coefficient and s (the terms whose coefficients G does not divide, and
// the constant's residue) provably lies in [0, G). Then x // d = y // (d/G) and
// x % d = (y % (d/G))*G + s, both exact for floor division, which is what `//` and `%`
// mean in the IR. The largest such G wins; with G = d the division disappears.
#include "schedule/SimplifyIndices.h"

#include "schedule/ShapeEval.h"

#include <numeric>

namespace unitile {

namespace {

Expr affine_expr(const AffineForm& f) {
  Expr out;
  for (const auto& [v, c] : f.coef) {
    Expr term = c == 1 ? var(v) : binary(BinaryOp::Mul, var(v), int_imm(c));
    out = out ? binary(BinaryOp::Add, out, term) : term;
  }
  if (!out) return int_imm(f.constant);
  if (f.constant != 0) out = binary(BinaryOp::Add, out, int_imm(f.constant));
  return out;
}

struct Split {
  AffineForm quotient; // y
  AffineForm rest;     // s, within [0, g)
  int64_t g = 0;
};

std::optional<Split> split_by(const AffineForm& x, int64_t g, const LoopExtents& ranges) {
  Split sp;
  sp.g = g;
  sp.quotient.constant = floor_div(x.constant, g);
  sp.rest.constant = floor_mod(x.constant, g);
  for (const auto& [v, c] : x.coef) {
    if (c % g == 0)
      sp.quotient.coef[v] = c / g;
    else
      sp.rest.coef[v] = c;
  }
  auto r = bounds_of(affine_expr(sp.rest), ranges);
  if (!r || r->min < 0 || r->max >= g) return std::nullopt;
  return sp;
}

std::optional<Split> best_split(const AffineForm& x, int64_t d, const LoopExtents& ranges) {
  std::vector<int64_t> candidates{d};
  for (const auto& [v, c] : x.coef) candidates.push_back(std::gcd(c < 0 ? -c : c, d));
  std::optional<Split> best;
  for (int64_t g : candidates) {
    if (g <= 1 || (best && best->g >= g)) continue;
    if (auto sp = split_by(x, g, ranges)) best = sp;
  }
  return best;
}

} // namespace

Expr simplify_div_mod(const Expr& e, const LoopExtents& ranges) {
  if (!e || e->kind != ExprKind::Binary || is_float(e->type)) return e;
  const BinaryOp op = e->binary_op;
  if (op != BinaryOp::FloorDiv && op != BinaryOp::Mod) return e;
  const Expr& divisor = e->operands[1];
  if (divisor->kind != ExprKind::IntImm || divisor->int_value <= 0) return e;
  const int64_t d = divisor->int_value;
  auto x = linearize(e->operands[0]);
  if (!x) return e;
  auto sp = best_split(*x, d, ranges);
  if (!sp) return e;
  const int64_t rest_d = d / sp->g;
  const Expr y = affine_expr(sp->quotient);
  Expr out;
  if (op == BinaryOp::FloorDiv) {
    out = rest_d == 1 ? y : simplify_div_mod(binary(BinaryOp::FloorDiv, y, int_imm(rest_d)), ranges);
  } else {
    const Expr s = affine_expr(sp->rest);
    if (rest_d == 1) {
      out = s;
    } else {
      Expr high = binary(BinaryOp::Mul, simplify_div_mod(binary(BinaryOp::Mod, y, int_imm(rest_d)), ranges),
                         int_imm(sp->g));
      out = sp->rest.coef.empty() && sp->rest.constant == 0 ? high : binary(BinaryOp::Add, high, s);
    }
  }
  if (out->type != e->type) out = cast(e->type, out);
  return out;
}

Kernel simplify_indices(const Kernel& k, const ShapeBindings& b) {
  Kernel out = k;
  for (Comprehension& c : out.body) {
    LoopExtents ranges;
    for (const auto& [v, extent] : c.ranges)
      if (auto n = try_eval_int(extent, b, "the range of '" + v + "'")) ranges[v] = *n;
    // Bound shape symbols become constants, so that `i * D + j` is affine.
    auto step = [&](const Expr& e) -> Expr {
      if (e->kind == ExprKind::Var && !c.ranges.count(e->name)) {
        auto it = b.find(e->name);
        if (it != b.end() && !is_float(e->type)) return int_imm(it->second, e->type);
        return e;
      }
      return simplify_div_mod(e, ranges);
    };
    auto in_indices = [&](const Expr& e) -> Expr {
      return rewrite(e, [&](const Expr& n) -> Expr {
        if (n->kind != ExprKind::Access) return n;
        std::vector<Expr> idx;
        bool changed = false;
        for (const Expr& i : n->operands) {
          idx.push_back(rewrite(i, step));
          changed |= idx.back() != i;
        }
        return changed ? with_operands(n, std::move(idx), n->guard) : n;
      });
    };
    c.value = in_indices(c.value);
    for (Expr& s : c.store_indices) s = rewrite(s, step);
  }
  return out;
}

} // namespace unitile
