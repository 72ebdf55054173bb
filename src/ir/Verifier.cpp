// verify(Kernel&): name resolution, shape, rank and dtype checks, and index-range
// inference for Kernel IR, filling in what lowering relies on.
//
// It runs on every kernel, whether it came from the text parser or the C++ builder, so
// all semantic errors are found here, once. Typing follows two rules worth knowing:
// literals are weak (an int or float literal takes the type of the other operand, so
// `H[i] * 0.5` stays f16 for an f16 H), and bool never mixes silently with numbers.
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <fmt/core.h>

#include <map>
#include <optional>
#include <set>

namespace unitile {

namespace {

const char* const kBoolArithHint = "use `c ? 1 : 0` or a cast such as f32(c)";

bool is_literal(const Expr& e) {
  return e->kind == ExprKind::IntImm || e->kind == ExprKind::FloatImm;
}
bool is_numeric(DType t) { return t != DType::Bool; }

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  auto start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!start(s[0])) return false;
  for (char c : s)
    if (!start(c) && !(c >= '0' && c <= '9')) return false;
  return s != "true" && s != "false" && s != "inf" && s != "nan";
}

Expr retyped(const Expr& e, DType t, std::vector<Expr> ops, Expr guard) {
  auto n = std::make_shared<ExprNode>(*e);
  n->type = t;
  n->operands = std::move(ops);
  n->guard = std::move(guard);
  return n;
}
Expr retyped(const Expr& e, DType t) { return retyped(e, t, e->operands, e->guard); }

/// A weak literal takes the type of its partner: an int literal any numeric type, a float
/// literal only float types (so `I[i] * 0.5` does not truncate 0.5).
Expr adopt(const Expr& lit, DType other) {
  if (lit->kind == ExprKind::IntImm && is_numeric(other)) return retyped(lit, other);
  if (lit->kind == ExprKind::FloatImm && is_float(other)) return retyped(lit, other);
  return lit;
}

int caret_len(const Expr& e) {
  switch (e->kind) {
  case ExprKind::Var:
  case ExprKind::Access: return static_cast<int>(e->name.size());
  case ExprKind::Call: return static_cast<int>(std::string_view(math_fn_name(e->math_fn)).size());
  case ExprKind::Cast: return static_cast<int>(dtype_name(e->type).size());
  case ExprKind::Binary: return static_cast<int>(std::string_view(binary_op_token(e->binary_op)).size());
  default: return 1;
  }
}

/// Math functions defined on integers as well as floats; the rest need float arguments.
bool accepts_integers(MathFn fn) {
  switch (fn) {
  case MathFn::Abs:
  case MathFn::Min:
  case MathFn::Max:
  case MathFn::Sign:
  case MathFn::Floor:
  case MathFn::Ceil:
  case MathFn::Round:
  case MathFn::Trunc: return true;
  default: return false;
  }
}

/// Folds integer constants and the identities x+0, x-0, x*1, so that `2+2` and `4`
/// count as the same extent.
Expr fold(const Expr& e) {
  if (e->kind == ExprKind::Unary && e->unary_op == UnaryOp::Neg) {
    Expr x = fold(e->operands[0]);
    if (x->kind == ExprKind::IntImm && x->int_value != INT64_MIN)
      return int_imm(-x->int_value, x->type, e->loc);
    return retyped(e, e->type, {x}, nullptr);
  }
  if (e->kind != ExprKind::Binary) return e;
  Expr a = fold(e->operands[0]), b = fold(e->operands[1]);
  bool ca = a->kind == ExprKind::IntImm, cb = b->kind == ExprKind::IntImm;
  if (ca && cb) {
    int64_t x = a->int_value, y = b->int_value, r = 0;
    bool ok = true;
    switch (e->binary_op) {
    case BinaryOp::Add: ok = !__builtin_add_overflow(x, y, &r); break;
    case BinaryOp::Sub: ok = !__builtin_sub_overflow(x, y, &r); break;
    case BinaryOp::Mul: ok = !__builtin_mul_overflow(x, y, &r); break;
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod:
      ok = y != 0 && !(x == INT64_MIN && y == -1);
      if (ok) {
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          --q;
          m += y;
        }
        r = e->binary_op == BinaryOp::FloorDiv ? q : m;
      }
      break;
    default: ok = false;
    }
    if (ok) return int_imm(r, e->type, e->loc);
  }
  auto value_is = [](const Expr& x, int64_t v) { return x->kind == ExprKind::IntImm && x->int_value == v; };
  if (e->binary_op == BinaryOp::Add && value_is(b, 0)) return a;
  if (e->binary_op == BinaryOp::Add && value_is(a, 0)) return b;
  if (e->binary_op == BinaryOp::Sub && value_is(b, 0)) return a;
  if (e->binary_op == BinaryOp::Mul && value_is(b, 1)) return a;
  if (e->binary_op == BinaryOp::Mul && value_is(a, 1)) return b;
  return retyped(e, e->type, {a, b}, nullptr);
}

