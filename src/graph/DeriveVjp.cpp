// The comprehension differentiator (see DeriveVjp.h): activity analysis, the reverse
// sweep over statements with symbolic derivatives of each expression, the sums of the
// contributions each tensor's gradient receives, and the recomputed forward statements.
#include "graph/DeriveVjp.h"

#include "ir/Parser.h"
#include "ir/Printer.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

namespace unitile::graph {

namespace {

/// Thrown inside the deriver when the kernel cannot be differentiated; becomes why_not.
struct CannotDerive {
  std::string why;
};

bool is_one(const Expr& e) {
  return (e->kind == ExprKind::IntImm && e->int_value == 1) ||
         (e->kind == ExprKind::FloatImm && e->float_value == 1.0);
}

Expr lit(double v, DType t) {
  return float_imm(v, is_float(t) ? t : DType::F32);
}
Expr mul(const Expr& a, const Expr& b) {
  if (is_one(a))
    return b;
  if (is_one(b))
    return a;
  return binary(BinaryOp::Mul, a, b);
}
Expr div(const Expr& a, const Expr& b) {
  return binary(BinaryOp::Div, a, b);
}
Expr add(const Expr& a, const Expr& b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return binary(BinaryOp::Add, a, b);
}
Expr sub(const Expr& a, const Expr& b) {
  return binary(BinaryOp::Sub, a, b);
}
Expr neg(const Expr& a) {
  if (a->kind == ExprKind::Unary && a->unary_op == UnaryOp::Neg)
    return a->operands[0];
  return unary(UnaryOp::Neg, a);
}
Expr fn(MathFn f, const Expr& x) {
  return call(f, {x});
}
Expr square(const Expr& x) {
  return binary(BinaryOp::Mul, x, x);
}

/// The index variables an expression mentions (every Var: op kernels have no params and
/// their shapes are numbers; a shape symbol of a hand-written kernel is never on the
/// left, so it never counts as one).
void collect_vars(const Expr& e, std::set<std::string>& out) {
  visit(e, [&](const Expr& n) {
    if (n->kind == ExprKind::Var)
      out.insert(n->name);
  });
}

/// Variables that occur alone as an index of some access: their ranges are inferable.
void collect_bare_vars(const Expr& e, std::set<std::string>& out) {
  visit(e, [&](const Expr& n) {
    if (n->kind != ExprKind::Access)
      return;
    for (const Expr& i : n->operands)
      if (i->kind == ExprKind::Var)
        out.insert(i->name);
  });
}

void collect_reads(const Expr& e, std::set<std::string>& out) {
  visit(e, [&](const Expr& n) {
    if (n->kind == ExprKind::Access)
      out.insert(n->name);
  });
}

Expr substitute_vars(const Expr& e, const std::map<std::string, Expr>& subst) {
  if (subst.empty())
    return e;
  return rewrite(e, [&](const Expr& n) {
    if (n->kind != ExprKind::Var)
      return n;
    auto it = subst.find(n->name);
    return it == subst.end() ? n : it->second;
  });
}

Expr rename_tensors(const Expr& e, const std::map<std::string, std::string>& names) {
  return rewrite(e, [&](const Expr& n) {
    if (n->kind != ExprKind::Access)
      return n;
    auto it = names.find(n->name);
    if (it == names.end())
      return n;
    return access(it->second, n->operands, n->type, n->guard, n->loc);
  });
}

/// One term of a tensor's gradient: `d<R>[left] (= | +=) value`, where `+=` sums over the
/// variables of `value` that are not on the left.
struct Contribution {
  std::vector<std::string> left; // one index variable per dimension of R
  Expr value;
  bool reduces = false;
  std::map<std::string, Expr> sums; // the summed variables and their extents
};

class Deriver {
public:
  Deriver(const Kernel& k, const VjpRequest& r) : fk_(k), req_(r) {}

