// ONNX default-domain ops the issue-5 coverage audit found missing: the variadic Sum and
// Mean as add_n and mean_n (with their backward ops; `sum` and `mean` are the reductions'
// names in the Python API), Hardmax, LpNormalization, MeanVarianceNormalization and
// EyeLike.
//
// Each is a few comprehensions in the style of the family files: broadcast reads for the
// variadic ops, per-row statistics in locals of the compute type for the normalizations.
// Hardmax, lp_normalization and mean_variance_normalization have no `_grad` op of their
// own: graph autodiff derives their gradients from these kernels (hardmax's is zero).
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <algorithm>

namespace unitile::ops {
namespace {

// The broadcast shape of the variadic inputs X0, X1, ...
std::vector<int64_t> variadic_shape(OpContext& ctx, const std::vector<std::string>& parts) {
  ctx.require_float(parts[0]);
  ctx.require_same_dtype(parts);
  std::vector<std::pair<std::string, TensorSpec>> ins;
  for (const std::string& p : parts)
    ins.emplace_back(p, ctx.in(p));
  return broadcast_shapes(ctx, ins);
}

// add_n(X0, X1, ...) and mean_n(...): Y = X0 + X1 + ... (divided by the count for mean_n).
void emit_sum(OpContext& ctx, bool mean) {
  const std::vector<std::string> parts = ctx.variadic("X");
  const std::vector<int64_t> shape = variadic_shape(ctx, parts);
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<std::string> terms;
  for (const std::string& p : parts) {
    ctx.input(p);
    terms.push_back(access(p, broadcast_indices(ctx.in(p), rank, shape)));
  }
  ctx.output("Y", ctx.in(parts[0]).dtype, shape);
  std::string y = join(terms, " + ");
  if (mean)
    y = "(" + y + ") / " + float_literal(static_cast<double>(parts.size()));
  ctx.stmt(access("Y", index_names(rank)) + " = " + y);
}

// Their backward ops: dXk is dY (over the count for mean) summed over the dimensions Xk
// was broadcast along; a broadcast size-1 dimension keeps an index `z<d>` of extent 1.
void emit_sum_grad(OpContext& ctx, bool mean) {
  const std::vector<std::string> parts = ctx.variadic("X");
  const std::vector<int64_t> shape = variadic_shape(ctx, parts);
  ctx.require_same_dtype({parts[0], "dY"});
  if (ctx.in("dY").shape != shape)
    ctx.fail("dY has shape {} but X0, X1, ... broadcast to {}", shape_text(ctx.in("dY").shape),
             shape_text(shape));
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (const std::string& p : parts) // their shapes only
    ctx.input(p);
  ctx.input("dY");
  std::string g = access("dY", index_names(rank));
  if (mean)
    g += " / " + float_literal(static_cast<double>(parts.size()));
  for (size_t k = 0; k < parts.size(); ++k) {
    const TensorSpec& x = ctx.in(parts[k]);
    const int64_t off = rank - static_cast<int64_t>(x.shape.size());
    std::vector<std::string> lhs;
    bool reduces = off > 0;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      const int64_t od = off + static_cast<int64_t>(d);
      if (x.shape[d] == 1 && shape[od] != 1) {
        lhs.push_back("z" + std::to_string(od));
        reduces = true;
      } else {
        lhs.push_back("i" + std::to_string(od));
      }
    }
    const std::string dx = "dX" + std::to_string(k);
    ctx.output(dx, x.dtype, x.shape);
    ctx.stmt(access(dx, lhs) + (reduces ? " += " : " = ") + g);
  }
}

// Per-row statistics over the axes not in `kept`: the kept indices and their shape.
struct Rows {
  std::vector<std::string> all, keep;
  std::vector<int64_t> shape;
  int64_t count = 1;
};

Rows rows_over(const TensorSpec& x, const std::vector<int64_t>& reduced) {
  Rows r;
  r.all = index_names(static_cast<int64_t>(x.shape.size()));
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(d)) != reduced.end()) {
      r.count *= x.shape[d];
    } else {
      r.keep.push_back(r.all[d]);
      r.shape.push_back(x.shape[d]);
    }
  }
  return r;
}

