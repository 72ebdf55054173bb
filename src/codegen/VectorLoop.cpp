// The vector-extension eligibility analysis of vectorized loops (see VectorLoop.h).
#include "codegen/VectorLoop.h"

#include "codegen/VectorMath.h"

#include <map>

namespace unitile::codegen {

bool uses_var(const Expr& e, const std::string& var) {
  bool found = false;
  visit(e, [&](const Expr& n) { found |= n->kind == ExprKind::Var && n->name == var; });
  return found;
}

DType select_lanes(const Expr& sel, DType want, const std::string& var) {
  if (is_integer(sel->type) && is_float(want) && !uses_var(sel->operands[1], var) && !uses_var(sel->operands[2], var))
    return want;
  return sel->type;
}

std::optional<int64_t> affine_coefficient(const Expr& e, const std::string& var) {
  if (!uses_var(e, var))
    return 0;
  switch (e->kind) {
  case ExprKind::Var:
    return 1;
  case ExprKind::Unary: {
    if (e->unary_op != UnaryOp::Neg)
      return std::nullopt;
    auto c = affine_coefficient(e->operands[0], var);
    if (!c)
      return std::nullopt;
    return -*c;
  }
  case ExprKind::Binary: {
    auto a = affine_coefficient(e->operands[0], var), b = affine_coefficient(e->operands[1], var);
    if (!a || !b)
      return std::nullopt;
    switch (e->binary_op) {
    case BinaryOp::Add:
      return *a + *b;
    case BinaryOp::Sub:
      return *a - *b;
    case BinaryOp::Mul: {
      const Expr& x = e->operands[0];
      const Expr& y = e->operands[1];
      if (*a == 0 && x->kind == ExprKind::IntImm)
        return x->int_value * *b;
      if (*b == 0 && y->kind == ExprKind::IntImm)
        return y->int_value * *a;
      return std::nullopt;
    }
    default:
      return std::nullopt;
    }
  }
  case ExprKind::Cast:
    if (e->type != DType::I64)
      return std::nullopt;
    return affine_coefficient(e->operands[0], var);
  default:
    return std::nullopt;
  }
}

AccessStride access_stride(const std::vector<Expr>& indices, const std::vector<int64_t>& shape,
                           const std::string& var) {
  if (indices.size() != shape.size())
    return AccessStride::Other;
  int64_t total = 0, stride = 1;
  for (size_t k = indices.size(); k-- > 0;) {
    auto c = affine_coefficient(indices[k], var);
    if (!c)
      return AccessStride::Other;
    total += *c * stride;
    stride *= shape[k];
  }
  if (total == 0)
    return AccessStride::Invariant;
  return total == 1 ? AccessStride::Unit : AccessStride::Other;
}

bool vector_lane_type(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::I32 || t == DType::I64 ||
         byte_lane_type(t);
}

bool byte_lane_type(DType t) { return t == DType::I8 || t == DType::U8 || t == DType::Bool; }

bool half_type(DType t) { return t == DType::F16 || t == DType::BF16; }

DType lane_type(DType t) { return half_type(t) ? DType::F32 : t; }

namespace {

class Eligibility {
public:
  Eligibility(const std::string& var, const VectorBufferLookup& buffers,
              const std::map<std::string, const StmtNode*>& stored, bool half_lanes)
      : var_(var), buffers_(buffers), stored_(stored), half_lanes_(half_lanes) {}

  // Element types a lane may hold here.
  bool lane_ok(DType t) const { return vector_lane_type(t) || (half_lanes_ && half_type(t)); }