  VjpKernel run() {
    if (!fk_.params.empty())
      throw CannotDerive{"the kernel has runtime params"};
    for (const TensorDecl& t : fk_.tensors) {
      decl_[t.name] = &t;
      taken_.insert(t.name);
    }
    for (const std::string& s : fk_.shape_symbols())
      taken_.insert(s);
    for (const Comprehension& c : fk_.body) {
      taken_.insert(c.indices.begin(), c.indices.end());
      taken_.insert(c.reduction_vars.begin(), c.reduction_vars.end());
    }
    for (const std::string& o : req_.cotangents) {
      const TensorDecl* t = find(o);
      if (!t || t->role != TensorRole::Output)
        throw UserError(
            fmt::format("error: kernel {} has no output '{}' to take a cotangent of", fk_.name, o));
      cot_name_[o] = port_name(o);
      result_.cotangent_inputs[o] = cot_name_[o];
    }
    for (const std::string& x : req_.wrt) {
      const TensorDecl* t = find(x);
      if (!t || t->role != TensorRole::Input)
        throw UserError(fmt::format(
            "error: kernel {} has no input '{}' to differentiate with respect to", fk_.name, x));
      if (grad_name_.count(x))
        throw UserError(
            fmt::format("error: input '{}' is listed twice to differentiate with respect to", x));
      grad_name_[x] = port_name(x);
      result_.gradient_outputs[x] = grad_name_[x];
    }
    analyse();
    for (size_t s = fk_.body.size(); s-- > 0;)
      if (active_.count(fk_.body[s].output))
        differentiate(s);
    for (const std::string& x : req_.wrt)
      emit_total(x);
    return assemble();
  }

private:
  const Kernel& fk_;
  const VjpRequest& req_;
  std::map<std::string, const TensorDecl*> decl_;
  std::set<std::string> taken_;
  std::map<std::string, std::string> cot_name_, grad_name_, adj_name_;
  std::set<std::string> active_;
  std::map<std::string, std::vector<Contribution>> contribs_;
  std::vector<TensorDecl> adj_locals_;
  std::vector<Comprehension> adj_body_;
  VjpKernel result_;

  const TensorDecl* find(const std::string& name) const {
    auto it = decl_.find(name);
    return it == decl_.end() ? nullptr : it->second;
  }
  bool is_float_tensor(const std::string& name) const {
    const TensorDecl* t = find(name);
    return t && is_float(t->dtype);
  }

  std::string unique(std::string name) {
    while (taken_.count(name))
      name += "_";
    taken_.insert(name);
    return name;
  }

  std::string port_name(const std::string& t) {
    auto it = req_.names.find(t);
    if (it == req_.names.end())
      return unique("d" + t);
    if (taken_.count(it->second))
      throw UserError(fmt::format("error: the name '{}' for d{} is already used in kernel {}",
                                  it->second, t, fk_.name));
    taken_.insert(it->second);
    return it->second;
  }

  // --- which tensors carry a gradient ---------------------------------------------------

  void analyse() {
    std::set<std::string> varied, useful;
    for (const std::string& x : req_.wrt)
      if (is_float_tensor(x))
        varied.insert(x);
    for (const Comprehension& c : fk_.body) {
      if (!is_float_tensor(c.output))
        continue;
      std::set<std::string> reads;
      collect_reads(c.value, reads);
      for (const std::string& r : reads)
        if (varied.count(r))
          varied.insert(c.output);
    }
    for (const std::string& o : req_.cotangents)
      if (is_float_tensor(o))
        useful.insert(o);
    for (size_t s = fk_.body.size(); s-- > 0;) {
      const Comprehension& c = fk_.body[s];
      if (!useful.count(c.output))
        continue;
      std::set<std::string> reads;
      collect_reads(c.value, reads);
      for (const std::string& r : reads)
        if (is_float_tensor(r))
          useful.insert(r);
    }
    for (const std::string& t : varied)
      if (useful.count(t))
        active_.insert(t);
    // Every tensor on the path must be defined by one plain `=` or `+=` statement.
    std::map<std::string, int> writers;
    for (const Comprehension& c : fk_.body)
      ++writers[c.output];
    for (size_t s = 0; s < fk_.body.size(); ++s) {
      const Comprehension& c = fk_.body[s];
      if (!active_.count(c.output))
        continue;
      const std::string where =
          fmt::format("statement {} ({}[...] {} ...)", s + 1, c.output, reduce_token(c.reduce));
      if (writers[c.output] > 1)
        throw CannotDerive{fmt::format("{}: '{}' is written by {} statements", where, c.output,
                                       writers[c.output])};
      if (c.is_indirect_store())
        throw CannotDerive{where + ": an indirect store (scatter)"};
      if (c.reduce != ReduceKind::Assign && c.reduce != ReduceKind::Add)
        throw CannotDerive{fmt::format("{}: a '{}' reduction", where, reduce_token(c.reduce))};
    }
  }