/// Where an index variable stands alone as the index of a tensor dimension.
struct BareUse {
  Expr extent;
  std::string tensor;
  size_t dim;
  SourceLoc loc;
};

class KernelVerifier {
public:
  KernelVerifier(Kernel& k, const SourceFile& src) : k_(k), src_(src) {}

  void run() {
    check_declarations();
    std::set<std::string> written;
    for (size_t s = 0; s < k_.body.size(); ++s) {
      stmt_ = static_cast<int>(s);
      check_statement(k_.body[s], written);
      written.insert(k_.body[s].output);
    }
    stmt_ = -1;
    for (const TensorDecl& t : k_.tensors)
      if (t.role == TensorRole::Output && !written.count(t.name))
        fail(t.loc, fmt::format("output '{}' is never written", t.name),
             fmt::format("add a statement such as {}[...] = ... under operation:", t.name),
             static_cast<int>(t.name.size()));
  }

private:
  [[noreturn]] void fail(SourceLoc loc, std::string msg, const std::string& hint = {}, int len = 1) {
    // Kernels from the C++ builder have no source text: name the kernel and statement.
    if (src_.text.empty()) {
      std::string where = fmt::format("kernel '{}'", k_.name);
      if (stmt_ >= 0) {
        const Comprehension& c = k_.body[stmt_];
        std::string lhs = c.output + "[";
        for (size_t i = 0; i < c.indices.size(); ++i) lhs += (i ? ", " : "") + c.indices[i];
        where += fmt::format(", statement {} ({}] {} {})", stmt_ + 1, lhs, reduce_token(c.reduce),
                             to_string(c.value));
      }
      msg = where + ": " + msg;
    }
    throw UserError(make_diagnostic(src_, loc, std::move(msg), hint, len));
  }
  [[noreturn]] void fail_at(const Expr& e, std::string msg, const std::string& hint = {}) {
    fail(e->loc, std::move(msg), hint, caret_len(e));
  }

  // ---- declarations ---------------------------------------------------------------------

  void check_declarations() {
    if (!is_identifier(k_.name)) fail(k_.loc, fmt::format("invalid kernel name '{}'", k_.name));
    std::map<std::string, SourceLoc> names;
    auto declare = [&](const std::string& name, SourceLoc loc) {
      if (!is_identifier(name)) fail(loc, fmt::format("invalid name '{}'", name));
      auto [it, fresh] = names.emplace(name, loc);
      if (!fresh)
        fail(loc, fmt::format("duplicate name '{}'", name),
             it->second.valid() ? fmt::format("'{}' is first declared at line {}", name, it->second.line)
                                : std::string("tensors and params need distinct names"),
             static_cast<int>(name.size()));
    };
    for (const TensorDecl& t : k_.tensors) declare(t.name, t.loc);
    for (const ParamDecl& p : k_.params) declare(p.name, p.loc);
    for (const ParamDecl& p : k_.params) params_[p.name] = &p;
    for (const TensorDecl& t : k_.tensors) tensors_[t.name] = &t;

    bool has_output = false;
    for (TensorDecl& t : k_.tensors) {
      has_output |= t.role == TensorRole::Output;
      for (Expr& d : t.shape) d = check_shape(d, t);
    }
    if (!has_output)
      fail(k_.loc, fmt::format("kernel '{}' has no outputs", k_.name), "declare at least one output:");
  }

