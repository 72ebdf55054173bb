// widen: a reduction into a bf16 or f16 tensor accumulates in a new f32 local, computing
// its value in f32, and one more statement rounds the local into the tensor.
//
// Why: `C[i, j] += A[i, k] * B[k, j]` on bf16 must not round each partial sum (nor each
// product: a product of two bf16 values is exact in f32) to 8 bits of mantissa. The
// default lowering keeps a one-element f32 register per output element, which no tiling
// can block. Written as an f32 contraction plus a rounding map, the statement is an
// ordinary f32 GEMM for the auto-scheduler: it is register-blocked, and staging its
// operands converts them to f32 once while packing (Stage.cpp), so the micro-kernel runs
// on f32 vectors. This works on Kernel IR, before lowering, like inline.
#include "schedule/KernelEdit.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

#include <algorithm>

namespace unitile {

namespace {

bool is_narrow_float(DType t) { return t == DType::BF16 || t == DType::F16; }

} // namespace

Expr widen_value(const Expr& e, DType to) {
  switch (e->kind) {
  case ExprKind::Access:
    return is_narrow_float(e->type) ? cast(to, e) : e;
  case ExprKind::FloatImm:
    return is_narrow_float(e->type) ? float_imm(e->float_value, to, e->loc) : e;
  case ExprKind::Cast:
    // An explicit rounding the user wrote stays; what it rounds is computed wide.
    return cast(e->type, widen_value(e->operands[0], to), e->loc);
  case ExprKind::Unary: return unary(e->unary_op, widen_value(e->operands[0], to), e->loc);
  case ExprKind::Binary:
    return binary(e->binary_op, widen_value(e->operands[0], to), widen_value(e->operands[1], to), e->loc);
  case ExprKind::Select:
    return select(widen_value(e->operands[0], to), widen_value(e->operands[1], to),
                  widen_value(e->operands[2], to), e->loc);
  case ExprKind::Call: {
    std::vector<Expr> args;
    for (const Expr& a : e->operands) args.push_back(widen_value(a, to));
    return call(e->math_fn, std::move(args), e->loc);
  }
  default: return e;
  }
}

Kernel widen_accumulator(const Kernel& k, const std::string& buffer, std::string* local_name) {
  auto fail = [&](const std::string& why) {
    return UserError(fmt::format("error: schedule: widen {}: {}", buffer, why));
  };
  const TensorDecl* t = k.find_tensor(buffer);
  if (!t) throw fail("no such tensor");
  if (!is_narrow_float(t->dtype))
    throw fail(fmt::format("it is {}; only bf16 and f16 results are widened", dtype_name(t->dtype)));
  const size_t at = only_writer(k, buffer, fail);
  const Comprehension& c = k.body[at];
  if (c.is_indirect_store()) throw fail("its statement is a scatter");
  if (c.reduce == ReduceKind::Assign || c.reduction_vars.empty())
    throw fail("its statement is not a reduction (nothing to accumulate)");
  const std::string local = unused_name(k, buffer + "_f32");

  Kernel out = k;
  TensorDecl acc = *t;
  acc.name = local;
  acc.dtype = compute_type(t->dtype);
  acc.role = TensorRole::Local;
  out.tensors.push_back(acc);

  Comprehension& update = out.body[at];
  update.output = local;
  update.value = widen_value(c.value, acc.dtype);
  if (update.value->type != acc.dtype) update.value = cast(acc.dtype, update.value);

  Comprehension round;
  round.output = buffer;
  round.indices = c.indices;
  round.index_locs = c.index_locs;
  round.reduce = ReduceKind::Assign;
  round.loc = c.loc;
  std::vector<Expr> idx;
  for (const std::string& v : c.indices) {
    idx.push_back(var(v));
    round.ranges[v] = c.ranges.at(v);
  }
  round.value = cast(t->dtype, access(local, idx, acc.dtype));
  out.body.insert(out.body.begin() + static_cast<std::ptrdiff_t>(at) + 1, std::move(round));
  if (local_name) *local_name = local;
  return out;
}

} // namespace unitile