  // --- symbolic derivatives ---------------------------------------------------------------

  bool depends(const Expr& e) const {
    bool found = false;
    visit(e, [&](const Expr& n) {
      if (n->kind == ExprKind::Access && active_.count(n->name))
        found = true;
    });
    return found;
  }

  struct Reads {
    std::vector<Expr> accesses;            // first occurrence of each distinct read
    std::vector<Expr> adjoints;            // its summed adjoint
    std::map<std::string, size_t> by_text; // printed access -> position
  };

  /// Propagate the adjoint `g` of `e` to the reads of active tensors inside it.
  void backprop(const Expr& e, const Expr& g, Reads& out, size_t stmt) const {
    if (!depends(e))
      return;
    const auto fail = [&](const std::string& what) {
      throw CannotDerive{fmt::format("statement {}: {} in `{}`", stmt + 1, what, to_string(e))};
    };
    const std::vector<Expr>& x = e->operands;
    const DType t = e->type;
    switch (e->kind) {
    case ExprKind::Access: {
      if (e->guard && depends(e->guard))
        fail("a guard value on the gradient path");
      if (!active_.count(e->name))
        return;
      const std::string key = to_string(e);
      auto it = out.by_text.find(key);
      if (it == out.by_text.end()) {
        out.by_text[key] = out.accesses.size();
        out.accesses.push_back(e);
        out.adjoints.push_back(g);
      } else {
        out.adjoints[it->second] = add(out.adjoints[it->second], g);
      }
      return;
    }
    case ExprKind::Unary:
      if (e->unary_op == UnaryOp::Neg)
        backprop(x[0], neg(g), out, stmt);
      return; // logical not: no gradient
    case ExprKind::Binary:
      switch (e->binary_op) {
      case BinaryOp::Add:
        backprop(x[0], g, out, stmt);
        backprop(x[1], g, out, stmt);
        return;
      case BinaryOp::Sub:
        backprop(x[0], g, out, stmt);
        backprop(x[1], neg(g), out, stmt);
        return;
      case BinaryOp::Mul:
        backprop(x[0], mul(g, x[1]), out, stmt);
        backprop(x[1], mul(g, x[0]), out, stmt);
        return;
      case BinaryOp::Div:
        backprop(x[0], div(g, x[1]), out, stmt);
        if (depends(x[1]))
          backprop(x[1], neg(div(mul(g, x[0]), square(x[1]))), out, stmt);
        return;
      case BinaryOp::FloorDiv:
      case BinaryOp::Mod:
        fail(fmt::format("'{}' on a value", binary_op_token(e->binary_op)));
      default:
        return; // comparisons and logic: piecewise constant
      }
    case ExprKind::Select:
      backprop(x[1], select(x[0], g, lit(0, t)), out, stmt);
      backprop(x[2], select(x[0], lit(0, t), g), out, stmt);
      return;
    case ExprKind::Cast:
      if (is_float(t) && is_float(x[0]->type))
        backprop(x[0], g, out, stmt);
      return; // to an integer or bool: no gradient
    case ExprKind::Call:
      backprop_call(e, g, out, stmt);
      return;
    default:
      return;
    }
  }