  Expr check_shape(const Expr& e, const TensorDecl& t) {
    const char* hint = "a dimension is an integer, a shape symbol, or +, -, *, //, % over them";
    switch (e->kind) {
    case ExprKind::IntImm:
      if (e->int_value < 0)
        fail_at(e, fmt::format("negative dimension {} in the shape of '{}'", e->int_value, t.name));
      return retyped(e, DType::I64);
    case ExprKind::Var: {
      if (tensors_.count(e->name))
        fail_at(e, fmt::format("tensor '{}' cannot be used in the shape of '{}'", e->name, t.name), hint);
      if (auto p = params_.find(e->name); p != params_.end()) {
        if (!is_integer(p->second->dtype))
          fail_at(e, fmt::format("param '{}' is {} and cannot be used in a shape", e->name,
                                 dtype_name(p->second->dtype)),
                  "shapes are integers; declare the param as i64");
        return retyped(e, p->second->dtype);
      }
      shape_symbols_.insert(e->name);
      return retyped(e, DType::I64);
    }
    case ExprKind::Unary:
      if (e->unary_op == UnaryOp::Neg) return retyped(e, DType::I64, {check_shape(e->operands[0], t)}, nullptr);
      break;
    case ExprKind::Binary:
      switch (e->binary_op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::Mul:
      case BinaryOp::FloorDiv:
      case BinaryOp::Mod: {
        Expr a = check_shape(e->operands[0], t), b = check_shape(e->operands[1], t);
        return retyped(e, promote(a->type, b->type), {a, b}, nullptr);
      }
      default: break;
      }
      break;
    default: break;
    }
    fail_at(e, fmt::format("invalid dimension '{}' in the shape of '{}'", to_string(e), t.name), hint);
  }

  // ---- statements -----------------------------------------------------------------------

  void check_statement(Comprehension& c, const std::set<std::string>& written) {
    cur_ = &c;
    written_ = &written;
    bare_.clear();
    right_vars_.clear();
    right_var_locs_.clear();

    const TensorDecl* out = lookup_target(c);
    if (c.is_indirect_store()) return check_indirect_store(c, *out);
    if (c.indices.size() != out->shape.size())
      fail(c.loc, fmt::format("tensor '{}' has rank {} but is written with {} {}", c.output,
                              out->shape.size(), c.indices.size(), c.indices.size() == 1 ? "index" : "indices"),
           "", static_cast<int>(c.output.size()));
    std::set<std::string> left;
    for (size_t i = 0; i < c.indices.size(); ++i) {
      const std::string& v = c.indices[i];
      SourceLoc loc = i < c.index_locs.size() ? c.index_locs[i] : SourceLoc{};
      int len = static_cast<int>(v.size());
      if (!is_identifier(v)) fail(loc, fmt::format("invalid index name '{}'", v), "", len);
      if (tensors_.count(v))
        fail(loc, fmt::format("left-hand index '{}' is a tensor, not an index variable", v), "", len);
      if (params_.count(v))
        fail(loc, fmt::format("left-hand index '{}' is a param, not an index variable", v), "", len);
      if (shape_symbols_.count(v))
        fail(loc, fmt::format("left-hand index '{}' is a shape symbol, not an index variable", v),
             "left-hand indices range over a dimension; pick a fresh name such as i", len);
      if (!left.insert(v).second)
        fail(loc, fmt::format("index '{}' appears twice on the left-hand side", v),
             "left-hand indices must be distinct; a diagonal is read as D[i] = A[i, i]", len);
      bare_[v].push_back(BareUse{out->shape[i], c.output, i, loc});
    }

    c.value = type_value(c.value);

    // Reduction variables in order of first appearance; check the reduce kind fits.
    c.reduction_vars.clear();
    for (const std::string& v : right_vars_)
      if (!left.count(v)) c.reduction_vars.push_back(v);
    if (c.reduce == ReduceKind::Assign && !c.reduction_vars.empty()) {
      const std::string& v = c.reduction_vars[0];
      fail(right_var_locs_[v], fmt::format("index '{}' appears only on the right of '='", v),
           "use a reduction operator (+=, *=, max=, min=) to reduce over it, or add it to the "
           "left-hand side",
           static_cast<int>(v.size()));
    }
    if (c.reduce != ReduceKind::Assign) {
      std::set<std::string> right(right_vars_.begin(), right_vars_.end());
      for (size_t i = 0; i < c.indices.size(); ++i) {
        // A dimension of extent 1 is a kept reduced axis (keepdims): nothing to mistype.
        const Expr& dim = out->shape[i];
        if (dim->kind == ExprKind::IntImm && dim->int_value == 1) continue;
        if (!right.count(c.indices[i]))
          fail(i < c.index_locs.size() ? c.index_locs[i] : SourceLoc{},
               fmt::format("index '{}' of the left-hand side does not appear on the right of '{}'",
                           c.indices[i], reduce_token(c.reduce)),
               fmt::format("every {}[..., {}, ...] would reduce the same values: check for a "
                           "mistyped index, or use '=' to broadcast",
                           c.output, c.indices[i]),
               static_cast<int>(c.indices[i].size()));
      }
      if (out->dtype == DType::Bool)
        fail(c.loc, fmt::format("reduction '{}' into bool tensor '{}'", reduce_token(c.reduce), c.output),
             "reduce into an integer or float tensor", static_cast<int>(c.output.size()));
    }
    check_store(c.value, out->dtype, c.output, c.loc);
    infer_ranges(c);
  }

