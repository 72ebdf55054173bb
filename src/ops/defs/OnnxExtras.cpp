// ONNX default-domain ops the issue-5 coverage audit found missing: the variadic Sum and
// Mean as add_n and mean_n (with their backward ops; `sum` and `mean` are the reductions'
// names in the Python API), Hardmax, LpNormalization, MeanVarianceNormalization,
// EyeLike, LRN, CastLike, ReverseSequence, CenterCropPad and the Hann, Hamming and
// Blackman windows.
//
// Each is a few comprehensions in the style of the family files: broadcast reads for the
// variadic ops, per-row statistics in locals of the compute type for the normalizations.
// Hardmax, lp_normalization and mean_variance_normalization have no `_grad` op of their
// own: graph autodiff derives their gradients from these kernels (hardmax's is zero).
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <algorithm>
#include <cmath>

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
  // The literals in the output's own type: an untyped 1 : 0 is i64, and its conversion to
  // f32 lanes costs more than the select.
  const std::string one = dt == DType::Bool ? "true" : dtype_text(dt) + "(1)",
                    zero = dt == DType::Bool ? "false" : dtype_text(dt) + "(0)";
  ctx.stmt("Y[i0, i1] = i1 - i0 == " + std::to_string(ctx.attr_int("k")) + " ? " + one + " : " +
           zero);
}


// An output dtype attribute `name` (empty: `fallback`).
DType dtype_or(const OpContext& ctx, const std::string& name, DType fallback) {
  const std::string text = ctx.attr_string(name);
  if (text.empty())
    return fallback;
  const std::optional<DType> dt = parse_dtype(text);
  if (!dt)
    ctx.fail("attribute '{}': unknown dtype '{}' (f16, bf16, f32, f64, i8, i16, i32, i64, u8, bool)",
             name, text);
  return *dt;
}

// lrn: local response normalization across channels (ONNX LRN): Y = X / (bias + alpha /
// size * sum of X^2 over the `size` channels around c)^beta, the window running from
// c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), clipped to [0, C). The window
// offset j gets its range from the small local `win[j] = j`.
void emit_lrn(OpContext& ctx) {
  ctx.require_float("X");
  ctx.require_rank_at_least("X", 2);
  const TensorSpec& x = ctx.in("X");
  const int64_t size = ctx.attr_int("size");
  if (size < 1)
    ctx.fail("attribute 'size' = {}: it must be at least 1", size);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const std::vector<std::string> idx = index_names(rank);
  std::vector<std::string> at = idx;
  const int64_t before = (size - 1) / 2;
  at[1] = fmt::format("i1 + j - {}", before);
  const DType acc = compute_type(x.dtype);
  ctx.input("X");
  ctx.output("Y", x.dtype, x.shape);
  ctx.local("win", DType::I64, {size});
  ctx.stmt("win[j] = j");
  ctx.local("sq", acc, x.shape);
  const std::string c = at[1];
  ctx.stmt(fmt::format("{} += win[j] >= 0 && {} >= 0 && {} < {} ? {} * {} : 0", access("sq", idx), c, c,
                       x.shape[1], access("X", at) + " ?? 0", access("X", at) + " ?? 0"));
  ctx.stmt(fmt::format("{} = {} / pow({} + {} * {}, {})", access("Y", idx), access("X", idx),
                       float_literal(ctx.attr_float("bias")),
                       float_literal(ctx.attr_float("alpha") / static_cast<double>(size)), access("sq", idx),
                       float_literal(ctx.attr_float("beta"))));
}