  void backprop_call(const Expr& e, const Expr& g, Reads& out, size_t stmt) const {
    const std::vector<Expr>& x = e->operands;
    const DType t = e->type;
    const Expr a = x[0];
    auto one = [&] { return lit(1, t); };
    auto to_a = [&](const Expr& d) { backprop(a, d, out, stmt); };
    constexpr double kLn2 = 0.69314718055994531;
    switch (e->math_fn) {
    case MathFn::Exp:
      to_a(mul(g, fn(MathFn::Exp, a)));
      return;
    case MathFn::Exp2:
      to_a(mul(mul(g, fn(MathFn::Exp2, a)), lit(kLn2, t)));
      return;
    case MathFn::Expm1:
      to_a(mul(g, fn(MathFn::Exp, a)));
      return;
    case MathFn::Log:
      to_a(div(g, a));
      return;
    case MathFn::Log2:
      to_a(div(g, mul(a, lit(kLn2, t))));
      return;
    case MathFn::Log1p:
      to_a(div(g, add(one(), a)));
      return;
    case MathFn::Sqrt:
      to_a(div(mul(g, lit(0.5, t)), fn(MathFn::Sqrt, a)));
      return;
    case MathFn::Rsqrt:
      to_a(div(mul(mul(g, lit(-0.5, t)), fn(MathFn::Rsqrt, a)), a));
      return;
    case MathFn::Tanh:
      to_a(mul(g, sub(one(), square(fn(MathFn::Tanh, a)))));
      return;
    case MathFn::Sigmoid:
      to_a(mul(mul(g, fn(MathFn::Sigmoid, a)), sub(one(), fn(MathFn::Sigmoid, a))));
      return;
    case MathFn::Erf:
      to_a(mul(mul(g, lit(1.1283791670955126, t)), fn(MathFn::Exp, neg(square(a)))));
      return;
    case MathFn::Sin:
      to_a(mul(g, fn(MathFn::Cos, a)));
      return;
    case MathFn::Cos:
      to_a(mul(g, neg(fn(MathFn::Sin, a))));
      return;
    case MathFn::Tan:
      to_a(div(g, square(fn(MathFn::Cos, a))));
      return;
    case MathFn::Asin:
      to_a(mul(g, fn(MathFn::Rsqrt, sub(one(), square(a)))));
      return;
    case MathFn::Acos:
      to_a(neg(mul(g, fn(MathFn::Rsqrt, sub(one(), square(a))))));
      return;
    case MathFn::Atan:
      to_a(div(g, add(one(), square(a))));
      return;
    case MathFn::Sinh:
      to_a(mul(g, fn(MathFn::Cosh, a)));
      return;
    case MathFn::Cosh:
      to_a(mul(g, fn(MathFn::Sinh, a)));
      return;
    case MathFn::Asinh:
      to_a(mul(g, fn(MathFn::Rsqrt, add(square(a), one()))));
      return;
    case MathFn::Acosh:
      to_a(mul(g, fn(MathFn::Rsqrt, sub(square(a), one()))));
      return;
    case MathFn::Atanh:
      to_a(div(g, sub(one(), square(a))));
      return;
    case MathFn::Abs:
      to_a(mul(g, fn(MathFn::Sign, a)));
      return;
    case MathFn::Pow: {
      const Expr& b = x[1];
      if (depends(a)) {
        Expr b1 = b->kind == ExprKind::FloatImm ? lit(b->float_value - 1, t)
                  : b->kind == ExprKind::IntImm ? lit(static_cast<double>(b->int_value) - 1, t)
                                                : sub(b, one());
        to_a(mul(mul(g, b), call(MathFn::Pow, {a, b1})));
      }
      if (depends(b))
        backprop(b, mul(mul(g, e), fn(MathFn::Log, a)), out, stmt);
      return;
    }
    case MathFn::Max:
    case MathFn::Min: {
      // The larger (smaller) operand takes the gradient; on a tie, the second one (so
      // relu written max(x, 0) has gradient 0 at 0, as PyTorch's).
      const Expr first_wins =
          binary(e->math_fn == MathFn::Max ? BinaryOp::Gt : BinaryOp::Lt, a, x[1]);
      to_a(select(first_wins, g, lit(0, t)));
      backprop(x[1], select(first_wins, lit(0, t), g), out, stmt);
      return;
    }
    case MathFn::Fma:
      to_a(mul(g, x[1]));
      backprop(x[1], mul(g, a), out, stmt);
      backprop(x[2], g, out, stmt);
      return;
    case MathFn::Atan2: { // atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
      const Expr r = add(square(x[1]), square(a));
      to_a(div(mul(g, x[1]), r));
      backprop(x[1], neg(div(mul(g, a), r)), out, stmt);
      return;
    }
    case MathFn::Floor:
    case MathFn::Ceil:
    case MathFn::Round:
    case MathFn::Trunc:
    case MathFn::Sign:
    case MathFn::IsNan:
    case MathFn::IsInf:
      return; // piecewise constant: zero almost everywhere
    }
    throw CannotDerive{
        fmt::format("statement {}: no derivative for {}()", stmt + 1, math_fn_name(e->math_fn))};
  }