  /// An indirect store (scatter) `Y[Idx[i, j], j] OP= v`: each left-hand index is a bare
  /// index variable or a data-dependent integer expression. It updates a tensor in place,
  /// so an earlier statement must have written it; its domain is every index variable
  /// of the statement, and `indices` becomes the ones the left-hand side mentions.
  void check_indirect_store(Comprehension& c, const TensorDecl& out) {
    const int name_len = static_cast<int>(c.output.size());
    if (c.store_indices.size() != out.shape.size())
      fail(c.loc, fmt::format("tensor '{}' has rank {} but is written with {} {}", c.output,
                              out.shape.size(), c.store_indices.size(),
                              c.store_indices.size() == 1 ? "index" : "indices"),
           "", name_len);
    if (!written_->count(c.output))
      fail(c.loc, fmt::format("indirect store into '{}' before any statement writes it", c.output),
           fmt::format("an indirect store only updates elements; write all of '{}' first, e.g. "
                       "{}[...] = 0",
                       c.output, c.output),
           name_len);
    for (size_t d = 0; d < c.store_indices.size(); ++d) {
      const Expr& e = c.store_indices[d];
      if (e->kind == ExprKind::Var) {
        Expr v = type_var(e, true);
        if (shape_symbols_.count(e->name) || params_.count(e->name))
          fail_at(e, fmt::format("left-hand index '{}' is not an index variable", e->name),
                  "each left-hand index is an index variable or reads an index tensor");
        bare_[e->name].push_back(BareUse{out.shape[d], c.output, d, e->loc});
        c.store_indices[d] = v;
        continue;
      }
      if (!reads_tensor(e))
        fail_at(e, fmt::format("left-hand index '{}' must be a bare index variable", to_string(e)),
                "in an indirect store, an index is a variable or reads an index tensor");
      c.store_indices[d] = type_index(e).expr;
    }
    // Every variable mentioned so far is on the left; the value's own come after.
    std::vector<std::string> left = right_vars_;
    std::set<std::string> left_set(left.begin(), left.end());
    c.indices = left;
    c.value = type_value(c.value);
    c.reduction_vars.clear();
    for (const std::string& v : right_vars_)
      if (!left_set.count(v)) c.reduction_vars.push_back(v);
    if (c.reduce == ReduceKind::Assign && !c.reduction_vars.empty()) {
      const std::string& v = c.reduction_vars[0];
      fail(right_var_locs_[v], fmt::format("index '{}' appears only on the right of '='", v),
           "add it to the left-hand side, or use a reduction operator (+=, *=, max=, min=)",
           static_cast<int>(v.size()));
    }
    if (c.reduce != ReduceKind::Assign && out.dtype == DType::Bool)
      fail(c.loc, fmt::format("reduction '{}' into bool tensor '{}'", reduce_token(c.reduce), c.output),
           "reduce into an integer or float tensor", name_len);
    check_store(c.value, out.dtype, c.output, c.loc);
    infer_ranges(c);
  }

