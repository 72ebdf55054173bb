// Expressions shared by Kernel IR and Loop IR: immediates, variables, tensor accesses,
// arithmetic, selects, casts and math calls.
//
// One node struct with a kind tag (like MLIR's generic operation) rather than a class per
// node: passes match on `kind` and rebuild through the factory functions below, and the
// whole shape of an expression fits on one screen. Nodes are immutable and shared.
#pragma once

#include "ir/Diagnostic.h"
#include "ir/Type.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace unitile {

enum class ExprKind : uint8_t {
  IntImm,   // int_value
  FloatImm, // float_value
  BoolImm,  // int_value is 0 or 1
  Var,      // name: an index variable, loop variable, shape symbol, param or let name
  Access,   // name = tensor/buffer; operands = indices; guard = default if out of range
  Unary,    // unary_op; operands = {x}
  Binary,   // binary_op; operands = {a, b}
  Select,   // operands = {cond, a, b}: cond ? a : b
  Cast,     // type is the target; operands = {x}
  Call,     // math_fn; operands = args
};

enum class UnaryOp : uint8_t {
  Neg, Not,
  BitNot, // `~`: integers only
};

enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, // Div on integers truncates toward zero (C semantics)
  FloorDiv,           // `//`: floor division (index arithmetic)
  Mod,                // `%`: result has the sign of the divisor (Python semantics)
  Lt, Le, Gt, Ge, Eq, Ne,
  And, Or,
  // Bitwise, on integers only; shifts by a count outside [0, bits of the type) give 0
  // (`<<`), or the sign fill (`>>`, arithmetic on signed types).
  BitAnd, BitOr, BitXor, Shl, Shr,
};

/// Math functions callable in element expressions. `min`, `max` and `pow` are binary,
/// `fma` ternary, the rest unary. The complete list lives in one place: Expr.cpp.
enum class MathFn : uint8_t {
  Exp, Log, Sqrt, Rsqrt, Tanh, Erf, Sigmoid, Pow, Abs, Min, Max, Sin, Cos, Floor, Ceil,
  Round, Exp2, Log2, Log1p, Expm1, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh,
  Atanh, Sign, Trunc, IsNan, IsInf, Fma, Atan2,
};

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  DType type = DType::F32; // filled by the verifier (Kernel IR) or by construction (Loop IR)
  SourceLoc loc;
  int64_t int_value = 0;
  double float_value = 0;
  std::string name;
  UnaryOp unary_op = UnaryOp::Neg;
  BinaryOp binary_op = BinaryOp::Add;
  MathFn math_fn = MathFn::Exp;
  std::vector<Expr> operands;
  Expr guard; // Access only: value when an index is out of range (`X[i-1] ?? 0`); may be null
};

// Factories. `type` arguments default to what the node's operands imply where that is
// unambiguous; index arithmetic is i64.
Expr int_imm(int64_t v, DType t = DType::I64, SourceLoc loc = {});
Expr float_imm(double v, DType t = DType::F32, SourceLoc loc = {});
Expr bool_imm(bool v, SourceLoc loc = {});
Expr var(std::string name, DType t = DType::I64, SourceLoc loc = {});
Expr access(std::string tensor, std::vector<Expr> indices, DType t, Expr guard = nullptr,
            SourceLoc loc = {});
Expr unary(UnaryOp op, Expr x, SourceLoc loc = {});
/// Result type: comparisons and And/Or give Bool, arithmetic gives promote(a, b).
Expr binary(BinaryOp op, Expr a, Expr b, SourceLoc loc = {});
Expr select(Expr c, Expr a, Expr b, SourceLoc loc = {});
Expr cast(DType t, Expr x, SourceLoc loc = {});
Expr call(MathFn fn, std::vector<Expr> args, SourceLoc loc = {});
/// Rebuild `e` with new operands (and guard), keeping everything else.
Expr with_operands(const Expr& e, std::vector<Expr> operands, Expr guard = nullptr);

const char* binary_op_token(BinaryOp op); // "+", "//", "<=", "&&", ...
bool is_comparison(BinaryOp op);
/// `&`, `|`, `^`, `<<`, `>>`: integer operands only.
bool is_bitwise(BinaryOp op);
const char* math_fn_name(MathFn fn);      // "exp", "rsqrt", ...
std::optional<MathFn> parse_math_fn(std::string_view name);
/// Number of arguments `fn` takes (1, 2 or 3).
int math_fn_arity(MathFn fn);

/// Structural equality (ignores source locations).
bool equal(const Expr& a, const Expr& b);

/// Whether `e` reads a tensor anywhere (guards included). An index expression that does
/// is data-dependent (indirect indexing, as in gather's `X[Idx[i, j], j]`): its range
/// is only known at run time.
bool reads_tensor(const Expr& e);

/// Print in the text syntax, fully parenthesised only where precedence needs it.
std::string to_string(const Expr& e);

/// Call `f` on every node of `e`, parents before children (guards included).
template <typename F> void visit(const Expr& e, F&& f) {
  if (!e) return;
  f(e);
  for (const Expr& o : e->operands) visit(o, f);
  if (e->guard) visit(e->guard, f);
}

/// Bottom-up rewrite: children first, then `f(rebuilt node)`; `f` returns the replacement
/// (or its argument unchanged). Subtrees that did not change are shared, not copied.
template <typename F> Expr rewrite(const Expr& e, F&& f) {
  if (!e) return e;
  std::vector<Expr> ops;
  ops.reserve(e->operands.size());
  bool changed = false;
  for (const Expr& o : e->operands) {
    ops.push_back(rewrite(o, f));
    changed |= ops.back() != o;
  }
  Expr g = rewrite(e->guard, f);
  changed |= g != e->guard;
  return f(changed ? with_operands(e, std::move(ops), std::move(g)) : e);
}

} // namespace unitile