  // --- the reverse sweep ----------------------------------------------------------------

  std::string adjoint_of(const std::string& t) const { return adj_name_.at(t); }

  /// Statement `s` defines active tensor T: T's gradient is complete (every reader came
  /// later in the forward order), so write it, then pass it to what `s` reads.
  void differentiate(size_t s) {
    const Comprehension& c = fk_.body[s];
    emit_total(c.output);
    // Variables of extent 1 (kept dimensions) read index 0: they need no summing.
    std::map<std::string, Expr> zero;
    std::vector<std::string> vars = c.indices;
    vars.insert(vars.end(), c.reduction_vars.begin(), c.reduction_vars.end());
    for (const std::string& v : vars) {
      auto r = c.ranges.find(v);
      if (r != c.ranges.end() && r->second->kind == ExprKind::IntImm && r->second->int_value == 1)
        zero[v] = int_imm(0);
    }
    const Expr value = substitute_vars(c.value, zero);
    std::vector<Expr> out_idx;
    for (const std::string& v : c.indices)
      out_idx.push_back(zero.count(v) ? int_imm(0) : var(v));
    const Expr g = access(adjoint_of(c.output), out_idx, find(c.output)->dtype);
    Reads reads;
    backprop(value, g, reads, s);
    for (size_t r = 0; r < reads.accesses.size(); ++r) {
      const Expr& a = reads.accesses[r];
      const TensorDecl& rt = *find(a->name);
      Contribution k;
      std::map<std::string, Expr> extents;
      for (const std::string& v : vars)
        if (!zero.count(v))
          extents[v] = c.ranges.at(v);
      for (size_t d = 0; d < a->operands.size(); ++d) {
        const Expr& i = a->operands[d];
        const bool unit_dim = rt.shape[d]->kind == ExprKind::IntImm && rt.shape[d]->int_value == 1;
        if (i->kind == ExprKind::Var && extents.count(i->name) &&
            std::find(k.left.begin(), k.left.end(), i->name) == k.left.end()) {
          k.left.push_back(i->name);
        } else if (i->kind == ExprKind::IntImm && unit_dim) {
          k.left.push_back(unique("z" + std::to_string(d)));
        } else {
          throw CannotDerive{fmt::format(
              "statement {}: the read {} has index `{}`: its gradient would be a scatter", s + 1,
              to_string(a), to_string(i))};
        }
      }
      // Variables that vanished from the derivative still count: each is a sum of
      // identical terms, i.e. a factor of its extent.
      Expr v = reads.adjoints[r];
      std::set<std::string> right;
      collect_vars(v, right);
      for (const auto& [name, extent] : extents) {
        if (right.count(name) || std::find(k.left.begin(), k.left.end(), name) != k.left.end())
          continue;
        v = mul(v, extent->kind == ExprKind::IntImm
                       ? lit(static_cast<double>(extent->int_value), rt.dtype)
                       : cast(rt.dtype, extent));
      }
      std::set<std::string> bare;
      collect_bare_vars(v, bare);
      for (const std::string& name : right) {
        if (std::find(k.left.begin(), k.left.end(), name) != k.left.end() || !extents.count(name))
          continue;
        if (!bare.count(name))
          throw CannotDerive{fmt::format(
              "statement {}: index '{}' of the gradient of {} occurs only inside computed indices",
              s + 1, name, to_string(a))};
        k.sums[name] = extents[name];
      }
      k.reduces = !k.sums.empty();
      k.value = v;
      contribs_[a->name].push_back(std::move(k));
    }
  }