  const TensorDecl* lookup_target(const Comprehension& c) {
    int len = static_cast<int>(c.output.size());
    auto it = tensors_.find(c.output);
    if (it == tensors_.end()) {
      if (params_.count(c.output))
        fail(c.loc, fmt::format("'{}' is a param and cannot be written", c.output),
             "params are read-only scalars", len);
      if (shape_symbols_.count(c.output))
        fail(c.loc, fmt::format("'{}' is a shape symbol, not a tensor", c.output), "", len);
      fail(c.loc, fmt::format("unknown tensor '{}'", c.output),
           "declare it under output: or local:", len);
    }
    const TensorDecl* t = it->second;
    if (t->role == TensorRole::Input) {
      if (c.reduce == ReduceKind::Assign)
        fail(c.loc, fmt::format("input '{}' cannot be assigned", c.output),
             "inputs are read-only; write to an output or a local", len);
      fail(c.loc, fmt::format("input '{}' cannot be the target of a reduction", c.output),
           "inputs are read-only; reduce into an output or a local", len);
    }
    return t;
  }

  /// A value may be stored in a tensor when no information is silently lost: int to
  /// float and width changes are implicit; float to int and anything to or from bool
  /// need an explicit cast (or a comparison).
  void check_store(const Expr& value, DType target, const std::string& tensor, SourceLoc loc) {
    DType v = value->type;
    bool ok = target == DType::Bool ? v == DType::Bool
            : is_integer(target)    ? is_integer(v)
                                    : v != DType::Bool;
    if (ok) return;
    fail(loc, fmt::format("dtype mismatch: cannot store a value of type {} in {} tensor '{}'", dtype_name(v),
                          dtype_name(target), tensor),
         v == DType::Bool ? std::string(kBoolArithHint)
                          : fmt::format("cast explicitly, e.g. {}(...)", dtype_name(target)),
         static_cast<int>(tensor.size()));
  }

  void infer_ranges(Comprehension& c) {
    c.ranges.clear();
    std::vector<std::string> vars = c.indices;
    vars.insert(vars.end(), c.reduction_vars.begin(), c.reduction_vars.end());
    for (const std::string& v : vars) {
      auto it = bare_.find(v);
      if (it == bare_.end() || it->second.empty()) {
        auto loc = right_var_locs_.count(v) ? right_var_locs_[v] : c.loc;
        fail(loc, fmt::format("cannot infer the range of index '{}': it never appears alone as an index", v),
             fmt::format("use '{}' by itself as an index of some tensor, e.g. W[{}], so its extent is known", v, v),
             static_cast<int>(v.size()));
      }
      const BareUse& first = it->second.front();
      Expr extent = fold(first.extent);
      for (const BareUse& u : it->second) {
        if (equal(fold(u.extent), extent)) continue;
        fail(u.loc,
             fmt::format("conflicting extents for index '{}': {} ({} dimension {}) vs {} ({} dimension {})", v,
                         to_string(first.extent), first.tensor, first.dim, to_string(u.extent), u.tensor, u.dim),
             "an index variable ranges over one extent; use different names for different ranges",
             static_cast<int>(v.size()));
      }
      c.ranges[v] = extent;
    }
  }

  void note_index_var(const Expr& e) {
    if (right_var_locs_.emplace(e->name, e->loc).second) right_vars_.push_back(e->name);
  }

  // ---- element expressions --------------------------------------------------------------

