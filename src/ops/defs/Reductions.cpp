// Reductions over any set of axes with keepdims (sum, mean, max, min, prod, norms,
// logsumexp, var, std), arg-reductions along one axis, and cumulative sums.
//
// Each is a comprehension whose left-hand side omits the reduced indices: with
// keepdims a reduced dimension keeps an index `z<d>` of extent 1, so the reduced `i<d>`
// is a reduction variable either way. Reductions that need two passes (mean, var,
// logsumexp) hold the first pass's result in a local of the output's shape.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

namespace unitile::ops {
namespace {

struct ReduceShape {
  std::vector<int64_t> reduced; // axes
  std::vector<int64_t> out_shape;
  std::vector<std::string> lhs; // output indices
  std::vector<std::string> all; // input indices i0..
  int64_t count = 1;            // elements per output element
};

ReduceShape reduce_shape(const OpContext& ctx, const std::vector<int64_t>& axes_attr,
                         bool keepdims) {
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  ReduceShape r;
  r.reduced = ctx.axes(axes_attr, rank, true);
  r.all = index_names(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const bool red = std::find(r.reduced.begin(), r.reduced.end(), d) != r.reduced.end();
    if (red) {
      r.count *= x.shape[d];
      if (keepdims) {
        r.out_shape.push_back(1);
        r.lhs.push_back("z" + std::to_string(d));
      }
    } else {
      r.out_shape.push_back(x.shape[d]);
      r.lhs.push_back("i" + std::to_string(d));
    }
  }
  return r;
}

enum class Reduce : uint8_t {
  Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp, Var, Std
};

void emit_reduce(OpContext& ctx, Reduce kind) {
  const TensorSpec& x = ctx.in("X");
  const bool float_only = kind == Reduce::Mean || kind == Reduce::L2 || kind == Reduce::LogSum ||
                          kind == Reduce::LogSumExp || kind == Reduce::Var ||
                          kind == Reduce::Std;
  if (float_only)
    ctx.require_float("X");
  else if (x.dtype == DType::Bool)
    ctx.fail("input 'X' must be numeric, got bool");
  const ReduceShape r = reduce_shape(ctx, ctx.attr_ints("axes"), ctx.attr_bool("keepdims"));
  ctx.input("X");
  ctx.output("Y", x.dtype, r.out_shape);
  const std::string X = access("X", r.all), Y = access("Y", r.lhs);
  const std::string n = float_literal(static_cast<double>(r.count));
  auto acc = [&](const std::string& name) {
    ctx.local(name, compute_type(x.dtype), r.out_shape);
    return access(name, r.lhs);
  };
  switch (kind) {
  case Reduce::Sum: ctx.stmt(Y + " += " + X); break;
  case Reduce::Max: ctx.stmt(Y + " max= " + X); break;
  case Reduce::Min: ctx.stmt(Y + " min= " + X); break;
  case Reduce::Prod: ctx.stmt(Y + " *= " + X); break;
  case Reduce::L1: ctx.stmt(Y + " += abs(" + X + ")"); break;
  case Reduce::SumSquare: ctx.stmt(Y + " += " + X + " * " + X); break;
  case Reduce::Mean: {
    const std::string s = acc("s");
    ctx.stmt(s + " += " + X);
    ctx.stmt(Y + " = " + s + " / " + n);
    break;
  }
  case Reduce::L2: {
    const std::string s = acc("s");
    ctx.stmt(s + " += " + X + " * " + X);
    ctx.stmt(Y + " = sqrt(" + s + ")");
    break;
  }
  case Reduce::LogSum: {
    const std::string s = acc("s");
    ctx.stmt(s + " += " + X);
    ctx.stmt(Y + " = log(" + s + ")");
    break;
  }
  case Reduce::LogSumExp: {
    // Shifted by the maximum; a row of -inf gives -inf, not nan.
    const std::string m = acc("m"), s = acc("s");
    ctx.stmt(m + " max= " + X);
    ctx.stmt(s + " += isinf(" + m + ") ? 0 : exp(" + X + " - " + m + ")");
    ctx.stmt(Y + " = isinf(" + m + ") ? " + m + " : " + m + " + log(" + s + ")");
    break;
  }
  case Reduce::Var:
  case Reduce::Std: {
    const int64_t correction = ctx.attr_int("correction");
    if (correction < 0 || correction >= r.count)
      ctx.fail("correction {} must be at least 0 and less than the {} elements reduced",
               correction, r.count);
    const std::string s = acc("s"), mean = acc("mean"), q = acc("q");
    ctx.stmt(s + " += " + X);
    ctx.stmt(mean + " = " + s + " / " + n);
    ctx.stmt(q + " += (" + X + " - " + mean + ") * (" + X + " - " + mean + ")");
    const std::string var =
        q + " / " + float_literal(static_cast<double>(r.count - correction));
    ctx.stmt(Y + " = " + (kind == Reduce::Std ? "sqrt(" + var + ")" : var));
    break;
  }
  }
}

// argmax / argmin along one axis: the first (or last) index holding the extreme value.
void emit_arg(OpContext& ctx, bool is_max) {
  const TensorSpec& x = ctx.in("X");
  if (x.dtype == DType::Bool)
    ctx.fail("input 'X' must be numeric, got bool");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0)
    ctx.fail("input 'X' must have rank 1 or more");
  const int64_t axis = ctx.axis(ctx.attr_int("axis"), rank);
  const ReduceShape r = reduce_shape(ctx, {axis}, ctx.attr_bool("keepdims"));
  ctx.input("X");
  ctx.output("Y", DType::I64, r.out_shape);
  ctx.local("m", compute_type(x.dtype), r.out_shape);
  const std::string X = access("X", r.all), Y = access("Y", r.lhs), m = access("m", r.lhs);
  const std::string k = "i" + std::to_string(axis);
  ctx.stmt(m + (is_max ? " max= " : " min= ") + X);
  if (ctx.attr_bool("select_last_index"))
    ctx.stmt(Y + " max= " + X + " == " + m + " ? i64(" + k + ") : -1");
  else
    ctx.stmt(Y + " min= " + X + " == " + m + " ? i64(" + k + ") : " +
             std::to_string(x.shape[axis]));
}

// The block of a blocked cumulative sum along an axis of extent n: a divisor of n (16
// first: one register tile of the GEMM over it on most CPUs), at least two blocks; 0 when
// none fits or n is too short to gain.
int64_t scan_block(int64_t n) {
  if (n < 64)
    return 0;
  for (int64_t b : {16, 32, 8, 24, 12, 48, 64, 40, 56, 20, 28, 36, 44, 52, 60, 10, 14})
    if (n % b == 0)
      return b;
  return 0;
}

// Y = the cumulative sum of X along `axis` (`reverse`: from the end; `exclusive`: without
// the element itself). Float sums of long axes are blocked into GEMMs, so they run on
// the register-blocked GEMM schedule instead of one masked reduction of the whole axis
// per element (O(n^2), 0.02x of PyTorch at 4096x768): with the axis split into blocks
// (b, e) of B elements,
//   blk[.., b, e] = sum over e2 of X[.., b*B + e2] * tri[e2, e]   (prefix within a block)
//   tot[.., b]    = the sum of block b
//   off[.., b]    = sum over b2 of tot[.., b2] * up[b2, b]        (the blocks before b)
//   Y[.., j]      = blk[.., j // B, j % B] + off[.., j // B]
// where tri and up are 0/1 masks (products by 1 and 0 are exact). When the axis is not
// the last, the masks multiply from the left so the GEMMs' unit-stride index stays the
// last one. Integer sums and short axes keep the masked reduction.
void write_cumsum(OpContext& ctx, const std::string& in, const std::string& out, int64_t axis,
                  bool exclusive, bool reverse) {
  const TensorSpec& x = ctx.in(in);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const std::string j = "i" + std::to_string(axis);
  const std::vector<std::string> all = index_names(rank);
  ctx.input(in);
  ctx.output(out, x.dtype, x.shape);
  const int64_t n = x.shape[axis], B = scan_block(n);
  const auto mask = [&](const std::string& src, const std::string& dst, bool strict) {
    const std::string op = reverse ? (strict ? " > " : " >= ") : (strict ? " < " : " <= ");
    return src + op + dst;
  };
  if (!is_float(x.dtype) || B == 0) {
    std::vector<std::string> src = all;
    src[axis] = "k";
    ctx.stmt(access(out, all) + " += " + mask("k", j, exclusive) + " ? " + access(in, src) +
             " : 0");
    return;
  }
  const DType ct = compute_type(x.dtype);
  const int64_t nb = n / B;
  const bool last = axis == rank - 1;
  const std::vector<std::string> pre(all.begin(), all.begin() + axis),
      post(all.begin() + axis + 1, all.end());
  std::vector<int64_t> pre_shape(x.shape.begin(), x.shape.begin() + axis),
      post_shape(x.shape.begin() + axis + 1, x.shape.end());
  auto join3 = [](std::vector<std::string> a, const std::vector<std::string>& mid,
                  const std::vector<std::string>& b) {
    a.insert(a.end(), mid.begin(), mid.end());
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  auto shape3 = [](std::vector<int64_t> a, const std::vector<int64_t>& mid,
                   const std::vector<int64_t>& b) {
    a.insert(a.end(), mid.begin(), mid.end());
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const std::string one = float_literal(1.0), zero = float_literal(0.0);
  // tri[e2, e] (last axis) or tri[e, e2]: 1 where X's element e2 of a block counts
  // towards output e; up likewise for whole blocks, which count when strictly before.
  ctx.local("tri", ct, {B, B});
  ctx.local("up", ct, {nb, nb});
  ctx.stmt(access("tri", last ? std::vector<std::string>{"e2", "e"} : std::vector<std::string>{"e", "e2"}) +
           " = " + mask("e2", "e", exclusive) + " ? " + one + " : " + zero);
  ctx.stmt(access("up", last ? std::vector<std::string>{"b2", "b"} : std::vector<std::string>{"b", "b2"}) +
           " = " + mask("b2", "b", true) + " ? " + one + " : " + zero);
  ctx.local("blk", ct, shape3(pre_shape, {nb, B}, post_shape));
  const std::string xblk = access(in, join3(pre, {fmt::format("b * {} + e2", B)}, post));
  const std::string blk = access("blk", join3(pre, {"b", "e"}, post));
  if (last)
    ctx.stmt(blk + " += " + xblk + " * tri[e2, e]");
  else
    ctx.stmt(blk + " += tri[e, e2] * " + xblk);
  // A block's total: the inclusive prefix's end element, plus the element an exclusive
  // prefix leaves out.
  const int64_t end = reverse ? 0 : B - 1;
  ctx.local("tot", ct, shape3(pre_shape, {nb}, post_shape));
  std::string total = access("blk", join3(pre, {"b", std::to_string(end)}, post));
  if (exclusive) {
    const std::string xe =
        access(in, join3(pre, {fmt::format("b * {} + {}", B, end)}, post));
    total += " + " + (ct == x.dtype ? xe : dtype_text(ct) + "(" + xe + ")");
  }
  ctx.stmt(access("tot", join3(pre, {"b"}, post)) + " = " + total);
  ctx.local("off", ct, shape3(pre_shape, {nb}, post_shape));
  const std::string off = access("off", join3(pre, {"b"}, post));
  const std::string tot2 = access("tot", join3(pre, {"b2"}, post));
  if (last)
    ctx.stmt(off + " += " + tot2 + " * up[b2, b]");
  else
    ctx.stmt(off + " += up[b, b2] * " + tot2);
  const std::string jb = fmt::format("{} // {}", j, B), je = fmt::format("{} % {}", j, B);
  const std::string sum = access("blk", join3(pre, {jb, je}, post)) + " + " +
                          access("off", join3(pre, {jb}, post));
  ctx.stmt(access(out, all) + " = " + (ct == x.dtype ? sum : dtype_text(x.dtype) + "(" + sum + ")"));
}

// Y[.., j, ..] = sum of X[.., k, ..] over k <= j (k < j exclusive; k >= j reversed).
void emit_cumsum(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  if (x.dtype == DType::Bool)
    ctx.fail("input 'X' must be numeric, got bool");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0)
    ctx.fail("input 'X' must have rank 1 or more");
  write_cumsum(ctx, "X", "Y", ctx.axis(ctx.attr_int("axis"), rank), ctx.attr_bool("exclusive"),
               ctx.attr_bool("reverse"));
}


// The gradient of a reduction over `axes`: dY has the reduced shape (keepdims or not)
// and is read back at every input element, at 0 on kept axes, without the index on
// dropped ones.
std::string dy_access(const OpContext& ctx, const ReduceShape& r) {
  const TensorSpec& dy = ctx.in("dY");
  if (dy.shape != r.out_shape)
    ctx.fail("dY has shape {} but reducing X {} gives {}", shape_text(dy.shape),
             shape_text(ctx.in("X").shape), shape_text(r.out_shape));
  std::vector<std::string> idx;
  for (size_t d = 0; d < r.lhs.size(); ++d)
    idx.push_back(r.lhs[d][0] == 'z' ? "0" : r.lhs[d]);
  return access("dY", idx);
}

void emit_reduce_grad(OpContext& ctx, Reduce kind) {
  ctx.require_float("X");
  ctx.require_same_dtype({"X", "dY"});
  const TensorSpec& x = ctx.in("X");
  const ReduceShape r = reduce_shape(ctx, ctx.attr_ints("axes"), ctx.attr_bool("keepdims"));
  const std::string g = dy_access(ctx, r);
  ctx.input("X");
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  const std::string X = access("X", r.all), dX = access("dX", r.all);
  const std::string n = float_literal(static_cast<double>(r.count));
  // Locals of the reduced shape hold what the gradient needs of the forward result.
  auto acc = [&](const std::string& name) {
    ctx.local(name, compute_type(x.dtype), r.out_shape);
    return access(name, r.lhs);
  };
  auto at = [&](const std::string& name) { // a local read back at every input element
    std::vector<std::string> idx;
    for (const std::string& v : r.lhs)
      idx.push_back(v[0] == 'z' ? "0" : v);
    return access(name, idx);
  };
  switch (kind) {
  case Reduce::Sum: ctx.stmt(dX + " = " + g); break;
  case Reduce::Mean: ctx.stmt(dX + " = " + g + " / " + n); break;
  case Reduce::SumSquare: ctx.stmt(dX + " = 2 * " + X + " * " + g); break;
  case Reduce::L1: ctx.stmt(dX + " = sign(" + X + ") * " + g); break;
  case Reduce::L2: {
    const std::string s = acc("s");
    ctx.stmt(s + " += " + X + " * " + X);
    ctx.stmt(dX + " = " + at("s") + " > 0 ? " + g + " * " + X + " * rsqrt(" + at("s") + ") : 0");
    break;
  }
  case Reduce::LogSum: {
    const std::string s = acc("s");
    ctx.stmt(s + " += " + X);
    ctx.stmt(dX + " = " + g + " / " + at("s"));
    break;
  }
  case Reduce::LogSumExp: {
    const std::string m = acc("m"), s = acc("s");
    ctx.stmt(m + " max= " + X);
    ctx.stmt(s + " += exp(" + X + " - " + m + ")");
    ctx.stmt(dX + " = " + g + " * exp(" + X + " - " + at("m") + ") / " + at("s"));
    break;
  }
  case Reduce::Max:
  case Reduce::Min: {
    // Ties share the gradient evenly (as PyTorch's amax/amin do).
    const std::string m = acc("m"), c = acc("c");
    ctx.stmt(m + (kind == Reduce::Max ? " max= " : " min= ") + X);
    ctx.stmt(c + " += " + X + " == " + m + " ? 1 : 0");
    ctx.stmt(dX + " = " + X + " == " + at("m") + " ? " + g + " / " + at("c") + " : 0");
    break;
  }
  case Reduce::Var:
  case Reduce::Std: {
    const int64_t correction = ctx.attr_int("correction");
    if (correction < 0 || correction >= r.count)
      ctx.fail("correction {} must be at least 0 and less than the {} elements reduced",
               correction, r.count);
    const std::string denom = float_literal(static_cast<double>(r.count - correction));
    const std::string s = acc("s"), mean = acc("mean");
    ctx.stmt(s + " += " + X);
    ctx.stmt(mean + " = " + s + " / " + n);
    if (kind == Reduce::Var) {
      ctx.stmt(dX + " = 2 * (" + X + " - " + at("mean") + ") * " + g + " / " + denom);
    } else {
      const std::string q = acc("q");
      ctx.stmt(q + " += (" + X + " - " + mean + ") * (" + X + " - " + mean + ")");
      ctx.stmt(dX + " = (" + X + " - " + at("mean") + ") * " + g + " * rsqrt(" + at("q") +
               " / " + denom + ") / " + denom);
    }
    break;
  }
  case Reduce::Prod: {
    // The product of the other elements, without dividing by a zero: with z zeros in
    // the group and p the product of its nonzero elements, dX = g p / x when z = 0,
    // g p at the one zero when z = 1, and 0 otherwise.
    const std::string z = acc("z"), p = acc("p");
    ctx.stmt(z + " += " + X + " == 0 ? 1 : 0");
    ctx.stmt(p + " *= " + X + " == 0 ? 1 : " + X);
    ctx.stmt(dX + " = " + at("z") + " == 0 ? " + g + " * " + at("p") + " / " + X + " : (" +
             at("z") + " == 1 && " + X + " == 0 ? " + g + " * " + at("p") + " : 0)");
    break;
  }
  }
}

// cumsum's gradient: the cumulative sum of dY in the other direction.
void emit_cumsum_grad(OpContext& ctx) {
  ctx.require_float("dY");
  const TensorSpec& dy = ctx.in("dY");
  const int64_t rank = static_cast<int64_t>(dy.shape.size());
  if (rank == 0)
    ctx.fail("input 'dY' must have rank 1 or more");
  write_cumsum(ctx, "dY", "dX", ctx.axis(ctx.attr_int("axis"), rank), ctx.attr_bool("exclusive"),
               !ctx.attr_bool("reverse"));
}

AttrSpec axes_attr() {
  return {"axes", AttrKind::Ints, AttrValue{std::vector<int64_t>{}},
          "axes to reduce, negative from the end; empty: all"};
}
AttrSpec keepdims_attr() {
  return {"keepdims", AttrKind::Bool, AttrValue{int64_t{1}}, "keep reduced axes with size 1"};
}

} // namespace

void add_reduction_ops(std::vector<OpDef>& ops) {
  struct R {
    const char* name;
    Reduce kind;
    const char* summary;
  };
  const R reductions[] = {
      {"reduce_sum", Reduce::Sum, "sum over axes"},
      {"reduce_mean", Reduce::Mean, "mean over axes"},
      {"reduce_max", Reduce::Max, "maximum over axes"},
      {"reduce_min", Reduce::Min, "minimum over axes"},
      {"reduce_prod", Reduce::Prod, "product over axes"},
      {"reduce_l1", Reduce::L1, "sum of |x| over axes"},
      {"reduce_l2", Reduce::L2, "sqrt of the sum of squares over axes"},
      {"reduce_sum_square", Reduce::SumSquare, "sum of squares over axes"},
      {"reduce_log_sum", Reduce::LogSum, "log of the sum over axes"},
      {"reduce_log_sum_exp", Reduce::LogSumExp, "log of the sum of exp over axes (stable)"},
      {"var", Reduce::Var, "variance over axes (divided by count - correction)"},
      {"std", Reduce::Std, "standard deviation over axes (divided by count - correction)"},
  };
  for (const R& r : reductions) {
    OpDef op;
    op.name = r.name;
    op.category = "reduction";
    op.summary = r.summary;
    op.inputs = {{"X"}};
    op.outputs = {{"Y"}};
    op.attrs = {axes_attr(), keepdims_attr()};
    if (r.kind == Reduce::Var || r.kind == Reduce::Std)
      op.attrs.push_back({"correction", AttrKind::Int, AttrValue{int64_t{0}},
                          "subtracted from the count (1: unbiased)"});
    const Reduce kind = r.kind;
    op.emit = [kind](OpContext& ctx) { emit_reduce(ctx, kind); };
    {
      OpDef g;
      g.name = op.name + "_grad";
      g.category = "reduction-backward";
      g.summary = "gradient of " + op.name;
      g.inputs = {{"X"}, {"dY"}};
      g.outputs = {{"dX"}};
      g.attrs = op.attrs;
      g.emit = [kind](OpContext& ctx) { emit_reduce_grad(ctx, kind); };
      op.gradient = g.name;
      ops.push_back(std::move(g));
    }
    ops.push_back(std::move(op));
  }
  for (bool is_max : {true, false}) {
    OpDef op;
    op.name = is_max ? "argmax" : "argmin";
    op.category = "reduction";
    op.summary = is_max ? "index of the maximum along an axis (i64)"
                        : "index of the minimum along an axis (i64)";
    op.inputs = {{"X"}};
    op.outputs = {{"Y"}};
    op.attrs = {{"axis", AttrKind::Int, AttrValue{int64_t{0}}, "the axis"},
                keepdims_attr(),
                {"select_last_index", AttrKind::Bool, AttrValue{int64_t{0}},
                 "on ties, the last index instead of the first"}};
    op.emit = [is_max](OpContext& ctx) { emit_arg(ctx, is_max); };
    ops.push_back(std::move(op));
  }
  OpDef cumsum;
  cumsum.name = "cumsum";
  cumsum.category = "reduction";
  cumsum.summary = "cumulative sum along an axis";
  cumsum.inputs = {{"X"}};
  cumsum.outputs = {{"Y"}};
  cumsum.attrs = {{"axis", AttrKind::Int, AttrValue{int64_t{0}}, "the axis"},
                  {"exclusive", AttrKind::Bool, AttrValue{int64_t{0}}, "leave out the element itself"},
                  {"reverse", AttrKind::Bool, AttrValue{int64_t{0}}, "sum from the end"}};
  cumsum.emit = emit_cumsum;
  cumsum.gradient = "cumsum_grad";
  OpDef cg;
  cg.name = "cumsum_grad";
  cg.category = "reduction-backward";
  cg.summary = "gradient of cumsum";
  cg.inputs = {{"dY"}};
  cg.outputs = {{"dX"}};
  cg.attrs = cumsum.attrs;
  cg.emit = emit_cumsum_grad;
  ops.push_back(std::move(cg));
  ops.push_back(std::move(cumsum));
}

} // namespace unitile::ops