  /// Write the gradient of `t` as the sum of its contributions (a forward input's into
  /// its output tensor, anything else's into a local), and remember its name.
  void emit_total(const std::string& t) {
    const TensorDecl& td = *find(t);
    std::vector<Contribution> cs = contribs_[t];
    const bool is_wrt = grad_name_.count(t) != 0;
    if (!is_wrt && cot_name_.count(t)) {
      if (cs.empty()) {
        adj_name_[t] = cot_name_[t];
        return;
      }
      Contribution seed;
      std::vector<Expr> idx;
      for (size_t d = 0; d < td.shape.size(); ++d) {
        seed.left.push_back(unique("j" + std::to_string(d)));
        idx.push_back(var(seed.left.back()));
      }
      seed.value = access(cot_name_[t], idx, td.dtype);
      cs.insert(cs.begin(), std::move(seed));
    }
    std::string name;
    if (is_wrt) {
      name = grad_name_[t];
    } else {
      name = unique("d" + t);
      TensorDecl d = td;
      d.name = name;
      d.role = TensorRole::Local;
      adj_locals_.push_back(std::move(d));
    }
    adj_name_[t] = name;

    // Contributions that sum over the same variables with the same left side merge.
    std::vector<Contribution> merged;
    for (Contribution& c : cs) {
      auto same = std::find_if(merged.begin(), merged.end(), [&](const Contribution& m) {
        if (m.left != c.left || m.reduces != c.reduces || m.sums.size() != c.sums.size())
          return false;
        for (const auto& [v, extent] : m.sums) {
          auto it = c.sums.find(v);
          if (it == c.sums.end() || !equal(it->second, extent))
            return false;
        }
        return true;
      });
      if (same != merged.end() && c.reduces) {
        same->value = add(same->value, c.value);
        continue;
      }
      merged.push_back(std::move(c));
    }

    if (merged.empty()) {
      std::vector<std::string> idx;
      for (size_t d = 0; d < td.shape.size(); ++d)
        idx.push_back(unique("i" + std::to_string(d)));
      add_stmt(name, idx, ReduceKind::Assign, lit(0, td.dtype));
      return;
    }
    // One contribution whose every left variable occurs on the right: written directly.
    const auto direct = [&](const Contribution& c) {
      if (!c.reduces)
        return true;
      std::set<std::string> right;
      collect_vars(c.value, right);
      for (size_t d = 0; d < c.left.size(); ++d)
        if (!right.count(c.left[d]) && !unit(td, d))
          return false;
      return true;
    };
    if (merged.size() == 1 && direct(merged[0])) {
      add_stmt(name, merged[0].left, merged[0].reduces ? ReduceKind::Add : ReduceKind::Assign,
               merged[0].value);
      return;
    }
    // Otherwise: the sum of the terms under the first contribution's index names; a term
    // that reduces goes through a local of its own first.
    const std::vector<std::string> canon = merged[0].left;
    Expr total;
    for (size_t k = 0; k < merged.size(); ++k) {
      const Contribution& c = merged[k];
      if (!c.reduces) {
        std::map<std::string, Expr> rename;
        for (size_t d = 0; d < c.left.size(); ++d)
          rename[c.left[d]] = var(canon[d]);
        total = add(total, substitute_vars(c.value, rename));
        continue;
      }
      std::set<std::string> right;
      collect_vars(c.value, right);
      std::vector<std::string> kept;
      std::vector<Expr> shape, term_idx;
      for (size_t d = 0; d < c.left.size(); ++d) {
        if (!right.count(c.left[d]) && !unit(td, d))
          continue;
        kept.push_back(c.left[d]);
        shape.push_back(td.shape[d]);
        term_idx.push_back(unit(td, d) ? int_imm(0) : var(canon[d]));
      }
      TensorDecl part;
      part.name = unique(fmt::format("{}_{}", name, k + 1));
      part.dtype = td.dtype;
      part.shape = shape;
      part.role = TensorRole::Local;
      adj_locals_.push_back(part);
      add_stmt(part.name, kept, ReduceKind::Add, c.value);
      total = add(total, access(part.name, term_idx, td.dtype));
    }
    add_stmt(name, canon, ReduceKind::Assign, total);
  }

  static bool unit(const TensorDecl& t, size_t d) {
    return t.shape[d]->kind == ExprKind::IntImm && t.shape[d]->int_value == 1;
  }