  Expr type_value(const Expr& e) {
    switch (e->kind) {
    case ExprKind::IntImm: return retyped(e, DType::I64);
    case ExprKind::FloatImm: return retyped(e, DType::F32);
    case ExprKind::BoolImm: return retyped(e, DType::Bool);
    case ExprKind::Var: return type_var(e, false);
    case ExprKind::Access: return type_access(e);
    case ExprKind::Unary: {
      Expr x = type_value(e->operands.at(0));
      if (e->unary_op == UnaryOp::Not) {
        if (x->type != DType::Bool)
          fail_at(e, fmt::format("'!' needs a bool operand, got {}", dtype_name(x->type)),
                  "compare it instead, e.g. x == 0");
        return retyped(e, DType::Bool, {x}, nullptr);
      }
      if (x->type == DType::Bool) fail_at(e, "bool value in arithmetic: '-' needs a number", kBoolArithHint);
      return retyped(e, x->type, {x}, nullptr);
    }
    case ExprKind::Binary: return type_binary(e);
    case ExprKind::Select: {
      Expr c = type_value(e->operands.at(0));
      if (c->type != DType::Bool)
        fail_at(e, fmt::format("select condition must be bool, got {}", dtype_name(c->type)),
                "compare it, e.g. x != 0 ? a : b");
      Expr a = type_value(e->operands.at(1)), b = type_value(e->operands.at(2));
      unify_literals(a, b);
      if ((a->type == DType::Bool) != (b->type == DType::Bool))
        fail_at(e, fmt::format("select branches have incompatible types {} and {}", dtype_name(a->type),
                               dtype_name(b->type)),
                kBoolArithHint);
      return retyped(e, promote(a->type, b->type), {c, a, b}, nullptr);
    }
    case ExprKind::Cast: {
      Expr x = type_value(e->operands.at(0));
      // `f64(0.1)` is the f64 literal 0.1, not the f32 literal 0.1 widened.
      if (x->kind == ExprKind::FloatImm && is_float(e->type)) x = retyped(x, e->type);
      return retyped(e, e->type, {x}, nullptr);
    }
    case ExprKind::Call: return type_call(e);
    }
    UT_INTERNAL_ASSERT(false, "unhandled expression kind");
  }

  /// Weak literals: each literal takes its partner's type when the partner is not one.
  static void unify_literals(Expr& a, Expr& b) {
    if (is_literal(a) && !is_literal(b)) a = adopt(a, b->type);
    if (is_literal(b) && !is_literal(a)) b = adopt(b, a->type);
  }

  Expr type_var(const Expr& e, bool in_index) {
    if (auto t = tensors_.find(e->name); t != tensors_.end())
      fail_at(e, fmt::format("tensor '{}' is used without indices", e->name),
              t->second->shape.empty() ? fmt::format("a scalar tensor is read as {}[]", e->name)
                                       : fmt::format("read an element, e.g. {}[...]", e->name));
    if (auto p = params_.find(e->name); p != params_.end()) {
      if (in_index && !is_integer(p->second->dtype))
        fail_at(e, fmt::format("param '{}' is {} and cannot be used in an index", e->name,
                               dtype_name(p->second->dtype)),
                "index expressions are integers");
      return retyped(e, p->second->dtype);
    }
    if (shape_symbols_.count(e->name)) return retyped(e, DType::I64);
    if (!is_identifier(e->name)) fail_at(e, fmt::format("invalid index name '{}'", e->name));
    note_index_var(e);
    return retyped(e, DType::I64);
  }

  Expr type_access(const Expr& e) {
    auto it = tensors_.find(e->name);
    if (it == tensors_.end()) {
      if (params_.count(e->name))
        fail_at(e, fmt::format("param '{}' is a scalar and cannot be indexed", e->name),
                fmt::format("use it as {}", e->name));
      if (shape_symbols_.count(e->name))
        fail_at(e, fmt::format("'{}' is a shape symbol, not a tensor", e->name));
      fail_at(e, fmt::format("unknown tensor '{}'", e->name));
    }
    const TensorDecl& t = *it->second;
    if (e->name == cur_->output)
      fail_at(e, fmt::format("statement reads '{}', the tensor it writes", e->name),
              "a comprehension cannot read its own result; write it into a new local or output and "
              "read that");
    if (t.role != TensorRole::Input && !written_->count(e->name))
      fail_at(e, fmt::format("{} '{}' is read before any statement writes it",
                             t.role == TensorRole::Local ? "local" : "output", e->name),
              "statements run in order; write it in an earlier statement");
    if (e->operands.size() != t.shape.size())
      fail_at(e, fmt::format("tensor '{}' has rank {} but is indexed with {} {}", e->name, t.shape.size(),
                             e->operands.size(), e->operands.size() == 1 ? "index" : "indices"));
    std::vector<Expr> idx;
    for (size_t d = 0; d < e->operands.size(); ++d) {
      Expr i = type_index(e->operands[d]).expr;
      if (i->kind == ExprKind::Var && !shape_symbols_.count(i->name) && !params_.count(i->name))
        bare_[i->name].push_back(BareUse{t.shape[d], t.name, d, i->loc});
      idx.push_back(std::move(i));
    }
    Expr guard;
    if (e->guard) {
      guard = type_value(e->guard);
      if (is_literal(guard)) guard = adopt(guard, t.dtype);
      DType g = guard->type;
      bool ok = t.dtype == DType::Bool ? g == DType::Bool : is_integer(t.dtype) ? is_integer(g) : g != DType::Bool;
      if (!ok)
        fail_at(guard, fmt::format("default value of type {} for {} tensor '{}'", dtype_name(g),
                                   dtype_name(t.dtype), e->name),
                fmt::format("the value after ?""? must have type {}", dtype_name(t.dtype)));
    }
    return retyped(e, t.dtype, std::move(idx), std::move(guard));
  }