// lrn_grad: with den = bias + alpha / size * sq and Y = X den^-beta,
// dX[c] = dY[c] den[c]^-beta - 2 alpha / size * beta * X[c] * sum over the channels c'
// whose window holds c of dY[c'] X[c'] den[c']^(-beta-1); those c' run from
// c - after to c + before (after = size - 1 - before).
void emit_lrn_grad(OpContext& ctx) {
  ctx.require_float("X");
  ctx.require_rank_at_least("X", 2);
  ctx.require_same_dtype({"X", "dY"});
  const TensorSpec& x = ctx.in("X");
  if (ctx.in("dY").shape != x.shape)
    ctx.fail("dY has shape {} but X has {}", shape_text(ctx.in("dY").shape), shape_text(x.shape));
  const int64_t size = ctx.attr_int("size");
  if (size < 1)
    ctx.fail("attribute 'size' = {}: it must be at least 1", size);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const std::vector<std::string> idx = index_names(rank);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  const double a = ctx.attr_float("alpha") / static_cast<double>(size), beta = ctx.attr_float("beta");
  const DType acc = compute_type(x.dtype);
  ctx.input("X");
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  ctx.local("win", DType::I64, {size});
  ctx.stmt("win[j] = j");
  std::vector<std::string> fwd = idx, back = idx;
  fwd[1] = fmt::format("i1 + j - {}", before);
  back[1] = fmt::format("i1 + j - {}", after);
  ctx.local("sq", acc, x.shape);
  ctx.stmt(fmt::format("{} += win[j] >= 0 && {} >= 0 && {} < {} ? {} * {} : 0", access("sq", idx), fwd[1], fwd[1],
                       x.shape[1], access("X", fwd) + " ?? 0", access("X", fwd) + " ?? 0"));
  ctx.local("den", acc, x.shape);
  ctx.stmt(fmt::format("{} = {} + {} * {}", access("den", idx), float_literal(ctx.attr_float("bias")), float_literal(a),
                       access("sq", idx)));
  ctx.local("t", acc, x.shape);
  ctx.stmt(fmt::format("{} = {} * {} * pow({}, {})", access("t", idx), access("dY", idx), access("X", idx),
                       access("den", idx), float_literal(-beta - 1.0)));
  ctx.local("u", acc, x.shape);
  ctx.stmt(fmt::format("{} += win[j] >= 0 && {} >= 0 && {} < {} ? {} : 0", access("u", idx), back[1], back[1],
                       x.shape[1], access("t", back) + " ?? 0"));
  ctx.stmt(fmt::format("{} = {} * pow({}, {}) - {} * {} * {}", access("dX", idx), access("dY", idx),
                       access("den", idx), float_literal(-beta), float_literal(2.0 * a * beta), access("X", idx),
                       access("u", idx)));
}

// cast_like: X converted to Target's dtype (ONNX CastLike; Target gives only its dtype).
void emit_cast_like(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const DType to = ctx.in("Target").dtype;
  const std::vector<std::string> idx = index_names(static_cast<int64_t>(x.shape.size()));
  ctx.input("X");
  ctx.input("Target"); // its dtype only
  ctx.output("Y", to, x.shape);
  ctx.stmt(access("Y", idx) + " = " + dtype_text(to) + "(" + access("X", idx) + ")");
}

// reverse_sequence: along time_axis, the first SequenceLens[b] elements of each batch
// entry b reversed, the rest copied (ONNX ReverseSequence).
void emit_reverse_sequence(OpContext& ctx) {
  ctx.require_rank_at_least("X", 2);
  ctx.require_dtype_in("SequenceLens", {DType::I64, DType::I32});
  ctx.require_rank("SequenceLens", 1);
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t t = ctx.attr_int("time_axis"), b = ctx.attr_int("batch_axis");
  if (!((t == 0 && b == 1) || (t == 1 && b == 0)))
    ctx.fail("time_axis {} and batch_axis {} must be 0 and 1 in either order", t, b);
  if (ctx.in("SequenceLens").shape[0] != x.shape[static_cast<size_t>(b)])
    ctx.fail("SequenceLens has {} entries but X has {} along batch_axis {}",
             ctx.in("SequenceLens").shape[0], x.shape[static_cast<size_t>(b)], b);
  const std::vector<std::string> idx = index_names(rank);
  const std::string len = fmt::format("i64(SequenceLens[i{}])", b), ti = "i" + std::to_string(t);
  std::vector<std::string> at = idx;
  at[static_cast<size_t>(t)] = fmt::format("{} < {} ? {} - 1 - {} : {}", ti, len, len, ti, ti);
  ctx.input("X");
  ctx.input("SequenceLens");
  ctx.output("Y", x.dtype, x.shape);
  ctx.stmt(access("Y", idx) + " = " + access("X", at));
}

// center_crop_pad: each listed axis cropped or zero-padded to the size in `shape`,
// centered (ONNX CenterCropPad: a crop starts at (in - out) // 2, a pad puts
// (out - in) // 2 zeros first).
void emit_center_crop_pad(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const std::vector<int64_t> sizes = ctx.attr_ints("shape");
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  axes = ctx.axes(axes, rank, false);
  if (sizes.size() != axes.size())
    ctx.fail("attribute 'shape' has {} sizes for {} axes", sizes.size(), axes.size());
  std::vector<int64_t> out = x.shape;
  const std::vector<std::string> idx = index_names(rank);
  std::vector<std::string> at = idx, inside;
  for (size_t a = 0; a < axes.size(); ++a) {
    const size_t d = static_cast<size_t>(axes[a]);
    if (sizes[a] < 1)
      ctx.fail("attribute 'shape': size {} of axis {} must be at least 1", sizes[a], axes[a]);
    out[d] = sizes[a];
    const int64_t offset = x.shape[d] >= sizes[a] ? (x.shape[d] - sizes[a]) / 2 : -((sizes[a] - x.shape[d]) / 2);
    if (offset == 0 && x.shape[d] == sizes[a])
      continue;
    at[d] = fmt::format("{} + {}", idx[d], offset);
    if (offset < 0)
      inside.push_back(fmt::format("{} >= 0 && {} < {}", at[d], at[d], x.shape[d]));
  }
  ctx.input("X");
  ctx.output("Y", x.dtype, out);
  std::string v = access("X", at);
  if (!inside.empty())
    v = join(inside, " && ") + " ? " + v + " ?? 0 : 0";
  ctx.stmt(access("Y", idx) + " = " + v);
}

