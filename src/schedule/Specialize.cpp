// Substitution of bound symbols by constants and integer constant folding.
#include "schedule/Specialize.h"

#include "schedule/ShapeEval.h"

namespace unitile {

namespace {

bool is_int_const(const Expr& e, int64_t* v = nullptr) {
  if (e->kind != ExprKind::IntImm) return false;
  if (v) *v = e->int_value;
  return true;
}

void collect_vars(const Expr& e, std::set<std::string>& out) {
  visit(e, [&](const Expr& n) {
    if (n->kind == ExprKind::Var) out.insert(n->name);
  });
}

// Variables used inside index positions anywhere in `e` (access indices, nested too).
void collect_index_vars(const Expr& e, std::set<std::string>& out) {
  visit(e, [&](const Expr& n) {
    if (n->kind != ExprKind::Access) return;
    for (const Expr& i : n->operands) collect_vars(i, out);
  });
}

Expr fold_node(const Expr& e);

// `a + c` written the way a person would: `a`, `a + 3` or `a - 3`.
Expr offset(const Expr& a, int64_t c, DType t, SourceLoc loc) {
  if (c == 0 && a->type == t) return a;
  if (c < 0) return binary(BinaryOp::Sub, a, int_imm(-c, t), loc);
  return binary(BinaryOp::Add, a, int_imm(c, t), loc);
}

// `a` as `base + c` when it is an addition or subtraction of a constant.
bool split_offset(const Expr& a, Expr* base, int64_t* c) {
  if (a->kind != ExprKind::Binary || !is_int_const(a->operands[1])) return false;
  if (a->binary_op != BinaryOp::Add && a->binary_op != BinaryOp::Sub) return false;
  *base = a->operands[0];
  *c = a->operands[1]->int_value * (a->binary_op == BinaryOp::Add ? 1 : -1);
  return true;
}

Expr fold_node(const Expr& e) {
  if (e->kind == ExprKind::Cast) {
    int64_t v;
    const Expr& x = e->operands[0];
    if (!is_int_const(x, &v)) return e;
    if (is_float(e->type)) return float_imm(static_cast<double>(v), e->type, e->loc);
    if (e->type == DType::I64 || e->type == DType::I32) return int_imm(v, e->type, e->loc);
    return e;
  }
  if (e->kind == ExprKind::Unary && e->unary_op == UnaryOp::Neg && !is_float(e->type)) {
    int64_t v;
    if (is_int_const(e->operands[0], &v)) return int_imm(-v, e->type, e->loc);
    return e;
  }
  if (e->kind != ExprKind::Binary || !is_integer(e->type)) return e;
  const Expr& a = e->operands[0];
  const Expr& b = e->operands[1];
  int64_t x = 0, y = 0;
  bool ca = is_int_const(a, &x), cb = is_int_const(b, &y);
  // Keep the node's own type when an operand is returned on its own.
  auto same_type = [&](const Expr& o) { return o->type == e->type; };
  if (ca && cb) {
    switch (e->binary_op) {
    case BinaryOp::Add: return int_imm(x + y, e->type, e->loc);
    case BinaryOp::Sub: return int_imm(x - y, e->type, e->loc);
    case BinaryOp::Mul: return int_imm(x * y, e->type, e->loc);
    case BinaryOp::FloorDiv:
      if (y != 0) return int_imm(floor_div(x, y), e->type, e->loc);
      return e;
    case BinaryOp::Mod:
      if (y != 0) return int_imm(floor_mod(x, y), e->type, e->loc);
      return e;
    case BinaryOp::Div:
      if (y != 0) return int_imm(x / y, e->type, e->loc);
      return e;
    default: return e;
    }
  }
  switch (e->binary_op) {
  case BinaryOp::Add:
  case BinaryOp::Sub: {
    int64_t sign = e->binary_op == BinaryOp::Add ? 1 : -1;
    if (cb && y == 0 && same_type(a)) return a;
    if (ca && x == 0 && sign == 1 && same_type(b)) return b;
    if (!cb) return e;
    // (a + c1) + c2 -> a + (c1 + c2), so chains of offsets collapse.
    Expr base;
    int64_t c1 = 0;
    if (split_offset(a, &base, &c1)) return offset(base, c1 + sign * y, e->type, e->loc);
    if (sign == -1 && y < 0) return offset(a, -y, e->type, e->loc);
    return e;
  }
  case BinaryOp::Mul:
    if (cb && y == 1 && same_type(a)) return a;
    if (ca && x == 1 && same_type(b)) return b;
    if ((cb && y == 0) || (ca && x == 0)) return int_imm(0, e->type, e->loc);
    return e;
  case BinaryOp::FloorDiv:
  case BinaryOp::Div:
    if (cb && y == 1 && same_type(a)) return a;
    return e;
  case BinaryOp::Mod:
    if (cb && (y == 1 || y == -1)) return int_imm(0, e->type, e->loc);
    return e;
  default: return e;
  }
}

} // namespace

std::set<std::string> specialization_params(const Kernel& k) {
  std::set<std::string> used;
  for (const Comprehension& c : k.body) {
    collect_index_vars(c.value, used);
    for (const auto& [v, r] : c.ranges) collect_vars(r, used);
  }
  std::set<std::string> out;
  for (const ParamDecl& p : k.params)
    if (is_integer(p.dtype) && used.count(p.name)) out.insert(p.name);
  return out;
}

std::set<std::string> bound_names(const Kernel& k) {
  std::set<std::string> names = specialization_params(k);
  for (const std::string& s : k.shape_symbols()) names.insert(s);
  return names;
}

Expr fold_constants(const Expr& e) {
  return rewrite(e, [](const Expr& n) { return fold_node(n); });
}

Expr specialize(const Expr& e, const std::set<std::string>& names, const ShapeBindings& b) {
  return rewrite(e, [&](const Expr& n) -> Expr {
    if (n->kind == ExprKind::Var && names.count(n->name)) {
      auto it = b.find(n->name);
      if (it != b.end()) return int_imm(it->second, is_float(n->type) ? DType::I64 : n->type, n->loc);
    }
    return fold_node(n);
  });
}

} // namespace unitile
