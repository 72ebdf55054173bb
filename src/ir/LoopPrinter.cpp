// The Loop IR text printer and structural equality of statements.
//
// The text form is what lowering tests FileCheck against and what the sim device
// executes, so it must read well and parse back to exactly the same tree
// (parse_loop_program(to_string(p)) == p, types included):
//
//   program MatrixMul {
//     buffer A: f32[64, 32] input
//     param eps: f32
//     func MatrixMul_0 {
//       for i in 0..64 grid.x {            # constant bounds: `LO..HI`, HI = LO + extent
//         for j in i * 4 extent 4 {        # otherwise: `MIN extent EXTENT`
//           allocate acc: f32[1] register {
//             let x = A[i, j] * eps {
//               if x > 0.0 {
//                 C[i, j] = x
//               } else {
//                 barrier
//               }
//             }
//           }
//         }
//       }
//     }
//   }
//
// Serial loops print no kind. A body of several statements is a Block; a bare `{ ... }`
// inside a statement list is a nested Block (only hand-built trees have those).
// Expressions use the Kernel IR syntax and its printer, plus a dtype suffix on literals
// (see below), which is what makes the round trip exact.
#include "ir/Loop.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace unitile {

namespace {

// ---- Expressions ------------------------------------------------------------------
// Expressions print through the shared Kernel IR printer, to_string(const Expr&). The
// one thing Loop IR needs beyond it is the dtype of a literal, since nothing else in
// the text says it: a literal whose dtype is not the default (i64 for integers, f32 for
// floats) is written with the dtype name directly after it: `7i32`, `0.5f64`, `-inff64`,
// `1u8`, `0f32` (an IntImm of type f32). The shared printer has no such syntax, so such
// literals are handed to it already spelled, as a name it prints verbatim.
std::string float_literal_text(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// `negated`: `e` is the operand of a unary minus, where `-7i32` would read back as the
// literal -7, so the spelled literal keeps parentheses.
Expr spell_typed_literals(const Expr& e, bool negated) {
  if (!e) return e;
  bool int_lit = e->kind == ExprKind::IntImm && e->type != DType::I64;
  bool float_lit = e->kind == ExprKind::FloatImm && e->type != DType::F32;
  if (int_lit || float_lit) {
    std::string text = int_lit ? std::to_string(e->int_value) : float_literal_text(e->float_value);
    text += dtype_name(e->type);
    if (negated) text = "(" + text + ")";
    return var(std::move(text), e->type);
  }
  bool neg = e->kind == ExprKind::Unary && e->unary_op == UnaryOp::Neg;
  std::vector<Expr> ops;
  ops.reserve(e->operands.size());
  bool changed = false;
  for (const Expr& o : e->operands) {
    ops.push_back(spell_typed_literals(o, neg));
    changed |= ops.back() != o;
  }
  Expr g = spell_typed_literals(e->guard, false);
  changed |= g != e->guard;
  return changed ? with_operands(e, std::move(ops), std::move(g)) : e;
}

std::string print_expr(const Expr& e) {
  UT_INTERNAL_ASSERT(e != nullptr, "null expression in Loop IR");
  return to_string(spell_typed_literals(e, false));
}

std::string pad(int depth) { return std::string(static_cast<size_t>(depth) * 2, ' '); }

bool is_const_i64(const Expr& e) {
  return e && e->kind == ExprKind::IntImm && e->type == DType::I64;
}

void print_stmt(std::string& out, const Stmt& s, int depth);

// A statement list between braces; see the header comment for the one-statement Block.
void print_list(std::string& out, const std::vector<Stmt>& stmts, int depth) {
  for (const Stmt& s : stmts) {
    if (s && s->kind == StmtKind::Block) {
      out += pad(depth) + "{\n";
      print_list(out, s->body, depth + 1);
      out += pad(depth) + "}\n";
    } else {
      print_stmt(out, s, depth);
    }
  }
}

// `{`, the body's statements, `}` (the caller has printed the head and writes the
// newline or `else` after the closing brace).
void print_body(std::string& out, const Stmt& body, int depth) {
  out += "{\n";
  if (body && body->kind == StmtKind::Block && body->body.size() != 1)
    print_list(out, body->body, depth + 1);
  else
    print_list(out, {body}, depth + 1);
  out += pad(depth) + "}";
}

// A store's target prints as an access, so that its indices are printed in brackets
// (where the shared printer needs no parentheses around `//`).
std::string print_target(const std::string& buffer, const std::vector<Expr>& idx) {
  return print_expr(access(buffer, idx, DType::F32));
}

std::string print_shape(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

void print_stmt(std::string& out, const Stmt& s, int depth) {
  UT_INTERNAL_ASSERT(s != nullptr, "null statement in Loop IR");
  if (s->kind == StmtKind::Block) {
    // A Block on its own (to_string of a func body, say) prints as its statements.
    print_list(out, s->body, depth);
    return;
  }
  out += pad(depth);
  switch (s->kind) {
  case StmtKind::For: {
    out += "for " + s->var + " in ";
    if (is_const_i64(s->min) && is_const_i64(s->extent))
      out += fmt::format("{}..{}", s->min->int_value, s->min->int_value + s->extent->int_value);
    else
      out += print_expr(s->min) + " extent " + print_expr(s->extent);
    if (s->for_kind != ForKind::Serial) out += std::string(" ") + for_kind_name(s->for_kind);
    if (s->unroll_by > 0) out += fmt::format(" unroll {}", s->unroll_by);
    out += " ";
    print_body(out, s->body.at(0), depth);
    out += "\n";
    return;
  }
  case StmtKind::If:
    out += "if " + print_expr(s->cond) + " ";
    print_body(out, s->body.at(0), depth);
    if (s->body.size() > 1) {
      out += " else ";
      print_body(out, s->body[1], depth);
    }
    out += "\n";
    return;
  case StmtKind::Store:
    out += print_target(s->buffer, s->indices) + " = " + print_expr(s->value) + "\n";
    return;
  case StmtKind::Allocate:
    out += fmt::format("allocate {}: {}{} {} ", s->buffer, dtype_name(s->dtype),
                       print_shape(s->shape), mem_scope_name(s->scope));
    print_body(out, s->body.at(0), depth);
    out += "\n";
    return;
  case StmtKind::Let:
    out += "let " + s->var + " = " + print_expr(s->value) + " ";
    print_body(out, s->body.at(0), depth);
    out += "\n";
    return;
  case StmtKind::Block: return; // handled above
  case StmtKind::Barrier: out += "barrier\n"; return;
  case StmtKind::Prefetch:
    out += "prefetch " + print_target(s->buffer, s->indices);
    if (!s->shape.empty()) out += fmt::format(" rows {}", s->shape[0]);
    if (s->cache_level != 1) out += fmt::format(" level {}", s->cache_level);
    out += "\n";
    return;
  case StmtKind::Matrix: {
    // `matrix_mma(16, 8, 16) C[w, a, b, 0, 0] += A[r, k] * B[k, c]`
    out += fmt::format("{}({}) {}", matrix_op_name(s->matrix_op), fmt::join(s->shape, ", "),
                       print_target(s->buffer, s->indices));
    switch (s->matrix_op) {
    case MatrixOp::Zero: break;
    case MatrixOp::Mma:
    case MatrixOp::MmaTf32:
    case MatrixOp::MmaPairs:
      out += " += " + print_expr(s->value->operands[0]) + " * " + print_expr(s->value->operands[1]);
      break;
    case MatrixOp::Store: out += " = " + print_expr(s->value); break;
    }
    out += "\n";
    return;
  }
  }
}

const char* role_name(TensorRole r) {
  switch (r) {
  case TensorRole::Input: return "input";
  case TensorRole::Output: return "output";
  case TensorRole::Local: return "local";
  }
  return "?";
}

bool equal_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i])) return false;
  return true;
}

} // namespace