  void add_stmt(const std::string& out, const std::vector<std::string>& idx, ReduceKind r,
                const Expr& value) {
    Comprehension c;
    c.output = out;
    c.indices = idx;
    c.reduce = r;
    c.value = value;
    adj_body_.push_back(std::move(c));
  }

  // --- the kernel -----------------------------------------------------------------------

  VjpKernel assemble() {
    // Forward statements whose results the derivatives read are recomputed.
    std::set<std::string> needed;
    for (const Comprehension& c : adj_body_)
      collect_reads(c.value, needed);
    std::vector<bool> keep(fk_.body.size(), false);
    for (size_t s = fk_.body.size(); s-- > 0;) {
      const Comprehension& c = fk_.body[s];
      if (!needed.count(c.output) || find(c.output)->role == TensorRole::Input)
        continue;
      keep[s] = true;
      collect_reads(c.value, needed);
      for (const Expr& i : c.store_indices)
        collect_reads(i, needed);
    }
    Kernel k;
    k.name = req_.kernel_name.empty() ? fk_.name + "_vjp" : req_.kernel_name;
    for (const TensorDecl& t : fk_.tensors)
      if (t.role == TensorRole::Input && needed.count(t.name))
        k.tensors.push_back(t);
    for (const std::string& o : req_.cotangents) {
      if (!needed.count(cot_name_[o]))
        continue;
      TensorDecl d = *find(o);
      d.name = cot_name_[o];
      d.role = TensorRole::Input;
      k.tensors.push_back(std::move(d));
    }
    for (const std::string& x : req_.wrt) {
      TensorDecl d = *find(x);
      d.name = grad_name_[x];
      d.role = TensorRole::Output;
      k.tensors.push_back(std::move(d));
    }
    for (const TensorDecl& t : fk_.tensors)
      if (t.role != TensorRole::Input && needed.count(t.name)) {
        TensorDecl d = t;
        d.role = TensorRole::Local;
        k.tensors.push_back(std::move(d));
      }
    for (const TensorDecl& t : adj_locals_)
      k.tensors.push_back(t);
    for (size_t s = 0; s < fk_.body.size(); ++s)
      if (keep[s])
        k.body.push_back(fk_.body[s]);
    for (const Comprehension& c : adj_body_)
      k.body.push_back(c);
    if (!req_.renames.empty())
      rename(k);
    result_.text = to_string(k);
    result_.module = parse_module(SourceFile{"<vjp of " + fk_.name + ">", result_.text});
    return std::move(result_);
  }

  void rename(Kernel& k) {
    for (const auto& [from, to] : req_.renames)
      if (taken_.count(to) && !req_.renames.count(to))
        throw UserError(
            fmt::format("error: cannot rename '{}' to '{}' in the VJP of {}: the name is used",
                        from, to, fk_.name));
    auto name = [&](const std::string& n) {
      auto it = req_.renames.find(n);
      return it == req_.renames.end() ? n : it->second;
    };
    for (TensorDecl& t : k.tensors)
      t.name = name(t.name);
    for (Comprehension& c : k.body) {
      c.output = name(c.output);
      c.value = rename_tensors(c.value, req_.renames);
      for (Expr& i : c.store_indices)
        i = rename_tensors(i, req_.renames);
    }
  }
};

} // namespace

VjpDerivation derive_vjp(const Kernel& forward, const VjpRequest& request) {
  VjpDerivation out;
  try {
    out.vjp = Deriver(forward, request).run();
  } catch (const CannotDerive& e) {
    out.why_not = e.why;
  }
  return out;
}

Kernel rename_kernel_tensors(const Kernel& k, const std::map<std::string, std::string>& names) {
  Kernel out = k;
  for (TensorDecl& t : out.tensors)
    if (auto it = names.find(t.name); it != names.end())
      t.name = it->second;
  for (Comprehension& c : out.body) {
    if (auto it = names.find(c.output); it != names.end())
      c.output = it->second;
    c.value = rename_tensors(c.value, names);
    for (Expr& i : c.store_indices)
      i = rename_tensors(i, names);
  }
  return out;
}

} // namespace unitile::graph
