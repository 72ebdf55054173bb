// The Kernel IR printer: expressions, kernels and modules in the canonical .ut syntax.
//
// The output is the canonical form: parsing it gives back a structurally equal kernel,
// and printing that again gives the same text. Three details make that hold: parentheses
// go exactly where precedence needs them, floats print in their shortest form that reads
// back to the same double (with a '.' or exponent so they stay floats), and a negated
// literal prints as `-(5)` because the parser reads `-5` as the literal -5.
#include "ir/Printer.h"

#include <charconv>
#include <cmath>
#include <string>

namespace unitile {

namespace {

// Binding strength, loosest first; an operand whose level is below what its position
// needs gets parentheses.
enum Level : int {
  kSelect = 0, kOr, kAnd, kEquality, kCompare, kAdditive, kMultiplicative,
  kUnary,   // -x, !x and negative literals
  kPrimary,
};

int binary_level(BinaryOp op) {
  switch (op) {
  case BinaryOp::Or: return kOr;
  case BinaryOp::And: return kAnd;
  case BinaryOp::Eq:
  case BinaryOp::Ne: return kEquality;
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge: return kCompare;
  case BinaryOp::Add:
  case BinaryOp::Sub: return kAdditive;
  default: return kMultiplicative;
  }
}

std::string float_text(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

bool is_negative_literal(const Expr& e) {
  if (e->kind == ExprKind::IntImm) return e->int_value < 0;
  if (e->kind == ExprKind::FloatImm) return std::signbit(e->float_value);
  return false;
}

int level_of(const Expr& e) {
  switch (e->kind) {
  case ExprKind::IntImm:
  case ExprKind::FloatImm: return is_negative_literal(e) ? kUnary : kPrimary;
  case ExprKind::Select: return kSelect;
  case ExprKind::Binary: return binary_level(e->binary_op);
  case ExprKind::Unary: return kUnary;
  // A guarded read binds tighter than any operator, but `X[i] ?? 0 * W[j]` would read
  // as if the default were `0 * W[j]`: parenthesise it wherever it is an operand.
  case ExprKind::Access: return e->guard ? kSelect : kPrimary;
  default: return kPrimary;
  }
}

class ExprPrinter {
public:
  std::string out;

  /// `in_brackets`: inside (), [] or a call, where `//` cannot be read as a comment.
  void print(const Expr& e, int min_level, bool in_brackets) {
    if (!e) {
      out += "<null>";
      return;
    }
    bool floordiv_outside =
        !in_brackets && e->kind == ExprKind::Binary && e->binary_op == BinaryOp::FloorDiv;
    if (level_of(e) < min_level || floordiv_outside) {
      out += '(';
      print_bare(e, true);
      out += ')';
      return;
    }
    print_bare(e, in_brackets);
  }

private:
  void print_list(const std::vector<Expr>& items) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += ", ";
      print(items[i], kSelect, true);
    }
  }

  void print_bare(const Expr& e, bool in_brackets) {
    switch (e->kind) {
    case ExprKind::IntImm: out += std::to_string(e->int_value); return;
    case ExprKind::FloatImm: out += float_text(e->float_value); return;
    case ExprKind::BoolImm: out += e->int_value ? "true" : "false"; return;
    case ExprKind::Var: out += e->name; return;
    case ExprKind::Access:
      out += e->name;
      out += '[';
      print_list(e->operands);
      out += ']';
      if (e->guard) {
        out += " ?? ";
        print(e->guard, kUnary, in_brackets);
      }
      return;
    case ExprKind::Unary: {
      out += e->unary_op == UnaryOp::Neg ? "-" : "!";
      const Expr& x = e->operands.at(0);
      bool literal = x->kind == ExprKind::IntImm || x->kind == ExprKind::FloatImm;
      if (e->unary_op == UnaryOp::Neg && literal && !is_negative_literal(x)) {
        out += '(';
        print(x, kSelect, true);
        out += ')';
        return;
      }
      print(x, kUnary, in_brackets);
      return;
    }
    case ExprKind::Binary: {
      int level = binary_level(e->binary_op);
      print(e->operands.at(0), level, in_brackets);
      out += ' ';
      out += binary_op_token(e->binary_op);
      out += ' ';
      print(e->operands.at(1), level + 1, in_brackets);
      return;
    }
    case ExprKind::Select:
      print(e->operands.at(0), kOr, in_brackets);
      out += " ? ";
      print(e->operands.at(1), kSelect, in_brackets);
      out += " : ";
      print(e->operands.at(2), kSelect, in_brackets);
      return;
    case ExprKind::Cast:
      out += dtype_name(e->type);
      out += '(';
      print_list(e->operands);
      out += ')';
      return;
    case ExprKind::Call:
      out += math_fn_name(e->math_fn);
      out += '(';
      print_list(e->operands);
      out += ')';
      return;
    }
  }
};

const char* role_section(TensorRole r) {
  switch (r) {
  case TensorRole::Input: return "input";
  case TensorRole::Output: return "output";
  case TensorRole::Local: return "local";
  }
  return "?";
}

std::string shape_text(const TensorDecl& t) {
  ExprPrinter p;
  p.out += '[';
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) p.out += ", ";
    p.print(t.shape[i], kSelect, true);
  }
  p.out += ']';
  return p.out;
}

} // namespace

std::string to_string(const Expr& e) {
  ExprPrinter p;
  p.print(e, kSelect, false);
  return p.out;
}

std::string to_string(const Comprehension& c) {
  std::string s = c.output + "[";
  for (size_t i = 0; i < c.indices.size() && !c.is_indirect_store(); ++i) {
    if (i) s += ", ";
    s += c.indices[i];
  }
  for (size_t i = 0; i < c.store_indices.size(); ++i) { // an indirect store (scatter)
    if (i) s += ", ";
    s += to_string(c.store_indices[i]);
  }
  s += "] ";
  s += reduce_token(c.reduce);
  s += ' ';
  s += to_string(c.value);
  return s;
}

std::string to_string(const Kernel& k) {
  std::string s = "kernel " + k.name + " {\n";
  // One section line per run of tensors with the same role, so declaration order (which
  // is the calling convention) survives the round trip.
  for (size_t i = 0; i < k.tensors.size();) {
    TensorRole role = k.tensors[i].role;
    s += "  ";
    s += role_section(role);
    s += ": ";
    for (size_t first = i; i < k.tensors.size() && k.tensors[i].role == role; ++i) {
      const TensorDecl& t = k.tensors[i];
      if (i != first) s += ", ";
      s += dtype_name(t.dtype);
      s += shape_text(t);
      s += ' ';
      s += t.name;
    }
    s += '\n';
  }
  if (!k.params.empty()) {
    s += "  param: ";
    for (size_t i = 0; i < k.params.size(); ++i) {
      if (i) s += ", ";
      s += dtype_name(k.params[i].dtype);
      s += ' ';
      s += k.params[i].name;
    }
    s += '\n';
  }
  s += "  operation:\n";
  for (const Comprehension& c : k.body) s += "    " + to_string(c) + "\n";
  s += "}\n";
  if (k.schedule_text) s += "schedule {" + *k.schedule_text + "}\n";
  return s;
}

std::string to_string(const Module& m) {
  std::string s;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    if (i) s += '\n';
    s += to_string(m.kernels[i]);
  }
  return s;
}

} // namespace unitile