  Expr type_binary(const Expr& e) {
    Expr a = type_value(e->operands.at(0)), b = type_value(e->operands.at(1));
    unify_literals(a, b);
    BinaryOp op = e->binary_op;
    std::string tok = binary_op_token(op);
    if (op == BinaryOp::And || op == BinaryOp::Or) {
      if (a->type != DType::Bool || b->type != DType::Bool)
        fail_at(e, fmt::format("'{}' needs bool operands, got {} and {}", tok, dtype_name(a->type),
                               dtype_name(b->type)),
                "compare numbers first, e.g. x > 0 && y > 0");
      return retyped(e, DType::Bool, {a, b}, nullptr);
    }
    if (is_comparison(op)) {
      bool ba = a->type == DType::Bool, bb = b->type == DType::Bool;
      if (ba != bb)
        fail_at(e, fmt::format("cannot compare {} with {}", dtype_name(a->type), dtype_name(b->type)),
                kBoolArithHint);
      if (ba && op != BinaryOp::Eq && op != BinaryOp::Ne)
        fail_at(e, fmt::format("'{}' is not defined on bool", tok), "bools compare with == and !=");
      return retyped(e, DType::Bool, {a, b}, nullptr);
    }
    if (a->type == DType::Bool || b->type == DType::Bool)
      fail_at(e, fmt::format("bool value in arithmetic: '{}' needs numbers", tok), kBoolArithHint);
    if ((op == BinaryOp::FloorDiv || op == BinaryOp::Mod) && (!is_integer(a->type) || !is_integer(b->type)))
      fail_at(e, fmt::format("'{}' needs integer operands, got {} and {}", tok, dtype_name(a->type),
                             dtype_name(b->type)),
              "for floats use floor(a / b)");
    return retyped(e, promote(a->type, b->type), {a, b}, nullptr);
  }

  Expr type_call(const Expr& e) {
    const char* name = math_fn_name(e->math_fn);
    int arity = math_fn_arity(e->math_fn);
    if (static_cast<int>(e->operands.size()) != arity)
      fail_at(e, fmt::format("'{}' takes {} argument{}, got {}", name, arity, arity == 1 ? "" : "s",
                             e->operands.size()));
    std::vector<Expr> args;
    std::optional<DType> strong; // promoted type of the non-literal arguments
    for (const Expr& o : e->operands) {
      args.push_back(type_value(o));
      const Expr& a = args.back();
      if (a->type == DType::Bool)
        fail_at(a, fmt::format("'{}' needs numeric arguments, got bool", name), kBoolArithHint);
      if (!is_literal(a)) strong = strong ? promote(*strong, a->type) : a->type;
    }
    bool float_only = !accepts_integers(e->math_fn);
    if (strong && float_only && !is_float(*strong))
      fail_at(e, fmt::format("'{}' needs float arguments, got {}", name, dtype_name(*strong)),
              fmt::format("cast it, e.g. {}(f32(x))", name));
    DType common = strong ? *strong : DType::I64;
    for (Expr& a : args) {
      if (!is_literal(a)) continue;
      if (strong) {
        a = adopt(a, *strong);
      } else if (float_only && a->kind == ExprKind::IntImm) {
        a = retyped(a, DType::F32);
      }
    }
    if (!strong) {
      common = args[0]->type;
      for (const Expr& a : args) common = promote(common, a->type);
    } else {
      for (const Expr& a : args) common = promote(common, a->type);
    }
    DType result = (e->math_fn == MathFn::IsNan || e->math_fn == MathFn::IsInf) ? DType::Bool : common;
    return retyped(e, result, std::move(args), nullptr);
  }

  // ---- index expressions ----------------------------------------------------------------