// hardmax: 1 at the first maximum along `axis`, 0 elsewhere (ONNX Hardmax, opset 13).
void emit_hardmax(OpContext& ctx) {
  ctx.require_float("X");
  ctx.require_rank_at_least("X", 1);
  const TensorSpec& x = ctx.in("X");
  const int64_t axis = ctx.axis(ctx.attr_int("axis"), static_cast<int64_t>(x.shape.size()));
  const Rows r = rows_over(x, {axis});
  ctx.input("X");
  ctx.output("Y", x.dtype, x.shape);
  ctx.local("m", compute_type(x.dtype), r.shape);
  ctx.local("first", DType::I64, r.shape);
  const std::string X = access("X", r.all), m = access("m", r.keep), f = access("first", r.keep);
  const std::string k = r.all[axis];
  ctx.stmt(m + " max= " + X);
  ctx.stmt(f + " min= " + X + " == " + m + " ? i64(" + k + ") : " +
           std::to_string(x.shape[axis]));
  ctx.stmt(access("Y", r.all) + " = i64(" + k + ") == " + f + " ? 1 : 0");
}

// lp_normalization: X divided by its L1 or L2 norm along `axis` (ONNX LpNormalization;
// no epsilon, as ONNX: a zero row gives NaN).
void emit_lp_normalization(OpContext& ctx) {
  ctx.require_float("X");
  ctx.require_rank_at_least("X", 1);
  const int64_t p = ctx.attr_int("p");
  if (p != 1 && p != 2)
    ctx.fail("p {} is not 1 or 2", p);
  const TensorSpec& x = ctx.in("X");
  const int64_t axis = ctx.axis(ctx.attr_int("axis"), static_cast<int64_t>(x.shape.size()));
  const Rows r = rows_over(x, {axis});
  ctx.input("X");
  ctx.output("Y", x.dtype, x.shape);
  ctx.local("norm", compute_type(x.dtype), r.shape);
  const std::string X = access("X", r.all), n = access("norm", r.keep);
  ctx.stmt(n + " += " + (p == 1 ? "abs(" + X + ")" : X + " * " + X));
  ctx.stmt(access("Y", r.all) + " = " + X + " / " + (p == 1 ? n : "sqrt(" + n + ")"));
}

// mean_variance_normalization: (X - mean) / (std + 1e-9) over `axes` (ONNX
// MeanVarianceNormalization; the 1e-9 is ONNX's reference implementation's). The variance
// is the biased one, computed in two passes.
void emit_mean_variance_normalization(OpContext& ctx) {
  ctx.require_float("X");
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const std::vector<int64_t> axes = ctx.axes(ctx.attr_ints("axes"), rank, false);
  if (axes.empty())
    ctx.fail("axes must name at least one axis");
  const Rows r = rows_over(x, axes);
  const DType acc = compute_type(x.dtype);
  ctx.input("X");
  ctx.output("Y", x.dtype, x.shape);
  for (const char* l : {"s", "mean", "q"})
    ctx.local(l, acc, r.shape);
  const std::string X = access("X", r.all), mean = access("mean", r.keep);
  const std::string n = float_literal(static_cast<double>(r.count));
  ctx.stmt(access("s", r.keep) + " += " + X);
  ctx.stmt(mean + " = " + access("s", r.keep) + " / " + n);
  ctx.stmt(access("q", r.keep) + " += (" + X + " - " + mean + ") * (" + X + " - " + mean + ")");
  ctx.stmt(access("Y", r.all) + " = (" + X + " - " + mean + ") / (sqrt(" + access("q", r.keep) +
           " / " + n + ") + 1e-9)");
}