  // Every read of a buffer this loop stores must be that store's own element, or the
  // vector order (all lanes of one store, then the next) could differ from the scalar one.
  bool hazard_free(const Expr& e) const {
    bool ok = true;
    visit(e, [&](const Expr& n) {
      if (n->kind != ExprKind::Access)
        return;
      auto it = stored_.find(n->name);
      if (it == stored_.end())
        return;
      // The same element as the store's, or in a dimension where neither index moves
      // with the loop (nor reads a tensor) maybe another: those two are then either equal
      // for the whole loop (the same element again) or never (no overlap); a defer's two
      // row buffers, [r % 2, j] stored and [(r + 1) % 2, j] read, are such a pair.
      const auto& idx = it->second->indices;
      bool same = idx.size() == n->operands.size();
      for (size_t k = 0; same && k < idx.size(); ++k)
        same = equal(idx[k], n->operands[k]) ||
               (!uses_var(idx[k], var_) && !uses_var(n->operands[k], var_) && !reads_tensor(idx[k]) &&
                !reads_tensor(n->operands[k]));
      ok &= same;
    });
    return ok;
  }

  // `e` printed as a vector of `want` lanes.
  bool value(const Expr& e, DType want) const {
    if (!lane_ok(want))
      return false;
    if (!uses_var(e, var_))
      return true; // broadcast
    // An integer value affine in the loop variable (an iota: range, the windows' sample
    // position): lane 0's value plus the slope times each lane's number.
    if (is_integer(e->type) && e->kind != ExprKind::Access && affine_coefficient(e, var_))
      return (want == DType::I32 || want == DType::I64) && is_integer(e->type);
    switch (e->kind) {
    case ExprKind::Access: {
      auto b = buffers_(e->name);
      if (!b || e->guard || !lane_ok(b->dtype))
        return false;
      return access_stride(e->operands, *b->shape, var_) == AccessStride::Unit;
    }
    case ExprKind::Unary:
      if (e->unary_op == UnaryOp::Not)
        return e->type == DType::Bool && value(e->operands[0], DType::Bool);
      return e->unary_op == UnaryOp::Neg && !byte_lane_type(e->type) &&
             value(e->operands[0], e->type);
    case ExprKind::Binary:
      // A comparison's 0/1 result: the operands' mask narrowed to bool lanes.
      // Only of one-byte operands: GCC 12 narrows a wider mask lane by lane, where its
      // loop vectorizer, given the scalar loop, packs whole registers.
      if (is_comparison(e->binary_op)) {
        DType p = promote(e->operands[0]->type, e->operands[1]->type);
        return dtype_bytes(p) == 1 && value(e->operands[0], p) && value(e->operands[1], p);
      }
      if (e->binary_op == BinaryOp::And || e->binary_op == BinaryOp::Or)
        return value(e->operands[0], DType::Bool) && value(e->operands[1], DType::Bool);
      if (byte_lane_type(e->type))
        return false; // C computes narrow integers in int: keep the scalar code
      switch (e->binary_op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::Mul:
      case BinaryOp::Div:
        return value(e->operands[0], e->type) && value(e->operands[1], e->type);
      default:
        return false;
      }
    case ExprKind::Select: {
      const DType t = select_lanes(e, want, var_);
      if (half_type(t))
        return false; // no masks of f16 lanes
      return value(e->operands[1], t) && value(e->operands[2], t) && mask(e->operands[0], t);
    }
    case ExprKind::Cast:
      // float -> int needs the saturating scalar conversion; vector conversions are
      // undefined out of range.
      if (is_float(e->operands[0]->type) && is_integer(e->type))
        return false;
      // Narrowing into one-byte lanes: lane by lane in GCC 12 (see the comparisons).
      if (byte_lane_type(e->type) && dtype_bytes(e->operands[0]->type) > 1)
        return false;
      // f16/bf16 lanes are f32 values: to and from the byte lanes there is no conversion.
      if ((half_type(e->type) || half_type(e->operands[0]->type)) &&
          (byte_lane_type(e->type) || byte_lane_type(e->operands[0]->type)))
        return false;
      return value(e->operands[0], e->operands[0]->type);
    case ExprKind::Call:
      // exp, sigmoid, tanh and erf of f32 have lane-wise helpers (CHelpers.cpp).
      if (lane_type(e->type) == DType::F32 && e->operands.size() == 1 &&
          (e->math_fn == MathFn::Exp || e->math_fn == MathFn::Sigmoid ||
           e->math_fn == MathFn::Tanh || e->math_fn == MathFn::Erf))
        return value(e->operands[0], e->type);
      // So do the functions of VectorMath.h.
      if (has_lane_math(e->math_fn, lane_type(e->type))) {
        for (const auto& a : e->operands)
          if (!value(a, e->type))
            return false;
        return true;
      }
      if (e->math_fn != MathFn::Min && e->math_fn != MathFn::Max)
        return false;
      return value(e->operands[0], e->type) && value(e->operands[1], e->type);
    default:
      return false; // the loop variable itself, immediates are invariant
    }
  }