/// `indent` is a nesting depth: each level is two spaces.
std::string to_string(const Stmt& s, int indent) {
  std::string out;
  print_stmt(out, s, indent);
  return out;
}

std::string to_string(const LoopProgram& p) {
  std::string out = "program " + p.kernel + " {\n";
  for (const LoopBuffer& b : p.buffers)
    out += fmt::format("  buffer {}: {}{} {}{}\n", b.name, dtype_name(b.dtype),
                       print_shape(b.shape), role_name(b.role), b.stream ? " stream" : "");
  for (const ParamDecl& prm : p.params)
    out += fmt::format("  param {}: {}\n", prm.name, dtype_name(prm.dtype));
  for (const LoopFunc& f : p.funcs) {
    out += "  func " + f.name + " ";
    print_body(out, f.body, 1);
    out += "\n";
  }
  out += "}\n";
  return out;
}

bool equal(const Stmt& a, const Stmt& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || a->body.size() != b->body.size()) return false;
  switch (a->kind) {
  case StmtKind::For:
    if (a->var != b->var || a->for_kind != b->for_kind || a->unroll_by != b->unroll_by || !equal(a->min, b->min) ||
        !equal(a->extent, b->extent))
      return false;
    break;
  case StmtKind::If:
    if (!equal(a->cond, b->cond)) return false;
    break;
  case StmtKind::Store:
    if (a->buffer != b->buffer || !equal_exprs(a->indices, b->indices) ||
        !equal(a->value, b->value))
      return false;
    break;
  case StmtKind::Allocate:
    if (a->buffer != b->buffer || a->dtype != b->dtype || a->shape != b->shape ||
        a->scope != b->scope)
      return false;
    break;
  case StmtKind::Let:
    if (a->var != b->var || !equal(a->value, b->value)) return false;
    break;
  case StmtKind::Prefetch:
    if (a->buffer != b->buffer || a->shape != b->shape || a->cache_level != b->cache_level ||
        !equal_exprs(a->indices, b->indices))
      return false;
    break;
  case StmtKind::Matrix:
    if (a->matrix_op != b->matrix_op || a->buffer != b->buffer || a->shape != b->shape ||
        !equal_exprs(a->indices, b->indices) || !equal(a->value, b->value))
      return false;
    break;
  case StmtKind::Block:
  case StmtKind::Barrier: break;
  }
  for (size_t i = 0; i < a->body.size(); ++i)
    if (!equal(a->body[i], b->body[i])) return false;
  return true;
}

} // namespace unitile