// hann_window, hamming_window, blackman_window: the window of `size` samples (ONNX
// HannWindow etc., with the size an attribute, since shapes are static here), periodic
// (denominator size) or symmetric (size - 1).
void emit_window(OpContext& ctx, const std::string& kind) {
  const int64_t size = ctx.attr_int("size");
  if (size < 1)
    ctx.fail("attribute 'size' = {}: it must be at least 1", size);
  const DType dt = dtype_or(ctx, "dtype", DType::F32);
  if (!is_float(dt))
    ctx.fail("attribute 'dtype': the window's dtype must be a float type, got {}", dtype_text(dt));
  const int64_t n1 = ctx.attr_bool("periodic") ? size : size - 1;
  ctx.output("Y", dt, {size});
  // f32 outputs are computed in f32 (as PyTorch does), so the cosines are the lane-wise
  // vector helper: the angle's error is a few f32 ulp, below the output's own rounding
  // error near 1. Up to 2^24 samples the position itself is exact in f32; past that, f64.
  const std::string ct = dt == DType::F64 || size > (int64_t{1} << 24) ? "f64" : "f32";
  const std::string w = fmt::format("({} * {}(i0))", float_literal(2.0 * M_PI / static_cast<double>(std::max<int64_t>(n1, 1))), ct);
  std::string v;
  if (kind == "hann")
    v = "0.5 - 0.5 * cos(" + w + ")";
  else if (kind == "hamming")
    v = fmt::format("{} - {} * cos({})", float_literal(25.0 / 46.0), float_literal(21.0 / 46.0), w);
  else
    v = fmt::format("{} - 0.5 * cos({}) + {} * cos(2.0 * {})", float_literal(0.42), w, float_literal(0.08), w);
  ctx.stmt("Y[i0] = " + dtype_text(dt) + "(" + v + ")");
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
  ops.push_back(make_op("lrn", "normalization",
                        "local response normalization across channels (ONNX LRN)", {{"X"}}, {{"Y"}},
                        {{"size", AttrKind::Int, std::nullopt, "channels in the window"},
                         {"alpha", AttrKind::Float, AttrValue{1e-4}, "scale"},
                         {"beta", AttrKind::Float, AttrValue{0.75}, "exponent"},
                         {"bias", AttrKind::Float, AttrValue{1.0}, "offset"}},
                        emit_lrn));
  ops.back().gradient = "lrn_grad";
  ops.push_back(make_op("lrn_grad", "normalization-backward", "gradient of lrn: dX from X and dY",
                        {{"X"}, {"dY"}}, {{"dX"}}, ops.back().attrs, emit_lrn_grad));
  ops.push_back(make_op("cast_like", "data-movement", "X converted to Target's dtype (ONNX CastLike)",
                        {{"X"}, {"Target"}}, {{"Y"}}, {}, emit_cast_like));
  ops.push_back(make_op("reverse_sequence", "data-movement",
                        "the first SequenceLens[b] steps of each batch entry reversed (ONNX ReverseSequence)",
                        {{"X"}, {"SequenceLens", PortKind::Index}}, {{"Y"}},
                        {{"time_axis", AttrKind::Int, AttrValue{int64_t{0}}, "the time axis (0 or 1)"},
                         {"batch_axis", AttrKind::Int, AttrValue{int64_t{1}}, "the batch axis (1 or 0)"}},
                        emit_reverse_sequence));
  ops.push_back(make_op("center_crop_pad", "data-movement",
                        "axes cropped or zero-padded to a size, centered (ONNX CenterCropPad)", {{"X"}},
                        {{"Y"}},
                        {{"shape", AttrKind::Ints, std::nullopt, "the size of each listed axis"},
                         {"axes", AttrKind::Ints, AttrValue{std::vector<int64_t>{}}, "the axes; empty: all"}},
                        emit_center_crop_pad));
  for (const char* kind : {"hann", "hamming", "blackman"}) {
    const std::string k = kind;
    ops.push_back(make_op(k + "_window", "signal",
                          "the " + k + " window of `size` samples (ONNX " +
                              std::string(1, static_cast<char>(k[0] - 'a' + 'A')) + k.substr(1) + "Window)",
                          {}, {{"Y"}},
                          {{"size", AttrKind::Int, std::nullopt, "samples"},
                           {"periodic", AttrKind::Bool, AttrValue{int64_t{1}}, "periodic (else symmetric)"},
                           {"dtype", AttrKind::String, AttrValue{std::string("f32")}, "the output dtype"}},
                          [k](OpContext& ctx) { emit_window(ctx, k); }));
  }
}

} // namespace unitile::ops