// eye_like: ones on the k-th diagonal of a matrix shaped like X (ONNX EyeLike), in
// `dtype` (default: X's).
void emit_eye_like(OpContext& ctx) {
  ctx.require_rank("X", 2);
  const TensorSpec& x = ctx.in("X");
  const std::string name = ctx.attr_string("dtype");
  DType dt = x.dtype;
  if (!name.empty()) {
    const std::optional<DType> parsed = parse_dtype(name);
    if (!parsed)
      ctx.fail("attribute 'dtype': unknown dtype '{}' (f16, bf16, f32, f64, i8, i16, i32, i64, "
               "u8, bool)",
               name);
    dt = *parsed;
  }
  ctx.input("X"); // its shape only
  ctx.output("Y", dt, x.shape);
  const std::string one = dt == DType::Bool ? "true" : "1", zero = dt == DType::Bool ? "false" : "0";
  ctx.stmt("Y[i0, i1] = i1 - i0 == " + std::to_string(ctx.attr_int("k")) + " ? " + one + " : " +
           zero);
}

} // namespace

void add_onnx_extra_ops(std::vector<OpDef>& ops) {
  const Port xs{"X", PortKind::Data, false, true};
  for (bool mean : {false, true}) {
    const std::string name = mean ? "mean_n" : "add_n";
    OpDef fwd = make_op(mean ? "mean_n" : "add_n", "elementwise",
                     mean ? "(X0 + X1 + ...) / count, with broadcasting (ONNX Mean)"
                          : "X0 + X1 + ..., with broadcasting (ONNX Sum)",
                     {xs}, {{"Y"}}, {}, [mean](OpContext& ctx) { emit_sum(ctx, mean); });
    fwd.gradient = name + "_grad";
    OpDef bwd = make_op(mean ? "mean_n_grad" : "add_n_grad", "elementwise-backward",
                     mean ? "gradient of mean_n (dX0, dX1, ...)" : "gradient of add_n (dX0, dX1, ...)",
                     {xs, {"dY"}}, {{"dX", PortKind::Data, false, true}}, {},
                     [mean](OpContext& ctx) { emit_sum_grad(ctx, mean); });
    ops.push_back(std::move(fwd));
    ops.push_back(std::move(bwd));
  }
  ops.push_back(make_op("hardmax", "normalization", "1 at the first maximum along an axis, else 0",
                     {{"X"}}, {{"Y"}},
                     {{"axis", AttrKind::Int, AttrValue{int64_t{-1}}, "the axis"}}, emit_hardmax));
  ops.push_back(make_op("lp_normalization", "normalization",
                     "X / ||X||_p along an axis, p 1 or 2 (ONNX LpNormalization)", {{"X"}}, {{"Y"}},
                     {{"axis", AttrKind::Int, AttrValue{int64_t{-1}}, "the axis normalized"},
                      {"p", AttrKind::Int, AttrValue{int64_t{2}}, "the norm: 1 or 2"}},
                     emit_lp_normalization));
  ops.push_back(make_op("mean_variance_normalization", "normalization",
                     "(X - mean) / (std + 1e-9) over axes (ONNX MeanVarianceNormalization)",
                     {{"X"}}, {{"Y"}},
                     {{"axes", AttrKind::Ints, AttrValue{std::vector<int64_t>{0, 2, 3}},
                       "the axes the statistics are over"}},
                     emit_mean_variance_normalization));
  ops.push_back(make_op("eye_like", "data-movement",
                     "ones on the k-th diagonal of a matrix shaped like X (ONNX EyeLike)", {{"X"}},
                     {{"Y"}},
                     {{"k", AttrKind::Int, AttrValue{int64_t{0}}, "the diagonal: 0 main, >0 above"},
                      {"dtype", AttrKind::String, AttrValue{std::string()},
                       "the output dtype (default: X's)"}},
                     emit_eye_like));
}

} // namespace unitile::ops