  // Condition `c` as a lane mask for selecting between `lanes`-typed values.
  bool mask(const Expr& c, DType lanes) const {
    if (!uses_var(c, var_))
      return true;
    switch (c->kind) {
    case ExprKind::Unary:
      return c->unary_op == UnaryOp::Not && mask(c->operands[0], lanes);
    case ExprKind::Binary: {
      if (c->binary_op == BinaryOp::And || c->binary_op == BinaryOp::Or)
        return mask(c->operands[0], lanes) && mask(c->operands[1], lanes);
      if (!is_comparison(c->binary_op))
        return c->type == DType::Bool && value(c, DType::Bool);
      DType p = promote(c->operands[0]->type, c->operands[1]->type);
      if (half_type(p) || half_type(lanes))
        return false; // no masks of f16 lanes
      // An integer comparison affine in the loop variable (a causal mask's `j <= i`):
      // lane k compares (a - b at lane 0) + k*(slope), in mask-width integer lanes.
      if (is_integer(p) && affine_coefficient(c->operands[0], var_) && affine_coefficient(c->operands[1], var_))
        return true;
      if (dtype_bytes(p) == dtype_bytes(lanes) && value(c->operands[0], p) &&
          value(c->operands[1], p))
        return true;
      return value(c, DType::Bool); // another width: through bool lanes
    }
    default:
      // A bool value (a bool tensor's element, a cast): its lanes compared with 0.
      return c->type == DType::Bool && value(c, DType::Bool);
    }
  }

private:
  const std::string& var_;
  const VectorBufferLookup& buffers_;
  const std::map<std::string, const StmtNode*>& stored_;
  bool half_lanes_;
};

} // namespace

std::optional<std::vector<const StmtNode*>> vector_loop_stores(const StmtNode& loop,
                                                               const VectorBufferLookup& buffers,
                                                               bool half_lanes) {
  std::vector<const StmtNode*> stores, hints;
  const StmtNode* body = loop.body[0].get();
  if (body->kind == StmtKind::Store) {
    stores.push_back(body);
  } else if (body->kind == StmtKind::Block) {
    for (const auto& s : body->body) {
      if (s->kind == StmtKind::Prefetch) {
        hints.push_back(s.get());
        continue;
      }
      if (s->kind != StmtKind::Store)
        return std::nullopt;
      stores.push_back(s.get());
    }
  } else {
    return std::nullopt;
  }
  if (stores.empty())
    return std::nullopt;
  std::map<std::string, const StmtNode*> stored;
  for (const StmtNode* s : stores) {
    auto [it, fresh] = stored.emplace(s->buffer, s);
    if (!fresh)
      return std::nullopt; // two stores into one buffer: keep the scalar order
  }
  Eligibility check(loop.var, buffers, stored, half_lanes);
  for (const StmtNode* s : stores) {
    auto b = buffers(s->buffer);
    if (!b || !check.lane_ok(b->dtype))
      return std::nullopt;
    if (access_stride(s->indices, *b->shape, loop.var) != AccessStride::Unit)
      return std::nullopt;
    for (const auto& i : s->indices)
      if (reads_tensor(i))
        return std::nullopt; // a scatter: each element's store has its own bounds test
    for (const auto& i : s->indices)
      if (!check.hazard_free(i))
        return std::nullopt;
    if (!check.hazard_free(s->value) || !check.value(s->value, b->dtype))
      return std::nullopt;
  }
  // Prefetches (cache hints) go first, one per vector of the loop.
  hints.insert(hints.end(), stores.begin(), stores.end());
  return hints;
}

} // namespace unitile::codegen
