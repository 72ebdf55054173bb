// vectorize on a reduction loop: the accumulator gets one partial result per SIMD lane.
//
// Why: a reduction into a register accumulator (`acc[0] = acc[0] + X[i, j]` over j) is a
// chain of dependent adds that a C compiler must keep in order (floating-point addition
// is not associative), so it runs one element per add latency. Giving the accumulator
// one slot per lane makes the loop over j a vector loop over lanes: `acc[l] += X[i,
// jo*L + l]` for each block of L elements, then a tail, then the lanes are combined.
// This reassociates the sum (the result may differ from the sequential order by
// rounding; every check compares with a tolerance), and is exact for max and min.
#include "schedule/IndexArith.h"
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>

namespace unitile {
namespace {

// The reduction `buf[0] = buf[0] OP e`: OP and e, or nothing.
struct ReductionStep {
  enum Op { Add, Mul, Max, Min } op;
  Expr e;
};

bool is_slot0(const Expr& x, const std::string& buf) {
  return x->kind == ExprKind::Access && x->name == buf && x->operands.size() == 1 &&
         const_int_value(x->operands[0]) == 0;
}

std::optional<ReductionStep> reduction_step(const Stmt& s, const std::string& buf) {
  if (s->kind != StmtKind::Store || s->buffer != buf || s->indices.size() != 1 ||
      const_int_value(s->indices[0]) != 0)
    return std::nullopt;
  const Expr& v = s->value;
  ReductionStep r{ReductionStep::Add, nullptr};
  if (v->kind == ExprKind::Binary && (v->binary_op == BinaryOp::Add || v->binary_op == BinaryOp::Mul) &&
      is_slot0(v->operands[0], buf)) {
    r.op = v->binary_op == BinaryOp::Add ? ReductionStep::Add : ReductionStep::Mul;
    r.e = v->operands[1];
  } else if (v->kind == ExprKind::Call && (v->math_fn == MathFn::Max || v->math_fn == MathFn::Min) &&
             v->operands.size() == 2 && is_slot0(v->operands[0], buf)) {
    r.op = v->math_fn == MathFn::Max ? ReductionStep::Max : ReductionStep::Min;
    r.e = v->operands[1];
  } else {
    return std::nullopt;
  }
  if (expr_reads(r.e, buf)) return std::nullopt;
  return r;
}

Expr combine(ReductionStep::Op op, Expr a, Expr b) {
  switch (op) {
  case ReductionStep::Add: return binary(BinaryOp::Add, std::move(a), std::move(b));
  case ReductionStep::Mul: return binary(BinaryOp::Mul, std::move(a), std::move(b));
  case ReductionStep::Max: return call(MathFn::Max, {std::move(a), std::move(b)});
  case ReductionStep::Min: return call(MathFn::Min, {std::move(a), std::move(b)});
  }
  return a;
}

Expr slot(const std::string& buf, DType t, Expr i) { return access(buf, {std::move(i)}, t); }

// Whether every read of `e` that moves with v moves by one element (vector loads).
bool unit_stride_reads(const Expr& e, const std::string& v) {
  bool moving = false, ok = true;
  std::function<void(const Expr&)> walk = [&](const Expr& x) {
    if (x->kind == ExprKind::Access) {
      bool moves = false;
      for (const Expr& i : x->operands) moves |= depends_on(i, v);
      if (moves) {
        moving = true;
        ok &= unit_stride_in(x, v);
      }
    }
    for (const Expr& o : x->operands) walk(o);
  };
  walk(e);
  return moving && ok;
}

// A reduction loop's body: stores of each element's term into a row buffer first (what
// keep_terms adds: unit-stride in the loop, never the accumulator), then the step.
struct ReductionBody {
  std::vector<Stmt> side;
  ReductionStep step;
};

std::optional<ReductionBody> reduction_body(const Stmt& loop, const std::string& acc) {
  const Stmt& b = loop->body[0];
  std::vector<Stmt> stmts = b->kind == StmtKind::Block ? b->body : std::vector<Stmt>{b};
  if (stmts.empty()) return std::nullopt;
  auto step = reduction_step(stmts.back(), acc);
  if (!step) return std::nullopt;
  ReductionBody r{{}, *step};
  for (size_t n = 0; n + 1 < stmts.size(); ++n) {
    const Stmt& s = stmts[n];
    if (s->kind != StmtKind::Store || s->buffer == acc || expr_reads(s->value, acc) ||
        !unit_stride_in(access(s->buffer, s->indices, s->value->type), loop->var) ||
        !unit_stride_reads(s->value, loop->var))
      return std::nullopt;
    r.side.push_back(s);
  }
  return r;
}

} // namespace

bool is_vectorizable_reduction(const Stmt& loop, const std::string& acc, int lanes) {
  if (loop->kind != StmtKind::For || loop->for_kind != ForKind::Serial || loop->body.size() != 1) return false;
  auto body = reduction_body(loop, acc);
  auto extent = const_int_value(loop->extent);
  return body && extent && *extent >= 2 * lanes && const_int_value(loop->min) == 0 &&
         unit_stride_reads(body->step.e, loop->var);
}

Stmt vectorize_reduction(const Stmt& body, const std::string& v,
                         const std::function<int(DType)>& lanes_for, int* applied) {
  return mutate(body, [&](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::Allocate || s->scope != MemScope::Register || s->shape != std::vector<int64_t>{1})
      return s;
    const std::string& acc = s->buffer;
    const DType t = s->dtype;
    const int lanes = lanes_for(t);
    // The accumulator's block: `acc[0] = init; ... for v {acc[0] = acc[0] OP e} ...`.
    std::vector<Stmt> stmts = s->body[0]->kind == StmtKind::Block ? s->body[0]->body : s->body;
    std::optional<size_t> init_at, loop_at;
    for (size_t n = 0; n < stmts.size(); ++n) {
      const Stmt& x = stmts[n];
      if (x->kind == StmtKind::Store && x->buffer == acc && !init_at && !loop_at &&
          !expr_reads(x->value, acc))
        init_at = n;
      else if (x->kind == StmtKind::For && x->var == v && init_at && !loop_at &&
               is_vectorizable_reduction(x, acc, lanes))
        loop_at = n;
    }
    if (!loop_at) return s;
    const Stmt& loop = stmts[*loop_at];
    const ReductionBody parts = *reduction_body(loop, acc);
    const ReductionStep& step = parts.step;
    const int64_t extent = *const_int_value(loop->extent);
    // Up to four vectors of partial results when the loop is long enough: independent
    // chains hide the latency of the vector add (or max) behind each other.
    const int slots = lanes * static_cast<int>(std::clamp<int64_t>(extent / (4 * lanes), 1, 4));
    const int64_t blocks = extent / slots, rest = extent % slots;
    const std::string lane = v + "_lane", outer = v + "_v";
    const Expr L = int_imm(slots);

    std::vector<Stmt> out;
    for (size_t n = 0; n < stmts.size(); ++n) {
      if (n == *init_at) {
        // Every lane starts from the identity the init stored.
        out.push_back(for_loop(lane, int_imm(0), L, ForKind::Vectorized,
                               store(acc, {var(lane)}, stmts[n]->value)));
        continue;
      }
      if (n != *loop_at) {
        out.push_back(stmts[n]);
        continue;
      }
      const Expr at = binary(BinaryOp::Add, binary(BinaryOp::Mul, var(outer), L), var(lane));
      std::vector<Stmt> lane_body = parts.side;
      lane_body.push_back(store(acc, {var(lane)}, combine(step.op, slot(acc, t, var(lane)), step.e)));
      Stmt lanes_step = substitute(block(std::move(lane_body)), v, at);
      out.push_back(for_loop(outer, int_imm(0), int_imm(blocks), ForKind::Serial,
                             for_loop(lane, int_imm(0), L, ForKind::Vectorized, lanes_step)));
      if (rest)
        out.push_back(for_loop(v, int_imm(blocks * slots), int_imm(rest), ForKind::Serial, loop->body[0]));
      // The slots into slot 0 as a tree: each step folds the upper part of the n slots
      // left into the lower (whole vectors first, then halves of one: 16 lanes fold 8,
      // 4, 2 and 1), about log2(n) dependent steps where combining them in order was a
      // chain of n - 1 (PoCL kept the row max of a flash-attention block that way, a
      // tenth of the kernel). Steps of whole vectors are vector code.
      for (int64_t n = slots; n > 1;) {
        const int64_t half = lanes > 1 && n > lanes && n % lanes == 0 ? n / lanes / 2 * lanes : n / 2;
        const int64_t from = n - half;
        auto fold = [&](const Expr& at) {
          return store(acc, {at}, combine(step.op, slot(acc, t, at),
                                          slot(acc, t, binary(BinaryOp::Add, at, int_imm(from)))));
        };
        if (half == 1)
          out.push_back(store(acc, {int_imm(0)}, combine(step.op, slot(acc, t, int_imm(0)), slot(acc, t, int_imm(from)))));
        else
          out.push_back(for_loop(lane, int_imm(0), int_imm(half),
                                 lanes > 1 && half % lanes == 0 ? ForKind::Vectorized : ForKind::Serial,
                                 fold(var(lane))));
        n = from;
      }
    }
    ++*applied;
    return allocate(acc, t, {slots}, MemScope::Register, block(std::move(out)));
  });
}

} // namespace unitile