  struct Index {
    Expr expr;
    bool has_var; // mentions an index variable (not only shape symbols and params)
  };

  Index type_index(const Expr& e) {
    const char* affine_hint =
        "indices are affine in index variables and shape symbols, plus // and % by constants";
    if (reads_tensor(e)) return type_data_dependent_index(e);
    switch (e->kind) {
    case ExprKind::IntImm: return {retyped(e, DType::I64), false};
    case ExprKind::FloatImm:
    case ExprKind::BoolImm:
      fail_at(e, fmt::format("index expressions must be integers, got '{}'", to_string(e)), affine_hint);
    case ExprKind::Var: {
      Expr v = type_var(e, true);
      bool is_var = !shape_symbols_.count(e->name) && !params_.count(e->name);
      return {v, is_var};
    }
    case ExprKind::Access: break; // handled above: data-dependent
    case ExprKind::Unary:
      if (e->unary_op == UnaryOp::Neg) {
        Index x = type_index(e->operands[0]);
        return {retyped(e, x.expr->type, {x.expr}, nullptr), x.has_var};
      }
      break;
    case ExprKind::Binary: {
      BinaryOp op = e->binary_op;
      if (op == BinaryOp::Div)
        fail_at(e, "'/' in an index expression", "use '//' for floor division by a constant");
      if (op != BinaryOp::Add && op != BinaryOp::Sub && op != BinaryOp::Mul && op != BinaryOp::FloorDiv &&
          op != BinaryOp::Mod)
        break;
      Index a = type_index(e->operands[0]), b = type_index(e->operands[1]);
      if (op == BinaryOp::Mul && a.has_var && b.has_var)
        fail_at(e, fmt::format("non-affine index expression '{}': it multiplies index variables", to_string(e)),
                affine_hint);
      if (op == BinaryOp::FloorDiv || op == BinaryOp::Mod) {
        Expr d = fold(b.expr);
        // A divisor over shape symbols and integer params (reshape's `k // C`, tile's
        // `i % N`) is a constant once shapes are bound; lowering checks it is positive.
        if (d->kind != ExprKind::IntImm && !b.has_var)
          return {retyped(e, promote(a.expr->type, b.expr->type), {a.expr, b.expr}, nullptr), a.has_var};
        if (d->kind != ExprKind::IntImm)
          fail_at(e, fmt::format("index division by non-constant '{}'", to_string(e->operands[1])),
                  "'//' and '%' in an index need a constant divisor");
        if (d->int_value <= 0)
          fail_at(e, fmt::format("index divisor must be a positive constant, got {}", d->int_value));
      }
      return {retyped(e, promote(a.expr->type, b.expr->type), {a.expr, b.expr}, nullptr), a.has_var || b.has_var};
    }
    default: break;
    }
    fail_at(e, fmt::format("'{}' is not allowed in an index expression", to_string(e)), affine_hint);
  }

  /// An index that reads a tensor (gather's `X[Idx[i], j]`): any integer element
  /// expression, since its value is only known at run time. Reads outside the tensor
  /// are checked at run time (the sim device reports them; see docs/ARCHITECTURE.md).
  Index type_data_dependent_index(const Expr& e) {
    Expr x = type_value(e);
    if (!is_integer(x->type))
      fail_at(e, fmt::format("data-dependent index '{}' has type {}", to_string(e), dtype_name(x->type)),
              x->type == DType::Bool ? std::string("convert it, e.g. c ? 1 : 0")
                                     : fmt::format("indices are integers; read an integer tensor or cast, "
                                                   "e.g. i64({})",
                                                   to_string(e)));
    return {x, true};
  }

  Kernel& k_;
  const SourceFile& src_;
  int stmt_ = -1;
  std::map<std::string, const TensorDecl*> tensors_;
  std::map<std::string, const ParamDecl*> params_;
  std::set<std::string> shape_symbols_;
  // Per statement:
  const Comprehension* cur_ = nullptr;
  const std::set<std::string>* written_ = nullptr;
  std::map<std::string, std::vector<BareUse>> bare_;
  std::vector<std::string> right_vars_;
  std::map<std::string, SourceLoc> right_var_locs_;
};

} // namespace

void verify(Kernel& k, const SourceFile& src) { KernelVerifier(k, src).run(); }

} // namespace unitile
